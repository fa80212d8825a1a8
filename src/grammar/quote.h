// Input text quoted in an error message: control characters (and DEL) escaped, so an error
// stays one line whatever a grammar or schema holds; long text cut.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace tova::grammar {

inline std::string quote(std::string_view s, size_t max = 64) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

inline std::string quote(char c) { return quote(std::string_view(&c, 1)); }

}  // namespace tova::grammar
