// Each pre-tokenizer is a list of stages. A stage splits every word of the previous stage into
// regex matches and the gaps between them (both become words), as llama.cpp's
// unicode_regex_split does. Matchers are written from the regexes' ECMAScript semantics:
// leftmost match, alternatives tried in order, greedy repetition.
//
// Character classes follow llama.cpp's conventions, which tokenizer test data depend on:
// \p{..} uses the general category; \s is the White_Space property; a non-ASCII white-space
// code point never belongs to an explicit range class (llama.cpp maps it to U+000B first).
#include "tokenizer/pre_tokenizer.h"

#include <algorithm>
#include <array>

#include "tokenizer/unicode.h"

namespace tova::tok {

namespace {

struct CptRange {
  uint32_t first;
  uint32_t last;
};

// DeepSeek LLM's letter class (from its tokenizer.json): the cased letters.
constexpr CptRange kDeepseekLetters[] = {
    {0x41, 0x5A},       {0x61, 0x7A},       {0xB5, 0xB5},       {0xC0, 0xD6},
    {0xD8, 0xF6},       {0xF8, 0x1BA},      {0x1BC, 0x1BF},     {0x1C4, 0x293},
    {0x295, 0x2AF},     {0x370, 0x373},     {0x376, 0x377},     {0x37B, 0x37D},
    {0x37F, 0x37F},     {0x386, 0x386},     {0x388, 0x38A},     {0x38C, 0x38C},
    {0x38E, 0x3A1},     {0x3A3, 0x3F5},     {0x3F7, 0x481},     {0x48A, 0x52F},
    {0x531, 0x556},     {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},
    {0x1C90, 0x1CBA},   {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},
    {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},   {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},
    {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},   {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},
    {0x1FD6, 0x1FDB},   {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},
    {0x2102, 0x2102},   {0x2107, 0x2107},   {0x210A, 0x2113},   {0x2115, 0x2115},
    {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},   {0x2128, 0x2128},
    {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},
    {0x2C7E, 0x2CE4},   {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},
    {0xA680, 0xA69B},   {0xA722, 0xA76F},   {0xA771, 0xA787},   {0xA78B, 0xA78E},
    {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},   {0xFF21, 0xFF3A},
    {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
// DeepSeek LLM's punctuation class: ASCII punctuation and letters (!-/ :-~), their fullwidth
// forms, curly quotes and CJK punctuation.
constexpr CptRange kDeepseekPunct[] = {
    {0x21, 0x2F}, {0x3A, 0x7E}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E}, {0x2018, 0x201F},
    {0x3000, 0x3002},
};
// DeepSeek's CJK class: U+4E00-U+9FA5, U+0800-U+4E00, Hangul U+AC00-U+D7FF.
constexpr CptRange kDeepseekCjk[] = {{0x4E00, 0x9FA5}, {0x800, 0x4E00}, {0xAC00, 0xD7FF}};

enum class CharClass {
  kNumber,        // \p{N}
  kLetter,        // \p{L}
  kPunct,         // \p{P}
  kFalconPunct,   // [\p{P}\$\+<=>\^~\|`]
  kDefaultPunct,  // [\p{P}\$\+<=>\^~\|]
  kCrLf,          // [\r\n]
  kAsciiDigit,    // [0-9]
  kDsLetter,
  kDsPunct,
  kDsCjk,
};

template <size_t N>
bool in_ranges(const CptRange (&ranges)[N], uint32_t c) {
  if (c >= 0x80 && is_whitespace(c)) return false;
  return std::any_of(ranges, ranges + N,
                     [c](const CptRange& r) { return c >= r.first && c <= r.last; });
}

bool in_class(CharClass cls, uint32_t c) {
  switch (cls) {
    case CharClass::kNumber:
      return unicode_class(c) == UnicodeClass::kNumber;
    case CharClass::kLetter:
      return unicode_class(c) == UnicodeClass::kLetter;
    case CharClass::kPunct:
      return unicode_class(c) == UnicodeClass::kPunctuation;
    case CharClass::kFalconPunct:
      return unicode_class(c) == UnicodeClass::kPunctuation ||
             (c < 0x80 && std::string_view("$+<=>^~|`").find(static_cast<char>(c)) !=
                              std::string_view::npos);
    case CharClass::kDefaultPunct:
      return unicode_class(c) == UnicodeClass::kPunctuation ||
             (c < 0x80 && std::string_view("$+<=>^~|").find(static_cast<char>(c)) !=
                              std::string_view::npos);
    case CharClass::kCrLf:
      return c == '\r' || c == '\n';
    case CharClass::kAsciiDigit:
      return c >= '0' && c <= '9';
    case CharClass::kDsLetter:
      return in_ranges(kDeepseekLetters, c);
    case CharClass::kDsPunct:
      return in_ranges(kDeepseekPunct, c);
    case CharClass::kDsCjk:
      return in_ranges(kDeepseekCjk, c);
  }
  return false;
}

// A single-class regex: X, \s?X+, X+, XXX, or \s+$.
struct Rule {
  enum Kind { kOne, kPlus, kThree, kTrailingSpace } kind;
  CharClass cls = CharClass::kNumber;
  bool optional_space = false;  // a leading \s?
};

enum class StageKind { kRule, kGpt2, kLlama3, kGpt4o };

struct Stage {
  StageKind kind;
  Rule rule{Rule::kOne};
  size_t max_digits = 3;  // kLlama3: \p{N}{1,max_digits}
  bool marks = false;     // kLlama3: [\p{L}\p{M}]+ for letters' runs, marks out of the others'
};

using Words = std::vector<uint32_t>;  // consecutive word lengths in code points

// Shared view of one word being split: code points [begin, end) of `cpts`.
struct Span {
  const uint32_t* cpts;
  size_t begin;
  size_t end;
  bool has(size_t i) const { return i < end; }
  bool letter(size_t i) const { return i < end && unicode_class(cpts[i]) == UnicodeClass::kLetter; }
  bool number(size_t i) const { return i < end && unicode_class(cpts[i]) == UnicodeClass::kNumber; }
  bool space(size_t i) const { return i < end && is_whitespace(cpts[i]); }
  // [^\s\p{L}\p{N}]
  bool other(size_t i) const {
    if (i >= end) return false;
    const UnicodeClass c = unicode_class(cpts[i]);
    return !is_whitespace(cpts[i]) && c != UnicodeClass::kLetter && c != UnicodeClass::kNumber;
  }
};

uint32_t ascii_lower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

// Length of a contraction ('s 't 're 've 'm 'll 'd) at i, or 0.
size_t contraction(const Span& s, size_t i, bool any_case) {
  if (s.cpts[i] != '\'' || !s.has(i + 1)) return 0;
  auto low = [&](size_t k) { return any_case ? ascii_lower(s.cpts[k]) : s.cpts[k]; };
  const uint32_t a = low(i + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (!s.has(i + 2)) return 0;
  const uint32_t b = low(i + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// \s+(?!\S)|\s+ at i (i is white space): a run followed by a non-space leaves its last space
// to prefix the next word.
size_t space_run(const Span& s, size_t i) {
  size_t n = 0;
  while (s.space(i + n)) ++n;
  if (n > 1 && s.has(i + n)) return n - 1;
  return n;
}

// \s*[\r\n]+|\s+(?!\S)|\s+ at i (i is white space): through the run's last newline if it has
// one, else space_run.
size_t newline_or_space_run(const Span& s, size_t i) {
  size_t k = i;
  size_t last_newline_end = 0;
  while (s.space(k)) {
    if (s.cpts[k] == '\r' || s.cpts[k] == '\n') last_newline_end = k + 1;
    ++k;
  }
  return last_newline_end > 0 ? last_newline_end - i : space_run(s, i);
}

// \p{N}{1,max} at i (0: i is not a digit).
size_t digit_run(const Span& s, size_t i, size_t max) {
  size_t k = i;
  while (k - i < max && s.number(k)) ++k;
  return k - i;
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
void split_gpt2(const Span& s, Words& out) {
  size_t i = s.begin;
  while (i < s.end) {
    size_t n = contraction(s, i, false);
    if (n == 0) {
      const size_t j = (s.cpts[i] == ' ' && s.has(i + 1)) ? i + 1 : i;  // after ' ?'
      size_t k = j;
      if (s.letter(j)) {
        while (s.letter(k)) ++k;
      } else if (s.number(j)) {
        while (s.number(k)) ++k;
      } else if (s.other(j)) {
        while (s.other(k)) ++k;
      }
      if (k > j) {
        n = k - i;
      } else {
        n = s.space(i) ? space_run(s, i) : 1;
      }
    }
    out.push_back(static_cast<uint32_t>(n));
    i += n;
  }
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
// \s*[\r\n]+|\s+(?!\S)|\s+       (qwen2: \p{N} instead of \p{N}{1,3}; qwen35 also
// [\p{L}\p{M}]+ for \p{L}+ and [^\s\p{L}\p{M}\p{N}] for [^\s\p{L}\p{N}]: `marks`)
void split_llama3(const Span& s, Words& out, size_t max_digits, bool marks) {
  auto mark = [&](size_t k) {
    return marks && k < s.end && unicode_class(s.cpts[k]) == UnicodeClass::kMark;
  };
  auto letter = [&](size_t k) { return s.letter(k) || mark(k); };
  auto other = [&](size_t k) { return s.other(k) && !mark(k); };
  size_t i = s.begin;
  while (i < s.end) {
    const uint32_t c = s.cpts[i];
    size_t n = contraction(s, i, true);
    if (n == 0 && c != '\r' && c != '\n' && !s.number(i) && (letter(i) || letter(i + 1))) {
      size_t k = i + 1;
      while (letter(k)) ++k;
      n = k - i;
    }
    if (n == 0) n = digit_run(s, i, max_digits);
    if (n == 0) {
      const size_t j = (c == ' ') ? i + 1 : i;
      if (other(j) || (c == ' ' && !s.has(j))) {
        size_t k = j;
        while (other(k)) ++k;
        while (s.has(k) && (s.cpts[k] == '\r' || s.cpts[k] == '\n')) ++k;
        n = k - i;
      }
    }
    if (n == 0 && s.space(i)) n = newline_or_space_run(s, i);
    if (n == 0) n = 1;
    out.push_back(static_cast<uint32_t>(n));
    i += n;
  }
}

// gpt-4o (o200k), as llama.cpp writes tiktoken's regex without Unicode case classes:
//   A [^\r\n\p{L}\p{N}]?U*W+C?  |  B [^\r\n\p{L}\p{N}]?U+W*C?  |  \p{N}{1,3}  |
//   ' ?[^\s\p{L}\p{N}]+[\r\n/]*'  |  \s*[\r\n]+  |  \s+(?!\S)  |  \s+
// with U = (?=\p{L})[^a-z] (a letter other than a-z), W = (?=\p{L})[^A-Z] (a letter other than
// A-Z: non-ASCII letters are both) and C = (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|
// '[dD]). tiktoken's own classes are [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and
// [\p{Ll}\p{Lm}\p{Lo}\p{M}]; llama.cpp (and so this) differs on marks (here not letters) and
// on non-ASCII case (here any letter is both).
void split_gpt4o(const Span& s, Words& out) {
  auto upper = [&](size_t k) { return s.letter(k) && !(s.cpts[k] >= 'a' && s.cpts[k] <= 'z'); };
  auto lower = [&](size_t k) { return s.letter(k) && !(s.cpts[k] >= 'A' && s.cpts[k] <= 'Z'); };
  // The letters of A or B starting at j (0: neither matches), as the backtracking engine
  // settles them: A's greedy U* gives back until W+ can take at least one letter.
  auto letters = [&](size_t j) -> size_t {
    size_t k = j;
    while (upper(k)) ++k;
    size_t r = k;
    while (lower(r)) ++r;
    if (r > k) return r - j;  // A: U* then W+
    for (size_t m = k; m > j; --m) {
      if (lower(m - 1)) return m - j;  // A with U* shortened to m - 1 letters, W+ one letter
    }
    return k - j;  // B: U+ (W* empty), or 0
  };
  size_t i = s.begin;
  while (i < s.end) {
    const uint32_t c = s.cpts[i];
    size_t n = 0;
    // A / B: an optional non-letter, non-digit, non-newline prefix, then letters.
    const bool prefix = c != '\r' && c != '\n' && !s.letter(i) && !s.number(i);
    const size_t j = prefix ? i + 1 : i;
    if (const size_t l = letters(j); l > 0) {
      n = j - i + l;
      if (s.has(i + n)) n += contraction(s, i + n, true);
    }
    if (n == 0) n = digit_run(s, i, 3);
    if (n == 0) {
      const size_t o = (c == ' ' && s.other(i + 1)) ? i + 1 : i;
      if (s.other(o)) {
        size_t k = o;
        while (s.other(k)) ++k;
        while (s.has(k) && (s.cpts[k] == '\r' || s.cpts[k] == '\n' || s.cpts[k] == '/')) ++k;
        n = k - i;
      }
    }
    if (n == 0 && s.space(i)) n = newline_or_space_run(s, i);
    if (n == 0) n = 1;
    out.push_back(static_cast<uint32_t>(n));
    i += n;
  }
}

// Length of the rule's match at i (0: none). kTrailingSpace is handled by the caller.
size_t match_rule(const Rule& r, const Span& s, size_t i) {
  auto run = [&](size_t k) {
    const size_t from = k;
    while (k < s.end && in_class(r.cls, s.cpts[k])) ++k;
    return k - from;
  };
  switch (r.kind) {
    case Rule::kOne:
      return in_class(r.cls, s.cpts[i]) ? 1 : 0;
    case Rule::kPlus: {
      if (r.optional_space && s.space(i)) {
        const size_t n = run(i + 1);
        if (n > 0) return n + 1;
      }
      return run(i);
    }
    case Rule::kThree:
      return (s.has(i + 2) && in_class(r.cls, s.cpts[i]) && in_class(r.cls, s.cpts[i + 1]) &&
              in_class(r.cls, s.cpts[i + 2]))
                 ? 3
                 : 0;
    case Rule::kTrailingSpace:
      break;
  }
  return 0;
}

// Matches of `r` and the gaps between them, as std::regex_iterator would enumerate them.
void split_rule(const Rule& r, const Span& s, Words& out) {
  size_t gap = s.begin;
  size_t i = s.begin;
  auto emit = [&](size_t from, size_t to) {
    if (gap < from) out.push_back(static_cast<uint32_t>(from - gap));
    out.push_back(static_cast<uint32_t>(to - from));
    gap = to;
  };
  while (i < s.end) {
    if (r.kind == Rule::kTrailingSpace) {
      // \s+$: only a white-space run reaching the end of the word matches.
      if (!s.space(i)) {
        ++i;
        continue;
      }
      size_t k = i;
      while (s.space(k)) ++k;
      if (k == s.end) emit(i, k);
      i = k;
      continue;
    }
    const size_t n = match_rule(r, s, i);
    if (n == 0) {
      ++i;
      continue;
    }
    emit(i, i + n);
    i += n;
  }
  if (gap < s.end) out.push_back(static_cast<uint32_t>(s.end - gap));
}

std::vector<Stage> stages_of(PreTokenizerKind kind) {
  using R = Rule;
  using C = CharClass;
  const Stage gpt2{StageKind::kGpt2};
  auto rule = [](R::Kind k, C c, bool opt_space = false) {
    return Stage{StageKind::kRule, R{k, c, opt_space}};
  };
  switch (kind) {
    case PreTokenizerKind::kGpt2:
      return {gpt2};
    case PreTokenizerKind::kStarcoder:
      return {rule(R::kOne, C::kNumber), gpt2};
    case PreTokenizerKind::kFalcon:
      return {rule(R::kPlus, C::kFalconPunct), gpt2, rule(R::kThree, C::kAsciiDigit)};
    case PreTokenizerKind::kDeepseekCoder:
      return {rule(R::kOne, C::kCrLf), rule(R::kPlus, C::kLetter, true),
              rule(R::kPlus, C::kPunct, true), rule(R::kPlus, C::kDsCjk),
              rule(R::kOne, C::kNumber)};
    case PreTokenizerKind::kDeepseekLlm:
      return {rule(R::kOne, C::kCrLf),         rule(R::kPlus, C::kDsLetter, true),
              rule(R::kPlus, C::kDsPunct, true), rule(R::kTrailingSpace, C::kNumber),
              rule(R::kPlus, C::kDsCjk),       rule(R::kPlus, C::kNumber)};
    case PreTokenizerKind::kLlama3:
      return {Stage{StageKind::kLlama3, R{R::kOne}, 3}};
    case PreTokenizerKind::kQwen2:
      return {Stage{StageKind::kLlama3, R{R::kOne}, 1}};
    case PreTokenizerKind::kQwen35:
      return {Stage{StageKind::kLlama3, R{R::kOne}, 1, true}};
    case PreTokenizerKind::kGpt4o:
      return {Stage{StageKind::kGpt4o}};
    case PreTokenizerKind::kDefault:
      return {rule(R::kPlus, C::kDefaultPunct), gpt2, rule(R::kPlus, C::kNumber),
              rule(R::kThree, C::kAsciiDigit)};
  }
  return {gpt2};
}

}  // namespace

std::optional<PreTokenizerKind> pre_tokenizer_from_name(std::string_view name) {
  struct Entry {
    std::string_view name;
    PreTokenizerKind kind;
  };
  static constexpr Entry kNames[] = {
      {"default", PreTokenizerKind::kDefault},
      {"gpt-2", PreTokenizerKind::kGpt2},
      {"phi-2", PreTokenizerKind::kGpt2},
      {"mpt", PreTokenizerKind::kGpt2},
      {"olmo", PreTokenizerKind::kGpt2},
      {"jais", PreTokenizerKind::kGpt2},
      {"starcoder", PreTokenizerKind::kStarcoder},
      {"refact", PreTokenizerKind::kStarcoder},
      {"smollm", PreTokenizerKind::kStarcoder},
      {"command-r", PreTokenizerKind::kStarcoder},
      {"codeshell", PreTokenizerKind::kStarcoder},
      {"exaone", PreTokenizerKind::kStarcoder},
      {"minerva-7b", PreTokenizerKind::kStarcoder},
      {"falcon", PreTokenizerKind::kFalcon},
      {"deepseek-coder", PreTokenizerKind::kDeepseekCoder},
      {"deepseek-llm", PreTokenizerKind::kDeepseekLlm},
      {"llama3", PreTokenizerKind::kLlama3},
      {"llama-v3", PreTokenizerKind::kLlama3},
      {"llama-bpe", PreTokenizerKind::kLlama3},
      {"falcon3", PreTokenizerKind::kLlama3},
      {"lfm2", PreTokenizerKind::kLlama3},  // llama.cpp: llama3's, merges ignored, BOS added
      {"qwen2", PreTokenizerKind::kQwen2},
      {"qwen35", PreTokenizerKind::kQwen35},
      {"deepseek-r1-qwen", PreTokenizerKind::kQwen2},
      {"stablelm2", PreTokenizerKind::kQwen2},
      {"gpt-4o", PreTokenizerKind::kGpt4o},
  };
  for (const Entry& e : kNames) {
    if (e.name == name) return e.kind;
  }
  return std::nullopt;
}

std::vector<uint32_t> PreTokenizer::split_lengths(const std::vector<uint32_t>& cpts) const {
  Words words;
  if (cpts.empty()) return words;
  words.push_back(static_cast<uint32_t>(cpts.size()));
  Words next;
  for (const Stage& st : stages_of(kind_)) {
    next.clear();
    next.reserve(words.size() * 2);
    size_t begin = 0;
    for (uint32_t len : words) {
      const Span s{cpts.data(), begin, begin + len};
      switch (st.kind) {
        case StageKind::kRule:
          split_rule(st.rule, s, next);
          break;
        case StageKind::kGpt2:
          split_gpt2(s, next);
          break;
        case StageKind::kLlama3:
          split_llama3(s, next, st.max_digits, st.marks);
          break;
        case StageKind::kGpt4o:
          split_gpt4o(s, next);
          break;
      }
      begin += len;
    }
    words.swap(next);
  }
  return words;
}

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
  const std::vector<uint32_t> cpts = decode_utf8(text);
  const Words lengths = split_lengths(cpts);
  std::vector<std::string> out;
  out.reserve(lengths.size());
  std::string utf8;
  size_t begin = 0;
  for (uint32_t len : lengths) {
    utf8.clear();
    for (size_t i = begin; i < begin + len; ++i) append_utf8(cpts[i], utf8);
    std::string word;
    word.reserve(utf8.size() * 2);
    for (char b : utf8) word += byte_to_gpt2_utf8(static_cast<uint8_t>(b));
    out.push_back(std::move(word));
    begin += len;
  }
  return out;
}

}  // namespace tova::tok
