// tova eval: accuracy, per-turn accuracy, answer NLL and depth x length heat maps.
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

namespace {

struct Mean {
  double sum = 0;
  int n = 0;
  double value() const { return n > 0 ? sum / n : NAN; }
};

// A task's name as a file stem: letters, digits, '-' and '_' kept, anything else '-'.
std::string stem_name(const std::string& s) {
  std::string out;
  for (char c : s) {
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '-';
  }
  return out;
}

// Accuracy against budget, one line per bounded policy (mean over lengths and depths), full as
// a dashed line.
std::string accuracy_plot_script(const std::vector<EvalRecord>& records, const std::string& task,
                                 const std::string& title, const std::string& stem) {
  const std::vector<GridConfig> cfgs = eval::grid_configs(records, task);
  std::vector<std::string> names;
  std::map<std::pair<std::string, int>, Mean> acc;
  std::set<int> budgets;
  Mean full;
  for (const EvalRecord& r : records) {
    if (r.task != task) continue;
    if (r.budget < 0) {
      full.sum += r.score;
      ++full.n;
      continue;
    }
    if (std::find(names.begin(), names.end(), r.policy) == names.end()) names.push_back(r.policy);
    Mean& m = acc[{r.policy, r.budget}];
    m.sum += r.score;
    ++m.n;
    budgets.insert(r.budget);
  }
  std::string s = fmt::format("# tova eval: accuracy vs budget ({}). Re-draw with: gnuplot {}.gp\n",
                              task, stem);
  for (size_t i = 0; i < names.size(); ++i) {
    s += fmt::format("$d{} << EOD\n# budget accuracy%\n", i);
    for (int b : budgets) {
      auto it = acc.find({names[i], b});
      if (it != acc.end()) s += fmt::format("{} {:.3f}\n", b, 100 * it->second.value());
    }
    s += "EOD\n";
  }
  s += "set encoding utf8\n";
  s += fmt::format("set title {} noenhanced\n", gnuplot_string(title + ": " + task));
  s += "set xlabel \"budget k (states kept per layer)\"\nset ylabel \"accuracy (%)\"\n";
  s += "set yrange [-3:103]\nset key outside right top noenhanced\nset grid\n";
  if (!budgets.empty()) {
    s += log_budget_axis({budgets.begin(), budgets.end()});
  }
  std::string plot = "plot ";
  const char* sep = "";
  for (size_t i = 0; i < names.size(); ++i) {
    plot += fmt::format("{}$d{} using 1:2 with linespoints lw 2 pt {} ps 1{} title {}", sep, i,
                        5 + static_cast<int>(i) % 9, series_style(i), gnuplot_string(names[i]));
    sep = ", \\\n     ";
  }
  if (full.n > 0) {
    plot += fmt::format("{}{:.3f} with lines dt 2 lw 2 lc rgb \"black\" title \"full\"", sep,
                        100 * full.value());
  }
  if (names.empty() && full.n == 0) plot += "NaN notitle";
  s += "set terminal pngcairo size 1000,640 font \",11\"\n";
  s += fmt::format("set output \"{}.png\"\n{}\n", stem, plot);
  s += "set terminal svg size 1000,640 dynamic font \",11\"\n";
  s += fmt::format("set output \"{}.svg\"\nreplot\nunset output\n", stem);
  return s;
}

// One configuration's accuracy (percent; NaN where the grid has no record) by depth (rows)
// and length (columns), as gnuplot's `matrix with image` reads it.
std::string heat_matrix(const std::vector<EvalRecord>& records, const std::string& task,
                        const GridConfig& c, const std::vector<int>& lengths,
                        const std::vector<int>& depths) {
  std::string m;
  for (int d : depths) {
    for (size_t li = 0; li < lengths.size(); ++li) {
      Mean a;
      for (const EvalRecord& r : records) {
        if (r.task == task && r.policy == c.policy && r.budget == c.budget && r.depth == d &&
            r.length == lengths[li]) {
          a.sum += r.score;
          ++a.n;
        }
      }
      m += fmt::format("{}{:.2f}", li ? " " : "", a.n ? 100 * a.value() : NAN);
    }
    m += "\n";
  }
  return m;
}

// One panel per configuration (rows: policies, columns: budgets; full alone in the first row):
// depth (y) x length (x), colour = accuracy on one scale 0..100 % for every panel.
std::string heat_plot_script(const std::vector<EvalRecord>& records, const std::string& task,
                             const std::string& title, const std::string& stem) {
  const auto lengths = eval::grid_lengths(records, task);
  const auto depths = eval::grid_depths(records, task);
  const std::vector<GridConfig> cfgs = eval::grid_configs(records, task);
  std::vector<std::string> policies;
  std::vector<int> budgets;
  bool has_full = false;
  for (const GridConfig& c : cfgs) {
    if (c.budget < 0) {
      has_full = true;
      continue;
    }
    if (std::find(policies.begin(), policies.end(), c.policy) == policies.end()) policies.push_back(c.policy);
    if (std::find(budgets.begin(), budgets.end(), c.budget) == budgets.end()) budgets.push_back(c.budget);
  }
  std::sort(budgets.begin(), budgets.end());
  const int cols = std::max<int>(1, static_cast<int>(budgets.size()));
  const int rows = static_cast<int>(policies.size()) + (has_full ? 1 : 0);
  std::string s = fmt::format(
      "# tova eval: accuracy by needle depth and length ({}), one panel per configuration, one "
      "colour scale. Re-draw with: gnuplot {}.gp\n",
      task, stem);
  std::vector<std::pair<std::string, GridConfig>> panels;  // title, config
  if (has_full) panels.push_back({"full", {"full", -1}});
  for (const std::string& p : policies) {
    for (int b : budgets) panels.push_back({fmt::format("{} k={}", p, b), {p, b}});
  }
  for (size_t i = 0; i < panels.size(); ++i) {
    s += fmt::format("$m{} << EOD\n{}EOD\n", i,
                     heat_matrix(records, task, panels[i].second, lengths, depths));
  }
  std::string xt, yt;
  for (size_t i = 0; i < lengths.size(); ++i) xt += fmt::format("{}\"{}\" {}", i ? ", " : "", lengths[i], i);
  for (size_t i = 0; i < depths.size(); ++i) yt += fmt::format("{}\"{}\" {}", i ? ", " : "", depths[i], i);
  s += "set encoding utf8\n";
  s += "set palette defined (0 \"#b2182b\", 50 \"#f7f7f7\", 100 \"#2166ac\")\n";
  s += "set cbrange [0:100]\nset cblabel \"accuracy (%)\"\n";
  s += fmt::format("set xtics ({})\nset ytics ({})\n", xt, yt);
  s += fmt::format("set xrange [-0.5:{}]\nset yrange [-0.5:{}]\n", lengths.size() - 0.5,
                   depths.size() - 0.5);
  s += "set xlabel \"length (tokens)\"\nset ylabel \"needle depth (%)\"\n";
  std::string body = fmt::format("set multiplot layout {},{} title {} noenhanced\n", rows, cols,
                                 gnuplot_string(title + ": " + task + " by depth and length"));
  size_t at = 0;
  for (int row = 0; row < rows; ++row) {
    for (int col = 0; col < cols; ++col) {
      if (has_full && row == 0 && col > 0) {
        body += "set multiplot next\n";
        continue;
      }
      body += fmt::format("set title {} noenhanced\nplot $m{} matrix with image notitle\n",
                          gnuplot_string(panels[at].first), at);
      ++at;
    }
  }
  body += "unset multiplot\n";
  const int w = 120 + 300 * cols, h = 80 + 260 * rows;
  s += fmt::format("set terminal pngcairo size {},{} font \",10\"\nset output \"{}.png\"\n{}", w, h,
                   stem, body);
  s += fmt::format("set terminal svg size {},{} dynamic font \",10\"\nset output \"{}.svg\"\n{}", w,
                   h, stem, body);
  s += "unset output\n";
  return s;
}

// Conversations: accuracy per turn, one panel per budget, one line per policy (colour and dash
// fixed per policy across panels), full's per-turn accuracy as a dashed black line (the ceiling).
std::string turns_plot_script(const std::vector<EvalRecord>& records, const std::string& task,
                              const std::string& title, const std::string& stem) {
  const std::vector<TurnCell> cells = turn_cells(records);
  std::vector<std::string> policies;
  std::vector<int> budgets;
  int n_turns = 0;
  std::map<std::tuple<std::string, int, int>, Mean> acc;  // (policy, budget, turn), lengths pooled
  for (const TurnCell& c : cells) {
    if (c.task != task) continue;
    n_turns = std::max(n_turns, c.turn);
    Mean& m = acc[{c.policy, c.budget, c.turn}];
    m.sum += c.accuracy * c.n;
    m.n += c.n;
    if (c.budget < 0) continue;
    if (std::find(policies.begin(), policies.end(), c.policy) == policies.end()) policies.push_back(c.policy);
    if (std::find(budgets.begin(), budgets.end(), c.budget) == budgets.end()) budgets.push_back(c.budget);
  }
  std::sort(budgets.begin(), budgets.end());
  if (budgets.empty()) budgets.push_back(-1);
  std::string s = fmt::format(
      "# tova eval: accuracy per turn of one conversation ({}), one panel per budget. Re-draw "
      "with: gnuplot {}.gp\n",
      task, stem);
  auto block = [&](const std::string& name, const std::string& policy, int budget) {
    std::string b = fmt::format("${} << EOD\n# turn accuracy%\n", name);
    for (int t = 1; t <= n_turns; ++t) {
      auto it = acc.find({policy, budget, t});
      if (it != acc.end() && it->second.n > 0) b += fmt::format("{} {:.3f}\n", t, 100 * it->second.value());
    }
    return b + "EOD\n";
  };
  bool has_full = false;
  for (const TurnCell& c : cells) has_full |= c.task == task && c.budget < 0;
  if (has_full) s += block("full", "full", -1);
  for (size_t bi = 0; bi < budgets.size(); ++bi) {
    for (size_t pi = 0; pi < policies.size(); ++pi) {
      s += block(fmt::format("d{}_{}", bi, pi), policies[pi], budgets[bi]);
    }
  }
  s += "set encoding utf8\nset yrange [-3:103]\nset grid\nset key outside right top noenhanced\n";
  s += fmt::format("set xrange [0.8:{}]\nset xtics 1\n", n_turns + 0.2);
  s += "set xlabel \"turn (question asked of the same state)\"\nset ylabel \"accuracy (%)\"\n";
  std::string body = fmt::format("set multiplot layout 1,{} title {} noenhanced\n", budgets.size(),
                                 gnuplot_string(title + ": " + task + " per turn"));
  for (size_t bi = 0; bi < budgets.size(); ++bi) {
    body += fmt::format("set title {} noenhanced\n",
                        gnuplot_string(budgets[bi] < 0 ? std::string("full") : fmt::format("k = {}", budgets[bi])));
    std::string plot = "plot ";
    const char* sep = "";
    for (size_t pi = 0; pi < policies.size(); ++pi) {
      plot += fmt::format("{}$d{}_{} using 1:2 with linespoints lw 2 pt {}{} title {}", sep, bi,
                          pi, 5 + static_cast<int>(pi) % 9, series_style(pi),
                          gnuplot_string(policies[pi]));
      sep = ", \\\n     ";
    }
    if (has_full) {
      plot += fmt::format("{}$full using 1:2 with lines dt 2 lw 2 lc rgb \"black\" title \"full\"", sep);
    }
    if (policies.empty() && !has_full) plot += "NaN notitle";
    body += plot + "\n";
  }
  body += "unset multiplot\n";
  const int w = 160 + 420 * static_cast<int>(budgets.size());
  s += fmt::format("set terminal pngcairo size {},520 font \",10\"\nset output \"{}.png\"\n{}", w, stem, body);
  s += fmt::format("set terminal svg size {},520 dynamic font \",10\"\nset output \"{}.svg\"\n{}", w, stem, body);
  s += "unset output\n";
  return s;
}

// The answers' NLL against budget: the paired difference against full (nats per token), one
// line per policy with its standard error as error bars; 0 is full.
std::string nll_plot_script(const std::vector<EvalRecord>& records, const std::string& task,
                            const std::string& title, const std::string& stem) {
  const std::vector<NllCell> cells = nll_cells(records);
  std::vector<std::string> names;
  std::set<int> budgets;
  // (policy, budget) -> pooled over lengths: the cells' pairs weigh their means.
  std::map<std::pair<std::string, int>, std::pair<Mean, Mean>> d;  // delta, se^2 * n^2
  for (const NllCell& c : cells) {
    if (c.task != task || c.budget < 0 || c.n_pairs == 0) continue;
    if (std::find(names.begin(), names.end(), c.policy) == names.end()) names.push_back(c.policy);
    budgets.insert(c.budget);
    auto& [mean, var] = d[{c.policy, c.budget}];
    mean.sum += c.delta * c.n_pairs;
    mean.n += c.n_pairs;
    const double se = std::isnan(c.delta_se) ? 0.0 : c.delta_se;
    var.sum += se * se * c.n_pairs * c.n_pairs;
    var.n += c.n_pairs;
  }
  std::string s = fmt::format(
      "# tova eval: answer NLL minus full's, paired (nats per token) ({}). Re-draw with: gnuplot "
      "{}.gp\n",
      task, stem);
  for (size_t i = 0; i < names.size(); ++i) {
    s += fmt::format("$d{} << EOD\n# budget delta se\n", i);
    for (int b : budgets) {
      auto it = d.find({names[i], b});
      if (it == d.end()) continue;
      const double n = it->second.first.n;
      s += fmt::format("{} {:.5f} {:.5f}\n", b, it->second.first.value(),
                       std::sqrt(it->second.second.sum) / n);
    }
    s += "EOD\n";
  }
  s += "set encoding utf8\n";
  s += fmt::format("set title {} noenhanced\n", gnuplot_string(title + ": " + task + ", answer NLL"));
  s += "set xlabel \"budget k (states kept per layer)\"\n";
  s += "set ylabel \"answer NLL - full's (nats/token, paired; bars: se)\"\n";
  s += "set key outside right top noenhanced\nset grid\n";
  if (!budgets.empty()) {
    s += log_budget_axis({budgets.begin(), budgets.end()});
  }
  std::string plot = "plot ";
  const char* sep = "";
  for (size_t i = 0; i < names.size(); ++i) {
    plot += fmt::format("{}$d{} using 1:2:3 with yerrorlines lw 2 pt {} ps 1{} title {}", sep, i,
                        5 + static_cast<int>(i) % 9, series_style(i), gnuplot_string(names[i]));
    sep = ", \\\n     ";
  }
  plot += fmt::format("{}0 with lines dt 2 lw 2 lc rgb \"black\" title \"full\"", sep);
  s += "set terminal pngcairo size 1000,640 font \",11\"\n";
  s += fmt::format("set output \"{}.png\"\n{}\n", stem, plot);
  s += "set terminal svg size 1000,640 dynamic font \",11\"\n";
  s += fmt::format("set output \"{}.svg\"\nreplot\nunset output\n", stem);
  return s;
}

}  // namespace

Result<std::vector<std::string>> plot_eval(const std::vector<EvalRecord>& records,
                                           const std::string& title, const std::string& dir) {
  std::vector<std::string> stems;
  for (const std::string& task : eval::grid_tasks(records)) {
    const std::string acc = "acc-" + stem_name(task);
    TOVA_RETURN_IF_ERROR(write_file(dir + "/" + acc + ".gp",
                                    accuracy_plot_script(records, task, title, acc)));
    TOVA_RETURN_IF_ERROR(run_gnuplot(dir, acc + ".gp"));
    stems.push_back(acc);
    bool turns = false, paired = false;
    for (const EvalRecord& r : records) turns |= r.task == task && r.n_turns > 1;
    for (const NllCell& c : nll_cells(records)) paired |= c.task == task && c.budget >= 0 && c.n_pairs > 0;
    if (turns) {
      const std::string t = "turns-" + stem_name(task);
      TOVA_RETURN_IF_ERROR(write_file(dir + "/" + t + ".gp", turns_plot_script(records, task, title, t)));
      TOVA_RETURN_IF_ERROR(run_gnuplot(dir, t + ".gp"));
      stems.push_back(t);
    }
    if (paired) {
      const std::string n = "nll-" + stem_name(task);
      TOVA_RETURN_IF_ERROR(write_file(dir + "/" + n + ".gp", nll_plot_script(records, task, title, n)));
      TOVA_RETURN_IF_ERROR(run_gnuplot(dir, n + ".gp"));
      stems.push_back(n);
    }
    const auto depths = eval::grid_depths(records, task);
    if (depths.empty() || depths.front() < 0) continue;
    const std::string heat = "heat-" + stem_name(task);
    TOVA_RETURN_IF_ERROR(write_file(dir + "/" + heat + ".gp",
                                    heat_plot_script(records, task, title, heat)));
    TOVA_RETURN_IF_ERROR(run_gnuplot(dir, heat + ".gp"));
    stems.push_back(heat);
  }
  return stems;
}

}  // namespace tova::plot
