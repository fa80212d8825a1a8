// `tova eval` as one library call, so the CLI and Python get the same records: the samples
// (tasks x lengths x depths from a seed, eval/task_samples.h), the configurations (every policy
// at every budget), the grid run over the engine's pool (eval/task_eval.h), and the records as
// results.json and results.csv hold them. Tables and plots are the front-end's.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/result.h"
#include "tova/eval/tasks.h"
#include "eval/task_eval.h"
#include "tova/engine.h"

namespace tova::eval {

Result<TaskReport> run_tasks(const Engine& engine, const TaskRunOptions& o);

}  // namespace tova::eval
