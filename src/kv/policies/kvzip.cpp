// kvzip (KVzip, Kim et al. 2025; exact rule in docs/POLICIES-EXTRA.md): query-agnostic. The
// layer holds every state that joins (LayerPlan::cut_by_caller); at a cut, a scoring pass feeds
// the model "Repeat the previous context:" and the context itself, teacher-forced, on a copy of
// the state (runtime/kvzip_pass.h), and each held state scores the largest attention it receives
// from the reconstruction's query rows over the query heads of its KV group. Each KV head keeps
// its k highest (ties: the larger position stays) and the reconstruction's own states are not
// kept.
#include "kv/policies/kvzip.h"

#include <algorithm>

#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

class KvzipPolicy final : public KvPolicy, public KvzipScorer {
 public:
  explicit KvzipPolicy(const PolicyArgs& a)
      : n_head_kv_(a.n_head_kv), per_group_(a.n_head / a.n_head_kv), score_(a.n_head_kv, a.n_slot) {}

  std::unique_ptr<KvPolicy> clone() const override { return std::make_unique<KvzipPolicy>(*this); }
  // The pass reads the attention of its rows; outside a pass observe() returns at once.
  ScoreNeed score_need() const override { return ScoreNeed::kCurrent; }

  std::vector<double> state() const override { return score_.values(); }
  Status set_state(std::span<const double> s) override { return score_.set_values(s); }
  void on_insert(int g, int slot) override { score_.row(g)[slot] = 0.0; }
  void on_move(int g, int from, int to) override { score_.move(g, from, to); }
  void on_grow(int n_slot) override { score_.grow(n_slot); }
  void on_shrink(int n_slot) override { score_.shrink(n_slot); }

  void observe(const SlotView& v, const float* probs) override {
    if (recon_start_ < 0) return;
    for (int g = 0; g < n_head_kv_; ++g) {
      const int64_t* pos = v.pos + static_cast<size_t>(g) * v.n_slot;
      double* best = score_.row(g);
      for (int h = g * per_group_; h < (g + 1) * per_group_; ++h) {
        const float* p = probs + static_cast<size_t>(h) * v.n_slot;
        for (int s = 0; s < v.end(); ++s) {
          if (pos[s] >= 0 && pos[s] < recon_start_) best[s] = std::max(best[s], double{p[s]});
        }
      }
    }
  }

  bool head_scores(const SlotView& v, double* out) override {
    for (int g = 0; g < n_head_kv_; ++g) {
      std::copy_n(score_.row(g), v.end(), out + static_cast<size_t>(g) * v.n_slot);
    }
    return true;
  }

  void choose_evictions(const SlotView& v, int n, int32_t* out) override {
    scoring::choose_by_head_scores(*this, v, n, out);
  }

  void begin_pass(int64_t recon_start) override {
    recon_start_ = recon_start;
    for (int g = 0; g < n_head_kv_; ++g) std::fill_n(score_.row(g), score_.n_slot(), 0.0);
  }
  const scoring::SlotTable& pass_scores() const override { return score_; }
  void set_cut_scores(const scoring::SlotTable& scores) override {
    // The copy's pool may have grown for the reconstruction: this layer's slots are its first.
    for (int g = 0; g < n_head_kv_; ++g) {
      std::copy_n(scores.row(g), std::min(scores.n_slot(), score_.n_slot()), score_.row(g));
    }
  }

 private:
  int n_head_kv_;
  int per_group_;
  scoring::SlotTable score_;  // [n_head_kv][n_slot] the largest attention of the last pass
  int64_t recon_start_ = -1;  // -1: not in a pass
};

TOVA_REGISTER_POLICY(PolicyInfo{
    .name = "kvzip",
    .help = "hold what joins; at the prompt's end (each chunk's under chunk:C) and each turn's, "
            "keep the k states a teacher-forced \"Repeat the previous context:\" attends to most "
            "(max over the KV group's heads and the rows); `tova eval` runs its pass",
    .head_scores = false,
    .plan = [](const PolicyArgs& a) { return LayerPlan{.budget = a.budget, .cut_by_caller = true}; },
    // A session (run, chat, serve) or a per-step sweep never runs the scoring pass, so the
    // every-policy tests of per-step eviction leave it out; tests/kv/kvzip_test.cpp and the
    // task evaluation's tests cover it.
    .listed = false,
    .make = [](const PolicyArgs& a) { return std::make_unique<KvzipPolicy>(a); },
});

}  // namespace

KvzipScorer* kvzip_scorer(KvPolicy& policy) { return dynamic_cast<KvzipPolicy*>(&policy); }

}  // namespace tova::kv
