#include "eval/task_samples.h"

#include <fmt/format.h>

#include <functional>
#include <algorithm>
#include <functional>
#include <set>

#include "core/field_names.h"
#include "core/hash.h"
#include "runtime/continuation.h"

namespace tova::eval {
namespace {

using runtime::continuation_ids;

// The text to tokenize and where the user text starts in it.
struct Rendered {
  std::string text;
  size_t user_at = 0;
};

Result<Rendered> render(const TaskText& t, const SampleOptions& o) {
  if (!o.chat) return Rendered{t.user + " " + t.answer_prefix, 0};
  TOVA_ASSIGN_OR_RETURN(std::string head,
                        o.chat->render({{.role = "user", .content = t.user}}, true));
  const size_t at = head.find(t.user);
  return Rendered{head + t.answer_prefix, at == std::string::npos ? 0 : at};
}

std::vector<int32_t> tokenize(const tok::Tokenizer& tk, const std::string& text, bool chat) {
  // A chat template writes its markup (BOS where it writes one); raw prompts get the
  // vocabulary's BOS.
  return chat ? tok::encode_chat_prompt(tk, text) : tk.encode(text, true, false);
}

// Tokens the turns after the first add to a conversation, before their answers: exact for raw
// prompts, for chat prompts the question rendered alone (an upper bound of what its turn adds).
int64_t follow_up_tokens(const tok::Tokenizer& tk, const TaskText& t, const SampleOptions& o) {
  int64_t n = 0;
  for (const FollowUp& f : t.more) {
    if (o.chat) {
      auto head = o.chat->render({{.role = "user", .content = f.question}}, true);
      n += static_cast<int64_t>(
          tok::encode_chat_prompt(tk, (head.ok() ? *head : f.question) + f.answer_prefix).size());
    } else {
      n += static_cast<int64_t>(
          continuation_ids(tk, t.separator + f.question + " " + f.answer_prefix).size());
    }
  }
  return n;
}

// The tasks of a run, each checked against the options.
Result<std::vector<const TaskInfo*>> checked_tasks(const SampleOptions& o) {
  if (o.tasks.empty()) return make_error("no tasks given (valid: {})", task_choices());
  if (o.lengths.empty()) return make_error("no lengths given");
  if (o.samples < 1) return make_error("{} must be at least 1, got {}", field::kSamples, o.samples);
  if (o.turns < 1) return make_error("{} must be at least 1, got {}", field::kTurns, o.turns);
  std::set<std::string> seen;
  std::vector<const TaskInfo*> tasks;
  for (const std::string& name : o.tasks) {
    const TaskInfo* t = find_task(name);
    if (t == nullptr) return make_error("unknown task '{}' (valid: {})", name, task_choices());
    if (!seen.insert(name).second) return make_error("task '{}' is listed twice", name);
    if (o.custom && !t->uses_template) {
      return make_error("{} replaces the needle phrasing of the niah tasks; task '{}' has its own",
                        field::kNeedleTemplate, name);
    }
    if (o.turns > t->max_turns) {
      return make_error("{} {}: task '{}' asks at most {} question{} of one context (tasks with "
                        "several: niah_multikey, vt)",
                        field::kTurns, o.turns, name, t->max_turns, t->max_turns == 1 ? "" : "s");
    }
    tasks.push_back(t);
  }
  for (int d : o.depths) {
    if (d < 0 || d > 100) return make_error("depth {} is not a percentage (0..100)", d);
  }
  return tasks;
}

// A task's text at one size and its prompt's tokens.
using Build = std::pair<TaskText, std::vector<int32_t>>;

// The largest size of task t whose prompt fits (doubling, then bisection): that size and its
// build. `cost`: the prompt tokens a build spends against `budget`.
Result<std::pair<int, Build>> fit_size(const TaskInfo& t,
                                       const std::function<Result<Build>(int)>& build,
                                       const std::function<int64_t(const Build&)>& cost,
                                       int budget, int length, int generated) {
  TOVA_ASSIGN_OR_RETURN(auto smallest, build(t.min_size));
  if (cost(smallest) > budget) {
    return make_error(
        "length {} is too short for task '{}': its smallest prompt has {} tokens, and {} "
        "more are generated",
        length, t.name, cost(smallest), generated);
  }
  int lo = t.min_size, hi = t.min_size;
  while (hi < t.max_size) {
    const int next = std::min(t.max_size, hi * 2);
    TOVA_ASSIGN_OR_RETURN(auto b, build(next));
    if (cost(b) > budget) {
      hi = next;
      break;
    }
    lo = hi = next;
  }
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    TOVA_ASSIGN_OR_RETURN(auto b, build(mid));
    (cost(b) <= budget ? lo : hi) = mid;
  }
  TOVA_ASSIGN_OR_RETURN(auto best, build(lo));
  return std::make_pair(lo, std::move(best));
}

// The sample of `best`: its prompt, where its needle starts, its expected answers and turns.
Result<TaskSample> assemble_sample(const tok::Tokenizer& tk, const SampleOptions& o,
                                   const TaskInfo& t, int length, int depth, int index,
                                   int max_new, Build best) {
  TaskSample s;
  s.task = t.name;
  s.length = length;
  s.depth = depth;
  s.index = index;
  TOVA_ASSIGN_OR_RETURN(Rendered r, render(best.first, o));
  s.prompt_text = r.text;
  s.prompt = std::move(best.second);
  s.expected = best.first.expected;
  s.max_new = max_new;
  if (best.first.needle_offset != std::string::npos) {
    const std::string before = r.text.substr(0, r.user_at + best.first.needle_offset);
    s.needle_token = static_cast<int64_t>(tokenize(tk, before, o.chat.has_value()).size());
  }
  s.prompt_hash = fnv1a(s.prompt.data(), s.prompt.size() * sizeof(int32_t));
  s.user = best.first.user;
  s.answer_prefix = best.first.answer_prefix;
  s.answer_ids = continuation_ids(tk, best.first.answer_text);
  for (const FollowUp& f : best.first.more) {
    SampleTurn turn{.question = f.question,
                    .answer_prefix = f.answer_prefix,
                    .expected = f.expected,
                    .answer_ids = continuation_ids(tk, f.answer_text)};
    if (!o.chat) {
      turn.text = best.first.separator + f.question + " " + f.answer_prefix;
      turn.ids = continuation_ids(tk, turn.text);
    }
    s.more.push_back(std::move(turn));
  }
  return s;
}

}  // namespace

Result<SampleSet> make_samples(const tok::Tokenizer& tk, const SampleOptions& o) {
  TOVA_ASSIGN_OR_RETURN(const std::vector<const TaskInfo*> tasks, checked_tasks(o));
  SampleSet out;
  bool repeated_warned = false;
  for (const TaskInfo* t : tasks) {
    const int max_new = o.max_new > 0 ? o.max_new : t->max_new;
    const std::vector<int> depths = t->uses_depth ? o.depths : std::vector<int>{-1};
    if (depths.empty()) return make_error("no depths given for task '{}'", t->name);
    for (int length : o.lengths) {
      // Prompt tokens allowed (RULER counts the answer in the length; a conversation counts
      // every answer and the later questions).
      const int budget = length - max_new * o.turns;
      bool capped_warned = false;
      for (int index = 0; index < o.samples; ++index) {
        const int depth = depths[index % depths.size()];
        const uint64_t seed = sample_seed(o.seed, t->name, length, depth, index);
        const TaskContext ctx{.custom = o.custom ? &*o.custom : nullptr,
                              .haystack = &o.haystack,
                              .length = length,
                              .turns = o.turns};
        // The text for `size` from the sample's own random source: the same size always gives
        // the same text.
        const std::function<Result<Build>(int)> build = [&](int size) -> Result<Build> {
          TaskRng rng(seed);
          TaskText text = t->build(ctx, size, std::max(depth, 0), rng);
          TOVA_ASSIGN_OR_RETURN(Rendered r, render(text, o));
          std::vector<int32_t> ids = tokenize(tk, r.text, o.chat.has_value());
          return std::make_pair(std::move(text), std::move(ids));
        };
        // Prompt tokens a build costs against the budget: its prompt and its later questions.
        const std::function<int64_t(const Build&)> cost = [&](const Build& b) {
          return static_cast<int64_t>(b.second.size()) + follow_up_tokens(tk, b.first, o);
        };
        TOVA_ASSIGN_OR_RETURN(auto fitted,
                              fit_size(*t, build, cost, budget, length, max_new * o.turns));
        Build& best = fitted.second;
        if (fitted.first == t->max_size && !capped_warned) {
          out.warnings.push_back(fmt::format(
              "task '{}' at length {}: its largest prompt has {} tokens (it has no more words "
              "to add)",
              t->name, length, best.second.size()));
          capped_warned = true;
        }
        if (o.haystack.from_file && best.first.units_used > o.haystack.units.size() &&
            !repeated_warned) {
          out.warnings.push_back(fmt::format(
              "haystack '{}' has {} sentences; a {}-token prompt needs {}: it is repeated",
              o.haystack.source, o.haystack.units.size(), length, best.first.units_used));
          repeated_warned = true;
        }
        TOVA_ASSIGN_OR_RETURN(TaskSample s, assemble_sample(tk, o, *t, length, depth, index,
                                                            max_new, std::move(best)));
        out.samples.push_back(std::move(s));
      }
    }
  }
  return out;
}

}  // namespace tova::eval
