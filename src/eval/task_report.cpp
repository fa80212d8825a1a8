#include "eval/task_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "eval/nll.h"

namespace tova::eval {
namespace {

std::vector<int> sorted_unique(const std::vector<EvalRecord>& records, const std::string& task,
                               int EvalRecord::*field) {
  std::set<int> s;
  for (const EvalRecord& r : records) {
    if (r.task == task) s.insert(r.*field);
  }
  return {s.begin(), s.end()};
}

}  // namespace

std::vector<GridConfig> grid_configs(const std::vector<EvalRecord>& records,
                                     const std::string& task) {
  std::vector<GridConfig> out;
  for (const EvalRecord& r : records) {
    if (r.task != task) continue;
    const GridConfig c{r.policy, r.budget};
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  std::stable_sort(out.begin(), out.end(), [](const GridConfig& a, const GridConfig& b) {
    if ((a.budget < 0) != (b.budget < 0)) return a.budget < 0;
    return false;
  });
  return out;
}

std::vector<std::string> grid_tasks(const std::vector<EvalRecord>& records) {
  std::vector<std::string> out;
  for (const EvalRecord& r : records) {
    if (std::find(out.begin(), out.end(), r.task) == out.end()) out.push_back(r.task);
  }
  return out;
}

std::vector<int> grid_lengths(const std::vector<EvalRecord>& records, const std::string& task) {
  return sorted_unique(records, task, &EvalRecord::length);
}

std::vector<int> grid_depths(const std::vector<EvalRecord>& records, const std::string& task) {
  return sorted_unique(records, task, &EvalRecord::depth);
}

namespace {

struct Mean {
  double sum = 0;
  int n = 0;
  double value() const { return n > 0 ? sum / n : NAN; }
};

}  // namespace

std::vector<AccuracyCell> accuracy_cells(const std::vector<EvalRecord>& records) {
  std::vector<AccuracyCell> out;
  for (const std::string& task : grid_tasks(records)) {
    const auto lengths = grid_lengths(records, task);
    for (const GridConfig& c : grid_configs(records, task)) {
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
  for (const std::string& task : grid_tasks(records)) {
    int n_turns = 1;
    for (const EvalRecord& r : records) {
      if (r.task == task) n_turns = std::max(n_turns, r.n_turns);
    }
    if (n_turns < 2) continue;
    const auto lengths = grid_lengths(records, task);
    for (const GridConfig& c : grid_configs(records, task)) {
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
  for (const std::string& task : grid_tasks(records)) {
    const auto lengths = grid_lengths(records, task);
    for (const GridConfig& c : grid_configs(records, task)) {
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
  for (const std::string& task : grid_tasks(records)) {
    const auto lengths = grid_lengths(records, task);
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
    for (const GridConfig& c : grid_configs(records, task)) {
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

}  // namespace tova::eval
