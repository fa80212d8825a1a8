// Batched decode throughput under a K/V memory budget (tova throughput).
// Part of the evaluation API (tova/eval.h); each takes a loaded Engine and returns plain records.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tova/engine.h"
#include "tova/eval/bench.h"
#include "tova/kv_format.h"
#include "tova/policy_spec.h"
#include "tova/result.h"

namespace tova::eval {

// ---- Throughput (tova throughput) -------------------------------------------------------------
// Aggregate decode throughput of as many sequences as a K/V memory budget holds, per policy and
// K/V type: a bounded policy's fixed state lets more sequences share the memory than `full`.

struct ThroughputProgress {
  int index = 0;  // of the configuration, from 0
  int n_configs = 0;
  std::string label;  // "tova k=512"
  std::string phase;  // "fill" | "copy" | "warmup" | "run"
  int batch = 0;
};

struct ThroughputOptions {
  // K/V bytes for all sequences together. 0: full_batch times one `full` sequence at ctx in the
  // first of kv_types.
  uint64_t kv_memory = 0;
  int full_batch = 0;
  int ctx = 4096;        // tokens every sequence has seen when the measurement starts
  int n_steps = 16;      // decode steps per measured window (each step: one token per sequence)
  int repetitions = 3;   // measured windows
  int warmup_steps = 2;  // untimed steps first
  int n_batch = 512;     // prefill micro-batch (exact semantics whatever its size)
  int batch_cap = 0;     // >0: run at most this many sequences (the max batch is still reported)
  // Storage types: every policy runs in each (rows per type, in this order within a policy).
  std::vector<KvFormat> kv_types = {KvFormat(KvType::kF16)};
  std::vector<kv::PolicySpec> policies;  // `full` first is customary; any order works
  uint64_t seed = 1234;
  std::function<void(const ThroughputProgress&)> on_progress;  // optional
};

struct ThroughputResult {
  std::string policy;  // "tova", "full"
  int budget = -1;     // -1: unbounded
  std::string kv_type;  // KvFormat::label(): "f16", "q8_0"
  int ctx = 0;
  uint64_t bytes_per_seq = 0;   // K/V (and position) memory one sequence allocated
  int max_batch = 0;            // floor(kv_memory / bytes_per_seq)
  int batch = 0;                // sequences that decoded together (max_batch unless capped)
  uint64_t kv_bytes_total = 0;  // what the batch allocated, summed over its sequences
  // Resident memory the process gained while the copies were made (batch - 1 sequences):
  // the allocation is real memory, not a promise. -1 when /proc is unavailable.
  int64_t rss_copies_bytes = -1;
  std::vector<double> samples_ts;  // aggregate tokens/s, one per measured window
  double avg_ts = 0, stddev_ts = 0;
  double step_ms = 0;   // mean time of one step over the measured windows
  // avg_ts / avg_ts of `full` in the first storage type (or of the first configuration).
  double relative = 0;
  // Bytes one step reads: the weights once, plus every held state of every sequence.
  uint64_t read_bytes_per_step = 0;
  double read_gbps = 0;  // read_bytes_per_step / step time
};

struct ThroughputReport {
  uint64_t kv_memory = 0;  // the budget used (computed from full_batch if that was given)
  int ctx = 0;
  std::vector<ThroughputResult> results;
  // results.json's text: an array with one object per configuration: policy, budget (null for
  // unbounded), ctx, kv_memory, bytes_per_seq, max_batch, batch, kv_bytes_total,
  // rss_copies_bytes, avg_ts, stddev_ts, samples_ts, step_ms, relative, read_bytes_per_step,
  // read_gbps, larger_than_full, and in every object the run's model_filename, model_type,
  // n_threads, kv_types and simd_target.
  std::string json;
};

Result<ThroughputReport> run_throughput(const Engine& engine, const ThroughputOptions& o);
// A bounded configuration whose state (bytes_per_seq) is larger than the full cache's at the
// same ctx (k >= ctx when the report has no full): it saves nothing, and is flagged in the JSON
// and left out of the plot (named under it).
bool larger_than_full(const ThroughputReport& r, const ThroughputResult& c);

}  // namespace tova::eval
