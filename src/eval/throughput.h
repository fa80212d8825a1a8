// Decode throughput at a fixed K/V memory budget: the paper's Table 1 protocol ("Transformers
// are Multi-State RNNs", LLaMA-2-7B on a V100) on this engine. For each multi-state
// configuration (a policy and budget in a K/V storage type): the K/V bytes one sequence of
// length ctx allocates (measured from the allocation), the largest batch that fits the budget, then that many sequences decoding
// together in one forward pass per step, and the aggregate decode tokens/s.
//
// How the states are filled: one sequence is prefilled with ctx real (random ordinary) tokens
// under the configuration's policy, exactly as spec/POLICIES.md says, and then copied into
// every other sequence of the batch (MultiState::clone: same keys, values, positions and
// policy state). A step's cost depends on the states each sequence holds (ctx under `full`, k
// under a bounded policy that has seen ctx tokens), the weights and the batch size, never on
// which tokens those states came from, so the copies decode at the speed independent
// sequences would. `full` reserves its slots for ctx plus every measured step up front, so no
// growth happens inside the measurement. Returns data; front-ends format it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "model/model.h"
#include "runtime/sequence.h"

namespace tova::eval {

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
};

// Bytes of K/V one sequence of this model allocates under `policy` after seeing ctx tokens
// with `extra_steps` more reserved (unbounded only), by building the state and asking it.
Result<uint64_t> bytes_per_sequence(const model::Model& m, const kv::PolicySpec& policy,
                                    const KvFormat& kv_type, int ctx, int extra_steps);

// Runs every configuration of `o` on `m`; the first error stops the run. A configuration whose
// single sequence does not fit kv_memory is an error that names it and both sizes.
Result<ThroughputReport> run_throughput(const model::Model& m, ThreadPool& pool,
                                        const ThroughputOptions& o);

}  // namespace tova::eval
