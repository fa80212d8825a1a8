// Plots of eval's records (tova/eval.h), drawn by gnuplot run as a subprocess on a generated
// script that carries its data inline. The script is kept next to the images so a plot can be
// restyled and re-run with `gnuplot NAME.gp` from the output folder. A front-end module: the
// library returns records and never forks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tova/eval.h"
#include "tova/result.h"

namespace tova::plot {

// The records plotted, by their short names.
using eval::ConfigResult;
using eval::EvalRecord;
using eval::GridConfig;
using eval::NllCell;
using eval::StreamCurve;
using eval::SweepResult;
using eval::ThroughputReport;
using eval::ThroughputResult;
using eval::TraceResult;
using eval::TurnCell;

// Runs `gnuplot script` (a file name inside dir) with dir as the working folder. An error
// carries gnuplot's first complaint, or says that gnuplot is missing.
Status run_gnuplot(const std::string& dir, const std::string& script);
// s as a gnuplot double-quoted string literal.
std::string gnuplot_string(const std::string& s);
// A log2 x axis over the budgets ks (ascending, not empty): its range with a margin and one tic
// per budget, as gnuplot commands.
std::string log_budget_axis(const std::vector<int>& ks);
// The line style of series i of a plot: ` lc rgb "#..." dt ...`. Series 0..11 each get their
// own colour and their own dash pattern, and no two series of a plot get both alike.
std::string series_style(size_t i);

// The gnuplot script for perplexity vs budget (log2 x axis, one line per policy with error
// bars, full as a dashed horizontal topline), writing ppl.png and ppl.svg.
std::string sweep_plot_script(const eval::SweepResult& r, const std::string& title);
// Writes dir/ppl.gp and runs it.
Status plot_sweep(const eval::SweepResult& r, const std::string& title, const std::string& dir);

// The top of the stream plot's linear y axis: 3x full's perplexity in its first window (inside
// its trained context), or 3x the lowest median window of the curves when full is absent.
double stream_plot_ymax(const std::vector<eval::StreamCurve>& curves);
// The gnuplot script of windowed perplexity against position (linear y from 0 to
// stream_plot_ymax, each curve its own colour and dash, full black and dashed, a dotted
// vertical line at the model's trained context when > 0); writes stream.png and stream.svg.
std::string stream_plot_script(const std::vector<eval::StreamCurve>& curves,
                               const std::string& title, int64_t trained_ctx);
// Writes dir/stream.gp and runs it.
Status plot_stream(const std::vector<eval::StreamCurve>& curves, const std::string& title,
                   int64_t trained_ctx, const std::string& dir);

// The gnuplot script for a trace heat map (x = position, y = layer): survival on top, the
// share of KV heads holding each token at the end below; writes trace.png.
std::string trace_plot_script(const eval::TraceResult& r, const std::string& title);
Status plot_trace(const eval::TraceResult& r, const std::string& title, const std::string& dir);

// Writes acc-TASK.gp/.png/.svg and nll-TASK (the paired NLL difference against full, when the
// grid has full) for every task, turns-TASK for conversations and heat-TASK for every task with
// depths into dir, and runs gnuplot on them; returns the files' stems.
Result<std::vector<std::string>> plot_eval(const std::vector<eval::EvalRecord>& records,
                                           const std::string& title, const std::string& dir);

// gnuplot script: relative decode throughput (left axis) and max batch (right axis) against
// the multi-state size k on a log2 axis, `full` at k = ctx; writes throughput.png and .svg.
std::string throughput_plot_script(const eval::ThroughputReport& r, const std::string& title);
// Writes dir/throughput.gp and runs it.
Status plot_throughput(const eval::ThroughputReport& r, const std::string& title,
                       const std::string& dir);

}  // namespace tova::plot
