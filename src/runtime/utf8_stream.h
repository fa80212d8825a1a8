// Streaming text one token at a time: a token's bytes may end inside a multi-byte UTF-8
// character (byte-level vocabularies split emoji and CJK across tokens). Utf8Stream holds such
// a tail back until the character completes, so every piece it hands out is whole UTF-8 that a
// JSON encoder or a terminal accepts. Bytes that can never complete (an invalid lead or a
// broken sequence) are passed on as they are rather than held forever.
#pragma once

#include <string>
#include <string_view>

namespace tova::runtime {

class Utf8Stream {
 public:
  // Appends bytes; returns the longest prefix of everything pending that does not end inside
  // an incomplete character.
  std::string push(std::string_view bytes);
  // Returns whatever is still held (an incomplete character at the end of generation).
  std::string flush();
  bool empty() const { return held_.empty(); }

 private:
  std::string held_;
};

// How many bytes at the end of s form the start of a character that is not complete yet
// (0 if s ends on a character boundary or with bytes that can never complete).
size_t incomplete_utf8_tail(std::string_view s);

}  // namespace tova::runtime
