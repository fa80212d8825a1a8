// The matcher and the vocabulary mask on hand-computed cases: tokens that span several grammar
// symbols, tokens that end inside a UTF-8 character (byte-level BPE), SentencePiece's leading
// space at the start, control tokens, and end of generation.
#include "grammar/constraint.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>

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

// Finding 15 (docs/RELIABILITY.md): the fuzzer's grammars cut a run of letters into factors in
// 2^n ways. Readings that reach the same stack by different cuts are one arena node now, so the
// stacks stay as few as the distinct continuations (before: one per cut, and 0.3-6 s per input).
TEST(Matcher, EveryCutOfARunIsOneReading) {
  Matcher m(grammar_of("root ::= term\n"
                       "term ::= factor ( [*/]? factor )*\n"
                       "factor ::= [a-z]+ | \"(\" term \")\"\n"));
  size_t most = 0;
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(m.accept(i % 7 == 3 ? "/" : "q")) << "byte " << i;
    most = std::max(most, m.state().stacks.size());
    ASSERT_LE(m.state().stacks.size(), 8u) << "byte " << i;  // stops an exponential set early
  }
  EXPECT_TRUE(m.can_end());
  EXPECT_TRUE(m.error().empty());
  // Nested: each open parenthesis adds one continuation, not one per cut before it.
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(m.accept("(ab"));
  EXPECT_LE(m.state().stacks.size(), 8u);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(m.accept(")"));
  EXPECT_TRUE(m.can_end());
}

// A grammar whose distinct continuations really double with every byte: after n a's, each
// sequence of n closing letters (b or c) is a stack of its own. The matcher keeps at most
// kMaxStacks, refuses the step past them with an error, and is still usable (the text so far
// can be closed). Bounded by construction: the loop ends at the cap, near 12 bytes.
TEST(Matcher, ContinuationsThatMultiplyAreCappedWithAnError) {
  Matcher m(grammar_of("root ::= s\ns ::= \"a\" s \"b\" | \"a\" s \"c\" | \"\""));
  int n = 0;
  while (n < 64 && m.accept("a")) {
    ++n;
    ASSERT_LE(m.state().stacks.size(), Matcher::kMaxStacks);
    ASSERT_TRUE(m.error().empty()) << "after " << n << " bytes";
  }
  EXPECT_GE(n, 8);   // 2^8 continuations are kept
  EXPECT_LE(n, 12);  // 3 * 2^n stacks pass 4096 at n = 11
  EXPECT_NE(m.error().find("too ambiguous"), std::string::npos) << m.error();
  const size_t kept = m.state().stacks.size();
  EXPECT_FALSE(m.accepts("a"));
  EXPECT_EQ(m.state().stacks.size(), kept);  // a refused step changes nothing
  for (int i = 0; i < n; ++i) ASSERT_TRUE(m.accept(i % 2 ? "b" : "c")) << i;
  EXPECT_TRUE(m.can_end());
}

// A stack reached many times while expanding one step is expanded once: 2^40 left-corner paths
// lead to the same single stack here.
TEST(Matcher, ManyPathsToOneStackAreExpandedOnce) {
  std::string g = "root ::= r0\n";
  for (int i = 0; i < 40; ++i) g += fmt::format("r{} ::= r{} | r{}\n", i, i + 1, i + 1);
  g += "r40 ::= [a-z] root?\n";
  Matcher m(grammar_of(g));
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(m.accept("x"));
  EXPECT_LE(m.state().stacks.size(), 2u);
  EXPECT_TRUE(m.error().empty()) << m.error();
}

TEST(Constraint, TooAmbiguousRefusesTheTokenAndSaysWhy) {
  Constraint c(grammar_of("root ::= s\ns ::= \"a\" s \"1\" | \"a\" s \"}\" | \"\""),
               toy_vocab());
  int n = 0;
  while (n < 64 && c.accept(3, false)) ++n;  // "a"
  EXPECT_LE(n, 12);
  EXPECT_FALSE(c.error().empty());
  EXPECT_EQ(allowed_set(c), (std::set<int>{9, 10}));  // closing is still allowed
}

}  // namespace
}  // namespace tova::grammar
