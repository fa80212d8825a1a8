#include "eval/plots.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "eval/output_dir.h"

namespace tova::eval {

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

std::string sweep_plot_script(const SweepResult& r, const std::string& title) {
  // Series per bounded policy, in first-seen order.
  std::vector<std::string> names;
  std::map<std::string, std::vector<const ConfigResult*>> series;
  std::optional<double> full;
  std::vector<int> budgets;
  double lo = INFINITY, hi = 0;
  for (const ConfigResult& c : r.configs) {
    lo = std::min(lo, c.ppl);
    hi = std::max(hi, c.ppl);
    if (!c.policy.bounded()) {
      full = c.ppl;
      continue;
    }
    const std::string name = c.policy.label();
    if (!series.count(name)) names.push_back(name);
    series[name].push_back(&c);
    if (std::find(budgets.begin(), budgets.end(), c.policy.budget) == budgets.end()) {
      budgets.push_back(c.policy.budget);
    }
  }
  std::sort(budgets.begin(), budgets.end());

  std::string s;
  s += "# tova ppl: perplexity vs budget. Re-draw with: gnuplot ppl.gp\n";
  for (size_t i = 0; i < names.size(); ++i) {
    s += fmt::format("$d{} << EOD\n# budget ppl ppl_stderr\n", i);
    std::vector<const ConfigResult*> pts = series[names[i]];
    std::sort(pts.begin(), pts.end(),
              [](auto* a, auto* b) { return a->policy.budget < b->policy.budget; });
    for (const ConfigResult* c : pts) {
      s += fmt::format("{} {:.6f} {:.6f}\n", c->policy.budget, c->ppl,
                       std::isnan(c->ppl_se) ? 0.0 : c->ppl_se);
    }
    s += "EOD\n";
  }
  s += "set encoding utf8\n";
  s += fmt::format("set title {} noenhanced\n", gp_quote(title));
  s += "set xlabel \"budget k (states kept per layer)\"\n";
  s += "set ylabel \"perplexity\"\n";
  s += "set key outside right top noenhanced\n";
  s += "set grid\n";
  if (!budgets.empty()) {
    s += "set logscale x 2\n";
    s += fmt::format("set xrange [{}:{}]\n", budgets.front() / 1.4, budgets.back() * 1.4);
    std::string tics;
    for (int b : budgets) tics += (tics.empty() ? "" : ", ") + std::to_string(b);
    s += "set xtics (" + tics + ")\n";
  } else {
    s += fmt::format("set xrange [1:{}]\n", r.ctx);
  }
  // A policy that collapses (window beyond the trained context) would flatten the others.
  if (hi > 0 && lo > 0 && hi / lo > 20) s += "set logscale y\n";

  std::string plot = "plot ";
  const char* sep = "";
  for (size_t i = 0; i < names.size(); ++i) {
    // Nudge each series sideways (on the log axis) so error bars of equal budgets stay apart.
    const double nudge = std::exp2(0.025 * (static_cast<double>(i) - (names.size() - 1) / 2.0));
    plot += fmt::format("{}$d{} using ($1*{:.4f}):2:3 with yerrorlines lw 2 pt 7 ps 0.8 title {}",
                        sep, i, nudge, gp_quote(names[i]));
    sep = ", \\\n     ";
  }
  if (full) {
    plot +=
        fmt::format("{}{:.6f} with lines dt 2 lw 2 lc rgb \"black\" title \"full\"", sep, *full);
  }
  s += "set terminal pngcairo size 1000,640 font \",11\"\n";
  s += "set output \"ppl.png\"\n";
  s += plot + "\n";
  s += "set terminal svg size 1000,640 dynamic font \",11\"\n";
  s += "set output \"ppl.svg\"\n";
  s += "replot\n";
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
  s += "set logscale cb\nset cbrange [1:*]\n";
  s += "set title \"1 + survival (later tokens that attended to it; mean over KV heads; log "
       "colour scale)\"\n";
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

}  // namespace tova::eval
