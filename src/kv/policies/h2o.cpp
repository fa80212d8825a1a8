// h2o (Heavy-Hitter Oracle): keep the k/2 most recent states; among the others evict the one
// with the lowest attention accumulated over every step since it joined. `h2o` accumulates the
// mean over all query heads per layer; `h2o-head` accumulates per KV head.
#include <vector>

#include "kv/policies/scoring.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

class H2oPolicy final : public KvPolicy {
 public:
  std::unique_ptr<KvPolicy> clone() const override { return std::make_unique<H2oPolicy>(*this); }
  H2oPolicy(const PolicyArgs& a, bool head_wise)
      : head_wise_(head_wise),
        n_recent_(a.budget / 2),
        acc_(head_wise ? a.n_head_kv : 1, a.n_slot),
        mean_(a.n_slot, 0.0) {}

  std::vector<double> state() const override { return acc_.values(); }
  Status set_state(std::span<const double> s) override { return acc_.set_values(s); }

  ScoreNeed score_need() const override { return ScoreNeed::kAccumulated; }

  void on_grow(int n_slot) override {
    acc_.grow(n_slot);
    mean_.resize(n_slot, 0.0);
  }

  // A new state's score starts at zero (an evicted state's score is dropped with it).
  void on_insert(int head_kv, int slot) override {
    if (head_wise_ || head_kv == 0) acc_.row(head_wise_ ? head_kv : 0)[slot] = 0.0;
  }

  void on_move(int head_kv, int from, int to) override {
    if (head_wise_ || head_kv == 0) acc_.move(head_wise_ ? head_kv : 0, from, to);
  }

  void observe(const SlotView& v, const float* probs) override {
    for (int g = 0; g < scoring::n_groups(v, head_wise_); ++g) {
      scoring::group_mean(v, probs, head_wise_, g, mean_.data());
      double* acc = acc_.row(g);
      for (int s = 0; s < v.end(); ++s) acc[s] += mean_[s];
    }
  }

  void choose_evictions(const SlotView& v, int n, int32_t* out) override {
    for (int g = 0; g < scoring::n_groups(v, head_wise_); ++g) {
      const int64_t* pos = v.pos + static_cast<int64_t>(g) * v.n_slot;
      const scoring::Protect recent{
          .keep_from = scoring::recent_threshold(pos, v.end(), n_recent_)};
      scoring::lowest_slots(pos, v.end(), acc_.row(g), recent, n, out + g * n);
    }
    if (!head_wise_) scoring::replicate_group0(v, n, out);
  }

  bool head_scores(const SlotView& v, double* out) override {
    if (!head_wise_) return false;
    for (int g = 0; g < v.n_head_kv; ++g) {
      const int64_t* pos = v.pos + static_cast<int64_t>(g) * v.n_slot;
      const int64_t recent = scoring::recent_threshold(pos, v.end(), n_recent_);
      const double* acc = acc_.row(g);
      double* o = out + static_cast<size_t>(g) * v.n_slot;
      for (int s = 0; s < v.end(); ++s) o[s] = pos[s] >= recent ? scoring::kKeep : acc[s];
    }
    return true;
  }

 private:
  bool head_wise_;
  int n_recent_;
  scoring::SlotTable acc_;    // [group][n_slot] accumulated mean probabilities
  std::vector<double> mean_;  // [n_slot] scratch
};

TOVA_REGISTER_POLICY(PolicyInfo{
    .name = "h2o",
    .help = "keep the k/2 most recent; evict the lowest accumulated attention (per layer)",
    .head_scores = true,
    .make = [](const PolicyArgs& a) { return std::make_unique<H2oPolicy>(a, a.head_wise); },
});

TOVA_REGISTER_POLICY(PolicyInfo{
    .name = "h2o-head",
    .help = "h2o with scores accumulated and decisions taken per KV head",
    .head_scores = true,
    .make = [](const PolicyArgs& a) { return std::make_unique<H2oPolicy>(a, true); },
});

}  // namespace
}  // namespace tova::kv
