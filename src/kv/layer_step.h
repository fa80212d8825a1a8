// The step of a multi-state, one layer at a time: the order in which a sequence's new tokens
// join, attend, are observed by the policy and make it evict (spec/POLICIES.md), and the
// sequences that ride along (model::Follower). The arithmetic of attending is the model's: it
// hands a StepAttention in, and this file decides only when it runs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/multi_state.h"

namespace tova::kv {

// The batch's new keys (or values) converted once into one storage type: [batch] canonical rows
// of n_head_kv * kv_row_bytes(type, head_dim) bytes (core/kv_type.h).
struct StoredRows {
  KvType type = KvType::kF32;
  bool rotated = false;  // Hadamard-rotated (quantized types only)
  const uint8_t* data = nullptr;
};

// This step's new rows of one sequence in one layer. Token t of the step is row idx[t] of the
// batch arrays.
struct StepRows {
  std::span<const int> idx;
  const int64_t* pos = nullptr;  // [batch] original positions
  const float* k = nullptr;      // [batch][kv_dim], as the pool stores keys (see positions)
  const float* v = nullptr;      // [batch][kv_dim]
  // The same rows converted once for the batch into the types its pools store; a pool whose
  // type is not among them converts the float rows itself (LayerState::insert).
  std::span<const StoredRows> stored_k;
  std::span<const StoredRows> stored_v;
  int kv_dim = 0;  // n_head_kv * head_dim
  // [batch][q_dim] the rows' queries before RoPE, and how the model rotates them: given when a
  // sequence of the step or a follower reads them (MultiState::needs_queries), else null.
  const float* q_pre = nullptr;
  int q_dim = 0;  // n_head * head_dim
  const QueryRope* rope = nullptr;
  // The step's tokens hold an image attended without a causal mask (model::BatchToken::
  // sees_ahead): under any policy and prefill mode they all join before any attends and the
  // policy evicts once, after the step, as after a chunk (MultiStateOptions::max_image).
  bool whole = false;
};

// What the model does between joining and evicting.
class StepAttention {
 public:
  virtual ~StepAttention() = default;
  // Tokens joined L (and their queries are about to attend): the modes that move positions
  // rotate the held keys here.
  virtual void joined(const LayerState& L) { (void)L; }
  // Token t of the step attends over what L holds. probs: [n_head][L.n_slot()] receives the
  // post-softmax probabilities, every entry written (0 for slots not seen: the buffer holds
  // the previous token's), or null when no policy scores.
  virtual void attend(const LayerState& L, int t, float* probs) = 0;
  // Tokens [t0, t1) of the step attend over what L holds, when every one of them has joined
  // and nothing joins or leaves until they are done (the causal mask hides the later ones):
  // each exactly as attend() would, in any order, so the model may split them over threads.
  // probs: token t's [n_head][L.n_slot()] at probs + (t - t0) * probs_stride, or null.
  // attend_many() splits tokens over threads: worth giving it several tokens' probabilities
  // at once (else each token's are observed before the next attends, while in cache).
  virtual bool attends_in_parallel() const { return false; }
  virtual void attend_many(const LayerState& L, int t0, int t1, float* probs,
                           size_t probs_stride) {
    for (int t = t0; t < t1; ++t) {
      attend(L, t, probs != nullptr ? probs + (t - t0) * probs_stride : nullptr);
    }
  }
};

// Buffers of a step, reused across layers, sequences and calls (one per thread).
struct StepScratch {
  std::vector<float> probs;                    // [tokens][n_head][n_slot]
  std::vector<float> follower_probs;           // [n_head][a follower's n_slot]
  std::vector<int32_t> slots, follower_slots;  // [n_head_kv]
};

// Layer il of `ms` takes the step's tokens and `followers` (exact states at ms's position that
// hold every token of the step without evicting) take the same keys and values and, if they
// score, the same probabilities. Exact processing: each token joins, attends, the policy
// observes and the cache evicts, one token after the other. Chunked prefill (a bounded state
// with max_new > 1): the whole chunk joins, every token attends causally, and the cache evicts
// once, after the chunk's last token. The tokens of a chunk, and those of an exact step in
// which no layer can evict, no policy scores and positions do not move (a prompt under `full`,
// or before a budget fills), attend through StepAttention::attend_many in blocks, with the
// policy observing each token's probabilities in order after its block: the same results as one
// token after the other, bit for bit.
//
// evict = false (a layer whose K/V later shared-K/V layers read, Gemma 4 E2B/E4B): everything
// but the eviction at the end of the step; end_step() does it once those layers attended over
// what this layer held. Only for a step whose evictions all come at its end (one token, or
// evicts_between_tokens() false): the model splits any other step into single tokens.
void step_layer(MultiState& ms, std::span<MultiState* const> followers, int il,
                const StepRows& rows, int n_head, StepAttention& attention, StepScratch& scratch,
                bool evict = true);

// The eviction step_layer(evict = false) left out, exactly as it would have done it.
void end_step(MultiState& ms, std::span<MultiState* const> followers, int il,
              std::span<const int> idx, const int64_t* pos);

// Whether a step of n_tok tokens of ms (with followers that score or not) makes the policy
// evict between two of its tokens, or rotates held keys per token (exact processing past the
// point where every layer holds everything, or a mode that moves positions): the tokens then see
// different sets of held states, so a layer reading another's K/V after its step could not see
// what each token saw.
bool evicts_between_tokens(const MultiState& ms, std::span<MultiState* const> followers,
                           int n_tok, bool whole = false);

// Whether step_layer lets all n_tok tokens of the step join before any of them attends (a
// chunk, or an exact step as described above): only then may a token see tokens after it in
// the step (model::BatchToken::sees_ahead, an image attended without a causal mask). whole:
// the step is an image's (StepRows::whole), which joins whole when the pools have room for it
// (unbounded, or MultiState::max_image at least n_tok).
bool joins_all_first(const MultiState& ms, std::span<MultiState* const> followers, int n_tok,
                     bool whole = false);

}  // namespace tova::kv
