#include "tokenizer/unicode.h"

#include "tova/utf8.h"

#include <algorithm>
#include <array>

namespace tova::tok {

namespace {

// Most text is ASCII; a direct table keeps the binary search off the hot path.
std::array<UnicodeClass, 128> make_ascii_classes() {
  std::array<UnicodeClass, 128> t{};
  for (uint32_t c = 0; c < 128; ++c) {
    const UnicodeRange* end = kUnicodeRanges + kUnicodeRangeCount;
    const UnicodeRange* it = std::upper_bound(
        kUnicodeRanges, end, c, [](uint32_t v, const UnicodeRange& r) { return v < r.start; });
    t[c] = (it - 1)->cls;
  }
  return t;
}

struct Gpt2Alphabet {
  std::array<std::string, 256> utf8;  // byte -> UTF-8 of its code point
  std::array<int16_t, 324> byte_of;   // code point (< 324) -> byte, or -1
};

// GPT-2 keeps the printable Latin-1 bytes as themselves and moves the other 68 bytes, in
// order, to U+0100.. so that every byte has a visible, non-space code point.
Gpt2Alphabet make_gpt2_alphabet() {
  Gpt2Alphabet a;
  a.byte_of.fill(-1);
  auto printable = [](int b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  };
  int n_moved = 0;
  for (int b = 0; b < 256; ++b) {
    const uint32_t cpt = printable(b) ? static_cast<uint32_t>(b) : 256u + n_moved++;
    append_utf8(cpt, a.utf8[b]);
    a.byte_of[cpt] = static_cast<int16_t>(b);
  }
  return a;
}

const Gpt2Alphabet& gpt2_alphabet() {
  static const Gpt2Alphabet a = make_gpt2_alphabet();
  return a;
}

}  // namespace

UnicodeClass unicode_class(uint32_t cpt) {
  static const std::array<UnicodeClass, 128> ascii = make_ascii_classes();
  if (cpt < 128) return ascii[cpt];
  if (cpt >= 0x110000) return UnicodeClass::kUndefined;
  const UnicodeRange* end = kUnicodeRanges + kUnicodeRangeCount;
  const UnicodeRange* it = std::upper_bound(
      kUnicodeRanges, end, cpt, [](uint32_t v, const UnicodeRange& r) { return v < r.start; });
  return (it - 1)->cls;
}

bool is_whitespace(uint32_t cpt) {
  // PropList.txt, White_Space=yes.
  if (cpt <= 0x20) return cpt == 0x20 || (cpt >= 0x09 && cpt <= 0x0D);
  if (cpt < 0x85) return false;
  switch (cpt) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cpt >= 0x2000 && cpt <= 0x200A;
  }
}

std::vector<uint32_t> decode_utf8(std::string_view text) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  const size_t n = text.size();
  size_t i = 0;
  auto cont = [&](size_t k) { return k < n && (static_cast<uint8_t>(text[k]) & 0xC0) == 0x80; };
  while (i < n) {
    const uint8_t b0 = static_cast<uint8_t>(text[i]);
    uint32_t cpt = kReplacementChar;
    size_t len = 1;
    if (b0 < 0x80) {
      cpt = b0;
    } else if ((b0 & 0xE0) == 0xC0 && cont(i + 1)) {
      cpt = ((b0 & 0x1Fu) << 6) | (static_cast<uint8_t>(text[i + 1]) & 0x3Fu);
      len = 2;
    } else if ((b0 & 0xF0) == 0xE0 && cont(i + 1) && cont(i + 2)) {
      cpt = ((b0 & 0x0Fu) << 12) | ((static_cast<uint8_t>(text[i + 1]) & 0x3Fu) << 6) |
            (static_cast<uint8_t>(text[i + 2]) & 0x3Fu);
      len = 3;
    } else if ((b0 & 0xF8) == 0xF0 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
      cpt = ((b0 & 0x07u) << 18) | ((static_cast<uint8_t>(text[i + 1]) & 0x3Fu) << 12) |
            ((static_cast<uint8_t>(text[i + 2]) & 0x3Fu) << 6) |
            (static_cast<uint8_t>(text[i + 3]) & 0x3Fu);
      len = 4;
      if (cpt > 0x10FFFF) {
        cpt = kReplacementChar;
        len = 1;
      }
    }
    out.push_back(cpt);
    i += len;
  }
  return out;
}

void append_utf8(uint32_t cpt, std::string& out) { tova::append_utf8(out, cpt); }

const std::string& byte_to_gpt2_utf8(uint8_t byte) { return gpt2_alphabet().utf8[byte]; }

int gpt2_cpt_to_byte(uint32_t cpt) {
  if (cpt >= 324) return -1;
  return gpt2_alphabet().byte_of[cpt];
}

}  // namespace tova::tok
