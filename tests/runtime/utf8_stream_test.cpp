// Utf8Stream: a token that ends inside a multi-byte character is held back until it completes;
// everything handed out is whole UTF-8; nothing is lost or reordered.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/utf8_stream.h"

namespace tova::runtime {
namespace {

TEST(Utf8Stream, IncompleteTail) {
  EXPECT_EQ(incomplete_utf8_tail(""), 0u);
  EXPECT_EQ(incomplete_utf8_tail("abc"), 0u);
  EXPECT_EQ(incomplete_utf8_tail("a\xC3"), 1u);             // é's first byte
  EXPECT_EQ(incomplete_utf8_tail("a\xC3\xA9"), 0u);         // é complete
  EXPECT_EQ(incomplete_utf8_tail("\xE2\x82"), 2u);          // € missing its last byte
  EXPECT_EQ(incomplete_utf8_tail("\xE2\x82\xAC"), 0u);      // €
  EXPECT_EQ(incomplete_utf8_tail("\xF0\x9F\x98"), 3u);      // 😀 missing one byte
  EXPECT_EQ(incomplete_utf8_tail("\xF0\x9F\x98\x80"), 0u);  // 😀
  EXPECT_EQ(incomplete_utf8_tail("\xFF"), 0u);              // never valid: passed on
  EXPECT_EQ(incomplete_utf8_tail("a\x80"), 0u);             // stray continuation: passed on
}

TEST(Utf8Stream, EmojiSplitAcrossTokensComesOutWhole) {
  // "hi 😀 €!" cut into byte-level pieces at every awkward place.
  const std::vector<std::string> pieces = {"hi ", "\xF0", "\x9F\x98", "\x80 \xE2", "\x82", "\xAC!"};
  Utf8Stream s;
  std::vector<std::string> out;
  for (const auto& p : pieces) out.push_back(s.push(p));
  out.push_back(s.flush());
  const std::vector<std::string> want = {"hi ",           "", "", "\xF0\x9F\x98\x80 ", "",
                                         "\xE2\x82\xAC!", ""};
  EXPECT_EQ(out, want);
  EXPECT_TRUE(s.empty());
}

TEST(Utf8Stream, FlushReturnsAnUnfinishedCharacter) {
  Utf8Stream s;
  EXPECT_EQ(s.push("ok\xE2\x82"), "ok");
  EXPECT_FALSE(s.empty());
  EXPECT_EQ(s.flush(), "\xE2\x82");
  EXPECT_TRUE(s.empty());
}

TEST(Utf8Stream, InvalidBytesAreNotHeldForever) {
  Utf8Stream s;
  EXPECT_EQ(s.push("\xC3"), "");
  // The lead byte is followed by ASCII: the sequence is broken; both go out.
  EXPECT_EQ(s.push("x"), "\xC3x");
  EXPECT_EQ(s.push("\xFE"), "\xFE");
}

}  // namespace
}  // namespace tova::runtime
