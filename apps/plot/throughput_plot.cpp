// tova throughput: relative decode throughput and max batch against k.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "output_dir.h"
#include "plots.h"

namespace tova::plot {

std::string throughput_plot_script(const ThroughputReport& r, const std::string& title) {
  // One series per policy name and storage type; `full` (unbounded) sits at k = ctx.
  std::vector<std::string> names;
  std::map<std::string, std::vector<const ThroughputResult*>> series;
  std::vector<int> ks;
  std::string skipped;
  for (const ThroughputResult& c : r.results) {
    // A bounded state larger than the full cache at the same ctx saves nothing: not drawn.
    if (larger_than_full(r, c)) {
      skipped += fmt::format("{}{} k={} {}", skipped.empty() ? "" : ", ", c.policy, c.budget,
                             c.kv_type);
      continue;
    }
    const std::string name = c.policy + " " + c.kv_type;
    if (!series.count(name)) names.push_back(name);
    series[name].push_back(&c);
    const int k = c.budget < 0 ? c.ctx : c.budget;
    if (std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(k);
  }
  std::sort(ks.begin(), ks.end());
  std::string s =
      "# tova throughput: decode throughput at a fixed K/V memory. Re-draw with: "
      "gnuplot throughput.gp\n";
  for (size_t i = 0; i < names.size(); ++i) {
    s += fmt::format("$d{} << EOD\n# k relative max_batch avg_ts\n", i);
    std::vector<const ThroughputResult*> pts = series[names[i]];
    std::sort(pts.begin(), pts.end(), [](auto* a, auto* b) {
      return (a->budget < 0 ? a->ctx : a->budget) < (b->budget < 0 ? b->ctx : b->budget);
    });
    for (const ThroughputResult* c : pts) {
      s += fmt::format("{} {:.6f} {} {:.3f}\n", c->budget < 0 ? c->ctx : c->budget, c->relative,
                       c->max_batch, c->avg_ts);
    }
    s += "EOD\n";
  }
  s += "set encoding utf8\n";
  s += fmt::format("set title {} noenhanced\n", gnuplot_string(title));
  s += "set xlabel \"multi-state size k (states per layer; full = ctx)\"\n";
  s += "set ylabel \"decode throughput relative to full\"\n";
  s += "set y2label \"max batch in the K/V budget\"\n";
  s += "set ytics nomirror\nset y2tics\nset yrange [0:*]\nset y2range [0:*]\n";
  s += "set key outside right top noenhanced\nset grid\n";
  if (!ks.empty()) {
    s += log_budget_axis(ks);
  }
  if (!skipped.empty()) {
    s += fmt::format(
        "set label {} at graph 0.01,graph 0.03 front tc rgb \"gray30\" noenhanced\n",
        gnuplot_string("not drawn, their state is larger than full's at ctx " +
                       std::to_string(r.results.front().ctx) + ": " + skipped));
  }
  std::string plot = "plot ";
  const char* sep = "";
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string style = series_style(i);
    plot += fmt::format(
        "{}$d{} using 1:2 axes x1y1 with linespoints lw 2 pt 7{} title {}, "
        "$d{} using 1:3 axes x1y2 with linespoints lw 1 pt 4{} title {}",
        sep, i, style, gnuplot_string(names[i] + " throughput"), i, style,
        gnuplot_string(names[i] + " max batch"));
    sep = ", \\\n     ";
  }
  if (names.empty()) plot += "NaN notitle";
  s += "set terminal pngcairo size 1000,640 font \",11\"\n";
  s += "set output \"throughput.png\"\n";
  s += plot + "\n";
  s += "set terminal svg size 1000,640 dynamic font \",11\"\n";
  s += "set output \"throughput.svg\"\n";
  s += "replot\nunset output\n";
  return s;
}

Status plot_throughput(const ThroughputReport& r, const std::string& title,
                       const std::string& dir) {
  TOVA_RETURN_IF_ERROR(write_file(dir + "/throughput.gp", throughput_plot_script(r, title)));
  return run_gnuplot(dir, "throughput.gp");
}

}  // namespace tova::plot
