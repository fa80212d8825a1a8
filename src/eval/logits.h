// The logits after every position of a token list under a multi-state configuration, for
// comparing engines (`tova logits` writes them as float32 [n_tokens][n_vocab]).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/result.h"
#include "tova/eval/logits.h"
#include "core/thread_pool.h"
#include "model/model.h"
#include "tova/options.h"

namespace tova::eval {

// [ids.size()][n_vocab]. The ids must be in the vocabulary (the Engine overload, tova/eval.h,
// checks them with Engine::check_token_ids); chunked
// prefill feeds chunks of its size, exact prefill micro-batches of n_batch.
Result<std::vector<float>> all_logits(const model::Model& m, ThreadPool& pool,
                                      std::span<const int32_t> ids, const CacheOptions& cache,
                                      int n_batch);

}  // namespace tova::eval
