// Text that continues a token sequence (a conversation's next question, an expected answer, a
// reconstruction prompt) as tokens: encoded alone, without BOS, so that what was fed before
// stays as it was.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tova::runtime {

// The tokens of `text` continuing a sequence (no BOS; parse_special: control tokens' text read
// as those tokens, as in a rendered chat). A leading space is left to the vocabulary's own space
// prefix where it adds one (SentencePiece), so " What" continues as "▁What", as it would inside
// a longer text.
std::vector<int32_t> continuation_ids(const tok::Tokenizer& tk, std::string_view text,
                                      bool parse_special = false);

}  // namespace tova::runtime
