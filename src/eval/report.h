// Machine-readable forms of sweep and trace results (JSON, CSV). Human-readable tables are the
// front-end's business.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "eval/ppl_sweep.h"
#include "eval/trace.h"

namespace tova::eval {

// {"header": header, "results": [{policy, budget (null for full), kv_type, ppl, ppl_stderr, mean_nll,
// kl_mean, kl_p99, top1_agree (null without full), nll_by_position, nll_by_chunk}, ...]}.
// NaN (a standard error from one chunk) becomes null.
nlohmann::ordered_json sweep_json(const SweepResult& r, const nlohmann::ordered_json& header);
// One line per configuration: policy,budget,kv_type,ppl,ppl_stderr,mean_nll,kl_mean,kl_p99,
// top1_agree;
// empty fields for what is undefined.
std::string sweep_csv(const SweepResult& r);

// Raw trace numbers: survival and alive flags per layer, KV head and position, the per-layer
// summaries, and each token's text.
nlohmann::ordered_json trace_json(const TraceResult& r, const nlohmann::ordered_json& header,
                                  const std::function<std::string(int32_t)>& text, int n_top);

}  // namespace tova::eval
