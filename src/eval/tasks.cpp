#include "eval/tasks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numbers>
#include <set>

namespace tova::eval {
namespace {

// Joins units with sep, inserting texts before units: inserts[i] = (unit index in [0, n],
// text); sorted, stable. Returns the byte offset of insert `mark` (npos if absent).
struct Insert {
  size_t at;
  std::string text;
};
std::string weave(const std::vector<std::string>& units, std::vector<Insert> inserts,
                  std::string_view sep, size_t mark, size_t* mark_offset) {
  // Remember which insert is the marked one through the stable sort.
  std::vector<size_t> order(inserts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return inserts[a].at < inserts[b].at; });
  std::string out;
  size_t k = 0;
  auto add = [&](std::string_view piece) {
    if (!out.empty()) out += sep;
    out += piece;
  };
  for (size_t u = 0; u <= units.size(); ++u) {
    while (k < order.size() && inserts[order[k]].at == u) {
      if (order[k] == mark && mark_offset != nullptr) {
        *mark_offset = out.empty() ? 0 : out.size() + sep.size();
      }
      add(inserts[order[k]].text);
      ++k;
    }
    if (u < units.size()) add(units[u]);
  }
  return out;
}

// The insertion point of a needle at `depth` percent of n units.
size_t at_depth(int depth, size_t n) {
  return static_cast<size_t>(std::llround(depth / 100.0 * static_cast<double>(n)));
}

// Where a task's haystack starts: a file's units at a random sentence, noise from the start.
size_t start_unit(const Haystack& h, TaskRng& rng) {
  return h.from_file ? static_cast<size_t>(rng.below(h.units.size())) : 0;
}

// The separator between haystack units: a file's sentences are joined by spaces (as RULER's
// essay haystack), noise blocks by the template's separator.
std::string_view unit_separator(const Haystack& h, const NeedleTemplate& t) {
  return h.from_file ? std::string_view(" ") : std::string_view(t.separator);
}

std::string join_keys(const std::vector<std::string>& q) {
  if (q.size() == 1) return q[0];
  std::string s;
  for (size_t i = 0; i + 1 < q.size(); ++i) s += q[i] + ", ";
  return s + "and " + q.back();
}

// RULER's niah: num_k keys with num_v values each; num_q of the keys are asked, and every
// value of those must be in the answer. The first value of the first asked key is at `depth`;
// the other needles at random places.
TaskText niah(const TaskContext& c, int size, int depth, TaskRng& rng, int num_k, int num_v,
              int num_q) {
  const NeedleTemplate t = c.custom != nullptr ? *c.custom : ruler_needle_template(num_v * num_q == 1);
  std::vector<std::string> keys;
  std::set<std::string> seen;
  while (static_cast<int>(keys.size()) < num_k) {
    std::string k = random_item(t.key, rng);
    if (seen.insert(k).second) keys.push_back(std::move(k));
  }
  std::vector<std::vector<std::string>> values(num_k);
  for (auto& v : values) {
    while (static_cast<int>(v.size()) < num_v) {
      std::string x = random_item(t.value, rng);
      if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(std::move(x));
    }
  }
  std::vector<int> order(num_k);
  for (int i = 0; i < num_k; ++i) order[i] = i;
  rng.shuffle(order);
  const std::vector<int> asked(order.begin(), order.begin() + num_q);

  TaskText out;
  const Haystack& h = *c.haystack;
  const size_t start = start_unit(h, rng);
  const std::vector<std::string> units = haystack_units(h, start, size);
  out.units_used = units.size();
  std::vector<Insert> inserts;
  size_t mark = 0;
  for (int k = 0; k < num_k; ++k) {
    for (int j = 0; j < num_v; ++j) {
      const bool is_mark = k == asked[0] && j == 0;
      const size_t at = is_mark ? at_depth(depth, units.size()) : rng.below(units.size() + 1);
      if (is_mark) mark = inserts.size();
      inserts.push_back({at, fill_in(t.needle, keys[k], values[k][j])});
    }
  }
  std::vector<std::string> query;
  for (int k : asked) {
    query.push_back(keys[k]);
    for (const std::string& v : values[k]) out.expected.push_back(v);
  }
  auto answer = [](const std::vector<std::string>& v) {
    std::string a;
    for (const std::string& x : v) a += (a.empty() ? " " : ", ") + x;
    return a + ".";
  };
  out.answer_text = answer(out.expected);
  // Later turns ask the other keys one at a time, in the seed's order (num_q == 1).
  for (int turn = 1; turn < c.turns && turn < num_k; ++turn) {
    const int k = order[turn];
    out.more.push_back({.question = fill_in(t.question, keys[k]),
                        .answer_prefix = fill_in(t.answer_prefix, keys[k]),
                        .expected = values[k],
                        .answer_text = answer(values[k])});
  }
  out.separator = t.separator;
  const std::string q = join_keys(query);
  size_t needle = 0;
  const std::string context = weave(units, inserts, unit_separator(h, t), mark, &needle);
  const std::string head = t.prefix.empty() ? std::string() : t.prefix + t.separator;
  out.user = head + context + t.separator + fill_in(t.question, q);
  out.answer_prefix = fill_in(t.answer_prefix, q);
  out.needle_offset = head.size() + needle;
  return out;
}

// llama.cpp's passkey (examples/passkey): a number in 1..50000 hidden among repeated filler.
TaskText passkey(const TaskContext& c, int size, int depth, TaskRng& rng) {
  const std::string key = std::to_string(rng.between(1, 50000));
  const Haystack& h = *c.haystack;
  const std::vector<std::string> units = haystack_units(h, start_unit(h, rng), size);
  TaskText out;
  out.units_used = units.size();
  size_t needle = 0;
  const std::string context =
      weave(units,
            {{at_depth(depth, units.size()),
              "The pass key is " + key + ". Remember it. " + key + " is the pass key."}},
            " ", 0, &needle);
  const std::string head =
      "There is an important info hidden inside a lot of irrelevant text. Find it and memorize "
      "them. I will quiz you about the important information there. ";
  out.user = head + context + " What is the pass key?";
  out.answer_prefix = "The pass key is";
  out.expected = {key};
  out.answer_text = " " + key + ".";
  out.needle_offset = head.size() + needle;
  return out;
}

std::string random_letters(TaskRng& rng, int n, char first) {
  std::string s;
  for (int i = 0; i < n; ++i) s += static_cast<char>(first + rng.below(26));
  return s;
}

// Chains of variable assignments "VAR X = VAR Y", each from a 5-digit value, spread over the
// haystack; the answer to chain c's question is every variable bound to its value. One chain
// unless several are asked in turns (each chain's own question).
struct VtChain {
  std::string value;
  std::vector<std::string> vars;
  std::string question;
  std::string answer_prefix;
};
struct VtText {
  std::string user;  // instruction, context and chain 0's question
  std::vector<VtChain> chains;
};
VtText vt_text(const Haystack& h, int size, TaskRng& rng, int name_len, int num_hops,
               int num_chains = 1) {
  std::set<std::string> seen;
  std::vector<VtChain> chains(num_chains);
  std::vector<std::string> assignments;  // chain by chain, in order
  for (VtChain& ch : chains) {
    while (static_cast<int>(ch.vars.size()) < num_hops + 1) {
      std::string v = random_letters(rng, name_len, 'A');
      if (seen.insert(v).second) ch.vars.push_back(std::move(v));
    }
    do ch.value = std::to_string(rng.between(10000, 99999));
    while (std::count_if(chains.begin(), chains.end(),
                         [&](const VtChain& o) { return o.value == ch.value; }) > 1);
    assignments.push_back("VAR " + ch.vars[0] + " = " + ch.value);
    for (int j = 0; j < num_hops; ++j) {
      assignments.push_back("VAR " + ch.vars[j + 1] + " = VAR " + ch.vars[j]);
    }
    ch.question = "Question: Find all variables that are assigned the value " + ch.value +
                  " in the text above.";
    ch.answer_prefix = "Answer: According to the chain(s) of variable assignment in the text "
                       "above, " +
                       std::to_string(num_hops + 1) + " variables are assigned the value " +
                       ch.value + ", they are: ";
  }
  const std::vector<std::string> units = haystack_units(h, start_unit(h, rng), size);
  // Each chain in order, at sorted random places (RULER's noise haystack puts each on a line of
  // its own).
  std::vector<Insert> inserts;
  const size_t per_chain = static_cast<size_t>(num_hops) + 1;
  for (int c = 0; c < num_chains; ++c) {
    std::vector<size_t> at(per_chain);
    for (size_t& a : at) a = rng.below(units.size() + 1);
    std::sort(at.begin(), at.end());
    for (size_t j = 0; j < per_chain; ++j) {
      const std::string& a = assignments[c * per_chain + j];
      inserts.push_back({at[j], h.from_file ? a + "." : a});
    }
  }
  const std::string context = weave(units, inserts, h.from_file ? " " : "\n", 0, nullptr);
  VtText out;
  out.user = "Memorize and track the chain(s) of variable assignment hidden in the following "
             "text.\n\n" +
             context + "\n" + chains[0].question;
  out.chains = std::move(chains);
  return out;
}

std::string join_vars(const std::vector<std::string>& vars) {
  std::string s;
  for (size_t i = 0; i < vars.size(); ++i) s += (i > 0 ? " " : "") + vars[i];
  return s;
}

TaskText vt(const TaskContext& c, int size, int, TaskRng& rng) {
  // RULER shows one solved example first (three-letter names, a short haystack).
  const VtText example = vt_text(*c.haystack, 1, rng, 3, 4);
  const std::string shot =
      example.user + " " + example.chains[0].answer_prefix + join_vars(example.chains[0].vars);
  const VtText main = vt_text(*c.haystack, size, rng, 5, 4, std::max(1, c.turns));
  TaskText out;
  out.user = shot + "\n" + main.user;
  out.answer_prefix = main.chains[0].answer_prefix;
  out.expected = main.chains[0].vars;
  out.answer_text = join_vars(main.chains[0].vars);
  for (size_t i = 1; i < main.chains.size(); ++i) {
    const VtChain& ch = main.chains[i];
    out.more.push_back({.question = ch.question,
                        .answer_prefix = ch.answer_prefix,
                        .expected = ch.vars,
                        .answer_text = join_vars(ch.vars)});
  }
  out.separator = "\n";
  out.units_used = static_cast<size_t>(size);
  return out;
}

// Common words: a numbered list where 10 words appear `common` times and the others
// `uncommon` times.
struct CweList {
  std::string text;
  std::vector<std::string> common;
};
CweList cwe_list(int n_words, int common, int uncommon, TaskRng& rng) {
  std::vector<std::string_view> pool = common_words();
  rng.shuffle(pool);
  n_words = std::min<int>(n_words, static_cast<int>(pool.size()));
  constexpr int kCommon = 10;
  std::vector<std::string> list;
  CweList out;
  for (int i = 0; i < n_words; ++i) {
    const int times = i < kCommon ? common : uncommon;
    if (i < kCommon) out.common.emplace_back(pool[i]);
    for (int r = 0; r < times; ++r) list.emplace_back(pool[i]);
  }
  rng.shuffle(list);
  for (size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out.text += ' ';
    out.text += std::to_string(i + 1);
    out.text += ". ";
    out.text += list[i];
  }
  return out;
}

TaskText cwe(const TaskContext& c, int size, int, TaskRng& rng) {
  // RULER: below 4096 tokens the ten common words appear 6 times and the rest once (the
  // example: 20 words, 3 and 1); from 4096 on, 30 and 3 (the example: 40 words, 10 and 3).
  const bool long_ctx = c.length >= 4096;
  const std::string head =
      "Below is a numbered list of words. In these words, some appear more often than others. "
      "Memorize the ones that appear most often.\n";
  const std::string question = "\nQuestion: What are the 10 most common words in the above list?";
  const std::string answer_prefix =
      "Answer: The top 10 words that appear most often in the list are:";
  const CweList ex = cwe_list(long_ctx ? 40 : 20, long_ctx ? 10 : 3, long_ctx ? 3 : 1, rng);
  std::string shot = head + ex.text + question + " " + answer_prefix;
  for (size_t i = 0; i < ex.common.size(); ++i) {
    shot += fmt::format(" {}. {}", i + 1, ex.common[i]);
  }
  const CweList main = cwe_list(size, long_ctx ? 30 : 6, long_ctx ? 3 : 1, rng);
  TaskText out;
  out.user = shot + "\n" + head + main.text + question;
  out.answer_prefix = answer_prefix;
  out.expected = main.common;
  for (size_t i = 0; i < main.common.size(); ++i) {
    out.answer_text += fmt::format(" {}. {}", i + 1, main.common[i]);
  }
  return out;
}

// Frequent words: coded six-letter words drawn with Zipf-like counts (alpha = 2); the three
// most frequent after the noise word "..." are asked.
TaskText fwe(const TaskContext& c, int size, int, TaskRng& rng) {
  constexpr double kAlpha = 2.0;
  const double zeta = std::numbers::pi * std::numbers::pi / 6;  // zeta(2)
  const int vocab_size = std::max(4, c.length / 50);
  std::vector<std::string> vocab;
  std::set<std::string> seen;
  while (static_cast<int>(vocab.size()) < vocab_size) {
    std::string w = random_letters(rng, 6, 'a');
    if (seen.insert(w).second) vocab.push_back(std::move(w));
  }
  vocab[0] = "...";  // the most frequent is noise
  std::vector<std::string> words;
  for (int k = 1; k <= vocab_size; ++k) {
    const int n = static_cast<int>(size * std::pow(k, -kAlpha) / zeta);
    for (int i = 0; i < n; ++i) words.push_back(vocab[k - 1]);
  }
  rng.shuffle(words);
  std::string context;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) context += ' ';
    context += words[i];
  }
  TaskText out;
  out.user = "Read the following coded text and track the frequency of each coded word. Find the "
             "three most frequently appeared coded words. " +
             context +
             "\nQuestion: Do not provide any explanation. Please ignore the dots '....'. What are "
             "the three most frequently appeared words in the above coded text?";
  out.answer_prefix =
      "Answer: According to the coded text above, the three most frequently appeared words are:";
  out.expected = {vocab[1], vocab[2], vocab[3]};
  out.answer_text = " " + vocab[1] + ", " + vocab[2] + ", " + vocab[3];
  return out;
}

using Build = std::function<TaskText(const TaskContext&, int, int, TaskRng&)>;
Build niah_build(int num_k, int num_v, int num_q) {
  return [=](const TaskContext& c, int size, int depth, TaskRng& rng) {
    return niah(c, size, depth, rng, num_k, num_v, num_q);
  };
}

}  // namespace

const std::vector<TaskInfo>& all_tasks() {
  // RULER's scripts/synthetic.yaml (niah_single_1, niah_multikey_1, niah_multivalue,
  // niah_multiquery, vt, cwe, fwe) and tokens_to_generate (constants.py); the haystack is
  // RULER's noise unless --haystack gives a text (RULER's essay haystack).
  static const std::vector<TaskInfo> tasks = {
      {.name = "cwe",
       .help = "common words: the 10 words repeated most in a numbered list",
       .max_new = 120,
       .min_size = 10,
       .max_size = static_cast<int>(common_words().size()),
       .build = cwe},
      {.name = "fwe",
       .help = "frequent words: the 3 most frequent coded words of a Zipf-distributed text",
       .max_new = 50,
       .min_size = 10,
       .build = fwe},
      {.name = "niah_multikey",
       .help = "4 needles with different keys in the haystack, one asked (N turns: N of them, "
                "one per turn)",
       .uses_depth = true,
       .uses_template = true,
       .max_new = 128,
       .max_turns = 4,
       .build = niah_build(4, 1, 1)},
      {.name = "niah_multiquery",
       .help = "4 needles with different keys, all asked: every value must be answered",
       .uses_depth = true,
       .uses_template = true,
       .max_new = 128,
       .build = niah_build(4, 1, 4)},
      {.name = "niah_multivalue",
       .help = "one key with 4 values in the haystack: every value must be answered",
       .uses_depth = true,
       .uses_template = true,
       .max_new = 128,
       .build = niah_build(1, 4, 1)},
      {.name = "niah_single",
       .help = "one needle (a key and its 7-digit number) in the haystack",
       .uses_depth = true,
       .uses_template = true,
       .max_new = 128,
       .build = niah_build(1, 1, 1)},
      {.name = "passkey",
       .help = "llama.cpp's passkey: a number hidden in repeated filler",
       .uses_depth = true,
       .max_new = 16,
       .build = passkey},
      {.name = "vt",
       .help = "variable tracking: every variable a chain of 4 assignments binds to a value "
                "(N turns: N chains, one asked per turn)",
       .max_new = 30,
       .max_turns = 4,
       .build = vt},
  };
  return tasks;
}

const TaskInfo* find_task(std::string_view name) {
  for (const TaskInfo& t : all_tasks()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string task_choices() {
  std::string s;
  for (const TaskInfo& t : all_tasks()) {
    if (!s.empty()) s += ", ";
    s += t.name;
  }
  return s;
}

std::vector<TaskDescription> describe_tasks() {
  std::vector<TaskDescription> out;
  for (const TaskInfo& t : all_tasks()) {
    out.push_back({.name = t.name, .help = t.help, .uses_depth = t.uses_depth,
                   .max_new = t.max_new});
  }
  return out;
}

double string_match_all(std::string_view answer, const std::vector<std::string>& expected) {
  if (expected.empty()) return 0;
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  const std::string a = lower(answer);
  int found = 0;
  for (const std::string& e : expected) found += a.find(lower(e)) != std::string::npos;
  return static_cast<double>(found) / static_cast<double>(expected.size());
}

}  // namespace tova::eval
