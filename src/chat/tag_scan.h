// Finding tags in streamed text: a tag may arrive split over pieces, so the bytes at the end of
// what arrived that could begin one are held back until the next piece says.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

namespace tova::chat {

// The longest suffix of `text` that is a proper prefix of `tag`.
inline size_t tag_overlap(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(tag.size() - 1, text.size()); n > 0; --n) {
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

inline size_t tag_overlap(std::string_view text, std::initializer_list<std::string_view> tags) {
  size_t keep = 0;
  for (std::string_view t : tags) keep = std::max(keep, tag_overlap(text, t));
  return keep;
}

inline bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

inline std::string_view trim_right(std::string_view s) {
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

inline std::string_view trim_left(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  return s;
}

}  // namespace tova::chat
