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
#include "tova/eval/tasks.h"
#include "eval/task_eval.h"

namespace tova::eval {

nlohmann::ordered_json eval_json(const EvalResult& r, const nlohmann::ordered_json& header);
// One row per record.
std::string eval_csv(const EvalResult& r);

// Writes acc-TASK.gp/.png/.svg and nll-TASK (the paired NLL difference against full, when the
// grid has full) for every task, turns-TASK for conversations and heat-TASK for every task with
// depths into dir, and runs gnuplot on them; returns the files' stems.
Result<std::vector<std::string>> plot_eval(const std::vector<EvalRecord>& records,
                                           const std::string& title, const std::string& dir);

}  // namespace tova::eval
