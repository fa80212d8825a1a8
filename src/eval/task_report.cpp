#include "eval/task_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "eval/nll.h"
#include "eval/output_dir.h"
#include "eval/plots.h"

namespace tova::eval {
namespace {

// Configurations in first-seen order, `full` first.
struct Config {
  std::string policy;
  int budget;
  bool operator==(const Config&) const = default;
};

std::vector<Config> configs_of(const std::vector<EvalRecord>& records, const std::string& task) {
  std::vector<Config> out;
  for (const EvalRecord& r : records) {
    if (r.task != task) continue;
    const Config c{r.policy, r.budget};
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  std::stable_sort(out.begin(), out.end(), [](const Config& a, const Config& b) {
    if ((a.budget < 0) != (b.budget < 0)) return a.budget < 0;
    return false;
  });
  return out;
}

std::vector<std::string> tasks_of(const std::vector<EvalRecord>& records) {
  std::vector<std::string> out;
  for (const EvalRecord& r : records) {
    if (std::find(out.begin(), out.end(), r.task) == out.end()) out.push_back(r.task);
  }
  return out;
}

template <typename T, typename F>
std::vector<T> sorted_unique(const std::vector<EvalRecord>& records, const std::string& task, F f) {
  std::set<T> s;
  for (const EvalRecord& r : records) {
    if (r.task == task) s.insert(f(r));
  }
  return {s.begin(), s.end()};
}

struct Mean {
  double sum = 0;
  int n = 0;
  double value() const { return n > 0 ? sum / n : NAN; }
};

std::string stem_name(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '-';
  return out;
}

}  // namespace

std::vector<AccuracyCell> accuracy_cells(const std::vector<EvalRecord>& records) {
  std::vector<AccuracyCell> out;
  for (const std::string& task : tasks_of(records)) {
    const auto lengths = sorted_unique<int>(records, task, [](const EvalRecord& r) { return r.length; });
    for (const Config& c : configs_of(records, task)) {
      for (int len : lengths) {
        Mean m;
        for (const EvalRecord& r : records) {
          if (r.task == task && r.length == len && r.policy == c.policy && r.budget == c.budget) {
            m.sum += r.score;
            ++m.n;
          }
        }
        out.push_back({task, len, c.policy, c.budget, m.n, m.n ? m.value() : 0.0});
      }
    }
  }
  return out;
}

std::vector<TurnCell> turn_cells(const std::vector<EvalRecord>& records) {
  std::vector<TurnCell> out;
  for (const std::string& task : tasks_of(records)) {
    int n_turns = 1;
    for (const EvalRecord& r : records) {
      if (r.task == task) n_turns = std::max(n_turns, r.n_turns);
    }
    if (n_turns < 2) continue;
    const auto lengths = sorted_unique<int>(records, task, [](const EvalRecord& r) { return r.length; });
    for (const Config& c : configs_of(records, task)) {
      for (int len : lengths) {
        for (int turn = 1; turn <= n_turns; ++turn) {
          Mean m;
          for (const EvalRecord& r : records) {
            if (r.task == task && r.length == len && r.policy == c.policy &&
                r.budget == c.budget && r.turn == turn) {
              m.sum += r.score;
              ++m.n;
            }
          }
          out.push_back({task, len, c.policy, c.budget, turn, m.n, m.n ? m.value() : 0.0});
        }
      }
    }
  }
  return out;
}

std::vector<NllCell> nll_cells(const std::vector<EvalRecord>& records) {
  // full's NLL of each (task, length, sample, turn): the other configurations pair with it.
  std::map<std::tuple<std::string, int, int, int>, double> full;
  for (const EvalRecord& r : records) {
    if (r.budget < 0 && r.answer_tokens > 0) full[{r.task, r.length, r.sample, r.turn}] = r.answer_nll;
  }
  std::vector<NllCell> out;
  for (const std::string& task : tasks_of(records)) {
    const auto lengths = sorted_unique<int>(records, task, [](const EvalRecord& r) { return r.length; });
    for (const Config& c : configs_of(records, task)) {
      for (int len : lengths) {
        NllCell cell{.task = task, .length = len, .policy = c.policy, .budget = c.budget};
        Mean m;
        std::vector<double> diffs;
        for (const EvalRecord& r : records) {
          if (r.task != task || r.length != len || r.policy != c.policy || r.budget != c.budget ||
              r.answer_tokens == 0) {
            continue;
          }
          m.sum += r.answer_nll;
          ++m.n;
          auto it = full.find({r.task, r.length, r.sample, r.turn});
          if (it != full.end()) diffs.push_back(r.answer_nll - it->second);
        }
        cell.n = m.n;
        cell.nll = m.n ? m.value() : NAN;
        cell.n_pairs = static_cast<int>(diffs.size());
        if (!diffs.empty()) {
          const MeanSe d = mean_and_se(diffs);
          cell.delta = d.mean;
          cell.delta_se = d.se;
        }
        out.push_back(cell);
      }
    }
  }
  return out;
}

namespace {

std::string budget_text(int b) { return b < 0 ? std::string("-") : std::to_string(b); }

std::string number_or_dash(double x, const char* spec) {
  return std::isnan(x) ? std::string("-") : fmt::format(fmt::runtime(spec), x);
}

std::string turns_markdown(const std::vector<EvalRecord>& records, const std::string& task) {
  const std::vector<TurnCell> cells = turn_cells(records);
  int n_turns = 0, n = 0;
  for (const TurnCell& c : cells) {
    if (c.task != task) continue;
    n_turns = std::max(n_turns, c.turn);
    n = std::max(n, c.n);
  }
  if (n_turns < 2) return {};
  std::string s = fmt::format(
      "### {} by turn (accuracy %, {} conversations per cell, one context and {} questions each; "
      "full is the ceiling)\n\n| policy | k | length |",
      task, n, n_turns);
  std::string rule = "|---|---:|---:|";
  for (int t = 1; t <= n_turns; ++t) {
    s += fmt::format(" turn {} |", t);
    rule += "---:|";
  }
  s += " all |\n" + rule + "---:|\n";
  const std::vector<AccuracyCell> all = accuracy_cells(records);
  for (const AccuracyCell& a : all) {
    if (a.task != task) continue;
    s += fmt::format("| {} | {} | {} |", a.policy, budget_text(a.budget), a.length);
    for (const TurnCell& c : cells) {
      if (c.task == task && c.length == a.length && c.policy == a.policy && c.budget == a.budget) {
        s += fmt::format(" {:.1f} |", 100 * c.accuracy);
      }
    }
    s += fmt::format(" {:.1f} |\n", 100 * a.accuracy);
  }
  return s + "\n";
}

std::string nll_markdown(const std::vector<EvalRecord>& records, const std::string& task) {
  std::string s = fmt::format(
      "### {}: answer NLL (nats per token, teacher-forced; delta = paired difference against "
      "full, with its standard error)\n\n| policy | k | length | NLL | delta | se | pairs |\n"
      "|---|---:|---:|---:|---:|---:|---:|\n",
      task);
  for (const NllCell& c : nll_cells(records)) {
    if (c.task != task) continue;
    s += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", c.policy, budget_text(c.budget),
                     c.length, number_or_dash(c.nll, "{:.3f}"),
                     number_or_dash(c.delta, "{:+.3f}"), number_or_dash(c.delta_se, "{:.3f}"),
                     c.n_pairs);
  }
  return s + "\n";
}

// Policies with a scoring pass (kvzip): the tokens it processed, per sample (all turns), beside
// the tokens the sample itself fed.
std::string pass_markdown(const std::vector<EvalRecord>& records, const std::string& task) {
  std::map<std::tuple<std::string, int, int>, std::pair<Mean, Mean>> cost;  // extra, fed
  std::vector<std::tuple<std::string, int, int>> order;
  for (const EvalRecord& r : records) {
    if (r.task != task || r.pass_tokens == 0) continue;
    const auto key = std::make_tuple(r.policy, r.budget, r.length);
    if (!cost.count(key)) order.push_back(key);
    auto& [extra, fed] = cost[key];
    extra.sum += static_cast<double>(r.pass_tokens);
    if (r.turn == r.n_turns) {
      ++extra.n;
      fed.sum += r.prompt_tokens + r.n_generated;
      ++fed.n;
    }
  }
  if (order.empty()) return {};
  std::string s = fmt::format(
      "### {}: scoring passes (extra tokens processed per sample, against the tokens it fed)\n\n"
      "| policy | k | length | extra tokens | x fed |\n|---|---:|---:|---:|---:|\n",
      task);
  for (const auto& key : order) {
    const auto& [extra, fed] = cost[key];
    const double e = extra.n ? extra.sum / extra.n : NAN;
    s += fmt::format("| {} | {} | {} | {:.0f} | {:.2f} |\n", std::get<0>(key),
                     budget_text(std::get<1>(key)), std::get<2>(key), e, e / fed.value());
  }
  return s + "\n";
}

}  // namespace

std::string accuracy_markdown(const std::vector<EvalRecord>& records) {
  const std::vector<AccuracyCell> cells = accuracy_cells(records);
  std::string s;
  for (const std::string& task : tasks_of(records)) {
    const auto lengths = sorted_unique<int>(records, task, [](const EvalRecord& r) { return r.length; });
    int n = 0;
    for (const AccuracyCell& c : cells) {
      if (c.task == task) n = std::max(n, c.n);
    }
    s += fmt::format("### {} (accuracy %, RULER string match, {} samples per cell)\n\n", task, n);
    s += "| policy | k |";
    std::string rule = "|---|---:|";
    for (int len : lengths) {
      s += fmt::format(" {} |", len);
      rule += "---:|";
    }
    s += "\n" + rule + "\n";
    for (const Config& c : configs_of(records, task)) {
      s += fmt::format("| {} | {} |", c.policy, c.budget < 0 ? "-" : std::to_string(c.budget));
      for (int len : lengths) {
        for (const AccuracyCell& a : cells) {
          if (a.task == task && a.length == len && a.policy == c.policy && a.budget == c.budget) {
            s += fmt::format(" {:.1f} |", 100 * a.accuracy);
          }
        }
      }
      s += "\n";
    }
    s += "\n";
    s += turns_markdown(records, task);
    s += nll_markdown(records, task);
    s += pass_markdown(records, task);
  }
  return s;
}

nlohmann::ordered_json eval_json(const EvalResult& r, const nlohmann::ordered_json& header) {
  nlohmann::ordered_json j = header;
  nlohmann::ordered_json acc = nlohmann::ordered_json::array();
  for (const AccuracyCell& c : accuracy_cells(r.records)) {
    acc.push_back({{"task", c.task},
                   {"length", c.length},
                   {"policy", c.policy},
                   {"budget", c.budget < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(c.budget)},
                   {"n", c.n},
                   {"accuracy", c.accuracy}});
  }
  j["accuracy"] = std::move(acc);
  auto budget_json = [](int b) {
    return b < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(b);
  };
  auto number_json = [](double x) {
    return std::isnan(x) ? nlohmann::ordered_json() : nlohmann::ordered_json(x);
  };
  nlohmann::ordered_json turns = nlohmann::ordered_json::array();
  for (const TurnCell& c : turn_cells(r.records)) {
    turns.push_back({{"task", c.task},
                     {"length", c.length},
                     {"policy", c.policy},
                     {"budget", budget_json(c.budget)},
                     {"turn", c.turn},
                     {"n", c.n},
                     {"accuracy", c.accuracy}});
  }
  j["turn_accuracy"] = std::move(turns);
  nlohmann::ordered_json nll = nlohmann::ordered_json::array();
  for (const NllCell& c : nll_cells(r.records)) {
    nll.push_back({{"task", c.task},
                   {"length", c.length},
                   {"policy", c.policy},
                   {"budget", budget_json(c.budget)},
                   {"n", c.n},
                   {"answer_nll", number_json(c.nll)},
                   {"delta_vs_full", number_json(c.delta)},
                   {"delta_se", number_json(c.delta_se)},
                   {"pairs", c.n_pairs}});
  }
  j["answer_nll"] = std::move(nll);
  nlohmann::ordered_json recs = nlohmann::ordered_json::array();
  for (const EvalRecord& e : r.records) {
    recs.push_back({{"task", e.task},
                    {"length", e.length},
                    {"prompt_tokens", e.prompt_tokens},
                    {"depth", e.depth < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(e.depth)},
                    {"sample", e.sample},
                    {"prompt_hash", fmt::format("{:016x}", e.prompt_hash)},
                    {"needle_token", e.needle_token < 0 ? nlohmann::ordered_json()
                                                        : nlohmann::ordered_json(e.needle_token)},
                    {"policy", e.policy},
                    {"budget", e.budget < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(e.budget)},
                    {"prefill", e.prefill},
                    {"positions", e.positions},
                    {"answer", e.answer},
                    {"expected", e.expected},
                    {"score", e.score},
                    {"correct", e.correct},
                    {"n_generated", e.n_generated},
                    {"turn", e.turn},
                    {"n_turns", e.n_turns},
                    {"answer_nll", e.answer_tokens > 0 ? nlohmann::ordered_json(e.answer_nll)
                                                       : nlohmann::ordered_json()},
                    {"answer_tokens", e.answer_tokens},
                    {"pass_tokens", e.pass_tokens}});
  }
  j["records"] = std::move(recs);
  return j;
}

std::string eval_csv(const EvalResult& r) {
  auto quote = [](const std::string& s) {
    std::string q = "\"";
    for (char c : s) {
      if (c == '"') q += '"';
      q += c;
    }
    return q + "\"";
  };
  std::string s =
      "task,length,prompt_tokens,depth,sample,prompt_hash,needle_token,policy,budget,prefill,"
      "positions,answer,expected,score,correct,n_generated,turn,n_turns,answer_nll,answer_tokens,pass_tokens\n";
  for (const EvalRecord& e : r.records) {
    std::string expected;
    for (const std::string& x : e.expected) expected += (expected.empty() ? "" : "|") + x;
    s += fmt::format("{},{},{},{},{},{:016x},{},{},{},{},{},{},{},{:.4f},{},{},{},{},{},{},{}\n", e.task, e.length,
                     e.prompt_tokens, e.depth < 0 ? "" : std::to_string(e.depth), e.sample,
                     e.prompt_hash, e.needle_token < 0 ? "" : std::to_string(e.needle_token),
                     quote(e.policy), e.budget < 0 ? "" : std::to_string(e.budget), e.prefill,
                     e.positions, quote(e.answer), quote(expected), e.score,
                     e.correct ? "true" : "false", e.n_generated, e.turn, e.n_turns,
                     e.answer_tokens > 0 ? fmt::format("{:.6f}", e.answer_nll) : std::string(),
                     e.answer_tokens, e.pass_tokens);
  }
  return s;
}

namespace {

// Accuracy against budget, one line per bounded policy (mean over lengths and depths), full as
// a dashed line.
std::string accuracy_plot_script(const std::vector<EvalRecord>& records, const std::string& task,
                                 const std::string& title, const std::string& stem) {
  const std::vector<Config> cfgs = configs_of(records, task);
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
    s += "set logscale x 2\n";
    s += fmt::format("set xrange [{}:{}]\n", *budgets.begin() / 1.4, *budgets.rbegin() * 1.4);
    std::string tics;
    for (int b : budgets) tics += (tics.empty() ? "" : ", ") + std::to_string(b);
    s += "set xtics (" + tics + ")\n";
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

// One panel per configuration (rows: policies, columns: budgets; full alone in the first row):
// depth (y) x length (x), colour = accuracy on one scale 0..100 % for every panel.
std::string heat_plot_script(const std::vector<EvalRecord>& records, const std::string& task,
                             const std::string& title, const std::string& stem) {
  const auto lengths = sorted_unique<int>(records, task, [](const EvalRecord& r) { return r.length; });
  const auto depths = sorted_unique<int>(records, task, [](const EvalRecord& r) { return r.depth; });
  const std::vector<Config> cfgs = configs_of(records, task);
  std::vector<std::string> policies;
  std::vector<int> budgets;
  bool has_full = false;
  for (const Config& c : cfgs) {
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
  auto matrix = [&](const Config& c) {
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
  };
  std::vector<std::pair<std::string, Config>> panels;  // title, config
  if (has_full) panels.push_back({"full", {"full", -1}});
  for (const std::string& p : policies) {
    for (int b : budgets) panels.push_back({fmt::format("{} k={}", p, b), {p, b}});
  }
  for (size_t i = 0; i < panels.size(); ++i) {
    s += fmt::format("$m{} << EOD\n{}EOD\n", i, matrix(panels[i].second));
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
    s += "set logscale x 2\n";
    s += fmt::format("set xrange [{}:{}]\n", *budgets.begin() / 1.4, *budgets.rbegin() * 1.4);
    std::string tics;
    for (int b : budgets) tics += (tics.empty() ? "" : ", ") + std::to_string(b);
    s += "set xtics (" + tics + ")\n";
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
  for (const std::string& task : tasks_of(records)) {
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
    const auto depths = sorted_unique<int>(records, task, [](const EvalRecord& r) { return r.depth; });
    if (depths.empty() || depths.front() < 0) continue;
    const std::string heat = "heat-" + stem_name(task);
    TOVA_RETURN_IF_ERROR(write_file(dir + "/" + heat + ".gp",
                                    heat_plot_script(records, task, title, heat)));
    TOVA_RETURN_IF_ERROR(run_gnuplot(dir, heat + ".gp"));
    stems.push_back(heat);
  }
  return stems;
}

}  // namespace tova::eval
