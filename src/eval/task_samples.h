// The samples of a task grid: every (task, length, depth, sample index) built from the seed,
// its haystack sized so that prompt + generated tokens fit the length in tokens of the model's
// own tokenizer, as RULER sizes its samples (max_seq_length counts both).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "eval/tasks.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace tova::eval {

struct SampleOptions {
  std::vector<std::string> tasks;
  std::vector<int> lengths;
  std::vector<int> depths = {0, 25, 50, 75, 100};  // percent; tasks without a depth use none
  // Samples per (task, length); with a depth, sample i puts its needle at depths[i % n], as
  // RULER spreads its samples over depths.
  int samples = 10;
  uint64_t seed = 42;
  std::optional<NeedleTemplate> custom;  // --template
  Haystack haystack = noise_haystack();
  int max_new = 0;  // tokens to generate; 0: each task's own (RULER's tokens_to_generate)
  // Wrap each prompt in this chat template (the task's text as the user turn, the answer prefix
  // after the assistant's header); none: raw text after BOS.
  std::optional<tok::ChatTemplate> chat;
  // Questions asked of each context, one per turn of one conversation (TaskInfo::max_turns at
  // most); the context is sized so that the whole conversation fits the length.
  int turns = 1;
};

// A question after the first (--turns), asked once the previous answer is in the history.
struct SampleTurn {
  std::string question;       // the user text (a chat's user message)
  std::string answer_prefix;  // the start of the answer
  // Raw prompts: what follows the previous answer (the separator, the question, the answer
  // prefix) and its tokens. Chat prompts: empty (eval/task_eval.h renders the conversation).
  std::string text;
  std::vector<int32_t> ids;
  std::vector<std::string> expected;
  std::vector<int32_t> answer_ids;  // the expected answer's tokens (teacher-forced NLL)
};

struct TaskSample {
  std::string task;
  int length = 0;   // requested: prompt + max_new <= length
  int depth = -1;   // percent; -1 for tasks without a depth
  int index = 0;    // sample number within (task, length)
  std::vector<int32_t> prompt;  // token ids fed (BOS or chat markup included)
  std::string prompt_text;      // what was tokenized
  std::vector<std::string> expected;
  int max_new = 0;
  int64_t needle_token = -1;  // about where the asked needle starts, in tokens; -1 if none
  uint64_t prompt_hash = 0;   // FNV-1a of the prompt ids
  std::string user;           // the first turn's user text (a chat's first user message)
  std::string answer_prefix;  // and the start of its answer
  std::vector<int32_t> answer_ids;  // the expected answer's tokens after the prompt (its NLL)
  std::vector<SampleTurn> more;     // turns 2..N
};

struct SampleSet {
  std::vector<TaskSample> samples;
  std::vector<std::string> warnings;  // one line each (a haystack file repeated, ...)
};

// Builds every sample; errors name the culprit (an unknown task, a length too short for a
// task's smallest prompt, a template given for tasks that cannot use it, ...).
Result<SampleSet> make_samples(const tok::Tokenizer& tk, const SampleOptions& o);

}  // namespace tova::eval
