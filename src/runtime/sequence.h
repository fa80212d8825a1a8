// A sequence at its simplest: one multi-state fed through the model, with the prefill modes of
// spec/POLICIES.md (exact, chunk:C, chunk:inf). Sessions (tova/session.h) and evaluations
// build on it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/result.h"
#include "core/thread_pool.h"
#include "kv/multi_state.h"
#include "model/model.h"
#include "runtime/cache_options.h"

namespace tova::runtime {

// A multi-state for this model, sized for a prompt of n_prompt tokens (chunk:inf needs it, and
// so do policies that hold a whole prompt before choosing, LayerPlan::holds_prompt: they cut
// it at its end). 0: no prompt known; every token is then a decoding step.
// A policy that evicts only when a caller runs its scoring pass (kvzip, runtime/kvzip_pass.h)
// is refused unless the caller says it runs that pass (runs_cuts). max_image: most tokens of one
// image the sequence takes (kv::MultiStateOptions::max_image; 0: none).
Result<std::unique_ptr<kv::MultiState>> make_state(const model::Model& m, const CacheOptions& o,
                                                   int64_t n_prompt, bool runs_cuts = false,
                                                   int max_image = 0);

// Feeds tokens to one sequence in forward calls of prompt_step(state, n_batch) tokens
// (runtime/forward_batch.h). If last_logits is given, it receives the last token's logits.
Status feed(const model::Model& m, ThreadPool& pool, model::ForwardScratch& scratch,
            kv::MultiState& state, std::span<const int32_t> tokens, int n_batch,
            float* last_logits);

}  // namespace tova::runtime
