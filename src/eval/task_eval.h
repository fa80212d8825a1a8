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

struct EvalProgress {
  int64_t steps_done = 0;  // token steps fed (prompt and generated), over every configuration
  int64_t steps_total = 0;  // an upper bound: every answer taking its max_new tokens
  double seconds = 0;
};

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

Result<EvalResult> run_eval(const model::Model& m, const tok::Tokenizer& tk, ThreadPool& pool,
                            std::span<const TaskSample> samples, const EvalOptions& o);

// The answer as RULER's evaluation (and kvpress's) reads it: control characters removed, spaces
// trimmed at both ends.
std::string clean_answer(std::string_view text);

}  // namespace tova::eval
