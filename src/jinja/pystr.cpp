#include "jinja/pystr.h"

#include "jinja/value.h"

namespace tova::jinja::py {
namespace {

bool is_ascii_space(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}
bool is_ascii_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_ascii_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_alpha(char c) {
  return is_ascii_lower(c) || is_ascii_upper(c) || (static_cast<unsigned char>(c) & 0x80);
}

}  // namespace

// ASCII whitespace, U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028/9, U+202F, U+205F, U+3000.
bool is_space_at(std::string_view s, size_t i, size_t* len) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    *len = 1;
    return is_ascii_space(c);
  }
  auto at = [&](size_t k) -> unsigned char {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0;
  };
  if (c == 0xC2 && (at(1) == 0x85 || at(1) == 0xA0)) {
    *len = 2;
    return true;
  }
  if (c == 0xE1 && at(1) == 0x9A && at(2) == 0x80) {
    *len = 3;
    return true;
  }
  if (c == 0xE2 && at(1) == 0x80 &&
      (at(2) <= 0x8A || at(2) == 0xA8 || at(2) == 0xA9 || at(2) == 0xAF)) {
    *len = 3;
    return true;
  }
  if (c == 0xE2 && at(1) == 0x81 && at(2) == 0x9F) {
    *len = 3;
    return true;
  }
  if (c == 0xE3 && at(1) == 0x80 && at(2) == 0x80) {
    *len = 3;
    return true;
  }
  *len = 1;
  return false;
}

std::string strip(std::string_view s, std::optional<std::string_view> chars, bool left,
                  bool right) {
  std::vector<std::string_view> cps = code_points(s);
  std::vector<std::string_view> set;
  if (chars) set = code_points(*chars);
  auto strippable = [&](std::string_view cp) {
    if (!chars) {
      size_t n = 0;
      return is_space_at(cp, 0, &n) && n == cp.size();
    }
    for (auto c : set) {
      if (c == cp) return true;
    }
    return false;
  };
  size_t b = 0;
  size_t e = cps.size();
  if (left) {
    while (b < e && strippable(cps[b])) ++b;
  }
  if (right) {
    while (e > b && strippable(cps[e - 1])) --e;
  }
  std::string out;
  for (size_t i = b; i < e; ++i) out += cps[i];
  return out;
}

std::vector<std::string> split(std::string_view s, std::optional<std::string_view> sep,
                               long maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<long>(out.size()) < maxsplit) {
      const size_t f = s.find(*sep, pos);
      if (f == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, f - pos));
      pos = f + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  size_t i = 0;
  size_t n = 0;
  while (true) {
    while (i < s.size() && is_space_at(s, i, &n)) i += n;
    if (i >= s.size()) break;
    if (maxsplit >= 0 && static_cast<long>(out.size()) >= maxsplit) {
      std::string rest(s.substr(i));
      out.push_back(strip(rest, std::nullopt, false, true));
      break;
    }
    size_t j = i;
    while (j < s.size() && !is_space_at(s, j, &n)) j += n;
    out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::vector<std::string> rsplit(std::string_view s, std::optional<std::string_view> sep,
                                long maxsplit) {
  if (maxsplit < 0) return split(s, sep, maxsplit);
  std::vector<std::string> out;
  if (sep) {
    size_t end = s.size();
    while (static_cast<long>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      const size_t f = s.rfind(*sep, end - sep->size());
      if (f == std::string_view::npos) break;
      out.emplace_back(s.substr(f + sep->size(), end - f - sep->size()));
      end = f;
    }
    out.emplace_back(s.substr(0, end));
  } else {
    std::vector<std::string_view> cps = code_points(s);
    size_t e = cps.size();
    auto space = [&](size_t k) {
      size_t n = 0;
      return is_space_at(cps[k], 0, &n) && n == cps[k].size();
    };
    while (true) {
      while (e > 0 && space(e - 1)) --e;
      if (e == 0) break;
      if (static_cast<long>(out.size()) >= maxsplit) {
        std::string rest;
        for (size_t k = 0; k < e; ++k) rest += cps[k];
        out.push_back(strip(rest, std::nullopt, true, false));
        break;
      }
      size_t b = e;
      while (b > 0 && !space(b - 1)) --b;
      std::string w;
      for (size_t k = b; k < e; ++k) w += cps[k];
      out.push_back(std::move(w));
      e = b;
    }
  }
  return {out.rbegin(), out.rend()};
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  std::vector<std::string> out;
  size_t start = 0;
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    if (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') {
      n = 2;
    } else if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e)) {
      n = 1;
    } else if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x85) {
      n = 2;
    } else if (c == 0xE2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(s[i + 2]) == 0xA8 ||
                static_cast<unsigned char>(s[i + 2]) == 0xA9)) {
      n = 3;
    }
    if (n) {
      out.emplace_back(s.substr(start, (keepends ? i + n : i) - start));
      i += n;
      start = i;
    } else {
      ++i;
    }
  }
  if (start < s.size()) out.emplace_back(s.substr(start));
  return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view with, long count) {
  std::string out;
  long done = 0;
  if (old.empty()) {
    std::vector<std::string_view> cps = code_points(s);
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) {
        out += with;
        ++done;
      }
      if (i < cps.size()) out += cps[i];
    }
    return out;
  }
  size_t pos = 0;
  while (count < 0 || done < count) {
    const size_t f = s.find(old, pos);
    if (f == std::string_view::npos) break;
    out += s.substr(pos, f - pos);
    out += with;
    pos = f + old.size();
    ++done;
  }
  out += s.substr(pos);
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (is_ascii_lower(c)) c = static_cast<char>(c - 32);
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (is_ascii_upper(c)) c = static_cast<char>(c + 32);
  }
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out = lower(s);
  if (!out.empty() && is_ascii_lower(out[0])) out[0] = static_cast<char>(out[0] - 32);
  return out;
}

std::string title(std::string_view s) {
  std::string out(s);
  bool prev_cased = false;
  for (char& c : out) {
    if (is_ascii_lower(c) || is_ascii_upper(c)) {
      if (!prev_cased && is_ascii_lower(c)) c = static_cast<char>(c - 32);
      if (prev_cased && is_ascii_upper(c)) c = static_cast<char>(c + 32);
      prev_cased = true;
    } else {
      prev_cased = is_alpha(c) && prev_cased;
    }
  }
  return out;
}

size_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return code_point_count(s) + 1;
  size_t n = 0;
  for (size_t pos = s.find(sub); pos != std::string_view::npos; pos = s.find(sub, pos + sub.size())) {
    ++n;
  }
  return n;
}

bool is_lower(std::string_view s) {
  bool cased = false;
  for (char c : s) {
    if (is_ascii_upper(c)) return false;
    cased = cased || is_ascii_lower(c);
  }
  return cased;
}

bool is_upper(std::string_view s) {
  bool cased = false;
  for (char c : s) {
    if (is_ascii_lower(c)) return false;
    cased = cased || is_ascii_upper(c);
  }
  return cased;
}

long find(std::string_view s, std::string_view sub, bool reverse) {
  const size_t f = reverse ? s.rfind(sub) : s.find(sub);
  if (f == std::string_view::npos) return -1;
  return static_cast<long>(code_point_count(s.substr(0, f)));
}

std::string center(std::string_view s, long width, std::string_view fill) {
  const long len = static_cast<long>(code_point_count(s));
  if (width <= len) return std::string(s);
  const long marg = width - len;
  const long left = marg / 2 + (marg & width & 1);
  std::string out;
  for (long i = 0; i < left; ++i) out += fill;
  out += s;
  for (long i = 0; i < marg - left; ++i) out += fill;
  return out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace tova::jinja::py
