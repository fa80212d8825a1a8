// The matcher and the vocabulary mask on hand-computed cases: tokens that span several grammar
// symbols, tokens that end inside a UTF-8 character (byte-level BPE), SentencePiece's leading
// space at the start, control tokens, and end of generation.
#include "grammar/constraint.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "grammar/gbnf.h"

namespace tova::grammar {
namespace {

std::shared_ptr<const Grammar> grammar_of(const std::string& text) {
  auto g = parse_gbnf(text);
  EXPECT_TRUE(g.ok()) << g.message();
  return std::make_shared<const Grammar>(std::move(*g));
}

// A toy vocabulary: id -> text; id 0 ends generation, id 13 is a control token (no text).
std::shared_ptr<const TokenTrie> toy_vocab(bool spm = false) {
  VocabText v;
  v.text = {"",       "{",  "{\"", "a",      "\xC3\xA9", "\xC3", "\xA9", "\":", "\":1}", "1",
            "}",      "\xC3\xA8", "ab\"", "", "\xE2", "\"", " {", " "};
  v.eog.assign(v.text.size(), 0);
  v.eog[0] = 1;
  v.strip_space_at_start = spm;
  return std::make_shared<const TokenTrie>(std::move(v));
}

std::set<int> allowed_set(Constraint& c, bool at_start = false) {
  std::vector<char> mask;
  const int n = c.mask(at_start, mask);
  std::set<int> out;
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i]) out.insert(static_cast<int>(i));
  }
  EXPECT_EQ(n, static_cast<int>(out.size()));
  // The mask and the one-token check agree.
  for (size_t i = 0; i < mask.size(); ++i) {
    EXPECT_EQ(c.allows(static_cast<int32_t>(i), at_start), mask[i] != 0) << "token " << i;
  }
  return out;
}

const char* kGrammar = "root ::= \"{\\\"\" ([a-z] | \"\\u00e9\")+ \"\\\":\" [0-9] \"}\"";

TEST(Constraint, MaskStepByStep) {
  Constraint c(grammar_of(kGrammar), toy_vocab());
  EXPECT_EQ(allowed_set(c), (std::set<int>{1, 2}));  // "{" and "{\"" (two symbols)
  ASSERT_TRUE(c.accept(1, false));
  EXPECT_EQ(allowed_set(c), (std::set<int>{15}));
  ASSERT_TRUE(c.accept(15, false));
  // a, é, the lead byte of é (an unfinished character that can still become é), ab" (three
  // symbols); not è, not the lone continuation byte, not a 3-byte lead, not the control token.
  EXPECT_EQ(allowed_set(c), (std::set<int>{3, 4, 5, 12}));
  ASSERT_TRUE(c.accept(5, false));
  EXPECT_EQ(allowed_set(c), (std::set<int>{6}));  // only the byte that makes é
  EXPECT_FALSE(c.accept(11, false));               // a new character inside one is refused
  ASSERT_TRUE(c.accept(6, false));
  EXPECT_EQ(allowed_set(c), (std::set<int>{3, 4, 5, 7, 8, 12, 15}));
  EXPECT_FALSE(c.can_end());
  ASSERT_TRUE(c.accept(8, false));  // ":1} closes the object in one token
  EXPECT_TRUE(c.can_end());
  EXPECT_EQ(allowed_set(c), (std::set<int>{0}));  // only the end
  ASSERT_TRUE(c.accept(0, false));
  EXPECT_EQ(allowed_set(c), (std::set<int>{}));
}

TEST(Constraint, RefusedTokenChangesNothing) {
  Constraint c(grammar_of(kGrammar), toy_vocab());
  EXPECT_FALSE(c.accept(10, false));
  EXPECT_FALSE(c.accept(13, false));  // no text
  EXPECT_FALSE(c.accept(0, false));   // the grammar cannot end yet
  EXPECT_EQ(allowed_set(c), (std::set<int>{1, 2}));
}

TEST(Constraint, SentencePieceSpaceAtStart) {
  // " {" reads as "{" at the start of the text, and as " {" after something.
  Constraint c(grammar_of(kGrammar), toy_vocab(/*spm=*/true));
  EXPECT_EQ(allowed_set(c, /*at_start=*/true), (std::set<int>{1, 2, 16}));
  EXPECT_EQ(allowed_set(c, /*at_start=*/false), (std::set<int>{1, 2}));
  ASSERT_TRUE(c.accept(16, true));
  EXPECT_EQ(allowed_set(c), (std::set<int>{15}));
  // A grammar that wants the space sees it after the start.
  Constraint d(grammar_of("root ::= \" {\" | \"{\""), toy_vocab(true));
  EXPECT_EQ(allowed_set(d, false), (std::set<int>{1, 16, 17}));
}

TEST(Matcher, PartialUtf8AndEnd) {
  Matcher m(grammar_of("root ::= \"x\" [\\u0400-\\u04FF]* \"y\"?"));
  EXPECT_FALSE(m.can_end());
  ASSERT_TRUE(m.accept("x"));
  EXPECT_TRUE(m.can_end());
  EXPECT_TRUE(m.accepts("\xD0"));   // Д's lead byte: U+0400..U+043F possible
  EXPECT_FALSE(m.accepts("\xC3"));  // U+00C0..U+00FF: none in the class
  ASSERT_TRUE(m.accept("\xD0"));
  EXPECT_FALSE(m.can_end());  // inside a character
  EXPECT_FALSE(m.accepts("y"));
  ASSERT_TRUE(m.accept("\x94y"));  // Д then y, in one token
  EXPECT_TRUE(m.can_end());
  EXPECT_TRUE(m.only_end());
  EXPECT_FALSE(m.accepts("y"));
}

TEST(Matcher, InvalidUtf8IsRefused) {
  // 'y' written in three bytes (overlong) is not 'y'; nor are surrogates or bytes past U+10FFFF.
  Matcher m(grammar_of("root ::= \"y\" [^a]*"));
  EXPECT_FALSE(m.accepts("\xE0\x81\xB9"));
  EXPECT_FALSE(m.accepts("\xC1\xB9"));
  EXPECT_FALSE(m.accepts("\xE0"));  // no three-byte character can be 'y'
  ASSERT_TRUE(m.accept("y"));
  EXPECT_FALSE(m.accepts("\xED\xA0\x80"));  // U+D800
  EXPECT_FALSE(m.accepts("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(m.accepts("\xF5"));
  EXPECT_TRUE(m.accepts("\xF0\x9F\x98\x80"));  // U+1F600
  EXPECT_TRUE(m.accepts("\xE2\x82\xAC"));  // U+20AC
}

TEST(Matcher, AmbiguousReadingsStaySmall) {
  // Two ways to read every "a": the stacks merge instead of doubling each step.
  Matcher m(grammar_of("root ::= (\"a\" | \"a\" | [a-b])*"));
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(m.accept("a"));
  EXPECT_LE(m.state().stacks.size(), 4u);
  EXPECT_TRUE(m.can_end());
}

}  // namespace
}  // namespace tova::grammar
