// BASE+merge (CaM, Zhang et al. 2024, "CaM: Cache Merging for Memory-efficient LLMs
// Inference"; exact rule in docs/POLICIES-EXTRA.md): BASE chooses what leaves; instead of being
// dropped, an evicted state's value is merged into the (up to) 32 held states that follow it in
// position order, v_t += v_e / m, in each KV head with probability
// min(1, A_e / mean of A over those states), A the attention accumulated since a state joined
// (mean over the KV head's query heads). The draw is a fixed hash of (layer, KV head, evicted
// position): the same in any batch, on any thread, after any session reload.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "kv/policies/scoring.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

constexpr int kMergeWindow = 32;  // kvpress CAMPress's merge_budget

PolicySpec base_spec(const PolicyArgs& a) {
  auto spec = parse_policy(a.base, a.budget);
  TOVA_CHECK(spec.ok());  // validated when BASE+merge was parsed
  return *spec;
}
PolicyArgs base_args(const PolicyArgs& a, const PolicySpec& base) {
  PolicyArgs b = a;
  b.arg = base.arg;
  b.base = base.base;
  return b;
}

// A uniform draw in [0, 1) from (layer, KV head, position): splitmix64's finaliser.
double uniform(int layer, int head_kv, int64_t pos) {
  uint64_t x = 0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(layer) + 1) ^
               0xBF58476D1CE4E5B9ull * (static_cast<uint64_t>(head_kv) + 1) ^
               0x94D049BB133111EBull * static_cast<uint64_t>(pos);
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) * 0x1.0p-53;
}

class MergePolicy final : public KvPolicy {
 public:
  MergePolicy(std::unique_ptr<KvPolicy> base, const PolicyArgs& a)
      : base_(std::move(base)), layer_(a.layer), acc_(a.n_head_kv, a.n_slot), mean_(a.n_slot) {}
  MergePolicy(const MergePolicy& o)
      : base_(o.base_->clone()), layer_(o.layer_), acc_(o.acc_), mean_(o.mean_) {}

  std::unique_ptr<KvPolicy> clone() const override { return std::make_unique<MergePolicy>(*this); }
  ScoreNeed score_need() const override { return ScoreNeed::kAccumulated; }
  bool needs_queries() const override { return base_->needs_queries(); }
  bool needs_key_similarity() const override { return base_->needs_key_similarity(); }
  bool needs_rows() const override { return true; }
  bool merges() const override { return true; }

  // BASE's state, then the accumulated attention.
  std::vector<double> state() const override {
    std::vector<double> s = base_->state();
    s.insert(s.end(), acc_.values().begin(), acc_.values().end());
    return s;
  }
  Status set_state(std::span<const double> s) override {
    const size_t n_acc = acc_.values().size();
    if (s.size() < n_acc) return make_error("merge state has {} values, fewer than {}", s.size(), n_acc);
    TOVA_RETURN_IF_ERROR(base_->set_state(s.first(s.size() - n_acc)));
    return acc_.set_values(s.last(n_acc));
  }

  void on_insert(int g, int slot) override {
    acc_.row(g)[slot] = 0.0;
    base_->on_insert(g, slot);
  }
  void on_move(int g, int from, int to) override {
    acc_.move(g, from, to);
    base_->on_move(g, from, to);
  }
  void on_grow(int n_slot) override {
    acc_.grow(n_slot);
    mean_.resize(n_slot);
    base_->on_grow(n_slot);
  }
  void on_shrink(int n_slot) override {
    acc_.shrink(n_slot);
    base_->on_shrink(n_slot);
  }

  void observe(const SlotView& v, const float* probs) override {
    if (base_->score_need() != ScoreNeed::kNone || base_->needs_queries()) {
      base_->observe(v, base_->score_need() != ScoreNeed::kNone ? probs : nullptr);
    }
    for (int g = 0; g < v.n_head_kv; ++g) {
      scoring::group_mean(v, probs, true, g, mean_.data());
      double* acc = acc_.row(g);
      for (int s = 0; s < v.end(); ++s) acc[s] += mean_[s];
    }
  }

  void choose_evictions(const SlotView& v, int n, int32_t* out) override {
    base_->choose_evictions(v, n, out);
  }

  void merge(const SlotView& v, int n, const int32_t* evicted,
             std::vector<ValueMerge>& out) override {
    out.clear();
    for (int g = 0; g < v.n_head_kv; ++g) {
      const int64_t* pos = v.pos + static_cast<size_t>(g) * v.n_slot;
      const double* acc = acc_.row(g);
      gone_.assign(v.end(), 0);
      for (int j = 0; j < n; ++j) gone_[evicted[g * n + j]] = 1;
      kept_.clear();
      for (int s = 0; s < v.end(); ++s) {
        if (pos[s] >= 0 && !gone_[s]) kept_.push_back(s);
      }
      std::sort(kept_.begin(), kept_.end(), [&](int a, int b) { return pos[a] < pos[b]; });
      order_.assign(evicted + g * n, evicted + (g + 1) * n);
      std::sort(order_.begin(), order_.end(), [&](int a, int b) { return pos[a] < pos[b]; });
      for (int e : order_) {
        // The kept states that follow e, nearest first.
        auto first = std::upper_bound(kept_.begin(), kept_.end(), pos[e],
                                      [&](int64_t p, int s) { return p < pos[s]; });
        const int m = static_cast<int>(std::min<ptrdiff_t>(kMergeWindow, kept_.end() - first));
        if (m == 0) continue;
        double mean = 0;
        for (int j = 0; j < m; ++j) mean += acc[first[j]];
        mean /= m;
        // A_e / mean, clamped to [0, 1]: 0/0 gives 0, x/0 gives 1.
        double p = mean > 0 ? acc[e] / mean : (acc[e] > 0 ? 1.0 : 0.0);
        p = std::clamp(p, 0.0, 1.0);
        if (!(uniform(layer_, g, pos[e]) < p)) continue;
        for (int j = 0; j < m; ++j) out.push_back({.head_kv = g, .from = e, .to = first[j], .weight = 1.0 / m});
      }
    }
  }

 private:
  std::unique_ptr<KvPolicy> base_;
  int layer_;
  scoring::SlotTable acc_;  // [n_head_kv][n_slot] attention accumulated since joining
  std::vector<double> mean_;
  std::vector<char> gone_;
  std::vector<int> kept_, order_;
};

TOVA_REGISTER_POLICY(PolicyInfo{
    .name = "merge",
    .help = "BASE chooses; each evicted value is merged (CaM) into the next 32 held states of "
            "its KV head, v/32 each, with probability min(1, its attention / theirs)",
    .suffix = true,
    .plan =
        [](const PolicyArgs& a) {
          const PolicySpec base = base_spec(a);
          return layer_plan(base, base_args(a, base));
        },
    .examples = {"tova+merge", "h2o+merge"},
    .make =
        [](const PolicyArgs& a) {
          const PolicySpec base = base_spec(a);
          return std::make_unique<MergePolicy>(base.info->make(base_args(a, base)), a);
        },
});

}  // namespace
}  // namespace tova::kv
