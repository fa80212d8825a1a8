#include "runtime/utf8_stream.h"

namespace tova::runtime {

namespace {

// The length of the character a lead byte starts, or 0 for a continuation or invalid byte.
int utf8_length(unsigned char c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}

}  // namespace

size_t incomplete_utf8_tail(std::string_view s) {
  // A character is at most 4 bytes: look back at most 3 bytes for its lead byte.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const unsigned char c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: keep looking for the lead
    const int len = utf8_length(c);
    // A lead byte whose character needs more bytes than are there: incomplete. Anything else
    // (ASCII, a complete character, an invalid byte) ends the text on a boundary we pass on.
    return len > static_cast<int>(back) ? back : 0;
  }
  return 0;
}

std::string Utf8Stream::push(std::string_view bytes) {
  held_.append(bytes);
  const size_t tail = incomplete_utf8_tail(held_);
  std::string out = held_.substr(0, held_.size() - tail);
  held_.erase(0, held_.size() - tail);
  return out;
}

std::string Utf8Stream::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace tova::runtime
