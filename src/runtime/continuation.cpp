#include "runtime/continuation.h"

namespace tova::runtime {

std::vector<int32_t> continuation_ids(const tok::Tokenizer& tk, std::string_view text,
                                      bool parse_special) {
  // A vocabulary with a space prefix encodes "a" as "▁a", whose piece after another token
  // begins with a space.
  const std::vector<int32_t> probe = tk.encode("a", false, false);
  const bool space_prefix =
      !probe.empty() && tk.token_to_piece(probe[0], probe[0]).starts_with(' ');
  if (space_prefix && !text.empty() && text[0] == ' ') text.remove_prefix(1);
  return tk.encode(text, false, parse_special);
}

}  // namespace tova::runtime
