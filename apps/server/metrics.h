// Server counters, gauges and histograms, exported in the Prometheus text format.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace tova::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {
    counts_.assign(bounds_.size(), 0);
  }
  void observe(double v);
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // cumulative at render time, per bucket here
  uint64_t count_ = 0;
  double sum_ = 0;
};

// One kind of layer state's memory (SessionStats::kinds), summed over states.
struct KindMemory {
  uint64_t bytes = 0;
  uint64_t held_bytes = 0;
  int64_t rows = 0;
  int64_t image_rows = 0;  // of rows, images' (StateKindStats::image_rows)
};

struct MetricsSnapshot {
  int64_t active = 0;
  int64_t queued = 0;
  uint64_t kv_bytes_held = 0;
  uint64_t kv_bytes_reserved = 0;
  int64_t cached_states = 0;
  int64_t stored_states = 0;  // --session-dir: states on disk and their bytes
  uint64_t stored_bytes = 0;
  std::map<std::string, KindMemory> kinds;  // by kind: "bounded", "window"
};

class Metrics {
 public:
  void request_done(int status);
  void tokens(int64_t prompt, int64_t generated, int64_t reused);
  void evictions(const std::string& policy, int64_t n);
  // Speculative decoding: tokens drafted and accepted by a finished choice.
  void drafts(int64_t drafted, int64_t accepted);
  void stored(int64_t n);    // held states written to --session-dir
  void restored(int64_t n);  // requests continued from a state in --session-dir
  void first_token(double seconds);
  // The time between two tokens of one sequence (what a streaming client sees per token).
  void token_gap(double seconds);
  void step(double seconds, int n_tokens);
  void set_snapshot(const MetricsSnapshot& s);
  std::string render() const;

 private:
  mutable std::mutex mu_;
  std::map<int, uint64_t> requests_;
  std::map<std::string, uint64_t> evictions_;
  uint64_t prompt_tokens_ = 0, generated_tokens_ = 0, reused_tokens_ = 0, step_tokens_ = 0;
  uint64_t stored_ = 0, restored_ = 0;
  uint64_t drafted_ = 0, accepted_ = 0;
  double step_seconds_ = 0;
  double last_rate_ = 0;
  MetricsSnapshot snap_;
  Histogram ttft_{{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}};
  Histogram step_{{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}};
  Histogram token_gap_{{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}};
};

}  // namespace tova::server
