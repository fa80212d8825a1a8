// Whole-text streaming evaluation (`tova ppl --stream`): one sequence per configuration over
// the whole text, reported as perplexity per window of positions and as a cumulative curve.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/result.h"
#include "eval/ppl_sweep.h"
#include "kv/positions.h"

namespace tova::eval {

struct StreamCurve {
  std::string label;  // "tova k=512 gap", "full"
  kv::PolicySpec policy;
  kv::PositionMode positions = kv::PositionMode::kAbsolute;
  int64_t n_predictions = 0;
  double ppl = 0;  // over every prediction scored
  // Window w covers predictions [w * window, min((w + 1) * window, n)) of the sequence, i.e.
  // the predictions of positions 1 .. ; window_end[w] is its last position (exclusive end).
  std::vector<int64_t> window_end;
  std::vector<double> window_ppl;
  std::vector<double> cumulative_ppl;  // over predictions [0, window_end[w])
};

// The curve of one configuration of a one-chunk sweep (nll_by_position is the sequence's NLLs).
StreamCurve stream_curve(const ConfigResult& c, kv::PositionMode positions, int64_t window);

nlohmann::ordered_json stream_json(const std::vector<StreamCurve>& curves,
                                   const nlohmann::ordered_json& header);
// One row per (configuration, window): label,policy,budget,positions,window_end,window_ppl,
// cumulative_ppl.
std::string stream_csv(const std::vector<StreamCurve>& curves);

// The top of the stream plot's linear y axis: 3x full's perplexity in its first window (inside
// its trained context), or 3x the lowest median window of the curves when full is absent.
double stream_plot_ymax(const std::vector<StreamCurve>& curves);
// The gnuplot script of windowed perplexity against position (linear y from 0 to
// stream_plot_ymax, each curve its own colour and dash, full black and dashed, a dotted
// vertical line at the model's trained context when > 0); writes stream.png and stream.svg.
std::string stream_plot_script(const std::vector<StreamCurve>& curves, const std::string& title,
                               int64_t trained_ctx);
// Writes dir/stream.gp and runs it.
Status plot_stream(const std::vector<StreamCurve>& curves, const std::string& title,
                   int64_t trained_ctx, const std::string& dir);

}  // namespace tova::eval
