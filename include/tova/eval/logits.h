// The logits of every position (tova logits): what golden tests compare.
// Part of the evaluation API (tova/eval.h); each takes a loaded Engine and returns plain records.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tova/engine.h"
#include "tova/options.h"
#include "tova/result.h"

namespace tova::eval {

// ---- Logits (tova logits) ---------------------------------------------------------------------
// The logits after every position of ids ([ids.size()][n_vocab]), fed under `cache` in
// micro-batches of n_batch (exact prefill): what golden tests compare with other engines.
Result<std::vector<float>> all_logits(const Engine& engine, std::span<const int32_t> ids,
                                      const CacheOptions& cache, int n_batch);

}  // namespace tova::eval
