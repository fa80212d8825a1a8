// Speculative decoding on a bounded multi-state (issue 50). One mechanism for every drafter:
//
//   draft    The session is about to feed its sampled token t0 (and any tokens an earlier
//            rejection left to re-feed). Its drafter proposes d1..dn (drafter.h).
//   verify   The batch scheduler (the one feeding loop) feeds the pending tokens and d1..dn in
//            ONE forward pass, with logits after t0 and after each draft. Model::forward feeds a
//            sequence's tokens exactly as n single steps would: every policy decides its
//            evictions token by token inside the step, window layers drop by position, the
//            recurrent (DeltaNet) states advance token by token. Before the pass the session's
//            multi-state is checkpointed (MultiState::clone: K/V rows, positions, free slots,
//            policy scores and accumulators, recurrent and conv states, n_seen).
//   accept   The generation loop (TextStream) samples from t0's logits as it always does. If the
//            sampled token is d1 it is already fed: the session takes d1's logits row and
//            samples on, with no forward pass, until a sample differs from the next draft.
//   undo     A sample that differs from the next draft (or generation ending, or the session
//            taking other tokens) rejects the rest: the multi-state goes back to the checkpoint
//            and the accepted tokens t0, d1..dj become pending again, so the next step feeds them
//            with the new token (one pass: a step of j + 2 tokens costs about what a step of
//            one costs on a bandwidth-bound CPU). Every effect of the rejected tokens (their
//            K/V rows, the states they evicted, scores, positions, recurrent states) is gone
//            with the checkpoint; the accepted ones are recomputed exactly.
//
// Because the sampler draws every token from the target's logits exactly as without
// speculation (the same draws of its random stream, grammar and repetition penalty on the
// same history), the output equals decoding without speculation, greedy or sampled. For a
// drafter whose proposal is one token per position (all of tova's: greedy draft models,
// n-gram lookups) that is the standard acceptance rule (accept d with probability p(d), else
// sample from p without d) drawn with one random number.
//
// Adaptive draft length: n starts at n_max, halves (down to 1) after a rejection of the first
// draft and grows back by one per fully accepted step; after k verify steps in a row with no
// draft accepted, the next 2^k - 1 chances to draft are skipped (up to 63), so a drafter that
// never hits costs a clone and a few wasted rows every 64 tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/result.h"
#include "kv/multi_state.h"
#include "model/model.h"
#include "runtime/drafter.h"
#include "runtime/engine_access.h"
#include "tova/options.h"
#include "tova/session.h"

namespace tova::runtime {

class Speculation {
 public:
  Speculation(const SpeculativeOptions& o, std::unique_ptr<Drafter> drafter);
  Speculation(const Speculation& other);  // the drafter cloned, the undo state too
  Speculation& operator=(const Speculation&) = delete;

  const SpeculativeOptions& options() const { return o_; }
  // Most tokens a session may have pending and still draft after them (the sampled token and
  // the tokens a rejection left to re-feed); more pending is a prompt, fed without drafts.
  int64_t max_pending() const { return o_.n_max + 1; }

  // The drafts to verify after `history` (fed, then pending; its last token the one the step
  // feeds last); empty: feed without drafting. At most `room` tokens.
  Result<std::vector<int32_t>> draft(std::span<const int32_t> history, int room);
  // The verify step is about to feed n_pending pending tokens and `drafts` into `state`, whose
  // session has fed n_fed tokens: keeps what undoes the step.
  void begin_verify(const kv::MultiState& state, int64_t n_fed, std::vector<int32_t> drafts);
  // After the pass: the drafts' logits rows ([n_drafts][n_vocab], row i after draft i).
  void end_verify(const float* rows, int n_vocab);

  // Drafts fed and not yet confirmed by the sampler (the multi-state has seen them).
  int n_outstanding() const { return static_cast<int>(drafts_.size() - next_); }
  int32_t next_draft() const { return drafts_[next_]; }
  // The sampler took the next draft: its logits row (valid until the next call).
  std::span<const float> accept();
  // The rest is rejected: the multi-state from before the verify step and the fed count to go
  // back to (the accepted tokens are pending again). Only with n_outstanding() > 0.
  struct Undo {
    std::unique_ptr<kv::MultiState> state;
    int64_t n_fed = 0;
  };
  Undo reject();
  // Forgets the drafts without undoing (the session's state was replaced: reset).
  void clear();

  SpeculationStats stats() const;
  int draft_length() const { return n_cur_; }
  // The drafter reads the target's hidden rows (Drafter::wants_hidden, observe): the feeding
  // loop hands it those of every token it feeds for this session.
  bool wants_hidden() const;
  void observe(int64_t pos, std::span<const int32_t> tokens, const float* hidden);
  const Drafter& drafter() const { return *drafter_; }

 private:
  void adapt(int n_drafted, int n_accepted);

  SpeculativeOptions o_;
  std::unique_ptr<Drafter> drafter_;
  std::unique_ptr<kv::MultiState> checkpoint_;  // before the verify step
  int64_t fed_before_ = 0;                      // the session's n_fed then
  std::vector<int32_t> drafts_;                 // of the last verify step
  std::vector<float> rows_;                     // [drafts][n_vocab]
  int n_vocab_ = 0;
  size_t next_ = 0;  // drafts_[next_] is the next to confirm
  int n_cur_ = 0;    // the adaptive draft length
  int misses_ = 0;   // verify steps in a row with nothing accepted
  int skip_ = 0;     // chances to draft still to skip
  SpeculationStats stats_;
};

// A session's speculation for `o` (null when o is off), its drafter made for engine `e` (a
// draft model needs EngineAccess::draft_model(e)); an error names the option or file at fault.
// A draft model's multi-state follows the session's cache options (policy, budget, K/V type).
Result<std::unique_ptr<Speculation>> make_speculation(const Engine& e, const SpeculativeOptions& o,
                                                      const CacheOptions& cache);
// K/V bytes the drafter of `o` reserves beside a session of n_prompt tokens under `cache`, as
// Engine::reserve_bytes counts them (0 for drafters that hold no state).
uint64_t draft_reserve_bytes(const Engine& e, const SpeculativeOptions& o,
                             const CacheOptions& cache, int64_t n_prompt, int64_t n_ctx);

// A draft model can draft for `target`: the same vocabulary (size and every token's text),
// else an error naming both files and the first token that differs.
Status check_same_vocabulary(const model::Model& target, const model::Model& draft);

}  // namespace tova::runtime
