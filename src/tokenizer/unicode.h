// Code point properties and UTF-8 helpers for the tokenizers: general-category classes (from the
// generated unicode_tables.cpp), White_Space, UTF-8 decoding that never fails, and GPT-2's
// byte <-> printable-code-point mapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tova::tok {

// A code point's Unicode general category, grouped the way the pre-tokenizer regexes use it.
enum class UnicodeClass : uint8_t {
  kUndefined,     // Cn (unassigned), and everything above U+10FFFF
  kLetter,        // \p{L}
  kNumber,        // \p{N}
  kPunctuation,   // \p{P}
  kSymbol,        // \p{S}
  kMark,          // \p{M}
  kSeparator,     // \p{Z}
  kControl,       // \p{C} other than Cn
};

struct UnicodeRange {
  uint32_t start;
  UnicodeClass cls;
};

// Generated table (unicode_tables.cpp): sorted by start, first start is 0.
extern const UnicodeRange kUnicodeRanges[];
extern const size_t kUnicodeRangeCount;

UnicodeClass unicode_class(uint32_t cpt);

// The Unicode White_Space property (what \s means in the tokenizers' regexes).
bool is_whitespace(uint32_t cpt);

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Length of the UTF-8 sequence a lead byte announces (1 for stray continuation bytes), the way
// SentencePiece-style splitting walks text; it may run past the end of the text.
inline size_t utf8_len(uint8_t lead) {
  static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[lead >> 4];
}

// Decodes text into code points; each invalid or truncated sequence becomes one U+FFFD per
// offending byte, so any byte string is accepted.
std::vector<uint32_t> decode_utf8(std::string_view text);

void append_utf8(uint32_t cpt, std::string& out);

// GPT-2 byte-level BPE alphabet: each byte maps to a printable code point ('Ġ' for space).
const std::string& byte_to_gpt2_utf8(uint8_t byte);
// The byte a GPT-2 alphabet code point stands for, or -1 if it is not in the alphabet.
int gpt2_cpt_to_byte(uint32_t cpt);

}  // namespace tova::tok
