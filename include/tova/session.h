// A Session: one conversation's state that lives across calls: its multi-state (bounded by its
// policy), its sampler, the tokens it has seen, the tokens waiting to be fed and the logits of
// the last one fed. Sessions are driven by runtime::BatchScheduler, which feeds many of them in
// one forward pass; a Session itself never runs the model.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/result.h"
#include "kv/multi_state.h"
#include "model/model.h"
#include "runtime/cache_options.h"
#include "runtime/sampler.h"
#include "runtime/session_file.h"

namespace tova {

struct SessionOptions {
  runtime::CacheOptions cache;
  runtime::SamplerParams sampling;
  // chunk:inf sizes the multi-state for its prompt: the length of the first prompt.
  int64_t n_prompt_hint = 0;
};

class Session {
 public:
  static Result<std::unique_ptr<Session>> create(const model::Model& m, const SessionOptions& o);
  // A session continuing from a saved one (runtime/session_file.h): its multi-state, history,
  // random state and logits; a sampled token not yet fed is queued. The cache options (policy,
  // budget, K/V type, positions, chunk size) are the saved state's; of o.cache only the reserve
  // is used.
  static Result<std::unique_ptr<Session>> resume(const model::Model& m, const SessionOptions& o,
                                                 runtime::SessionData d);
  // What a session file needs to continue exactly from here; `unfed` is a token sampled from
  // the current logits and not queued (-1: none). Requires no queued, unfed tokens.
  runtime::SessionData save_data(int32_t unfed) const;

  // An independent copy (state, history, sampler): continuing it gives exactly what continuing
  // this one would.
  std::unique_ptr<Session> clone() const;

  // Queues tokens to be fed by the scheduler; they join the history now.
  void queue(std::span<const int32_t> tokens);
  void queue(int32_t token) { queue(std::span<const int32_t>(&token, 1)); }
  // Tokens queued but not fed yet, in order.
  std::span<const int32_t> pending() const {
    return std::span<const int32_t>(history_).subspan(n_fed_);
  }
  int64_t n_pending() const { return static_cast<int64_t>(history_.size()) - n_fed_; }
  // The scheduler fed the first n pending tokens (it calls this after a forward pass).
  void mark_fed(int64_t n) { n_fed_ += n; }

  // Every token of the conversation: fed, then pending.
  const std::vector<int32_t>& history() const { return history_; }
  int64_t n_fed() const { return n_fed_; }

  // The logits after the last fed token (valid once the pending queue has been fed).
  bool has_logits() const { return has_logits_; }
  const float* logits() const { return logits_.data(); }
  float* logits_buffer() { return logits_.data(); }
  void set_has_logits(bool v) { has_logits_ = v; }

  // Samples the next token from the logits with this session's sampler (the repetition penalty
  // sees the history). Does not queue it.
  int32_t sample();
  void set_sampling(const runtime::SamplerParams& p);
  const runtime::SamplerParams& sampling() const { return sampling_; }

  kv::MultiState& state() { return *state_; }
  const kv::MultiState& state() const { return *state_; }
  const runtime::CacheOptions& cache() const { return cache_; }
  int n_vocab() const { return static_cast<int>(logits_.size()); }

  // Forgets everything: a fresh multi-state, an empty history.
  Status reset();

 private:
  Session() = default;
  const model::Model* model_ = nullptr;
  runtime::CacheOptions cache_;
  runtime::SamplerParams sampling_;
  std::unique_ptr<kv::MultiState> state_;
  std::unique_ptr<runtime::Sampler> sampler_;
  std::vector<int32_t> history_;
  int64_t n_fed_ = 0;
  std::vector<float> logits_;  // [n_vocab]
  bool has_logits_ = false;
};

}  // namespace tova
