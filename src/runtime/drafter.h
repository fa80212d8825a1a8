// A drafter proposes the tokens that may follow a history, for speculative decoding
// (speculation.h). One file per drafter (drafter_*.cpp) and one line each in make_drafter
// (speculation.cpp): the only list of drafter names.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/result.h"
#include "runtime/engine_access.h"
#include "tova/options.h"

namespace tova {
class Engine;
}

namespace tova::runtime {

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Up to n_max tokens likely to follow `history` (every token of the conversation, its last
  // the one about to be fed); empty: no proposal. One token per position (a deterministic
  // proposal), which is what makes "the sampler's own token" the acceptance rule.
  virtual Result<std::vector<int32_t>> draft(std::span<const int32_t> history, int n_max) = 0;
  // An independent copy (a cloned session drafts on its own).
  virtual std::unique_ptr<Drafter> clone() const = 0;

  // Drafters that read the target's hidden states (draft-mtp) say so: the feeding loop then
  // hands them (observe) the final-normed hidden row (Model::forward's `hidden`) of every token
  // the session feeds, drafts of a verify step included.
  virtual bool wants_hidden() const { return false; }
  // The session fed `tokens` at positions pos, pos + 1, ...; hidden: [tokens][n_embd]. A call
  // at a position at or below earlier ones replaces what was observed from there on (an undone
  // verify step is fed again).
  virtual void observe(int64_t pos, std::span<const int32_t> tokens, const float* hidden) {
    (void)pos;
    (void)tokens;
    (void)hidden;
  }
  // The logits behind the last draft call's tokens ([drafted][n_vocab], row i the one draft i
  // was chosen from), for drafters that run a model; empty otherwise.
  virtual std::span<const float> last_logits() const { return {}; }
  // Bytes of K/V (and positions) the drafter's own states allocate now (draft-mtp's block,
  // a draft model's multi-state); 0 for drafters that hold none.
  virtual uint64_t state_bytes() const { return 0; }
};

// A drafting model's choice at one step, as llama.cpp's drafters make it (a top-10 sampler
// whose first candidate is taken): the most probable token (ties to the smaller id) and its
// probability among the 10 most probable, which p_min is compared with.
struct DraftChoice {
  int32_t token = 0;
  float p = 0.f;
};
DraftChoice draft_choice(const float* logits, int n_vocab);

// The drafters (make_drafter in speculation.cpp picks one by SpeculativeOptions::type).
// llama.cpp's ngram-simple (drafter_ngram_simple.cpp).
std::unique_ptr<Drafter> make_ngram_simple(const SpeculativeOptions& o);
// llama.cpp's ngram-mod, a hashed n-gram table per session (drafter_ngram_mod.cpp).
std::unique_ptr<Drafter> make_ngram_mod(const SpeculativeOptions& o);
// A greedy draft model (drafter_model.cpp): EngineAccess::draft_model(e) with its own multi-state under
// `cache` (its own policy and budget).
Result<std::unique_ptr<Drafter>> make_model_drafter(const Engine& e, const SpeculativeOptions& o,
                                                    const CacheOptions& cache);
// The file's own multi-token prediction block (drafter_mtp.cpp), chained as llama.cpp's
// draft-mtp chains it, with the block's own K/V under `cache`; an error when the model has no
// block.
Result<std::unique_ptr<Drafter>> make_mtp_drafter(const Engine& e, const SpeculativeOptions& o,
                                                  const CacheOptions& cache);
// What each model drafter's own K/V reserves beside a session of n_prompt tokens under
// `cache` (runtime::reserve_bytes; 0 when the engine has no draft model or block).
uint64_t model_drafter_reserve_bytes(const Engine& e, const CacheOptions& cache,
                                     int64_t n_prompt, int64_t n_ctx);
uint64_t mtp_drafter_reserve_bytes(const Engine& e, const CacheOptions& cache, int64_t n_prompt,
                                   int64_t n_ctx);

}  // namespace tova::runtime
