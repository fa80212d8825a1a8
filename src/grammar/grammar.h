// A context-free grammar over Unicode code points, as the GBNF parser (gbnf.h) builds it and the
// matcher (matcher.h) runs it: rules of alternatives, each alternative a run of elements in one
// flat array ending with kEnd. Repetitions and groups are already rewritten into rules of their
// own, so the matcher only knows three kinds of element.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tova::grammar {

// A set of code points: ranges, possibly negated ([^...]); `.` is the negated empty set.
struct CharClass {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // inclusive [first, second]
  bool negated = false;
  // ASCII membership precomputed (finish()), the common case of a match.
  uint64_t ascii[2] = {0, 0};

  void finish();
  bool matches(uint32_t c) const {
    if (c < 128) return (ascii[c >> 6] >> (c & 63)) & 1;
    return matches_slow(c);
  }
  bool matches_slow(uint32_t c) const;
  // Whether some code point in [lo, hi] is in the set (a UTF-8 sequence still incomplete can
  // only become one of those).
  bool intersects(uint32_t lo, uint32_t hi) const;
};

enum class ElemKind : uint8_t {
  kEnd,    // end of an alternative
  kChars,  // one code point of classes[value]
  kRef,    // the rule `value`
};

struct Elem {
  ElemKind kind = ElemKind::kEnd;
  uint32_t value = 0;
};

struct Grammar {
  std::vector<std::string> names;          // [n_rule] the rule names ("root", "item_3")
  std::vector<std::vector<uint32_t>> alts;  // [n_rule][n_alt] index in elems of each start
  std::vector<Elem> elems;                 // every alternative, each closed by kEnd
  std::vector<CharClass> classes;
  uint32_t root = 0;

  int n_rule() const { return static_cast<int>(names.size()); }
};

}  // namespace tova::grammar
