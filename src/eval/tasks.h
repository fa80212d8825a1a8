// RULER's synthetic tasks (Hsieh et al. 2024, github.com/NVIDIA/RULER, as NVIDIA kvpress runs
// them) and llama.cpp's passkey: the task registry, the one list of task names. Each task
// builds a sample's text from a seeded random source and a size (haystack units, or words);
// eval/task_samples.h fits the size to a length in tokens.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "eval/task_text.h"
#include "tova/eval/tasks.h"

namespace tova::eval {

// What a task builds from.
struct TaskContext {
  const NeedleTemplate* custom = nullptr;  // --template: replaces RULER's needle phrasing
  const Haystack* haystack = nullptr;      // noise or a text file
  int length = 0;                          // the sample's length in tokens (fwe sizes by it)
  // Questions asked of the one context in successive turns of a conversation (--turns): the
  // first is the single-turn question, the others TaskText::more.
  int turns = 1;
};

// A question asked after the first, of the same context, in the next turn of the conversation.
struct FollowUp {
  std::string question;       // the turn's user text (raw prompts: after TaskText::separator)
  std::string answer_prefix;  // the start of its answer
  std::vector<std::string> expected;
  std::string answer_text;  // the expected answer as the model would write it (its NLL)
};

// One sample's text, before tokenization.
struct TaskText {
  std::string user;           // everything before the answer prefix (a chat's user turn)
  std::string answer_prefix;  // the start of the answer, which the model continues
  std::vector<std::string> expected;  // every one must appear in the answer (string match)
  // Where in `user` the asked needle starts (tasks with a depth); npos otherwise.
  size_t needle_offset = std::string::npos;
  size_t units_used = 0;  // haystack units taken (more than a file has: it was repeated)
  // The expected answer as the model would write it after answer_prefix (" 1234567."): the
  // text whose teacher-forced NLL is scored beside the string match.
  std::string answer_text;
  // Turns 2..N (TaskContext::turns), and what separates a raw prompt's previous answer from
  // the next question.
  std::vector<FollowUp> more;
  std::string separator = " ";
};

struct TaskInfo {
  std::string name;
  std::string help;
  bool uses_depth = false;     // a needle placed at --depths
  bool uses_template = false;  // --template replaces its phrasing
  int max_new = 0;             // tokens to generate (RULER's tokens_to_generate)
  int min_size = 1;            // the smallest size build() takes
  int max_size = 1 << 20;      // and the largest
  int max_turns = 1;           // questions one context can ask (TaskContext::turns)
  std::function<TaskText(const TaskContext&, int size, int depth, TaskRng&)> build;
};

const std::vector<TaskInfo>& all_tasks();
const TaskInfo* find_task(std::string_view name);
// "cwe, fwe, niah_multikey, ..."
std::string task_choices();

// RULER's score of one answer (string_match_all): the share of expected strings found in the
// answer, ignoring case.
double string_match_all(std::string_view answer, const std::vector<std::string>& expected);

}  // namespace tova::eval
