// The pieces RULER's synthetic tasks are made of: a seeded random source, keys and values,
// word lists, haystacks (repeated noise sentences or a text file's sentences), and the
// phrasing of the needle tasks as data (built in, or a --template JSON file).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tova::eval {

// SplitMix64: the same numbers on every platform (std distributions are not).
class TaskRng {
 public:
  explicit TaskRng(uint64_t seed) : s_(seed) {}
  uint64_t next();
  // Uniform in [0, n) (n >= 1).
  uint64_t below(uint64_t n);
  // Uniform in [lo, hi].
  int64_t between(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(below(hi - lo + 1)); }
  double unit();  // [0, 1)
  template <typename T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  uint64_t s_;
};

// A seed for one sample: a stable mix of the run's seed and the sample's coordinates.
uint64_t sample_seed(uint64_t seed, std::string_view task, int length, int depth, int index);

// What a key or a value is made of.
struct ItemKind {
  enum class Type { kWords, kWord, kNumber };
  Type type = Type::kNumber;
  int min_digits = 7;  // kNumber: digits, uniform in [min_digits, max_digits]
  int max_digits = 7;
  // "adjective-noun" (RULER's keys), "word" (one English noun), "N digit number" or "N-M digit
  // number"; the error names the text.
  static Result<ItemKind> parse(std::string_view text);
};
std::string random_item(const ItemKind& kind, TaskRng& rng);

// The ordinary English words the tasks draw from (our own lists).
const std::vector<std::string_view>& adjectives();
const std::vector<std::string_view>& nouns();
const std::vector<std::string_view>& common_words();  // nouns, verbs and adjectives

// The phrasing of the needle tasks, with {key} and {value} placeholders. The prompt is
// prefix + separator (if prefix is not empty) + context + separator + question + " " +
// answer_prefix, and the model continues from there.
struct NeedleTemplate {
  std::string prefix;
  std::string needle;
  std::string question;
  std::string answer_prefix;
  std::string separator = "\n";  // between haystack units, and before the question
  ItemKind key{.type = ItemKind::Type::kWords};
  ItemKind value;
};
// RULER's (scripts/data/synthetic/constants.py and niah.py), in its singular form when one
// value is asked ("A special magic number is hidden ...") and its plural form otherwise.
NeedleTemplate ruler_needle_template(bool single);
// A --template file: JSON with "needle", "question", "answer_prefix" (required, using {key}
// and {value}) and optional "prefix", "separator", "key", "value" (ItemKind texts). Unknown
// fields are an error that names them.
Result<NeedleTemplate> parse_needle_template(std::string_view json, const std::string& path);

// Replaces every {key} and {value}.
std::string fill_in(std::string_view text, std::string_view key, std::string_view value = {});

// Text around the needles.
struct Haystack {
  std::vector<std::string> units;  // sentences (a file) or copies of the noise block
  bool from_file = false;
  std::string source;  // "noise" or the file name
};
// RULER's noise block (five sentences), as one unit.
inline constexpr std::string_view kNoiseBlock =
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";
Haystack noise_haystack();
// A text file cut into sentences (whitespace collapsed); an error if it has none.
Result<Haystack> file_haystack(std::string_view text, const std::string& name);

// n units of h starting at unit `start` (wrapping around a file's end), and where needles go:
// the result's units with each needle inserted before unit at[i] (at[i] in [0, n]).
std::vector<std::string> haystack_units(const Haystack& h, size_t start, size_t n);

}  // namespace tova::eval
