// snapkv[:W] and snapkv+tova[:W] (SnapKV, Li et al. 2024; exact rule in
// docs/POLICIES-EXTRA.md): the prompt is held whole (or up to k + C under chunk:C); at the cut
// the attention of the last W prompt queries, summed over those queries and over the query
// heads of each KV group, max-pooled over 7 neighbouring held states, chooses the k - W states
// each KV head keeps besides its W most recent. After the prompt, `snapkv` keeps the chosen
// states and slides its W most recent over the generated tokens; `snapkv+tova` evicts by
// tova-head's rule.
#include "kv/policies/snapkv.h"

#include <algorithm>
#include <array>
#include <vector>

#include "kv/policies/scoring.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

class SnapKvPolicy final : public KvPolicy {
 public:
  SnapKvPolicy(const PolicyArgs& a, SnapDecode decode)
      : decode_(decode),
        window_(a.arg.value_or(kSnapWindow)),
        recent_(std::min(window_, a.budget)),
        n_head_kv_(a.n_head_kv),
        per_group_(a.n_head / a.n_head_kv),
        prompt_end_(a.prompt_end),
        chunked_(a.max_new > 1),
        acc_(a.n_head_kv, a.n_slot),
        cur_(a.n_head_kv, a.n_slot),
        pinned_(a.n_head_kv, a.n_slot) {}

  std::unique_ptr<KvPolicy> clone() const override {
    return std::make_unique<SnapKvPolicy>(*this);
  }
  ScoreNeed score_need() const override { return ScoreNeed::kCurrent; }

  // Per-slot tables only ([n_head_kv][n_slot] each): the votes, the latest query's scores and
  // which states the cut chose. A state saved between steps continues exactly (a chunk's votes
  // restart with its first row).
  std::vector<double> state() const override {
    std::vector<double> s;
    for (const scoring::SlotTable* t : tables()) {
      s.insert(s.end(), t->values().begin(), t->values().end());
    }
    return s;
  }
  Status set_state(std::span<const double> s) override {
    const size_t n = acc_.values().size();
    if (s.size() != 3 * n) {
      return make_error("policy state has {} values, expected {}", s.size(), 3 * n);
    }
    size_t i = 0;
    for (scoring::SlotTable* t : tables()) {
      TOVA_RETURN_IF_ERROR(t->set_values(s.subspan(i, n)));
      i += n;
    }
    acc_step_ = -1;
    return ok_status();
  }

  void on_insert(int g, int slot) override {
    for (scoring::SlotTable* t : tables()) t->row(g)[slot] = 0.0;
  }
  void on_move(int g, int from, int to) override {
    for (scoring::SlotTable* t : tables()) t->move(g, from, to);
  }
  void on_grow(int n_slot) override {
    for (scoring::SlotTable* t : tables()) t->grow(n_slot);
  }
  void on_shrink(int n_slot) override {
    for (scoring::SlotTable* t : tables()) t->shrink(n_slot);
  }

  void observe(const SlotView& v, const float* probs) override {
    const int64_t q = v.query_pos;
    if (in_prompt(q)) {
      // The cut this row votes for: the prompt's last token (exact), or its chunk's last.
      const int64_t cut = chunked_ ? v.step_last_pos : prompt_end_ - 1;
      if (chunked_ && v.step_last_pos != acc_step_) {
        for (int g = 0; g < n_head_kv_; ++g) std::fill_n(acc_.row(g), acc_.n_slot(), 0.0);
        acc_step_ = v.step_last_pos;
      }
      if (q <= cut - window_) return;
      for (int g = 0; g < n_head_kv_; ++g) {
        double* acc = acc_.row(g);
        for (int h = g * per_group_; h < (g + 1) * per_group_; ++h) {
          const float* p = probs + static_cast<size_t>(h) * v.n_slot;
          for (int s = 0; s < v.end(); ++s) acc[s] += p[s];
        }
      }
      return;
    }
    if (decode_ == SnapDecode::kTova) {
      for (int g = 0; g < n_head_kv_; ++g) scoring::group_mean(v, probs, true, g, cur_.row(g));
    }
  }

  bool head_scores(const SlotView& v, double* out) override {
    const bool cut = in_prompt(v.step_last_pos);
    for (int g = 0; g < n_head_kv_; ++g) {
      const int64_t* pos = v.pos + static_cast<size_t>(g) * v.n_slot;
      double* o = out + static_cast<size_t>(g) * v.n_slot;
      if (cut) {
        cut_scores(pos, v.end(), acc_.row(g), o, pinned_.row(g));
      } else if (decode_ == SnapDecode::kWindow) {
        // The states the last cut chose stay; the others form a window: oldest first.
        const double* pinned = pinned_.row(g);
        for (int s = 0; s < v.end(); ++s) {
          o[s] = pinned[s] != 0 ? scoring::kKeep : static_cast<double>(pos[s]);
        }
      } else {
        std::copy_n(cur_.row(g), v.end(), o);
      }
    }
    return true;
  }

  void choose_evictions(const SlotView& v, int n, int32_t* out) override {
    scoring::choose_by_head_scores(*this, v, n, out);
  }

 private:
  bool in_prompt(int64_t pos) const { return pos >= 0 && pos < prompt_end_; }

  // One KV head at a cut: its `recent_` newest held states are kept; every other held state
  // scores the largest vote (acc) among itself and its kSnapKernel / 2 neighbours on each side
  // in position order, among those other states. Those others are marked as chosen (pinned):
  // the ones evicted now leave their slot, and the rest stay through the decoding window.
  void cut_scores(const int64_t* pos, int end, const double* acc, double* out, double* pinned) {
    order_.clear();
    for (int s = 0; s < end; ++s) {
      if (pos[s] >= 0) order_.push_back(s);
    }
    std::sort(order_.begin(), order_.end(), [&](int a, int b) { return pos[a] < pos[b]; });
    const int m = static_cast<int>(order_.size());
    const int n_cand = std::max(0, m - recent_);
    for (int i = n_cand; i < m; ++i) {
      out[order_[i]] = scoring::kKeep;
      pinned[order_[i]] = 0;
    }
    constexpr int kHalf = kSnapKernel / 2;
    for (int i = 0; i < n_cand; ++i) {
      double best = acc[order_[i]];
      for (int j = std::max(0, i - kHalf); j <= std::min(n_cand - 1, i + kHalf); ++j) {
        best = std::max(best, acc[order_[j]]);
      }
      out[order_[i]] = best;
      pinned[order_[i]] = 1;
    }
  }

  std::array<scoring::SlotTable*, 3> tables() { return {&acc_, &cur_, &pinned_}; }
  std::array<const scoring::SlotTable*, 3> tables() const { return {&acc_, &cur_, &pinned_}; }

  SnapDecode decode_;
  int window_;  // W: query rows that vote
  int recent_;  // min(W, k): newest states kept at the cut
  int n_head_kv_;
  int per_group_;
  int64_t prompt_end_;
  bool chunked_;
  scoring::SlotTable acc_;     // [n_head_kv][n_slot] votes of the cut's query rows
  scoring::SlotTable cur_;     // [n_head_kv][n_slot] the latest query's group mean (+tova)
  scoring::SlotTable pinned_;  // [n_head_kv][n_slot] 1: chosen at the last cut
  int64_t acc_step_ = -1;      // chunk:C: the chunk acc_ belongs to (its last position)
  std::vector<int> order_;
};

LayerPlan holds_prompt(const PolicyArgs& a) {
  return LayerPlan{.budget = a.budget, .holds_prompt = true};
}

TOVA_REGISTER_POLICY(PolicyInfo{
    .name = "snapkv",
    .arg_name = "W",
    .help = "hold the prompt; keep the k-W states its last W queries attend to most (pooled) "
            "and the W newest; then a window over the generated tokens (W=32)",
    .arg_optional = true,
    .head_scores = true,
    .validate = [](int, std::optional<int> w) { return validate_snap_window(w); },
    .plan = holds_prompt,
    .examples = {"snapkv:8"},
    .make = [](const PolicyArgs& a) { return make_snapkv(a, SnapDecode::kWindow); },
});

TOVA_REGISTER_POLICY(PolicyInfo{
    .name = "snapkv+tova",
    .arg_name = "W",
    .help = "snapkv's choice at the prompt's end, then tova-head at every step (W=32)",
    .arg_optional = true,
    .head_scores = true,
    .validate = [](int, std::optional<int> w) { return validate_snap_window(w); },
    .plan = holds_prompt,
    .examples = {"snapkv+tova:8"},
    .make = [](const PolicyArgs& a) { return make_snapkv(a, SnapDecode::kTova); },
});

}  // namespace

std::unique_ptr<KvPolicy> make_snapkv(const PolicyArgs& args, SnapDecode decode) {
  return std::make_unique<SnapKvPolicy>(args, decode);
}

Status validate_snap_window(std::optional<int> w) {
  if (w && (*w < 1 || *w > (1 << 20))) {
    return make_error("the observation window W must be 1..{}, got {}", 1 << 20, *w);
  }
  return ok_status();
}

}  // namespace tova::kv
