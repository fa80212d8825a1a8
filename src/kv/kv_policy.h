// The compression-policy interface of the multi-state (see ../shared/spec/POLICIES.md).
// A policy object belongs to one layer of one sequence. It sees slot positions and the scores it
// asked for, never raw K/V memory; the cache does the memory work, the policy only chooses.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tova::kv {

// Which attention scores a policy needs; attention computes them only when some policy asks.
enum class ScoreNeed {
  kNone,         // full, window, sink: pay nothing for scoring
  kCurrent,      // the current query's probabilities (tova)
  kAccumulated,  // every query's probabilities, summed by the policy (h2o)
};

// One layer's multi-state as a policy sees it.
struct SlotView {
  int n_head = 0;     // query heads
  int n_head_kv = 0;  // KV heads; query head h reads KV head h / (n_head / n_head_kv)
  int n_slot = 0;     // slots per KV head
  int n_held = 0;     // states held per KV head (every KV head holds the same number)
  const int64_t* pos = nullptr;  // [n_head_kv][n_slot] original positions; -1 marks a free slot
  // Every held state lies in a slot below this (-1: n_slot): a policy's per-step work covers
  // slots [0, end()), what is held, not the k + C slots a chunked pool allocates.
  int slot_end = -1;
  int end() const { return slot_end < 0 ? n_slot : slot_end; }
};

class KvPolicy {
 public:
  virtual ~KvPolicy() = default;

  virtual ScoreNeed score_need() const { return ScoreNeed::kNone; }

  // An independent copy with the same internal state (accumulated scores and the like), for a
  // multi-state copied into another sequence (MultiState::clone).
  virtual std::unique_ptr<KvPolicy> clone() const = 0;

  // Internal state beyond the slots (e.g. h2o's accumulated scores), for session files. Its
  // size depends only on how the policy was made (PolicyArgs) and the slots the pool has now
  // (on_grow), never on tokens seen.
  virtual std::vector<double> state() const { return {}; }
  // Restores what state() returned; an error (nothing changed) if the size does not fit.
  virtual Status set_state(std::span<const double> s) {
    if (!s.empty()) return make_error("this policy keeps no state, got {} values", s.size());
    return ok_status();
  }

  // A state was written into `slot` of KV head `head_kv` (per-slot scores restart here).
  virtual void on_insert(int head_kv, int slot) {
    (void)head_kv;
    (void)slot;
  }

  // The pool grew to n_slot slots (more than before): slots keep their index, the new ones are
  // free. A policy that keeps per-slot state sizes it here (scoring::SlotTable does); bounded
  // pools start at what a sequence can reach and double up to k + extra, so every policy with
  // per-slot state must follow (tests/kv/pool_growth_test.cpp checks each registered policy).
  virtual void on_grow(int n_slot) { (void)n_slot; }

  // The cache moved the state of `from` into the free slot `to` of KV head head_kv (it keeps
  // held states packed low after a chunk, LayerState::evict_to): per-slot state follows it.
  // Layer-wise policies see the same move in every KV head.
  virtual void on_move(int head_kv, int from, int to) {
    (void)head_kv;
    (void)from;
    (void)to;
  }

  // One query row has attended: probs is [n_head][n_slot], post-softmax, 0 for slots the row
  // did not see. Called once per query row, in order, and only if score_need() != kNone.
  virtual void observe(const SlotView& view, const float* probs) {
    (void)view;
    (void)probs;
  }

  // More than the budget is held: choose `n` distinct held slots to evict in every KV head,
  // out[head_kv * n + j]. Layer-wise policies choose the same slots in every KV head.
  virtual void choose_evictions(const SlotView& view, int n, int32_t* out) = 0;
};

// Everything a policy factory may use.
struct PolicyArgs {
  int budget = 0;              // k, states kept per layer (and per KV head)
  std::optional<int> arg;      // the N of "sink:N"
  int n_head = 0;
  int n_head_kv = 0;
  int n_slot = 0;              // slots per KV head the cache allocated (see on_grow)
};

}  // namespace tova::kv
