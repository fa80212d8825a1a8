#include "grammar/gbnf.h"

#include "grammar/quote.h"

#include <algorithm>
#include <unordered_map>

namespace tova::grammar {

namespace {

// Past these a grammar is refused (hostile input must not exhaust memory): elements after
// repetitions are expanded, and the count of a {m,n}.
constexpr size_t kMaxElems = size_t{1} << 20;
constexpr uint64_t kMaxRepeat = 10000;

struct ParseError {
  size_t pos;
  std::string message;
};

using Seq = std::vector<Elem>;

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Parser {
 public:
  explicit Parser(std::string_view src) : s_(src) {}

  Grammar run() {
    space(true);
    while (p_ < s_.size()) {
      rule();
    }
    if (rules_.empty()) throw ParseError{0, "the grammar is empty (no rules)"};
    return finish();
  }

  // "line L, column C" of a byte offset (columns count bytes from 1).
  std::string where(size_t pos) const {
    int line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < pos && i < s_.size(); ++i) {
      if (s_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    return fmt::format("line {}, column {}", line, pos - line_start + 1);
  }

 private:
  struct RuleInfo {
    std::string name;
    std::vector<Seq> alts;
    bool defined = false;
    size_t defined_at = 0;
    size_t first_use = 0;
    std::string used_in;  // the rule whose body first named it
  };

  [[noreturn]] void fail(const std::string& what) const { fail_at(p_, what); }
  [[noreturn]] void fail_at(size_t pos, const std::string& what) const {
    const std::string in = rule_name_.empty() ? "" : fmt::format(" (in rule '{}')", rule_name_);
    throw ParseError{pos, what + in};
  }

  bool at_end() const { return p_ >= s_.size(); }
  char peek(size_t k = 0) const { return p_ + k < s_.size() ? s_[p_ + k] : '\0'; }

  void space(bool newline_ok) {
    while (!at_end()) {
      const char c = s_[p_];
      if (c == ' ' || c == '\t') {
        ++p_;
      } else if (c == '#') {
        while (!at_end() && s_[p_] != '\n' && s_[p_] != '\r') ++p_;
      } else if (newline_ok && (c == '\n' || c == '\r')) {
        ++p_;
      } else {
        break;
      }
    }
  }

  std::string name() {
    const size_t b = p_;
    while (!at_end() && is_word_char(s_[p_])) ++p_;
    if (p_ == b) fail("expected a rule name");
    return std::string(s_.substr(b, p_ - b));
  }

  uint32_t id_of(const std::string& n, size_t use_pos) {
    auto [it, fresh] = ids_.emplace(n, static_cast<uint32_t>(rules_.size()));
    if (fresh) {
      rules_.push_back(RuleInfo{.name = n, .first_use = use_pos, .used_in = rule_name_});
    }
    return it->second;
  }

  uint32_t new_rule(std::vector<Seq> alts) {
    const std::string n = fmt::format("{}#{}", rule_name_, ++n_generated_);
    const uint32_t id = id_of(n, p_);
    rules_[id].alts = std::move(alts);
    rules_[id].defined = true;
    rules_[id].defined_at = p_;
    count(rules_[id].alts);
    return id;
  }

  void count(const std::vector<Seq>& alts) {
    for (const Seq& s : alts) n_elems_ += s.size() + 1;
    if (n_elems_ > kMaxElems) {
      fail("the grammar is too large once its repetitions are expanded (more than 2^20 "
           "elements)");
    }
  }

  void rule() {
    const size_t start = p_;
    rule_name_.clear();
    const std::string n = name();
    rule_name_ = n;
    space(false);
    if (s_.substr(p_, 3) != "::=") fail("expected '::=' after the rule name");
    p_ += 3;
    space(true);
    std::vector<Seq> alts = alternates(false);
    if (!at_end() && s_[p_] != '\n' && s_[p_] != '\r') {
      fail(fmt::format("unexpected '{}' (expected the end of the rule's line)", quote(s_[p_])));
    }
    const uint32_t id = id_of(n, start);
    RuleInfo& r = rules_[id];
    if (r.defined) {
      fail_at(start, fmt::format("rule '{}' is defined twice (first at {})", n,
                                 where(r.defined_at)));
    }
    r.defined = true;
    r.defined_at = start;
    count(alts);
    r.alts = std::move(alts);
    space(true);
  }

  std::vector<Seq> alternates(bool nested) {
    std::vector<Seq> alts;
    alts.push_back(sequence(nested));
    while (peek() == '|') {
      ++p_;
      space(true);
      alts.push_back(sequence(nested));
    }
    return alts;
  }

  uint32_t utf8_char() {
    const auto b0 = static_cast<uint8_t>(s_[p_]);
    int n = 0;
    uint32_t c = 0;
    if (b0 < 0x80) {
      n = 1;
      c = b0;
    } else if ((b0 >> 5) == 6) {
      n = 2;
      c = b0 & 0x1F;
    } else if ((b0 >> 4) == 14) {
      n = 3;
      c = b0 & 0x0F;
    } else if ((b0 >> 3) == 30) {
      n = 4;
      c = b0 & 0x07;
    } else {
      fail("invalid UTF-8 in the grammar");
    }
    for (int i = 1; i < n; ++i) {
      const auto b = static_cast<uint8_t>(peek(i));
      if ((b >> 6) != 2) fail("invalid UTF-8 in the grammar");
      c = (c << 6) | (b & 0x3F);
    }
    p_ += n;
    return c;
  }

  // One character of a literal or a class, escapes decoded.
  uint32_t character() {
    if (at_end()) fail("unexpected end of the grammar");
    if (s_[p_] != '\\') return utf8_char();
    const size_t esc = p_;
    ++p_;
    if (at_end()) fail("unexpected end of the grammar after '\\'");
    const char e = s_[p_++];
    int digits = 0;
    switch (e) {
      case 'n': return '\n';
      case 'r': return '\r';
      case 't': return '\t';
      case '\\': return '\\';
      case '"': return '"';
      case '[': return '[';
      case ']': return ']';
      case '-': return '-';
      case '/': return '/';
      case 'x': digits = 2; break;
      case 'u': digits = 4; break;
      case 'U': digits = 8; break;
      default:
        fail_at(esc, fmt::format("unknown escape '\\{}'", quote(e)));
    }
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = hex_value(peek());
      if (h < 0) {
        fail_at(esc, fmt::format("bad escape: '\\{}' needs {} hex digits", e, digits));
      }
      v = v * 16 + static_cast<uint32_t>(h);
      ++p_;
    }
    if (v > 0x10FFFF) fail_at(esc, "bad escape: the code point is above U+10FFFF");
    return v;
  }

  uint32_t add_class(CharClass c) {
    c.finish();
    classes_.push_back(std::move(c));
    return static_cast<uint32_t>(classes_.size() - 1);
  }

  uint64_t integer() {
    const size_t b = p_;
    uint64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + static_cast<uint64_t>(peek() - '0');
      if (v > kMaxRepeat) fail(fmt::format("repetition count above {}", kMaxRepeat));
      ++p_;
    }
    if (p_ == b) fail("expected a number in '{...}'");
    return v;
  }

  // Rewrites the last item of `seq` (from `item`) into `min` copies and the optional rest, as
  // rules of their own (x{2,4} -> x x R2, R2 ::= x R1 |, R1 ::= x |).
  void repeat(Seq& seq, size_t item, uint64_t min, uint64_t max, bool unbounded) {
    const Seq x(seq.begin() + static_cast<std::ptrdiff_t>(item), seq.end());
    seq.resize(item);
    const uint64_t total = (min + (unbounded ? 1 : max - min)) * (x.size() + 1);
    if (n_elems_ + total > kMaxElems) {
      fail("the grammar is too large once its repetitions are expanded (more than 2^20 "
           "elements)");
    }
    for (uint64_t i = 0; i < min; ++i) seq.insert(seq.end(), x.begin(), x.end());
    if (unbounded) {
      // R ::= x R |
      const std::string n = fmt::format("{}#{}", rule_name_, ++n_generated_);
      const uint32_t id = id_of(n, p_);
      Seq body = x;
      body.push_back({ElemKind::kRef, id});
      rules_[id].alts = {body, Seq{}};
      rules_[id].defined = true;
      rules_[id].defined_at = p_;
      count(rules_[id].alts);
      seq.push_back({ElemKind::kRef, id});
      return;
    }
    if (max == min) return;
    uint32_t prev = 0;
    for (uint64_t i = 0; i < max - min; ++i) {
      Seq body = x;
      if (i > 0) body.push_back({ElemKind::kRef, prev});
      prev = new_rule({body, Seq{}});
    }
    seq.push_back({ElemKind::kRef, prev});
  }

  // A "..." literal: one character class per character; item where it starts (none for "").
  void string_literal(Seq& seq, size_t& item) {
    const size_t open = p_;
    ++p_;
    item = seq.size();
    while (peek() != '"') {
      if (at_end()) fail_at(open, "unterminated string literal");
      CharClass k;
      const uint32_t ch = character();
      k.ranges.push_back({ch, ch});
      seq.push_back({ElemKind::kChars, add_class(std::move(k))});
    }
    ++p_;
    if (seq.size() == item) item = SIZE_MAX;  // "" is nothing to repeat
  }

  // A [...] character class (negated with ^, ranges with -).
  void char_class(Seq& seq, size_t& item) {
    const size_t open = p_;
    ++p_;
    CharClass k;
    if (peek() == '^') {
      k.negated = true;
      ++p_;
    }
    while (peek() != ']') {
      if (at_end()) fail_at(open, "unterminated character class");
      const uint32_t lo = character();
      uint32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && p_ + 1 < s_.size()) {
        ++p_;
        hi = character();
        if (hi < lo) fail("character range with its end before its start");
      }
      k.ranges.push_back({lo, hi});
    }
    ++p_;
    item = seq.size();
    seq.push_back({ElemKind::kChars, add_class(std::move(k))});
  }

  // A postfix repetition of the item at `item`: *, +, ? or {m}, {m,}, {m,n}.
  void repetition(Seq& seq, size_t item, char c, bool nested) {
    if (item == SIZE_MAX) fail(fmt::format("'{}' follows nothing to repeat", c));
    ++p_;
    if (c == '*') {
      repeat(seq, item, 0, 0, true);
    } else if (c == '+') {
      repeat(seq, item, 1, 0, true);
    } else if (c == '?') {
      repeat(seq, item, 0, 1, false);
    } else {
      space(nested);
      const uint64_t m = integer();
      space(nested);
      uint64_t n = m;
      bool unbounded = false;
      if (peek() == ',') {
        ++p_;
        space(nested);
        if (peek() == '}') {
          unbounded = true;
        } else {
          n = integer();
          space(nested);
        }
      }
      if (peek() != '}') fail("expected '}' to close the repetition");
      ++p_;
      if (!unbounded && n < m) fail(fmt::format("repetition {{{},{}}} has max < min", m, n));
      repeat(seq, item, m, n, unbounded);
    }
  }

  Seq sequence(bool nested) {
    Seq seq;
    size_t item = SIZE_MAX;  // where the last item starts (for a postfix operator)
    while (!at_end()) {
      const char c = s_[p_];
      if (c == '"') {
        string_literal(seq, item);
      } else if (c == '[') {
        char_class(seq, item);
      } else if (c == '.') {
        ++p_;
        CharClass k;
        k.negated = true;
        item = seq.size();
        seq.push_back({ElemKind::kChars, add_class(std::move(k))});
      } else if (is_word_char(c)) {
        const size_t use = p_;
        const std::string n = name();
        // `name ::=` starts the next rule: a sequence at top level never runs into it, since
        // newlines end it; inside a group it is an error.
        item = seq.size();
        seq.push_back({ElemKind::kRef, id_of(n, use)});
      } else if (c == '(') {
        ++p_;
        space(true);
        std::vector<Seq> alts = alternates(true);
        if (peek() != ')') fail("expected ')'");
        ++p_;
        item = seq.size();
        if (alts.size() == 1) {
          // A plain group: its elements inline (a repetition still sees them as one item).
          seq.insert(seq.end(), alts[0].begin(), alts[0].end());
          if (seq.size() == item) item = SIZE_MAX;
        } else {
          seq.push_back({ElemKind::kRef, new_rule(std::move(alts))});
        }
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        repetition(seq, item, c, nested);
        item = SIZE_MAX;  // x** is not accepted
      } else if (c == '<' || c == '!') {
        fail("token references (<...>, !<...>) are not supported: write the text");
      } else {
        break;
      }
      space(nested);
    }
    return seq;
  }

  // Rules that can match the empty string (a fixed point over the alternatives).
  std::vector<char> nullable_rules() const {
    const size_t n = rules_.size();
    std::vector<char> nullable(n, 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n; ++r) {
        if (nullable[r]) continue;
        for (const Seq& a : rules_[r].alts) {
          bool all = true;
          for (const Elem& e : a) {
            if (e.kind == ElemKind::kChars || !nullable[e.value]) {
              all = false;
              break;
            }
          }
          if (all) {
            nullable[r] = 1;
            changed = true;
            break;
          }
        }
      }
    }
    return nullable;
  }

  // Left recursion: a rule reachable from itself without consuming a character. Nullable
  // rules first, then a depth-first search of the left-corner graph; throws naming the cycle.
  void check_left_recursion() const {
    const size_t n = rules_.size();
    const std::vector<char> nullable = nullable_rules();
    std::vector<std::vector<uint32_t>> left(n);
    for (size_t r = 0; r < n; ++r) {
      for (const Seq& a : rules_[r].alts) {
        for (const Elem& e : a) {
          if (e.kind == ElemKind::kChars) break;
          left[r].push_back(e.value);
          if (!nullable[e.value]) break;
        }
      }
    }
    // Iterative (a chain of repetition rules can be hundreds of thousands deep).
    std::vector<char> mark(n, 0);  // 0 new, 1 on the path, 2 done
    std::vector<std::pair<uint32_t, size_t>> path;  // (rule, next edge to try)
    for (size_t start = 0; start < n; ++start) {
      if (mark[start] != 0) continue;
      mark[start] = 1;
      path.push_back({static_cast<uint32_t>(start), 0});
      while (!path.empty()) {
        auto& [r, k] = path.back();
        if (k == left[r].size()) {
          mark[r] = 2;
          path.pop_back();
          continue;
        }
        const uint32_t s = left[r][k++];
        if (mark[s] == 1) {
          std::string cycle;
          size_t i = 0;
          while (path[i].first != s) ++i;
          for (; i < path.size(); ++i) cycle += shown_name(path[i].first) + " -> ";
          cycle += shown_name(s);
          throw ParseError{rules_[s].defined_at,
                           fmt::format("rule '{}' is left-recursive ({})", shown_name(s), cycle)};
        }
        if (mark[s] == 0) {
          mark[s] = 1;
          path.push_back({s, 0});
        }
      }
    }
  }

  Grammar finish() {
    Grammar g;
    auto root = ids_.find("root");
    if (root == ids_.end() || !rules_[root->second].defined) {
      throw ParseError{0, "the grammar has no 'root' rule"};
    }
    for (const RuleInfo& r : rules_) {
      if (!r.defined) {
        rule_name_ = r.used_in;
        fail_at(r.first_use, fmt::format("undefined rule '{}'", r.name));
      }
    }
    rule_name_.clear();
    const size_t n = rules_.size();
    check_left_recursion();
    g.names.reserve(n);
    g.alts.resize(n);
    for (size_t r = 0; r < n; ++r) {
      g.names.push_back(rules_[r].name);
      for (const Seq& a : rules_[r].alts) {
        g.alts[r].push_back(static_cast<uint32_t>(g.elems.size()));
        g.elems.insert(g.elems.end(), a.begin(), a.end());
        g.elems.push_back({ElemKind::kEnd, 0});
      }
    }
    g.classes = std::move(classes_);
    g.root = root->second;
    return g;
  }

  // A generated rule's name ("root#3") says which written rule it came from.
  std::string shown_name(uint32_t r) const {
    const std::string& n = rules_[r].name;
    const size_t hash = n.find('#');
    if (hash == std::string::npos) return n;
    return fmt::format("a group or repetition of '{}'", n.substr(0, hash));
  }

  std::string_view s_;
  size_t p_ = 0;
  std::string rule_name_;
  int n_generated_ = 0;
  size_t n_elems_ = 0;
  std::vector<RuleInfo> rules_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<CharClass> classes_;
};

}  // namespace

Result<Grammar> parse_gbnf(std::string_view text) {
  Parser p(text);
  try {
    return p.run();
  } catch (const ParseError& e) {
    return make_error("grammar: {}: {}", p.where(e.pos), e.message);
  }
}

}  // namespace tova::grammar
