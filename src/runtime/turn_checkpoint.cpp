#include "tova/turn_checkpoint.h"

#include <algorithm>

namespace tova {

std::vector<ChatMessage> next_turn_probe(const std::vector<ChatMessage>& messages) {
  // Placeholders no generation prompt begins with and no template trims away (control
  // characters, not white space): the rendered texts part where the answer's text would begin.
  std::vector<ChatMessage> probe = messages;
  probe.push_back({.role = "assistant", .content = "\x01"});
  probe.push_back({.role = "user", .content = "\x02"});
  return probe;
}

int64_t turn_boundary(std::span<const int32_t> prompt, std::span<const int32_t> next) {
  const auto mismatch = std::mismatch(prompt.begin(), prompt.end(), next.begin(), next.end());
  return static_cast<int64_t>(mismatch.first - prompt.begin());
}

}  // namespace tova
