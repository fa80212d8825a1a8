#include "plots.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "output_dir.h"

namespace tova::plot {

namespace {

// Quotes a string for a gnuplot double-quoted literal.
std::string gp_quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += (c == '\n') ? ' ' : c;
  }
  return q + "\"";
}

}  // namespace

std::string gnuplot_string(const std::string& s) { return gp_quote(s); }

std::string series_style(size_t i) {
  // Twelve colours that stay apart on white and for common colour blindness (Paul Tol's
  // "muted" and "bright" sets), and twelve dash patterns.
  static constexpr const char* kColours[] = {"#332288", "#cc6677", "#117733", "#ddcc77",
                                             "#88ccee", "#882255", "#44aa99", "#999933",
                                             "#aa4499", "#ee6677", "#4477aa", "#ccbb44"};
  static constexpr const char* kDashes[] = {"1",           "(10,5)",     "(3,4)",
                                            "(12,4,3,4)",  "(18,6)",     "(6,6)",
                                            "(14,4,3,4,3,4)", "(8,3)",   "(2,8)",
                                            "(12,3,2,3)",  "(20,4,6,4)", "(4,4,12,4)"};
  constexpr size_t n = std::size(kColours);
  // Past 12 the dash shifts, so (colour, dash) pairs stay unique up to 144 series.
  return fmt::format(" lc rgb \"{}\" dt {}", kColours[i % n], kDashes[(i + i / n) % n]);
}

std::string log_budget_axis(const std::vector<int>& ks) {
  std::string tics;
  for (int k : ks) tics += (tics.empty() ? "" : ", ") + std::to_string(k);
  return fmt::format("set logscale x 2\nset xrange [{}:{}]\nset xtics ({})\n", ks.front() / 1.4,
                     ks.back() * 1.4, tics);
}

Status run_gnuplot(const std::string& dir, const std::string& script) {
  const std::string log = dir + "/gnuplot.log";
  const pid_t pid = ::fork();
  if (pid < 0) return make_error("cannot start gnuplot: fork failed");
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec (the parent has threads).
    if (::chdir(dir.c_str()) != 0) ::_exit(126);
    const int fd = ::open("gnuplot.log", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    const char* argv[] = {"gnuplot", script.c_str(), nullptr};
    ::execvp("gnuplot", const_cast<char* const*>(argv));
    ::_exit(127);
  }
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0) {
    if (errno != EINTR) return make_error("cannot wait for gnuplot");
  }
  std::string first;
  {
    std::ifstream in(log);
    std::string line;
    while (std::getline(in, line)) {
      if (line.find_first_not_of(" \t^") == std::string::npos) continue;
      first = line;
      if (line.find("line ") != std::string::npos || line.find("rror") != std::string::npos) {
        break;
      }
    }
  }
  std::error_code ec;
  std::filesystem::remove(log, ec);
  if (!WIFEXITED(wstatus)) return make_error("gnuplot {} crashed", script);
  const int code = WEXITSTATUS(wstatus);
  if (code == 127) return make_error("cannot run gnuplot: it is not installed (not on PATH)");
  if (code == 126) return make_error("cannot run gnuplot in '{}'", dir);
  if (code != 0) return make_error("gnuplot failed on {}: {}", script, first);
  return ok_status();
}

namespace {

// The bounded configurations of a sweep as one series per policy (and K/V type), in first-seen
// order, with full's perplexity, the budgets and the perplexity range.
struct SweepSeries {
  std::vector<std::string> names;
  std::map<std::string, std::vector<const ConfigResult*>> points;  // by budget
  std::optional<double> full;
  std::vector<int> budgets;
  double lo = INFINITY, hi = 0;
};

SweepSeries sweep_series(const SweepResult& r) {
  SweepSeries ss;
  for (const ConfigResult& c : r.configs) {
    ss.lo = std::min(ss.lo, c.ppl);
    ss.hi = std::max(ss.hi, c.ppl);
    if (!c.policy.bounded()) {
      if (!ss.full) ss.full = c.ppl;  // the first format's
      continue;
    }
    const std::string name =
        r.several_kv_types ? c.policy.label() + " " + c.kv_type.label() : c.policy.label();
    if (!ss.points.count(name)) ss.names.push_back(name);
    ss.points[name].push_back(&c);
    if (std::find(ss.budgets.begin(), ss.budgets.end(), c.policy.budget) == ss.budgets.end()) {
      ss.budgets.push_back(c.policy.budget);
    }
  }
  std::sort(ss.budgets.begin(), ss.budgets.end());
  for (auto& [name, pts] : ss.points) {
    std::sort(pts.begin(), pts.end(),
              [](auto* a, auto* b) { return a->policy.budget < b->policy.budget; });
  }
  return ss;
}

// One data block $d<i> per series: budget, ppl, its standard error, Δ NLL vs full, its error.
std::string sweep_data_blocks(const SweepSeries& ss) {
  std::string s;
  auto finite = [](const std::optional<double>& v) { return v && std::isfinite(*v) ? *v : 0.0; };
  for (size_t i = 0; i < ss.names.size(); ++i) {
    s += fmt::format("$d{} << EOD\n# budget ppl ppl_stderr dnll_vs_full dnll_stderr\n", i);
    for (const ConfigResult* c : ss.points.at(ss.names[i])) {
      s += fmt::format("{} {:.6f} {:.6f} {:.6f} {:.6f}\n", c->policy.budget, c->ppl,
                       std::isnan(c->ppl_se) ? 0.0 : c->ppl_se, finite(c->dnll_mean),
                       finite(c->dnll_se));
    }
    s += "EOD\n";
  }
  return s;
}

// A panel's plot command: every series' columns x:y:err, nudged sideways (on the log axis) so
// error bars of equal budgets stay apart, and a dashed black line at `ref` titled "full".
std::string sweep_plot_line(const SweepSeries& ss, const char* columns,
                            const std::optional<double>& ref) {
  const size_t n = ss.names.size();
  std::string plot = "plot ";
  const char* sep = "";
  for (size_t i = 0; i < n; ++i) {
    const double nudge = std::exp2(0.025 * (static_cast<double>(i) - (n - 1) / 2.0));
    plot += fmt::format("{}$d{} using ($1*{:.4f}):{} with yerrorlines lw 2 pt 7 ps 0.8{} title {}",
                        sep, i, nudge, columns, series_style(i), gp_quote(ss.names[i]));
    sep = ", \\\n     ";
  }
  if (ref) plot += fmt::format("{}{:.6f} with lines dt 2 lw 2 lc rgb \"black\" title \"full\"", sep, *ref);
  if (n == 0 && !ref) plot += "NaN notitle";
  return plot + "\n";
}

}  // namespace

std::string sweep_plot_script(const SweepResult& r, const std::string& title) {
  const SweepSeries ss = sweep_series(r);
  // The paired panel needs full and more than one chunk (a standard error).
  const bool paired = ss.full.has_value() && r.n_chunks > 1;
  std::string s;
  s += "# tova ppl: perplexity vs budget (left, unpaired standard errors) and the paired\n"
       "# difference in mean NLL against full per chunk (right). Re-draw with: gnuplot ppl.gp\n";
  s += sweep_data_blocks(ss);
  s += "set encoding utf8\n";
  s += "set key outside right top noenhanced\n";
  s += "set grid\n";
  s += ss.budgets.empty() ? fmt::format("set xrange [1:{}]\n", r.ctx) : log_budget_axis(ss.budgets);
  s += "set xlabel \"budget k (states kept per layer)\"\n";
  std::string left = "set ylabel \"perplexity (± standard error over chunks)\"\n";
  // A policy that collapses (window beyond the trained context) would flatten the others.
  if (ss.hi > 0 && ss.lo > 0 && ss.hi / ss.lo > 20) left += "set logscale y\n";
  left += paired ? "set title \"perplexity\"\n" : fmt::format("set title {} noenhanced\n", gp_quote(title));
  left += sweep_plot_line(ss, "2:3", ss.full);
  std::string right;
  if (paired) {
    right += "unset logscale y\n";
    right += "set title \"paired against full: mean over chunks of its NLL minus full's\"\n";
    right += "set ylabel \"Δ mean NLL vs full (nats, ± paired standard error)\"\n";
    right += sweep_plot_line(ss, "4:5", 0.0);
  }
  const int width = paired ? 1700 : 1000;
  const std::string page =
      paired ? fmt::format("set multiplot layout 1,2 title {} noenhanced\n{}{}unset multiplot\n",
                           gp_quote(title), left, right)
             : left;
  s += fmt::format("set terminal pngcairo size {},640 font \",11\"\n", width);
  s += "set output \"ppl.png\"\n";
  s += page;
  s += fmt::format("set terminal svg size {},640 dynamic font \",11\"\n", width);
  s += "set output \"ppl.svg\"\n";
  s += paired ? page : "replot\n";
  s += "unset output\n";
  return s;
}

Status plot_sweep(const SweepResult& r, const std::string& title, const std::string& dir) {
  TOVA_RETURN_IF_ERROR(write_file(dir + "/ppl.gp", sweep_plot_script(r, title)));
  return run_gnuplot(dir, "ppl.gp");
}

std::string trace_plot_script(const TraceResult& r, const std::string& title) {
  const int64_t T = r.n_tokens;
  std::string s;
  s += "# tova trace: survival heat map. Re-draw with: gnuplot trace.gp\n";
  // Matrices: one row per layer, one column per position.
  s += "$surv << EOD\n";
  for (int il = 0; il < r.n_layer; ++il) {
    for (int64_t p = 0; p < T; ++p) {
      s += fmt::format("{}{:.3f}", p ? " " : "", r.layer_survival[il * T + p]);
    }
    s += "\n";
  }
  s += "EOD\n$alive << EOD\n";
  for (int il = 0; il < r.n_layer; ++il) {
    for (int64_t p = 0; p < T; ++p) {
      double share = 0;
      for (int g = 0; g < r.n_head_kv; ++g) share += r.alive_at_end[r.index(il, g, p)];
      s += fmt::format("{}{:.3f}", p ? " " : "", share / r.n_head_kv);
    }
    s += "\n";
  }
  s += "EOD\n";
  s += "set encoding utf8\n";
  s += "set terminal pngcairo size 1400," +
       std::to_string(std::clamp(160 + 60 * r.n_layer, 420, 1400)) + " font \",10\"\n";
  s += "set output \"trace.png\"\n";
  s += fmt::format("set multiplot layout 2,1 title {} noenhanced\n", gp_quote(title));
  s += fmt::format("set xrange [-0.5:{}]\nset yrange [-0.5:{}]\n", T - 0.5, r.n_layer - 0.5);
  s += "set xlabel \"position\"\nset ylabel \"layer\"\n";
  s += fmt::format("set ytics 0,1,{}\n", r.n_layer - 1);
  s += "set palette rgbformulae 21,22,23 negative\n";
  // One colour scale for every trace of this length, whatever the policy: 1 .. T (a token's
  // survival is at most T - 1), so two maps can be compared.
  s += fmt::format("set logscale cb\nset cbrange [1:{}]\n", std::max<int64_t>(2, T));
  s += "set title \"1 + survival (later tokens that attended to it; mean over KV heads; log "
       "colour scale 1..T, the same for every policy)\"\n";
  s += "plot $surv matrix using 1:2:($3+1) with image notitle\n";
  s += "unset logscale cb\nset cbrange [0:1]\n";
  s += "set palette positive defined (0 \"white\", 1 \"dark-blue\")\n";
  s += "set title \"held at the end (share of KV heads)\"\n";
  s += "plot $alive matrix with image notitle\n";
  s += "unset multiplot\nunset output\n";
  return s;
}

Status plot_trace(const TraceResult& r, const std::string& title, const std::string& dir) {
  TOVA_RETURN_IF_ERROR(write_file(dir + "/trace.gp", trace_plot_script(r, title)));
  return run_gnuplot(dir, "trace.gp");
}

}  // namespace tova::plot
