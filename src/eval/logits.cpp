#include "eval/logits.h"

#include <algorithm>

#include "runtime/sequence.h"

namespace tova::eval {

Result<std::vector<float>> all_logits(const model::Model& m, ThreadPool& pool,
                                      std::span<const int32_t> ids, const CacheOptions& cache,
                                      int n_batch) {
  const int n_vocab = m.config().n_vocab;
  TOVA_ASSIGN_OR_RETURN(auto state,
                        runtime::make_state(m, cache, static_cast<int64_t>(ids.size())));
  model::ForwardScratch scratch;
  std::vector<float> logits(ids.size() * static_cast<size_t>(n_vocab));
  // Chunked sequences take chunks of their size, exact ones micro-batches.
  const size_t step = state->max_new() > 1 ? state->max_new() : std::max(1, n_batch);
  std::vector<model::BatchToken> batch;
  for (size_t i0 = 0; i0 < ids.size(); i0 += step) {
    const size_t i1 = std::min(ids.size(), i0 + step);
    batch.clear();
    for (size_t i = i0; i < i1; ++i) {
      batch.push_back({.token = ids[i], .state = state.get(), .logits = true});
    }
    TOVA_RETURN_IF_ERROR(m.forward(batch, pool, scratch, &logits[i0 * n_vocab]));
  }
  return logits;
}

Result<std::vector<float>> all_logits(const Engine& engine, std::span<const int32_t> ids,
                                      const CacheOptions& cache, int n_batch) {
  if (ids.empty()) return make_error("the token list is empty");
  TOVA_RETURN_IF_ERROR(engine.check_token_ids(ids));
  const auto lock = engine.exclusive();
  return all_logits(engine.model(), engine.pool(), ids, cache, n_batch);
}

}  // namespace tova::eval
