#include "tova/utf8.h"

namespace tova {
namespace {

// How many bytes of s, from `at`, form one well-formed character; 0 if none does. `subpart`
// gets the length of the maximal subpart (the longest prefix of a well-formed character, at
// least 1), which is what one U+FFFD replaces.
size_t well_formed_at(std::string_view s, size_t at, size_t& subpart) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[at + i]); };
  const unsigned char c = byte(0);
  subpart = 1;
  if (c < 0x80) return 1;
  size_t len = 0;
  // The range the second byte must be in (Unicode's table 3-7 of well-formed byte sequences).
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlong forms
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;  // no overlong forms
    if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;  // a continuation byte, C0, C1 or F5..FF: never a lead
  }
  for (size_t i = 1; i < len; ++i) {
    if (at + i >= s.size()) return 0;  // truncated: the bytes so far are one subpart
    const unsigned char b = byte(i);
    const bool ok = i == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return 0;
    subpart = i + 1;
  }
  return len;
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  size_t subpart = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t n = well_formed_at(s, i, subpart);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string valid_utf8(std::string_view s) {
  if (is_valid_utf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 16);
  size_t subpart = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t n = well_formed_at(s, i, subpart);
    if (n == 0) {
      out += kReplacementCharacter;
      i += subpart;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp > 0x10FFFF) cp = 0xFFFD;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace tova
