// Reports of a task grid (eval/task_eval.h): accuracy tables (RULER's string match, mean over
// samples), every record as JSON and CSV, and gnuplot plots: accuracy against budget per policy,
// and for tasks with a needle depth, a depth x length heat map per configuration on one colour
// scale.
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

// A markdown table per task: rows (policy, k), columns lengths, cells accuracy in percent.
std::string accuracy_markdown(const std::vector<EvalRecord>& records);

nlohmann::ordered_json eval_json(const EvalResult& r, const nlohmann::ordered_json& header);
// One row per record.
std::string eval_csv(const EvalResult& r);

// Writes acc-TASK.gp/.png/.svg for every task and heat-TASK.gp/.png/.svg for every task with
// depths into dir, and runs gnuplot on them; returns the files' stems.
Result<std::vector<std::string>> plot_eval(const std::vector<EvalRecord>& records,
                                           const std::string& title, const std::string& dir);

}  // namespace tova::eval
