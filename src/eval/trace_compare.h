// Two traces of the same tokens and policy in different K/V storage types (tova trace
// --compare-kv-type): how often the policy evicted a different state, per layer. The eviction
// scores come from attention over the stored keys, so a quantized key can change the choice;
// this counts it over a whole text.
//
// Both runs are independent, as a user would run them: once a choice differs, the held sets
// differ and later choices are made over different states. So two figures per layer:
// - differ: of the (KV head, step) pairs at which either run evicted, the share where the two
//   runs evicted different positions (a first different choice, and what follows from it);
// - overlap: |held by both| / |held by the reference| after each step at which the reference
//   evicted, averaged over those steps and the KV heads (1: the same states held).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "core/result.h"
#include "tova/eval/trace.h"
#include "eval/trace.h"

namespace tova::eval {

// ref and other must trace the same tokens with the same layers, KV heads and budget.
Result<EvictionComparison> compare_evictions(const TraceResult& ref, const TraceResult& other);

// Traces `tokens` under o, then again under o with each format of `compare`; the error names
// the format whose run failed. Comparing needs a policy that evicts.
Result<TraceRun> run_trace_compared(const model::Model& m, ThreadPool& pool,
                                    std::span<const int32_t> tokens, const TraceOptions& o,
                                    std::span<const KvFormat> compare);
// trace.json's "kv_type_comparison" list: per compared format, its per-layer shares (null where
// there is no figure).
nlohmann::ordered_json comparison_json(const TraceRun& run);

}  // namespace tova::eval
