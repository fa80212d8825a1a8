// Shared arithmetic of the policies: head-group means of attention probabilities and the
// "lowest score, ties to the smallest position" choice that every rule in POLICIES.md uses.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "kv/kv_policy.h"

namespace tova::kv::scoring {

// A per-slot table of doubles for `groups` slot rows ([group][n_slot]), kept through pool growth
// (KvPolicy::on_grow) and the cache's moves (KvPolicy::on_move).
class SlotTable {
 public:
  SlotTable(int groups, int n_slot)
      : groups_(groups), n_slot_(n_slot), v_(static_cast<size_t>(groups) * n_slot, 0.0) {}
  double* row(int g) { return &v_[static_cast<size_t>(g) * n_slot_]; }
  const double* row(int g) const { return &v_[static_cast<size_t>(g) * n_slot_]; }
  int n_slot() const { return n_slot_; }
  // Rows keep their entries; the new slots start at 0.
  void grow(int n_slot);
  // Rows keep their first n_slot entries (the pool shrank: nothing is held beyond).
  void shrink(int n_slot);
  void move(int g, int from, int to) {
    row(g)[to] = row(g)[from];
    row(g)[from] = 0.0;
  }
  const std::vector<double>& values() const { return v_; }
  // Replaces every entry; an error (nothing changed) if the size does not fit.
  Status set_values(std::span<const double> s);

 private:
  int groups_;
  int n_slot_;
  std::vector<double> v_;
};

// Layer-wise policies score with the mean over ALL query heads and keep one set of tokens per
// layer (group 0 stands for every KV head); head-wise ones score KV head g with the mean over
// its own query heads.
inline int n_groups(const SlotView& v, bool head_wise) { return head_wise ? v.n_head_kv : 1; }

// out[slot] = mean over the group's query heads of probs[h][slot], in double, for the slots
// below v.end() (the rest of out is left as it was: nothing is held there).
void group_mean(const SlotView& v, const float* probs, bool head_wise, int group, double* out);

// A head score (KvPolicy::head_scores) for a state the policy must keep.
inline constexpr double kKeep = std::numeric_limits<double>::infinity();

// The n held slots of every KV head with the lowest (score, position), from head-wise scores
// [n_head_kv][n_slot] (KvPolicy::head_scores; kKeep never chosen while others remain).
void lowest_per_head(const SlotView& v, const double* scores, int n, int32_t* out);
// choose_evictions of a head-wise policy: lowest_per_head of its own head_scores.
void choose_by_head_scores(KvPolicy& policy, const SlotView& v, int n, int32_t* out);

// Which positions a choice may not touch: pos < keep_below (sinks) or pos >= keep_from (the
// recent window).
struct Protect {
  int64_t keep_below = 0;
  int64_t keep_from = std::numeric_limits<int64_t>::max();
};

// The n held slots of one slot row with the lowest (score, position), skipping protected
// positions; score == nullptr ranks by position alone (oldest first). Writes out[0..n). Reads
// slots [0, n_slot): pass SlotView::end(), below which every held state lies.
void lowest_slots(const int64_t* pos_row, int n_slot, const double* score, Protect protect,
                  int n, int32_t* out);

// The smallest position among the `count` most recent held states of a slot row (h2o's recent
// window); max() when count == 0.
int64_t recent_threshold(const int64_t* pos_row, int n_slot, int count);

// A layer-wise choice made on group 0 applies to every KV head (their slot layouts are equal).
void replicate_group0(const SlotView& v, int n, int32_t* out);

}  // namespace tova::kv::scoring
