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

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "tova/eval/throughput.h"
#include "core/thread_pool.h"
#include "model/model.h"
#include "runtime/sequence.h"

namespace tova::eval {

// ThroughputReport::json as a document: one object per configuration, `header`'s fields (the
// model, threads, ...) in every object.
nlohmann::ordered_json throughput_json(const ThroughputReport& r,
                                       const nlohmann::ordered_json& header);

// Bytes of K/V one sequence of this model allocates under `policy` after seeing ctx tokens
// with `extra_steps` more reserved (unbounded only), by building the state and asking it.
Result<uint64_t> bytes_per_sequence(const model::Model& m, const kv::PolicySpec& policy,
                                    const KvFormat& kv_type, int ctx, int extra_steps);

// Runs every configuration of `o` on `m`; the first error stops the run. A configuration whose
// single sequence does not fit kv_memory is an error that names it and both sizes.
Result<ThroughputReport> run_throughput(const model::Model& m, ThreadPool& pool,
                                        const ThroughputOptions& o);

}  // namespace tova::eval
