#include <set>
#include <string>

#include "grammar/gbnf.h"

namespace tova::grammar {
namespace {

bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

// Calls `fn(begin, end, is_name)` for each piece of a GBNF text: names (rule names and rule
// references) apart from literals, character classes, comments and the rest, so that a name
// inside "..." or [...] is never taken for a reference.
template <typename Fn>
void scan(std::string_view t, Fn fn) {
  size_t i = 0;
  while (i < t.size()) {
    const char c = t[i];
    size_t j = i + 1;
    if (c == '"' || c == '[') {
      const char close = c == '"' ? '"' : ']';
      while (j < t.size() && t[j] != close) j += t[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, t.size());
      fn(i, j, false);
    } else if (c == '#') {
      while (j < t.size() && t[j] != '\n') ++j;
      fn(i, j, false);
    } else if (c == '{') {  // x{m,n}: digits, not names
      while (j < t.size() && t[j] != '}') ++j;
      j = std::min(j + 1, t.size());
      fn(i, j, false);
    } else if (word_char(c)) {
      while (j < t.size() && word_char(t[j])) ++j;
      fn(i, j, true);
    } else {
      fn(i, j, false);
    }
    i = j;
  }
}

}  // namespace

Result<std::string> prefix_gbnf_rules(std::string_view gbnf, std::string_view prefix) {
  TOVA_RETURN_IF_ERROR(parse_gbnf(gbnf));  // only a valid grammar is renamed
  // The defined names: a name followed by `::=`.
  std::set<std::string, std::less<>> defined;
  scan(gbnf, [&](size_t b, size_t e, bool is_name) {
    if (!is_name) return;
    size_t k = e;
    while (k < gbnf.size() && (gbnf[k] == ' ' || gbnf[k] == '\t')) ++k;
    if (gbnf.substr(k, 3) == "::=") defined.emplace(gbnf.substr(b, e - b));
  });
  std::string out;
  out.reserve(gbnf.size() + defined.size() * prefix.size() * 4);
  scan(gbnf, [&](size_t b, size_t e, bool is_name) {
    const std::string_view piece = gbnf.substr(b, e - b);
    if (is_name && defined.count(piece) != 0) out += prefix;
    out += piece;
  });
  return out;
}

}  // namespace tova::grammar
