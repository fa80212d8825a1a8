// Plots drawn by gnuplot, run as a subprocess on a generated script that carries its data
// inline. The script is kept next to the images so a plot can be restyled and re-run with
// `gnuplot NAME.gp` from the output folder.
#pragma once

#include <string>

#include "core/result.h"
#include "eval/ppl_sweep.h"
#include "eval/trace.h"

namespace tova::eval {

// Runs `gnuplot script` (a file name inside dir) with dir as the working folder. An error
// carries gnuplot's first complaint, or says that gnuplot is missing.
Status run_gnuplot(const std::string& dir, const std::string& script);
// s as a gnuplot double-quoted string literal.
std::string gnuplot_string(const std::string& s);
// The line style of series i of a plot: ` lc rgb "#..." dt ...`. Series 0..11 each get their
// own colour and their own dash pattern, and no two series of a plot get both alike.
std::string series_style(size_t i);

// The gnuplot script for perplexity vs budget (log2 x axis, one line per policy with error
// bars, full as a dashed horizontal topline), writing ppl.png and ppl.svg.
std::string sweep_plot_script(const SweepResult& r, const std::string& title);
// Writes dir/ppl.gp and runs it.
Status plot_sweep(const SweepResult& r, const std::string& title, const std::string& dir);

// The gnuplot script for a trace heat map (x = position, y = layer): survival on top, the
// share of KV heads holding each token at the end below; writes trace.png.
std::string trace_plot_script(const TraceResult& r, const std::string& title);
Status plot_trace(const TraceResult& r, const std::string& title, const std::string& dir);

}  // namespace tova::eval
