// valid_utf8 / is_valid_utf8 (include/tova/utf8.h): hand-written cases of each kind of
// ill-formed sequence, and on random bytes the same text as nlohmann-json's
// dump(error_handler_t::replace), which is what llama-server (and tova serve) send for them.
#include "tova/utf8.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace tova {
namespace {

const std::string R(kReplacementCharacter);

TEST(Utf8, ValidTextIsUnchanged) {
  const std::vector<std::string> valid = {"",
                                          "abc",
                                          "caf\xC3\xA9",
                                          "\xE2\x82\xAC 5",
                                          "\xF0\x9F\x98\x80",
                                          "\xF4\x8F\xBF\xBF",
                                          "\xED\x9F\xBF",
                                          std::string("a\0b", 3)};
  for (const std::string& s : valid) {
    EXPECT_TRUE(is_valid_utf8(s)) << s;
    EXPECT_EQ(valid_utf8(s), s);
  }
}

TEST(Utf8, EachMaximalSubpartIsOneReplacement) {
  struct Case {
    std::string in, out;
  };
  const Case cases[] = {
      {"1\xFF\xFF\xFF", "1" + R + R + R},   // issue 49's bytes: not a lead, one each
      {"\x80", R},                          // a lone continuation byte
      {"\xC3", R},                          // a truncated 2-byte character at the end
      {"\xC3x", R + "x"},                   // ... before ASCII, which is kept
      {"\xE2\x82", R},                      // a truncated 3-byte character: one subpart
      {"\xE2\x82x", R + "x"},               //
      {"\xF0\x9F\x98", R},                  // a truncated 4-byte character
      {"\xC0\xAF", R + R},                  // an overlong '/': C0 is never a lead
      {"\xE0\x80\xAF", R + R + R},          // overlong 3-byte: E0 wants A0..BF
      {"\xED\xA0\x80", R + R + R},          // a surrogate: ED wants 80..9F
      {"\xF4\x90\x80\x80", R + R + R + R},  // above U+10FFFF
      {"\xF5\x80", R + R},                  // F5..FF are never leads
      {"\xC3\xC3\xA9", R + "\xC3\xA9"},     // a truncated one, then a whole one
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(is_valid_utf8(c.in)) << c.in;
    EXPECT_EQ(valid_utf8(c.in), c.out) << c.in;
    EXPECT_TRUE(is_valid_utf8(valid_utf8(c.in)));
  }
}

// What llama-server writes for a string: nlohmann-json's serialiser with replacement.
std::string nlohmann_replaced(const std::string& s) {
  const std::string dumped =
      nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return nlohmann::json::parse(dumped).get<std::string>();
}

TEST(Utf8, AgreesWithNlohmannReplaceOnRandomBytes) {
  std::mt19937 rng(49);
  // Bytes biased to the interesting ones (leads, continuations, ASCII).
  const unsigned char pool[] = {'a',  '"',  '\\', 0x01, 0x7F, 0x80, 0x8F, 0x90, 0x9F,
                                0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xC3, 0xDF, 0xE0, 0xE1,
                                0xED, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xFF};
  for (int trial = 0; trial < 20000; ++trial) {
    std::string s;
    for (int n = static_cast<int>(rng() % 12); n > 0; --n)
      s += static_cast<char>(pool[rng() % sizeof(pool)]);
    ASSERT_EQ(valid_utf8(s), nlohmann_replaced(s)) << testing::PrintToString(s);
    ASSERT_EQ(is_valid_utf8(s), valid_utf8(s) == s);
  }
}

}  // namespace
}  // namespace tova
