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
#include <vector>

#include "core/result.h"
#include "eval/trace.h"

namespace tova::eval {

struct EvictionComparison {
  std::vector<double> differ;   // [n_layer]; NaN where neither run evicted
  std::vector<double> overlap;  // [n_layer]; NaN where the reference never evicted
  // [n_layer]: the first step at which some KV head's evictions differ; -1: never.
  std::vector<int64_t> first_difference;
  double differ_mean = 0;   // over layers (and KV heads, pooled)
  double overlap_mean = 0;  // over layers
};

// ref and other must trace the same tokens with the same layers, KV heads and budget.
Result<EvictionComparison> compare_evictions(const TraceResult& ref, const TraceResult& other);

}  // namespace tova::eval
