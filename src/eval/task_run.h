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
#include "eval/task_eval.h"
#include "tova/engine.h"

namespace tova::eval {

struct TaskRunOptions {
  std::vector<std::string> tasks;
  // A needle template (JSON, eval/task_text.h) replacing RULER's phrasing when not empty;
  // template_label names it in errors and the records.
  std::string template_text;
  std::string template_label;
  // The haystack's text (default: RULER's noise sentences); haystack_label names it.
  std::string haystack_text;
  std::string haystack_label;
  std::vector<int> lengths;  // empty: the model's trained context
  std::vector<int> depths = {0, 25, 50, 75, 100};
  int samples = 10;
  uint64_t seed = 42;
  std::vector<std::string> policies = {"full"};
  std::vector<int> budgets;
  std::string prefill = "exact";
  std::string positions = "absolute";
  std::string kv_type = "f32";
  bool chat = false;          // wrap prompts in the model's chat template
  std::string chat_template;  // a named template (implies chat)
  int max_new = 0;            // 0: each task's own
  // Questions asked of each context in successive turns of one conversation (niah_multikey,
  // vt); 1: single-turn, RULER's form.
  int turns = 1;
  int n_batch = 32;
  bool batched = true;
  bool share_prefix = true;
  std::string model_label;  // "model" in the records; empty: the engine's path
  // Each warning as soon as it is known (before the grid runs); also in the report.
  std::function<void(const std::string&)> on_warning;
  std::function<void(const EvalProgress&)> on_progress;
};

struct TaskReport {
  std::string title;  // "MODEL: 10 samples per cell, seed 42"
  EvalResult result;
  size_t n_samples = 0;
  size_t n_configs = 0;
  std::vector<std::string> warnings;
  nlohmann::ordered_json json;  // results.json
  std::string csv;              // results.csv
};

Result<TaskReport> run_tasks(const Engine& engine, const TaskRunOptions& o);

}  // namespace tova::eval
