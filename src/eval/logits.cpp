#include "eval/logits.h"

#include <algorithm>

#include "runtime/engine_access.h"
#include "runtime/forward_batch.h"
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
  const size_t step = static_cast<size_t>(runtime::prompt_step(*state, n_batch));
  runtime::ForwardBatch batch;
  for (size_t i0 = 0; i0 < ids.size(); i0 += step) {
    batch.clear();
    batch.add(*state, ids.subspan(i0, std::min(step, ids.size() - i0)), runtime::LogitsAt::kEach);
    TOVA_RETURN_IF_ERROR(batch.run(m, pool, scratch, &logits[i0 * n_vocab]));
  }
  return logits;
}

Result<std::vector<float>> all_logits(const Engine& engine, std::span<const int32_t> ids,
                                      const CacheOptions& cache, int n_batch) {
  if (ids.empty()) return make_error("the token list is empty");
  TOVA_RETURN_IF_ERROR(engine.check_token_ids(ids));
  const auto lock = EngineAccess::exclusive(engine);
  return all_logits(EngineAccess::model(engine), EngineAccess::pool(engine), ids, cache, n_batch);
}

}  // namespace tova::eval
