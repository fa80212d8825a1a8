// Which tokens a policy keeps: one sequence fed token by token, recording for every layer, KV
// head and position how long the token stayed in the multi-state.
//
// Survival, precisely: the token at position p joins every layer at step p (the step that feeds
// it) and takes part in that step's attention. If the policy evicts it at step e >= p (after
// step e's attention), later tokens p+1..e saw it, and its survival is e - p (0 when it is
// evicted at its own step). A token never evicted is "alive at end" and its survival is
// T - 1 - p for T tokens fed: the later tokens that saw it. So survival is always the number of
// later tokens whose attention included the token, and for window:k it is k for every token
// that is evicted.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "tova/eval/trace.h"
#include "core/thread_pool.h"
#include "kv/multi_state.h"
#include "kv/policy_registry.h"
#include "model/model.h"

namespace tova::eval {

Result<TraceResult> run_trace(const model::Model& m, ThreadPool& pool,
                              std::span<const int32_t> tokens, const TraceOptions& o);

std::vector<TokenSurvival> longest_kept(const TraceResult& r,
                                        const std::function<std::string(int32_t)>& text, int n);

}  // namespace tova::eval
