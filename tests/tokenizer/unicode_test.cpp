// Code point classes, White_Space, UTF-8 decoding and the GPT-2 byte alphabet, against facts
// from the Unicode Character Database and GPT-2's encoder.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tokenizer/unicode.h"

namespace tova::tok {
namespace {

TEST(Unicode, GeneralCategoryClasses) {
  struct Case {
    uint32_t cpt;
    UnicodeClass cls;
  };
  const Case cases[] = {
      {'A', UnicodeClass::kLetter},        {'z', UnicodeClass::kLetter},
      {'0', UnicodeClass::kNumber},        {'9', UnicodeClass::kNumber},
      {0xBD, UnicodeClass::kNumber},       // ½ (No)
      {0x2167, UnicodeClass::kNumber},     // Ⅷ (Nl)
      {0x0661, UnicodeClass::kNumber},     // Arabic-Indic one (Nd)
      {'_', UnicodeClass::kPunctuation},   {'!', UnicodeClass::kPunctuation},
      {'\'', UnicodeClass::kPunctuation},  {0x3002, UnicodeClass::kPunctuation},  // 。
      {'$', UnicodeClass::kSymbol},        {'~', UnicodeClass::kSymbol},
      {'+', UnicodeClass::kSymbol},        {'`', UnicodeClass::kSymbol},
      {0x1F999, UnicodeClass::kSymbol},    // 🦙 (So)
      {0x0301, UnicodeClass::kMark},       // combining acute
      {0x17B6, UnicodeClass::kMark},       // Khmer vowel sign AA (Mc)
      {' ', UnicodeClass::kSeparator},     {0x3000, UnicodeClass::kSeparator},
      {0x2028, UnicodeClass::kSeparator},  {'\n', UnicodeClass::kControl},
      {0x85, UnicodeClass::kControl},      {0x200D, UnicodeClass::kControl},  // ZWJ (Cf)
      {0xE000, UnicodeClass::kControl},    // private use
      {0xD800, UnicodeClass::kControl},    // surrogate
      {0xE9, UnicodeClass::kLetter},       // é
      {0x4E00, UnicodeClass::kLetter},     // 一
      {0x1780, UnicodeClass::kLetter},     // Khmer KA
      {0x0378, UnicodeClass::kUndefined},  // unassigned
      {0x10FFFF, UnicodeClass::kUndefined},
      {0x110000, UnicodeClass::kUndefined},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(static_cast<int>(unicode_class(c.cpt)), static_cast<int>(c.cls))
        << std::hex << "U+" << c.cpt;
  }
}

TEST(Unicode, TableIsSortedAndStartsAtZero) {
  ASSERT_GT(kUnicodeRangeCount, 1000u);
  EXPECT_EQ(kUnicodeRanges[0].start, 0u);
  for (size_t i = 1; i < kUnicodeRangeCount; ++i) {
    ASSERT_LT(kUnicodeRanges[i - 1].start, kUnicodeRanges[i].start) << i;
    ASSERT_NE(kUnicodeRanges[i - 1].cls, kUnicodeRanges[i].cls) << i;
  }
}

TEST(Unicode, WhiteSpaceProperty) {
  const std::set<uint32_t> ws = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680,
                                 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
                                 0x2007, 0x2008, 0x2009, 0x200A, 0x2028, 0x2029, 0x202F,
                                 0x205F, 0x3000};
  for (uint32_t c = 0; c < 0x11000; ++c) {
    EXPECT_EQ(is_whitespace(c), ws.count(c) == 1) << std::hex << "U+" << c;
  }
  EXPECT_FALSE(is_whitespace(0x1C));  // Python's isspace() says yes; White_Space says no
  EXPECT_FALSE(is_whitespace(0x200B));
}

TEST(Unicode, DecodeUtf8NeverFails) {
  EXPECT_EQ(decode_utf8("a\xC3\xA9\xE4\xB8\x80\xF0\x9F\xA6\x99"),
            (std::vector<uint32_t>{'a', 0xE9, 0x4E00, 0x1F999}));
  // Stray continuation byte, truncated sequences, invalid lead, beyond U+10FFFF.
  EXPECT_EQ(decode_utf8("\x80x"), (std::vector<uint32_t>{0xFFFD, 'x'}));
  EXPECT_EQ(decode_utf8("\xC3"), (std::vector<uint32_t>{0xFFFD}));
  EXPECT_EQ(decode_utf8("\xE4\xB8x"), (std::vector<uint32_t>{0xFFFD, 0xFFFD, 'x'}));
  EXPECT_EQ(decode_utf8("\xFF"), (std::vector<uint32_t>{0xFFFD}));
  EXPECT_EQ(decode_utf8("\xF4\x90\x80\x80").front(), 0xFFFDu);
  EXPECT_TRUE(decode_utf8("").empty());

  for (uint32_t c : {0u, 0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xFFFFu, 0x10000u, 0x10FFFFu}) {
    std::string s;
    append_utf8(c, s);
    EXPECT_EQ(decode_utf8(s), std::vector<uint32_t>{c}) << c;
  }
}

TEST(Unicode, Gpt2ByteAlphabet) {
  EXPECT_EQ(byte_to_gpt2_utf8(' '), "\xC4\xA0");   // Ġ U+0120
  EXPECT_EQ(byte_to_gpt2_utf8('\n'), "\xC4\x8A");  // Ċ U+010A
  EXPECT_EQ(byte_to_gpt2_utf8('\t'), "\xC4\x89");  // ĉ U+0109
  EXPECT_EQ(byte_to_gpt2_utf8(0), "\xC4\x80");     // Ā U+0100
  EXPECT_EQ(byte_to_gpt2_utf8(0xAD), "\xC5\x83");  // Ń U+0143: the last moved byte
  EXPECT_EQ(byte_to_gpt2_utf8('a'), "a");
  EXPECT_EQ(byte_to_gpt2_utf8(0xE9), "\xC3\xA9");  // printable Latin-1 stays
  std::set<std::string> seen;
  for (int b = 0; b < 256; ++b) {
    const std::string& s = byte_to_gpt2_utf8(static_cast<uint8_t>(b));
    seen.insert(s);
    const std::vector<uint32_t> cpts = decode_utf8(s);
    ASSERT_EQ(cpts.size(), 1u);
    EXPECT_EQ(gpt2_cpt_to_byte(cpts[0]), b);
    EXPECT_FALSE(is_whitespace(cpts[0])) << b;
  }
  EXPECT_EQ(seen.size(), 256u);
  EXPECT_EQ(gpt2_cpt_to_byte(0x20), -1);  // a raw space is not in the alphabet
  EXPECT_EQ(gpt2_cpt_to_byte(0x4E00), -1);
}

}  // namespace
}  // namespace tova::tok
