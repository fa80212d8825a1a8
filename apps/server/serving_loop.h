// The scheduler thread: it alone owns the model. It admits queued requests by K/V memory,
// continues held conversation states (prefix reuse), runs one batched forward pass per step
// over every active sequence (runtime::BatchScheduler), advances each sequence's TextStream (the
// library's generation loop: sampling, end of generation, UTF-8 and stop-string hold-back,
// limits), splits a request of n choices into n copies of its prompt's state, streams pieces
// back, and drops cancelled sequences at the next step.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "job.h"
#include "metrics.h"
#include "state_view.h"
#include "tova/batch.h"
#include "tova/engine.h"
#include "tova/state_cache.h"
#include "tova/text_stream.h"

namespace tova::server {

struct LoopOptions {
  int parallel = 64;  // most sequences processed at once
  int queue = 64;     // most requests waiting; beyond: 503
  uint64_t kv_memory = 1ull << 30;
  int64_t ctx = 4096;     // an unbounded (`full`) sequence's most tokens; what it reserves
  int step_tokens = 512;  // tokens per batched forward pass
  bool prefix_reuse = true;
  int max_cached_states = 64;  // held conversation states (LRU), inside kv_memory
  // The held states (the library's StateCache, with --session-dir its spill directory), opened
  // by the caller with max_bytes = kv_memory; null: one in memory only, of max_cached_states.
  // Used by the scheduler thread only.
  std::shared_ptr<StateCache> states;
  // Tests only: nonzero makes every generated piece hostile bytes (hostile_output.h).
  uint64_t hostile_output_seed = 0;
};

class ServingLoop {
 public:
  ServingLoop(const Engine& engine, const LoopOptions& o, Metrics& metrics);
  ~ServingLoop();

  // Queues a request; an error (503 queue full, 503 shutting down) if it cannot. A request
  // that a free sequence slot will take at the next step does not count against --queue.
  std::optional<ApiError> submit(const std::shared_ptr<Job>& job);
  // Stops admitting; in-flight and queued requests finish. Then idle() turns true.
  void drain();
  bool draining() const;
  bool idle() const;
  int64_t in_flight() const;  // requests waiting or being generated
  // The state request `id` left in memory (being generated, or held for reuse), looked at by
  // the scheduler thread between two steps; nothing if it is not in memory (never made, spilled
  // to --session-dir, dropped, or the server stops).
  std::optional<StateView> inspect(const std::string& id);
  // Ends the thread (after drain + idle, or at once: whoever still waits gets a 503 error).
  // Safe to call from several threads and more than once.
  void stop();

  const LoopOptions& options() const { return o_; }

 private:
  struct Active;
  void run();
  void step(Batch& batch);
  void admit();
  bool try_admit(const std::shared_ptr<Job>& job);
  GenerateOptions generate_options(const GenerationRequest& r) const;
  void split(Active& a);    // choice 0 of n > 1, its prompt fed: the other choices start
  void advance(Active& a);  // one token of a sequence that has logits
  void finish(Active& a, const std::string& text, const std::string& reason);
  void hold(std::unique_ptr<Session> s, const std::string& id);
  void publish_metrics();
  void answer_inspections();
  struct Inspection {
    std::string id;
    std::promise<std::optional<StateView>> result;
  };

  const Engine& engine_;
  LoopOptions o_;
  Metrics& metrics_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> waiting_;  // guarded by mu_
  std::deque<std::shared_ptr<Inspection>> inspections_;  // guarded by mu_
  bool draining_ = false;
  bool stop_ = false;
  std::mutex join_mu_;  // stop(): one joiner
  int64_t n_active_ = 0;  // mirror of active_.size() for idle()
  // Scheduler-thread only:
  std::vector<std::unique_ptr<Active>> active_;
  uint64_t reserved_ = 0;  // the active sequences' reservations (held states: o_.states)
  int64_t spilled_seen_ = 0, restored_seen_ = 0;  // o_.states' counts as metrics last had them
  std::thread thread_;
};

}  // namespace tova::server
