// The batch scheduler: every front-end (`run`, `chat`, `serve`) feeds its sessions through it.
// One step gathers the pending tokens of many sessions into ONE batched forward pass (sessions
// with different policies and budgets share it): first one token of every session that is
// decoding (a single pending token), then prompt chunks of the others, up to a token budget per
// step, so a long prompt never stalls the streams that are generating. A session whose last
// pending token was in the step receives its logits.
//
// The scheduler runs the model on the engine's thread pool, holding Engine::exclusive() for each
// pass; a scheduler itself is used from one thread (a server's scheduler thread).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/result.h"
#include "model/model.h"
#include "runtime/forward_batch.h"
#include "tova/batch.h"
#include "tova/engine.h"
#include "tova/session.h"

namespace tova::runtime {

// The public face's types (tova/batch.h: tova::Batch drives this scheduler).
using SchedulerOptions = BatchOptions;
using StepStats = BatchStep;

class BatchScheduler {
 public:
  explicit BatchScheduler(const Engine& engine, const SchedulerOptions& o = {});

  // One forward pass over the pending tokens of `sessions` (at most step_tokens of them);
  // sessions with nothing pending are skipped. A session whose queue was emptied has
  // has_logits() set. With nothing pending anywhere, it does nothing.
  // A decoding session with speculative decoding on (Session::Impl::spec) also feeds its
  // drafts in the same pass, the verify step (runtime/speculation.h), unless `speculate` is
  // false.
  Result<StepStats> step(std::span<Session* const> sessions, bool speculate = true);

  // Steps until every session in `sessions` has fed all its pending tokens.
  Status drain(std::span<Session* const> sessions, bool speculate = true);

  const SchedulerOptions& options() const { return o_; }

 private:
  struct Take {
    Session* session;
    int n;                        // pending tokens fed
    std::vector<int32_t> drafts;  // fed after them (a verify step), with logits each
    int row = -1;                 // the logits row of its last pending token (-1: none)
    int draft_row = -1;           // the first of its drafts' rows
  };
  // Which sessions take how many tokens this step (decoding sessions first, then prompts).
  Status choose_takes(std::span<Session* const> sessions, bool speculate);
  // takes_ into batch_ (a verify step's checkpoint taken first); whether a drafter reads the
  // hidden rows.
  bool build_batch();
  // After the pass: each session's fed count, logits, drafter observations and verify results.
  void deliver(bool hidden);

  const Engine& engine_;
  SchedulerOptions o_;
  model::ForwardScratch scratch_;
  ForwardBatch batch_;
  std::vector<float> hidden_;  // [batch][n_embd] final-normed rows, when a drafter reads them
  std::vector<Take> takes_;
};

}  // namespace tova::runtime
