// The JSON Schema `pattern` subset, as GBNF over a JSON string's encoded contents.
#include <utility>
#include <vector>

#include "grammar/json_schema.h"
#include "grammar/quote.h"

namespace tova::grammar {

namespace {

struct RegexError {
  std::string message;
};

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

// A GBNF literal of code point c as JSON writes it inside a string.
std::string json_char_literal(uint32_t c) {
  switch (c) {
    case '"': return "\"\\\\\\\"\"";  // GBNF "\\\"" : the two characters \"
    case '\\': return "\"\\\\\\\\\"";
    case '\n': return "\"\\\\n\"";
    case '\t': return "\"\\\\t\"";
    case '\r': return "\"\\\\r\"";
    default: break;
  }
  if (c < 0x20 || c == 0x7F) return fmt::format("\"\\\\u{:04x}\"", c);
  return fmt::format("\"\\U{:08X}\"", c);
}

std::string class_char(uint32_t c) { return fmt::format("\\U{:08X}", c); }

// Ranges less the characters JSON must escape (they would need two-character forms): the
// class still generates only matching strings.
Ranges without_escaped(const Ranges& in) {
  const Ranges cut = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}, {0x7F, 0x7F}};
  Ranges out = in;
  for (const auto& [a, b] : cut) {
    Ranges next;
    for (auto [lo, hi] : out) {
      if (hi < a || lo > b) {
        next.push_back({lo, hi});
        continue;
      }
      if (lo < a) next.push_back({lo, a - 1});
      if (hi > b) next.push_back({b + 1, hi});
    }
    out = std::move(next);
  }
  return out;
}

class Regex {
 public:
  Regex(std::string_view s, const std::string& chars) : s_(s), chars_(chars) {}

  std::string run() {
    bool start = false;
    bool end = false;
    if (!s_.empty() && s_[0] == '^') {
      start = true;
      ++p_;
    }
    std::vector<std::string> alts = alternatives();
    if (p_ < s_.size() && s_[p_] == '$' && p_ + 1 == s_.size()) {
      end = true;
      ++p_;
    }
    if (p_ != s_.size()) fail(fmt::format("unexpected '{}' at offset {}", quote(s_[p_]), p_));
    if (alts.size() > 1 && (start || end)) {
      fail("'^' or '$' with a top-level '|' (write ^(a|b)$)");
    }
    std::string body = join(alts);
    if (!start) body = chars_ + "* " + body;
    if (!end) body += " " + chars_ + "*";
    return body;
  }

 private:
  [[noreturn]] void fail(const std::string& m) { throw RegexError{m}; }
  bool more() const { return p_ < s_.size(); }
  char peek() const { return more() ? s_[p_] : '\0'; }

  static std::string join(const std::vector<std::string>& alts) {
    if (alts.size() == 1) return alts[0].empty() ? "\"\"" : alts[0];
    std::string out = "(";
    for (size_t i = 0; i < alts.size(); ++i) {
      if (i) out += " | ";
      out += alts[i].empty() ? "\"\"" : alts[i];
    }
    return out + ")";
  }

  std::vector<std::string> alternatives() {
    std::vector<std::string> alts{sequence()};
    while (peek() == '|') {
      ++p_;
      alts.push_back(sequence());
    }
    return alts;
  }

  uint32_t utf8() {
    const auto b0 = static_cast<uint8_t>(s_[p_]);
    int n = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
    if (n == 0 || p_ + n > s_.size()) fail("invalid UTF-8");
    uint32_t c = n == 1 ? b0 : n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
    for (int i = 1; i < n; ++i) c = (c << 6) | (static_cast<uint8_t>(s_[p_ + i]) & 0x3F);
    p_ += n;
    return c;
  }

  // A class escape (\d \w \s and negations) as ranges + negation; false if not one.
  static bool class_escape(char e, Ranges& r, bool& neg) {
    neg = (e == 'D' || e == 'W' || e == 'S');
    switch (e) {
      case 'd': case 'D': r = {{'0', '9'}}; return true;
      case 'w': case 'W': r = {{'a', 'z'}, {'A', 'Z'}, {'0', '9'}, {'_', '_'}}; return true;
      case 's': case 'S': r = {{' ', ' '}, {'\t', '\r'}}; return true;
      default: return false;
    }
  }

  uint32_t escaped_char(char e) {
    switch (e) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case 'f': return '\f';
      case 'v': return '\v';
      case '0': return 0;
      case 'b': case 'B': fail("word boundaries (\\b, \\B) are not supported");
      case 'u': {
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i) {
          const char h = peek();
          const int d = (h >= '0' && h <= '9') ? h - '0'
                        : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                        : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
          if (d < 0) fail("\\u needs 4 hex digits");
          v = v * 16 + static_cast<uint32_t>(d);
          ++p_;
        }
        return v;
      }
      default: break;
    }
    if (e >= '1' && e <= '9') fail("back-references are not supported");
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) {
      fail(fmt::format("the escape '\\{}' is not supported", quote(e)));
    }
    return static_cast<uint8_t>(e);
  }

  std::string make_class(const Ranges& r, bool neg) {
    if (neg) {
      std::string out = "[^";
      for (const auto& [a, b] : r) out += class_char(a) + "-" + class_char(b);
      return out + "\\x00-\\x1F\"\\\\\\x7F]";
    }
    const Ranges keep = without_escaped(r);
    if (keep.empty()) fail("a character class of only characters JSON escapes");
    std::string out = "[";
    for (const auto& [a, b] : keep) out += class_char(a) + "-" + class_char(b);
    return out + "]";
  }

  std::string char_class() {
    ++p_;  // [
    bool neg = false;
    if (peek() == '^') {
      neg = true;
      ++p_;
    }
    Ranges r;
    bool first = true;
    while (more() && (peek() != ']' || first)) {
      first = false;
      uint32_t lo;
      if (peek() == '\\') {
        ++p_;
        if (!more()) fail("unterminated escape");
        const char e = s_[p_++];
        Ranges er;
        bool eneg = false;
        if (class_escape(e, er, eneg)) {
          if (eneg) fail(fmt::format("'\\{}' inside a character class is not supported", quote(e)));
          r.insert(r.end(), er.begin(), er.end());
          continue;
        }
        lo = escaped_char(e);
      } else {
        lo = utf8();
      }
      uint32_t hi = lo;
      if (peek() == '-' && p_ + 1 < s_.size() && s_[p_ + 1] != ']') {
        ++p_;
        if (peek() == '\\') {
          ++p_;
          if (!more()) fail("unterminated escape");
          hi = escaped_char(s_[p_++]);
        } else {
          hi = utf8();
        }
        if (hi < lo) fail("a character range with its end before its start");
      }
      r.push_back({lo, hi});
    }
    if (!more()) fail("unterminated character class");
    ++p_;  // ]
    return make_class(r, neg);
  }

  std::string atom() {
    const char c = s_[p_];
    if (c == '(') {
      ++p_;
      if (peek() == '?') {
        if (p_ + 1 < s_.size() && s_[p_ + 1] == ':') {
          p_ += 2;
        } else {
          fail("lookarounds and named groups ('(?') are not supported");
        }
      }
      std::string inner = join(alternatives());
      if (peek() != ')') fail("unbalanced '('");
      ++p_;
      return inner.front() == '(' ? inner : "(" + inner + ")";
    }
    if (c == '[') return char_class();
    if (c == '.') {
      ++p_;
      return make_class({}, true);
    }
    if (c == '\\') {
      ++p_;
      if (!more()) fail("a pattern ending in '\\'");
      const char e = s_[p_++];
      Ranges r;
      bool neg = false;
      if (class_escape(e, r, neg)) return make_class(r, neg);
      return json_char_literal(escaped_char(e));
    }
    if (c == '^' || c == '$') fail(fmt::format("'{}' is only supported at the pattern's ends", c));
    if (c == '*' || c == '+' || c == '?' || c == '{') fail(fmt::format("'{}' follows nothing", c));
    return json_char_literal(utf8());
  }

  std::string sequence() {
    std::string out;
    while (more() && peek() != '|' && peek() != ')' &&
           !(peek() == '$' && p_ + 1 == s_.size())) {
      std::string a = atom();
      bool quantified = false;
      const char q = peek();
      if (q == '*' || q == '+' || q == '?') {
        ++p_;
        a += q;
        quantified = true;
      } else if (q == '{') {
        const size_t close = s_.find('}', p_);
        if (close == std::string_view::npos) fail("unterminated '{'");
        std::string body(s_.substr(p_ + 1, close - p_ - 1));
        for (char ch : body) {
          if (!(ch >= '0' && ch <= '9') && ch != ',') fail("a bad '{m,n}' repetition");
        }
        if (body.empty() || body[0] == ',') fail("a bad '{m,n}' repetition");
        p_ = close + 1;
        a += "{" + body + "}";
        quantified = true;
      }
      if (quantified && peek() == '?') ++p_;  // lazy: the same language
      if (quantified && (peek() == '*' || peek() == '+' || peek() == '{' || peek() == '?')) {
        fail("a repeated repetition");
      }
      if (!out.empty()) out += ' ';
      out += a;
    }
    return out;
  }

  std::string_view s_;
  const std::string& chars_;
  size_t p_ = 0;
};

}  // namespace

Result<std::string> regex_to_gbnf(std::string_view pattern, const std::string& chars) {
  try {
    return Regex(pattern, chars).run();
  } catch (const RegexError& e) {
    return make_error("pattern '{}': {}", quote(pattern), e.message);
  }
}

}  // namespace tova::grammar
