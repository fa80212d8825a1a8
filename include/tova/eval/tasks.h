// RULER-style task grids (tova eval) and the tables over their records.
// Part of the evaluation API (tova/eval.h); each takes a loaded Engine and returns plain records.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tova/engine.h"
#include "tova/result.h"

namespace tova::eval {

// ---- Tasks (tova eval) ------------------------------------------------------------------------
// RULER's synthetic tasks (and llama.cpp's passkey) under many (policy, budget) configurations,
// every answer generated greedily through the library's one generation loop (TextStream).

struct EvalProgress {
  int64_t steps_done = 0;  // token steps fed (prompt and generated), over every configuration
  int64_t steps_total = 0;  // an upper bound: every answer taking its max_new tokens
  double seconds = 0;
};

struct EvalRecord {
  // The sample
  std::string task;
  int length = 0;        // requested length
  int prompt_tokens = 0;
  int depth = -1;        // percent, -1: the task has none
  int sample = 0;
  uint64_t prompt_hash = 0;
  int64_t needle_token = -1;
  // The configuration
  std::string policy;  // label, "snapkv:16"
  int budget = -1;     // -1: unbounded
  std::string prefill;
  std::string positions;
  // The answer
  std::string answer;  // the generated text (until the score was settled, EOS or max_new)
  std::vector<std::string> expected;
  double score = 0;     // RULER's string_match_all: the share of expected strings in the answer
  bool correct = false;  // score == 1
  int n_generated = 0;
  // The turn of the conversation (1-based) and how many the sample has (1: single-turn).
  int turn = 1;
  int n_turns = 1;
  // The teacher-forced NLL of the expected answer's tokens after this turn's prompt, under this
  // configuration's state (nats per token, mean over answer_tokens tokens): computed on a copy
  // of the state, so the generated answer is not affected.
  double answer_nll = 0;
  int answer_tokens = 0;
  // Tokens the policy's scoring passes processed for this turn (kvzip: the reconstruction at
  // the prompt's end, or at the previous turn's end), beside the prompt and the answer.
  int64_t pass_tokens = 0;
};

struct EvalResult {
  std::vector<EvalRecord> records;  // by sample (in SampleSet order), then configuration
  int64_t n_forward_calls = 0;
  int64_t token_steps = 0;   // (sequence, token) steps computed
  int64_t shared_steps = 0;  // steps that rode along with a leader instead
  int64_t nll_steps = 0;     // teacher-forced answer tokens fed on copies (answer NLL)
  int64_t pass_steps = 0;    // tokens fed by scoring passes (kvzip's reconstructions)
  double seconds = 0;
};

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
  std::string json;  // results.json's text
  std::string csv;              // results.csv
};

Result<TaskReport> run_tasks(const Engine& engine, const TaskRunOptions& o);

// The task registry as a front-end shows it: every name with its one-line help.
struct TaskDescription {
  std::string name;
  std::string help;
  bool uses_depth = false;  // a needle placed at depths
  int max_new = 0;          // tokens generated per answer
};
std::vector<TaskDescription> describe_tasks();
std::string task_choices();  // "niah_single_1, niah_single_2, ..."

// One cell of a table: the mean score of the records of (task, length, policy, budget).
struct AccuracyCell {
  std::string task;
  int length = 0;
  std::string policy;
  int budget = -1;  // -1: unbounded
  int n = 0;        // samples (over every depth)
  double accuracy = 0;  // mean RULER score, 0..1
};

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

// The grid's axes as the records hold them (the tables here and a front-end's plots read them
// alike): tasks and configurations in first-seen order (`full` first), lengths and depths
// ascending.
struct GridConfig {
  std::string policy;
  int budget = -1;  // -1: unbounded
  bool operator==(const GridConfig&) const = default;
};
std::vector<std::string> grid_tasks(const std::vector<EvalRecord>& records);
std::vector<GridConfig> grid_configs(const std::vector<EvalRecord>& records,
                                     const std::string& task);
std::vector<int> grid_lengths(const std::vector<EvalRecord>& records, const std::string& task);
std::vector<int> grid_depths(const std::vector<EvalRecord>& records, const std::string& task);

// In the records' order of first appearance (tasks, then configurations), lengths ascending.
std::vector<AccuracyCell> accuracy_cells(const std::vector<EvalRecord>& records);
std::vector<TurnCell> turn_cells(const std::vector<EvalRecord>& records);
std::vector<NllCell> nll_cells(const std::vector<EvalRecord>& records);
// A markdown table per task: rows (policy, k), columns lengths, cells accuracy in percent.
// Conversations add a table of accuracy per turn (full's row is the ceiling); every grid adds
// the answers' NLL table.
std::string accuracy_markdown(const std::vector<EvalRecord>& records);

}  // namespace tova::eval
