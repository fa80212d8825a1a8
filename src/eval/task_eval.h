// Runs task samples (eval/task_samples.h) under many (policy, budget) configurations: every
// configuration of a prompt, and the configurations of several prompts, in shared forward
// passes. Each (sample, configuration) is a session whose answers the library's generation loop
// (TextStream, as run/chat/serve use it) writes greedily; a sample with several questions
// (--turns) asks them in successive turns of that one conversation, each answer kept in the
// history before the next question. Every answer is scored with RULER's string match and by
// the teacher-forced NLL of the expected answer under the configuration's state. Returns one
// record per (sample, configuration, turn); front-ends print and write them
// (eval/task_report.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "tova/eval/tasks.h"
#include "core/thread_pool.h"
#include "eval/task_samples.h"
#include "kv/multi_state.h"
#include "kv/policy_registry.h"
#include "model/model.h"
#include "runtime/cache_options.h"
#include "tova/options.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace tova::eval {

struct EvalOptions {
  std::vector<kv::PolicySpec> configs;  // `full` at most once
  PrefillMode prefill;
  KvFormat kv_type;  // K/V storage (f32 unless given)
  kv::PositionMode positions = kv::PositionMode::kAbsolute;
  int n_batch = 32;  // prompt positions per sequence and forward call (exact prefill)
  // Several prompts and all their configurations share forward passes (false: every
  // (sample, configuration) alone, what separate runs compute).
  bool batched = true;
  // Exact prefill: until a configuration first evicts, it holds what the prompt's largest
  // configuration holds and rides along with it (model::Follower), through the prompt and
  // the answer; the records are the same either way.
  bool share_prefix = true;
  int max_seqs = 0;  // sequences per group of prompts; 0: 32
  std::function<void(const EvalProgress&)> on_progress;
  // The template the samples' prompts were rendered in (SampleOptions::chat): later turns are
  // rendered in it after each answer. None: raw prompts, later turns as the samples hold them.
  std::optional<tok::ChatTemplate> chat;
};

Result<EvalResult> run_eval(const model::Model& m, const tok::Tokenizer& tk, ThreadPool& pool,
                            std::span<const TaskSample> samples, const EvalOptions& o);

// The answer as RULER's evaluation (and kvpress's) reads it: control characters removed, spaces
// trimmed at both ends.
std::string clean_answer(std::string_view text);

}  // namespace tova::eval
