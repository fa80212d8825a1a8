// Reports of a task grid (eval/task_eval.h): accuracy tables (RULER's string match, mean over
// samples; per turn for conversations), the answers' teacher-forced NLL with its paired
// difference against `full`, every record as JSON and CSV, and gnuplot plots: accuracy against
// budget per policy, accuracy per turn, NLL difference against budget, and for tasks with a
// needle depth, a depth x length heat map per configuration on one colour scale.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/result.h"
#include "eval/task_eval.h"

namespace tova::eval {

// One cell of a table: the mean score of the records of (task, length, policy, budget).
struct AccuracyCell {
  std::string task;
  int length = 0;
  std::string policy;
  int budget = -1;  // -1: unbounded
  int n = 0;        // samples (over every depth)
  double accuracy = 0;  // mean RULER score, 0..1
};
// In the records' order of first appearance (tasks, then configurations), lengths ascending.
std::vector<AccuracyCell> accuracy_cells(const std::vector<EvalRecord>& records);

// Conversations (records with n_turns > 1): the mean score per (task, length, policy, budget,
// turn), in the same order, turns ascending.
struct TurnCell {
  std::string task;
  int length = 0;
  std::string policy;
  int budget = -1;
  int turn = 1;
  int n = 0;
  double accuracy = 0;
};
std::vector<TurnCell> turn_cells(const std::vector<EvalRecord>& records);

// The answers' NLL per (task, length, policy, budget), pooled over turns: its mean, and the
// mean of its paired difference against `full` (the same sample and turn) with the standard
// error of that mean (NaN where the grid has no `full` or fewer than two pairs).
struct NllCell {
  std::string task;
  int length = 0;
  std::string policy;
  int budget = -1;
  int n = 0;
  double nll = 0;         // mean answer NLL, nats per token
  double delta = NAN;     // mean (nll - full's nll) over the pairs
  double delta_se = NAN;  // its paired standard error
  int n_pairs = 0;
};
std::vector<NllCell> nll_cells(const std::vector<EvalRecord>& records);

// A markdown table per task: rows (policy, k), columns lengths, cells accuracy in percent.
// Conversations add a table of accuracy per turn (full's row is the ceiling); every grid adds
// the answers' NLL table.
std::string accuracy_markdown(const std::vector<EvalRecord>& records);

nlohmann::ordered_json eval_json(const EvalResult& r, const nlohmann::ordered_json& header);
// One row per record.
std::string eval_csv(const EvalResult& r);

// Writes acc-TASK.gp/.png/.svg and nll-TASK (the paired NLL difference against full, when the
// grid has full) for every task, turns-TASK for conversations and heat-TASK for every task with
// depths into dir, and runs gnuplot on them; returns the files' stems.
Result<std::vector<std::string>> plot_eval(const std::vector<EvalRecord>& records,
                                           const std::string& title, const std::string& dir);

}  // namespace tova::eval
