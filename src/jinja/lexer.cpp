#include "jinja/lexer.h"

#include "tova/utf8.h"

#include <algorithm>

namespace tova::jinja {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string rstrip_space(std::string_view s) {
  size_t e = s.size();
  while (e > 0 && is_space(s[e - 1])) --e;
  return std::string(s.substr(0, e));
}

class Lexer {
 public:
  Lexer(std::string source, const LexOptions& o) : src_(std::move(source)), o_(o) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  Result<std::vector<Token>> run() {
    size_t pos = 0;
    bool line_starting = true;
    while (pos <= src_.size()) {
      const size_t open = find_open(pos);
      if (open == std::string::npos) {
        if (pos < src_.size()) push(Token::Kind::kData, src_.substr(pos), pos);
        break;
      }
      const char kind = src_[open + 1];  // '{', '%' or '#'
      const char sign = open + 2 < src_.size() ? src_[open + 2] : '\0';
      std::string text = src_.substr(pos, open - pos);
      const bool raw = kind == '%' && is_raw_begin(open);
      if (sign == '-') {
        text = rstrip_space(text);
      } else if (sign != '+' && o_.lstrip_blocks && kind != '{') {
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting) && l_pos < text.size() &&
            std::all_of(text.begin() + static_cast<long>(l_pos), text.end(), is_space)) {
          text.resize(l_pos);
        }
      }
      if (!text.empty()) push(Token::Kind::kData, text, pos);
      size_t after = open + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      if (raw) {
        TOVA_ASSIGN_OR_RETURN(pos, lex_raw(open, after, line_starting));
        continue;
      }
      if (kind == '#') {
        const size_t close = src_.find("#}", after);
        if (close == std::string::npos) return error(open, "missing end of comment tag");
        const char end_sign = close > after ? src_[close - 1] : '\0';
        pos = finish_tag(close + 2, end_sign, /*block=*/true, line_starting);
        continue;
      }
      push(kind == '{' ? Token::Kind::kVarBegin : Token::Kind::kBlockBegin, "", open);
      TOVA_ASSIGN_OR_RETURN(pos, lex_tag(after, kind == '{', line_starting));
    }
    push(Token::Kind::kEnd, "", src_.size());
    return std::move(tokens_);
  }

 private:
  size_t find_open(size_t pos) const {
    while (true) {
      const size_t p = src_.find('{', pos);
      if (p == std::string::npos || p + 1 >= src_.size()) return std::string::npos;
      const char c = src_[p + 1];
      if (c == '{' || c == '%' || c == '#') return p;
      pos = p + 1;
    }
  }

  // `{% raw %}` (signs allowed) at `open`.
  bool is_raw_begin(size_t open) const {
    size_t p = open + 2;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    while (p < src_.size() && is_space(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    while (p < src_.size() && is_space(src_[p])) ++p;
    return src_.compare(p, 2, "%}") == 0 || src_.compare(p, 3, "-%}") == 0;
  }

  Result<size_t> lex_raw(size_t open, size_t after, bool& line_starting) {
    size_t p = src_.find("%}", after);
    const bool strip_after = src_[p - 1] == '-';
    p += 2;
    if (strip_after) {
      while (p < src_.size() && is_space(src_[p])) ++p;
    }
    line_starting = p > 0 && src_[p - 1] == '\n';
    // The body runs to the first {% endraw %}.
    size_t search = p;
    while (true) {
      const size_t q = src_.find("{%", search);
      if (q == std::string::npos) return error(open, "missing end of raw directive");
      size_t r = q + 2;
      const char sign = r < src_.size() && (src_[r] == '-' || src_[r] == '+') ? src_[r] : '\0';
      if (sign) ++r;
      while (r < src_.size() && is_space(src_[r])) ++r;
      if (src_.compare(r, 6, "endraw") != 0) {
        search = q + 2;
        continue;
      }
      r += 6;
      while (r < src_.size() && is_space(src_[r])) ++r;
      char end_sign = '\0';
      if (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) end_sign = src_[r++];
      if (src_.compare(r, 2, "%}") != 0) {
        search = q + 2;
        continue;
      }
      std::string body = src_.substr(p, q - p);
      if (sign == '-') {
        body = rstrip_space(body);
      } else if (sign != '+' && o_.lstrip_blocks) {
        const size_t nl = body.rfind('\n');
        const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting) && l_pos < body.size() &&
            std::all_of(body.begin() + static_cast<long>(l_pos), body.end(), is_space)) {
          body.resize(l_pos);
        }
      }
      if (!body.empty()) push(Token::Kind::kData, body, p);
      return finish_tag(r + 2, end_sign, /*block=*/true, line_starting);
    }
  }

  // After a tag's closing delimiter at `p`: `-` eats the whitespace that follows, trim_blocks
  // one newline after a block or comment.
  size_t finish_tag(size_t p, char end_sign, bool block, bool& line_starting) {
    if (end_sign == '-') {
      while (p < src_.size() && is_space(src_[p])) ++p;
    } else if (end_sign != '+' && block && o_.trim_blocks && p < src_.size() && src_[p] == '\n') {
      ++p;
    }
    line_starting = p > 0 && src_[p - 1] == '\n';
    return p;
  }

  Result<size_t> lex_tag(size_t p, bool variable, bool& line_starting) {
    std::vector<char> brackets;
    const size_t start = p;
    while (true) {
      while (p < src_.size() && is_space(src_[p])) ++p;
      if (p >= src_.size()) {
        return error(start, variable ? "unexpected end of template, expected '}}'"
                                     : "unexpected end of template, expected '%}'");
      }
      if (brackets.empty()) {
        const std::string_view rest(src_.data() + p, src_.size() - p);
        const std::string_view close = variable ? "}}" : "%}";
        char end_sign = '\0';
        size_t len = 0;
        if (rest.starts_with(close)) {
          len = 2;
        } else if (rest.size() >= 3 && (rest[0] == '-' || (!variable && rest[0] == '+')) &&
                   rest.substr(1).starts_with(close)) {
          end_sign = rest[0];
          len = 3;
        }
        if (len) {
          push(variable ? Token::Kind::kVarEnd : Token::Kind::kBlockEnd, "", p);
          return finish_tag(p + len, end_sign, !variable, line_starting);
        }
      }
      const char c = src_[p];
      if (is_name_start(c)) {
        size_t e = p + 1;
        while (e < src_.size() && (is_name_start(src_[e]) || is_digit(src_[e]))) ++e;
        push(Token::Kind::kName, src_.substr(p, e - p), p);
        p = e;
      } else if (is_digit(c)) {
        TOVA_ASSIGN_OR_RETURN(p, lex_number(p));
      } else if (c == '\'' || c == '"') {
        TOVA_ASSIGN_OR_RETURN(p, lex_string(p));
      } else {
        static constexpr std::string_view kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-",
                                                    "*",  "/",  "%",  "~",  "<",  ">",  "=", ".",
                                                    ",",  ":",  "|",  "(",  ")",  "[",  "]", "{",
                                                    "}",  ";"};
        std::string_view op;
        for (std::string_view o : kOps) {
          if (src_.compare(p, o.size(), o) == 0) {
            op = o;
            break;
          }
        }
        if (op.empty()) return error(p, "unexpected character '" + std::string(1, c) + "'");
        if (op == "(" || op == "[" || op == "{") {
          if (brackets.size() >= 256) return error(p, "brackets nested too deeply");
          brackets.push_back(op[0] == '(' ? ')' : op[0] == '[' ? ']' : '}');
        } else if (op == ")" || op == "]" || op == "}") {
          if (brackets.empty() || brackets.back() != op[0]) {
            return error(p, "unexpected '" + std::string(op) + "'");
          }
          brackets.pop_back();
        }
        push(Token::Kind::kOp, std::string(op), p);
        p += op.size();
      }
    }
  }

  Result<size_t> lex_number(size_t p) {
    size_t e = p;
    auto digits = [&] {
      while (e < src_.size() && (is_digit(src_[e]) || (src_[e] == '_' && e + 1 < src_.size() &&
                                                       is_digit(src_[e + 1])))) {
        ++e;
      }
    };
    digits();
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' && is_digit(src_[e + 1])) {
      is_float = true;
      ++e;
      digits();
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t f = e + 1;
      if (f < src_.size() && (src_[f] == '+' || src_[f] == '-')) ++f;
      if (f < src_.size() && is_digit(src_[f])) {
        is_float = true;
        e = f;
        digits();
      }
    }
    std::string text;
    for (size_t i = p; i < e; ++i) {
      if (src_[i] != '_') text += src_[i];
    }
    push(is_float ? Token::Kind::kFloat : Token::Kind::kInt, text, p);
    return e;
  }

  // A quoted string with Python's escapes (jinja2 decodes them as 'unicode-escape'; an unknown
  // escape such as \d stays as written).
  Result<size_t> lex_string(size_t p) {
    const char q = src_[p];
    std::string out;
    size_t i = p + 1;
    while (true) {
      if (i >= src_.size()) return error(p, "unterminated string");
      const char c = src_[i];
      if (c == q) break;
      if (c != '\\') {
        out += c;
        ++i;
        continue;
      }
      if (i + 1 >= src_.size()) return error(p, "unterminated string");
      const char n = src_[i + 1];
      i += 2;
      auto hex = [&](int count) -> Result<uint32_t> {
        uint32_t v = 0;
        for (int k = 0; k < count; ++k, ++i) {
          if (i >= src_.size()) return error(p, "truncated escape in a string");
          const char h = src_[i];
          int d = h >= '0' && h <= '9'   ? h - '0'
                  : h >= 'a' && h <= 'f' ? h - 'a' + 10
                  : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                         : -1;
          if (d < 0) return error(p, "bad escape in a string");
          v = v * 16 + static_cast<uint32_t>(d);
        }
        return v;
      };
      switch (n) {
        case '\n': break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'x': {
          TOVA_ASSIGN_OR_RETURN(uint32_t v, hex(2));
          append_utf8(out, v);
          break;
        }
        case 'u': {
          TOVA_ASSIGN_OR_RETURN(uint32_t v, hex(4));
          append_utf8(out, v);
          break;
        }
        case 'U': {
          TOVA_ASSIGN_OR_RETURN(uint32_t v, hex(8));
          if (v > 0x10FFFF) return error(p, "bad \\U escape in a string");
          append_utf8(out, v);
          break;
        }
        default:
          if (n >= '0' && n <= '7') {
            uint32_t v = static_cast<uint32_t>(n - '0');
            for (int k = 0; k < 2 && i < src_.size() && src_[i] >= '0' && src_[i] <= '7'; ++k) {
              v = v * 8 + static_cast<uint32_t>(src_[i++] - '0');
            }
            append_utf8(out, v);
          } else {
            out += '\\';
            out += n;
          }
      }
    }
    push(Token::Kind::kString, out, p);
    return i + 1;
  }

  void push(Token::Kind k, std::string text, size_t offset) {
    auto [line, col] = where(offset);
    tokens_.push_back(Token{k, std::move(text), line, col});
  }

  std::pair<int, int> where(size_t offset) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const size_t line = static_cast<size_t>(it - line_starts_.begin());
    return {static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
  }

  Error error(size_t offset, std::string_view what) const {
    auto [line, col] = where(offset);
    return make_error("line {}, column {}: {}", line, col, what);
  }

  std::string src_;
  LexOptions o_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

// "\r\n" and "\r" become "\n"; one trailing newline goes.
std::string normalise(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out += s[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

Result<std::vector<Token>> tokenize(std::string_view source, const LexOptions& options) {
  return Lexer(normalise(source), options).run();
}

}  // namespace tova::jinja
