// Feeding many sessions together: one step gathers the pending tokens of many sessions into ONE
// batched forward pass (sessions with different policies and budgets share it): first one token
// of every session that is decoding, then prompt chunks of the others, up to a token budget per
// step, so a long prompt never stalls the streams that are generating. A session whose last
// pending token was in the step receives its logits; its TextStream then advance()s. `tova
// serve` drives its sequences this way. A Batch is used from one thread.
#pragma once

#include <memory>
#include <span>

#include "tova/result.h"
#include "tova/session.h"

namespace tova {

class Engine;
namespace runtime {
class BatchScheduler;
}

struct BatchOptions {
  int step_tokens = 512;  // most tokens in one forward pass (a chunked session may exceed it
                          // with one whole chunk when it is alone in the step)
};

struct BatchStep {
  int n_tokens = 0;    // tokens in the forward pass
  int n_sessions = 0;  // sessions that took part
  int n_logits = 0;    // sessions that received logits
  double seconds = 0;
};

class Batch {
 public:
  explicit Batch(const Engine& engine, const BatchOptions& o = {});
  ~Batch();
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  // One forward pass over the pending tokens of `sessions` (at most step_tokens of them);
  // sessions with nothing pending are skipped; with nothing pending anywhere, nothing happens.
  Result<BatchStep> step(std::span<Session* const> sessions);
  // Steps until every session in `sessions` has fed all its pending tokens.
  Status drain(std::span<Session* const> sessions);

 private:
  std::unique_ptr<runtime::BatchScheduler> scheduler_;
};

}  // namespace tova
