// tova ppl --stream: windowed perplexity against position.
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

double stream_plot_ymax(const std::vector<StreamCurve>& curves) {
  // The reference: full's first window (inside its trained context), else the lowest median
  // window of any curve; curves that climb past 3x it (a policy or full falling apart beyond
  // the trained context) leave the top of the plot instead of squashing the others.
  double ref = 0;
  for (const StreamCurve& c : curves) {
    if (!c.policy.bounded() && !c.window_ppl.empty() && std::isfinite(c.window_ppl.front())) {
      ref = c.window_ppl.front();
    }
  }
  if (ref <= 0) {
    ref = INFINITY;
    for (const StreamCurve& c : curves) {
      std::vector<double> w;
      for (double x : c.window_ppl) {
        if (std::isfinite(x)) w.push_back(x);
      }
      if (w.empty()) continue;
      std::nth_element(w.begin(), w.begin() + w.size() / 2, w.end());
      ref = std::min(ref, w[w.size() / 2]);
    }
  }
  return std::isfinite(ref) && ref > 0 ? 3 * ref : 10;
}

std::string stream_plot_script(const std::vector<StreamCurve>& curves, const std::string& title,
                               int64_t trained_ctx) {
  std::string s = "# tova ppl --stream: perplexity per window of positions. Re-draw with: "
                  "gnuplot stream.gp\n";
  int64_t x_max = 1;
  for (size_t i = 0; i < curves.size(); ++i) {
    s += fmt::format("$d{} << EOD\n# window_end window_ppl cumulative_ppl\n", i);
    const StreamCurve& c = curves[i];
    for (size_t w = 0; w < c.window_end.size(); ++w) {
      s += fmt::format("{} {:.6f} {:.6f}\n", c.window_end[w], c.window_ppl[w], c.cumulative_ppl[w]);
      x_max = std::max(x_max, c.window_end[w]);
    }
    s += "EOD\n";
  }
  s += "set encoding utf8\n";
  s += fmt::format("set title {} noenhanced\n", gnuplot_string(title));
  s += "set xlabel \"position in the text (end of each window)\"\n";
  s += "set ylabel \"perplexity of the window\"\n";
  s += "set key outside right top noenhanced\n";
  s += "set grid\n";
  s += fmt::format("set xrange [0:{}]\n", x_max);
  s += fmt::format("set yrange [0:{:.6g}]\n", stream_plot_ymax(curves));
  if (trained_ctx > 0 && trained_ctx < x_max) {
    s += fmt::format(
        "set arrow from {0},graph 0 to {0},graph 1 nohead dt 3 lc rgb \"gray40\"\n"
        "set label \"trained context ({0})\" at {0},graph 0.97 offset 0.5,0 tc rgb \"gray40\"\n",
        trained_ctx);
  }
  std::string plot = "plot ";
  const char* sep = "";
  size_t n_bounded = 0;
  for (size_t i = 0; i < curves.size(); ++i) {
    const bool full = !curves[i].policy.bounded();
    plot += fmt::format("{}$d{} using 1:2 with lines lw 2{} title {}", sep, i,
                        full ? " dt 2 lc rgb \"black\"" : series_style(n_bounded++),
                        gnuplot_string(curves[i].label));
    sep = ", \\\n     ";
  }
  s += "set terminal pngcairo size 1100,640 font \",11\"\n";
  s += "set output \"stream.png\"\n";
  s += plot + "\n";
  s += "set terminal svg size 1100,640 dynamic font \",11\"\n";
  s += "set output \"stream.svg\"\n";
  s += "replot\n";
  s += "unset output\n";
  return s;
}

Status plot_stream(const std::vector<StreamCurve>& curves, const std::string& title,
                   int64_t trained_ctx, const std::string& dir) {
  TOVA_RETURN_IF_ERROR(write_file(dir + "/stream.gp", stream_plot_script(curves, title, trained_ctx)));
  return run_gnuplot(dir, "stream.gp");
}

}  // namespace tova::plot
