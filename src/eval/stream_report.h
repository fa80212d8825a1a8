// Whole-text streaming evaluation (`tova ppl --stream`): one sequence per configuration over
// the whole text, reported as perplexity per window of positions and as a cumulative curve.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/result.h"
#include "tova/eval/ppl.h"
#include "eval/ppl_sweep.h"
#include "kv/positions.h"

namespace tova::eval {

// The curve of one configuration of a one-chunk sweep (nll_by_position is the sequence's NLLs).
StreamCurve stream_curve(const ConfigResult& c, kv::PositionMode positions, int64_t window);

nlohmann::ordered_json stream_json(const std::vector<StreamCurve>& curves,
                                   const nlohmann::ordered_json& header);
// One row per (configuration, window): label,policy,budget,positions,window_end,window_ppl,
// cumulative_ppl.
std::string stream_csv(const std::vector<StreamCurve>& curves);

}  // namespace tova::eval
