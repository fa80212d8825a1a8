// tova (Token Omission Via Attention): evict the state the CURRENT query attends to least.
// Layer-wise `tova` scores with the mean over all query heads and drops the same token from
// every KV head; `tova-head` lets each KV head decide from its own query heads.
#include <vector>

#include "kv/policies/scoring.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

class TovaPolicy final : public KvPolicy {
 public:
  std::unique_ptr<KvPolicy> clone() const override { return std::make_unique<TovaPolicy>(*this); }
  TovaPolicy(const PolicyArgs& a, bool head_wise)
      : head_wise_(head_wise), score_(head_wise ? a.n_head_kv : 1, a.n_slot) {}

  std::vector<double> state() const override { return score_.values(); }
  Status set_state(std::span<const double> s) override { return score_.set_values(s); }

  ScoreNeed score_need() const override { return ScoreNeed::kCurrent; }

  void on_grow(int n_slot) override { score_.grow(n_slot); }

  void on_move(int head_kv, int from, int to) override {
    if (head_wise_ || head_kv == 0) score_.move(head_wise_ ? head_kv : 0, from, to);
  }

  // Only the latest row counts: in chunked prefill that is the chunk's last token.
  void observe(const SlotView& v, const float* probs) override {
    for (int g = 0; g < scoring::n_groups(v, head_wise_); ++g) {
      scoring::group_mean(v, probs, head_wise_, g, score_.row(g));
    }
  }

  void choose_evictions(const SlotView& v, int n, int32_t* out) override {
    for (int g = 0; g < scoring::n_groups(v, head_wise_); ++g) {
      scoring::lowest_slots(v.pos + static_cast<int64_t>(g) * v.n_slot, v.end(), score_.row(g), {},
                            n, out + g * n);
    }
    if (!head_wise_) scoring::replicate_group0(v, n, out);
  }

  bool head_scores(const SlotView& v, double* out) override {
    if (!head_wise_) return false;
    for (int g = 0; g < v.n_head_kv; ++g) {
      std::copy_n(score_.row(g), v.end(), out + static_cast<size_t>(g) * v.n_slot);
    }
    return true;
  }

 private:
  bool head_wise_;
  scoring::SlotTable score_;  // [group][n_slot], the latest query's mean probabilities
};

TOVA_REGISTER_POLICY(PolicyInfo{
    .name = "tova",
    .help = "evict the state the current query attends to least (mean over the layer's heads)",
    .head_scores = true,
    .make = [](const PolicyArgs& a) { return std::make_unique<TovaPolicy>(a, a.head_wise); },
});

TOVA_REGISTER_POLICY(PolicyInfo{
    .name = "tova-head",
    .help = "tova decided per KV head from its own query heads (heads keep different tokens)",
    .head_scores = true,
    .make = [](const PolicyArgs& a) { return std::make_unique<TovaPolicy>(a, true); },
});

}  // namespace
}  // namespace tova::kv
