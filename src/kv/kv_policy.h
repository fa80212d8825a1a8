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

// How the model rotates a layer's queries and keys (RoPE), for policies that read pre-RoPE
// queries (KvPolicy::needs_queries): dims [0, n_rot) turn in pairs, (2i, 2i+1) or, when neox,
// (i, i + n_rot/2), by the angle p * theta[i] at position p; dims from n_rot on pass through.
struct QueryRope {
  int head_dim = 0;
  int n_rot = 0;
  bool neox = false;
  std::vector<double> theta;  // [n_rot/2] radians per position
  double scale = 0;           // the attention's logit scale (1/sqrt(head_dim) unless the model says)
  std::vector<double> sinks;  // [n_head] attention sink logits in each softmax denominator, or empty
};

// Held rows as floats, for policies that read them (KvPolicy::needs_rows): keys as the pool
// stores them (after RoPE in `absolute` position mode), values, both widened from their
// storage type and turned back from the Hadamard basis where stored rotated.
struct SlotRows {
  int head_dim = 0;
  const float* keys = nullptr;    // [n_head_kv][n_slot][head_dim], held slots below end()
  const float* values = nullptr;  // [n_head_kv][n_slot][head_dim]
};

// A merge the cache applies when it evicts (KvPolicy::merges): the value of the evicted `from`
// slot of KV head head_kv, times weight, is added to the value of the held slot `to`.
struct ValueMerge {
  int head_kv = 0;
  int from = 0;
  int to = 0;
  double weight = 0;
};

// One layer's multi-state as a policy sees it.
struct SlotView {
  int n_head = 0;     // query heads
  int n_head_kv = 0;  // KV heads; query head h reads KV head h / (n_head / n_head_kv)
  int n_slot = 0;     // slots per KV head
  // States held per KV head: every KV head holds the same number, except under a policy that
  // shares the layer's budget between its heads (LayerPlan::shared_heads), where this is the
  // largest count and n_held_head gives each head's.
  int n_held = 0;
  const int* n_held_head = nullptr;  // [n_head_kv]
  const int64_t* pos = nullptr;  // [n_head_kv][n_slot] original positions; -1 marks a free slot
  // Every held state lies in a slot below this (-1: n_slot): a policy's per-step work covers
  // slots [0, end()), what is held, not the k + C slots a chunked pool allocates.
  int slot_end = -1;
  // The position of the last token that joins in this step: the token itself for exact steps,
  // the chunk's last token under chunk:C (observe() sees it for every row of the chunk, before
  // the chunk's eviction). -1 when unknown.
  int64_t step_last_pos = -1;
  // observe(): the position of the query row being observed. -1 when unknown.
  int64_t query_pos = -1;
  // Only for policies with needs_key_similarity(), in choose_evictions():
  // [n_head_kv][n_slot] the cosine similarity of each held key to the mean of the held keys of
  // its KV head, each key normalised to length 1 first (kv::key_similarity). Keys as the pool
  // stores them: after RoPE in `absolute` position mode, before it in `gap` and `rank`.
  const double* key_similarity = nullptr;
  // observe(), for policies with needs_queries(): the observed row's query before RoPE,
  // [n_head][head_dim], and how the model rotates it (null otherwise).
  const float* query = nullptr;
  const QueryRope* rope = nullptr;
  // choose_evictions() and merge(), for policies with needs_rows() (null otherwise).
  const SlotRows* rows = nullptr;
  int end() const { return slot_end < 0 ? n_slot : slot_end; }
  int held_in(int head_kv) const { return n_held_head ? n_held_head[head_kv] : n_held; }
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
  // did not see (null when score_need() is kNone). Called once per query row, in order, and
  // only if score_need() != kNone or needs_queries() (then view.query holds the row's query).
  virtual void observe(const SlotView& view, const float* probs) {
    (void)view;
    (void)probs;
  }

  // More than the budget is held: choose `n` distinct held slots to evict in every KV head,
  // out[head_kv * n + j]. Layer-wise policies choose the same slots in every KV head.
  virtual void choose_evictions(const SlotView& view, int n, int32_t* out) = 0;

  // Policies that share the layer's budget between its KV heads (LayerPlan::shared_heads):
  // more than budget x n_head_kv states are held in all; choose n_total distinct held (KV head,
  // slot) pairs to evict, out[j] = head_kv * view.n_slot + slot, leaving every head at least
  // its floor. Only called on such policies.
  virtual void choose_shared_evictions(const SlotView& view, int n_total, int32_t* out) {
    (void)view;
    (void)n_total;
    (void)out;
  }

  // Head-wise policies: the score under which each KV head evicts its lowest held state first
  // (ties to the smallest position), out[head_kv * view.n_slot + slot] for the held slots below
  // view.end(); +infinity for a state the policy must keep. Another policy may rank states
  // across heads with it (adakv:BASE). Returns false if the policy has no such scores.
  virtual bool head_scores(const SlotView& view, double* out) {
    (void)view;
    (void)out;
    return false;
  }

  // True if choose_evictions() reads SlotView::key_similarity (the cache computes it then).
  virtual bool needs_key_similarity() const { return false; }

  // True if observe() reads SlotView::query: the model then keeps each row's query before RoPE
  // for this sequence (only in `absolute` position mode: MultiState::create refuses others).
  virtual bool needs_queries() const { return false; }

  // True if choose_evictions() and merge() read SlotView::rows (the cache widens them then).
  virtual bool needs_rows() const { return false; }

  // True if the policy merges evicted values into held ones (merge() is then called).
  virtual bool merges() const { return false; }
  // The cache has chosen to evict evicted[head_kv * n + j] (choose_evictions' answer); before
  // it frees them, the policy says which held values take which evicted values (out, cleared
  // first). Targets must be held and not evicted. The cache adds, per target, in float64, the
  // sum of weight x evicted value to the held value, and stores the result in its type.
  virtual void merge(const SlotView& view, int n, const int32_t* evicted,
                     std::vector<ValueMerge>& out) {
    (void)view;
    (void)n;
    (void)evicted;
    out.clear();
  }

  // The pool shrank to n_slot slots, every held state staying in its slot (all below n_slot):
  // per-slot state is cut to match (scoring::SlotTable::shrink). Only a pool that held a whole
  // prompt before cutting it (LayerPlan::holds_prompt) shrinks, once, after the cut.
  virtual void on_shrink(int n_slot) { (void)n_slot; }
};

// Everything a policy factory may use.
struct PolicyArgs {
  int budget = 0;              // k, states kept per layer (and per KV head)
  std::optional<int> arg;      // the N of "sink:N"
  std::string base;            // the BASE of "adakv:BASE" (a policy with its own argument)
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;
  int n_slot = 0;              // slots per KV head the cache allocated (see on_grow)
  int layer = 0;               // which layer, of n_layer
  int n_layer = 1;
  // Tokens of the prompt the sequence starts with (0: unknown or none). Policies that choose
  // once the whole prompt is in (snapkv) cut at its end; later tokens are decoding steps.
  int64_t prompt_end = 0;
  int max_new = 1;             // most tokens joining before an eviction: 1 exact, C chunk:C
  // Made for another policy that ranks states across KV heads (adakv:BASE): a policy with a
  // layer-wise and a head-wise form takes the head-wise one.
  bool head_wise = false;
};

// How a policy bounds one layer; MultiState::create sizes the layer's pool from it.
struct LayerPlan {
  int budget = 0;  // states kept per KV head between steps (shared_heads: on average)
  // The layer keeps budget x n_head_kv states in all, shared unevenly by its KV heads, each
  // keeping at least head_floor (adakv).
  bool shared_heads = false;
  int head_floor = 0;
  // Exact prefill holds every prompt state and the policy evicts only once the prompt's last
  // token has attended (snapkv); under chunk:C it evicts at each chunk's end as usual.
  bool holds_prompt = false;
  // New states gather in a buffer: the layer evicts only when more than budget + buffer are
  // held, and then down to budget (R-KV compresses once per `buffer` new tokens). Memory is
  // that of budget + buffer states.
  int buffer = 0;
  // The layer never evicts on its own: it holds every state that joins until a caller's pass
  // cuts it to `budget` (LayerState::evict_to; kvzip's scoring pass, runtime/kvzip_pass.h).
  bool cut_by_caller = false;
};

}  // namespace tova::kv
