// adakv:BASE (Ada-KV, Feng et al. 2024; exact rule in docs/POLICIES-EXTRA.md): a layer keeps
// k x n_kv_heads states shared unevenly by its KV heads. Whenever more are held, the states with
// the lowest head-wise scores of BASE (tova-head's for `tova`, SnapKV's at the prompt's cut
// for `snapkv`, ...) go, whichever head holds them, while no head falls below a floor of k/5.
// Each eviction frees a slot of the head that held the state.
#include <algorithm>
#include <vector>

#include "core/check.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

int head_floor(int budget) { return std::max(1, budget / 5); }

// The BASE's spec and arguments (made head-wise).
PolicySpec base_spec(const PolicyArgs& a) {
  auto spec = parse_policy(a.base, a.budget);
  TOVA_CHECK(spec.ok());  // validated when adakv:BASE was parsed
  return *spec;
}
PolicyArgs base_args(const PolicyArgs& a, const PolicySpec& base) {
  PolicyArgs b = a;
  b.arg = base.arg;
  b.base.clear();
  b.head_wise = true;
  return b;
}

class AdaKvPolicy final : public KvPolicy {
 public:
  AdaKvPolicy(std::unique_ptr<KvPolicy> base, int floor) : base_(std::move(base)), floor_(floor) {}
  AdaKvPolicy(const AdaKvPolicy& o) : base_(o.base_->clone()), floor_(o.floor_) {}

  std::unique_ptr<KvPolicy> clone() const override { return std::make_unique<AdaKvPolicy>(*this); }
  ScoreNeed score_need() const override { return base_->score_need(); }
  std::vector<double> state() const override { return base_->state(); }
  Status set_state(std::span<const double> s) override { return base_->set_state(s); }
  void on_insert(int g, int slot) override { base_->on_insert(g, slot); }
  void on_move(int g, int from, int to) override { base_->on_move(g, from, to); }
  void observe(const SlotView& v, const float* probs) override { base_->observe(v, probs); }
  bool needs_key_similarity() const override { return base_->needs_key_similarity(); }
  void on_grow(int n_slot) override { base_->on_grow(n_slot); }
  void on_shrink(int n_slot) override { base_->on_shrink(n_slot); }
  bool head_scores(const SlotView& v, double* out) override { return base_->head_scores(v, out); }

  void choose_evictions(const SlotView&, int, int32_t*) override {
    TOVA_CHECK(false && "adakv shares its budget: the cache asks choose_shared_evictions");
  }

  void choose_shared_evictions(const SlotView& v, int n_total, int32_t* out) override {
    scores_.resize(static_cast<size_t>(v.n_head_kv) * v.n_slot);
    TOVA_CHECK(base_->head_scores(v, scores_.data()));
    cands_.clear();
    for (int g = 0; g < v.n_head_kv; ++g) {
      const size_t off = static_cast<size_t>(g) * v.n_slot;
      for (int s = 0; s < v.end(); ++s) {
        if (v.pos[off + s] >= 0) cands_.push_back({scores_[off + s], v.pos[off + s], g, s});
      }
    }
    std::sort(cands_.begin(), cands_.end(), [](const Cand& a, const Cand& b) {
      if (a.score != b.score) return a.score < b.score;
      return a.pos != b.pos ? a.pos < b.pos : a.head < b.head;
    });
    left_.resize(v.n_head_kv);
    for (int g = 0; g < v.n_head_kv; ++g) left_[g] = v.held_in(g);
    int n = 0;
    for (const Cand& c : cands_) {
      if (n == n_total) break;
      if (left_[c.head] <= floor_) continue;
      out[n++] = c.head * v.n_slot + c.slot;
      --left_[c.head];
    }
    TOVA_CHECK(n == n_total);
  }

 private:
  struct Cand {
    double score;
    int64_t pos;
    int head;
    int slot;
  };
  std::unique_ptr<KvPolicy> base_;
  int floor_;
  std::vector<double> scores_;
  std::vector<Cand> cands_;
  std::vector<int> left_;
};

TOVA_REGISTER_POLICY(PolicyInfo{
    .name = "adakv",
    .arg_name = "BASE",
    .help = "k x n_kv_heads states per layer shared by its KV heads: the lowest head-wise score "
            "of BASE goes, whichever head holds it (each keeps at least k/5)",
    .arg_is_policy = true,
    .plan =
        [](const PolicyArgs& a) {
          const PolicySpec base = base_spec(a);
          return LayerPlan{.budget = a.budget,
                           .shared_heads = true,
                           .head_floor = head_floor(a.budget),
                           .holds_prompt = layer_plan(base, base_args(a, base)).holds_prompt};
        },
    .examples = {"adakv:tova", "adakv:snapkv:8"},
    .make =
        [](const PolicyArgs& a) {
          const PolicySpec base = base_spec(a);
          return std::make_unique<AdaKvPolicy>(base.info->make(base_args(a, base)),
                                               head_floor(a.budget));
        },
});

}  // namespace
}  // namespace tova::kv
