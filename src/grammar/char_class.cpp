#include <algorithm>

#include "grammar/grammar.h"

namespace tova::grammar {

void CharClass::finish() {
  std::sort(ranges.begin(), ranges.end());
  ascii[0] = ascii[1] = 0;
  for (uint32_t c = 0; c < 128; ++c) {
    if (matches_slow(c)) ascii[c >> 6] |= uint64_t{1} << (c & 63);
  }
}

bool CharClass::matches_slow(uint32_t c) const {
  bool in = false;
  for (const auto& [lo, hi] : ranges) {
    if (c >= lo && c <= hi) {
      in = true;
      break;
    }
  }
  return in != negated;
}

bool CharClass::intersects(uint32_t lo, uint32_t hi) const {
  if (!negated) {
    for (const auto& [a, b] : ranges) {
      if (a <= hi && b >= lo) return true;
    }
    return false;
  }
  // Negated: some point of [lo, hi] lies outside every range. The ranges are sorted by start;
  // walk a cursor over [lo, hi] past the ranges that cover it.
  uint64_t cur = lo;
  for (const auto& [a, b] : ranges) {
    if (a > cur) break;
    if (b >= cur) cur = uint64_t{b} + 1;
  }
  return cur <= hi;
}

}  // namespace tova::grammar
