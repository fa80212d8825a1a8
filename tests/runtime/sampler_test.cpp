// The sampler chain: greedy ties, each filter by hand, reproducibility by seed.
#include <gtest/gtest.h>

#include <map>

#include "grammar/gbnf.h"
#include "runtime/sampler.h"

namespace tova::runtime {
namespace {

TEST(Sampler, GreedyTakesTheArgmaxAndTiesGoToTheSmallestId) {
  Sampler s({.temp = 0.f});
  const float l[5] = {1.f, 3.f, 0.f, 3.f, -1.f};
  EXPECT_EQ(s.sample(l, 5, {}), 1);
  EXPECT_EQ(argmax(l, 5), 1);
}

TEST(Sampler, TopKOneIsGreedy) {
  Sampler s({.temp = 1.5f, .top_k = 1, .top_p = 1.f, .min_p = 0.f, .seed = 3});
  const float l[4] = {0.f, 0.5f, 2.f, 1.9f};
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(l, 4, {}), 2);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
  // Probabilities 0.5, 0.25, 0.125, 0.125 -> top-p 0.7 keeps the first two only.
  const float l[4] = {std::log(4.f), std::log(2.f), 0.f, 0.f};
  Sampler s({.temp = 1.f, .top_k = 0, .top_p = 0.7f, .min_p = 0.f, .seed = 5});
  std::map<int, int> seen;
  for (int i = 0; i < 2000; ++i) ++seen[s.sample(l, 4, {})];
  EXPECT_EQ(seen.count(2) + seen.count(3), 0u);
  EXPECT_NEAR(seen[0] / 2000.0, 2.0 / 3.0, 0.05);
}

TEST(Sampler, MinPDropsTokensBelowAFractionOfTheBest) {
  const float l[3] = {std::log(10.f), std::log(2.f), std::log(0.5f)};  // p ratio 1 : 0.2 : 0.05
  Sampler s({.temp = 1.f, .top_k = 0, .top_p = 1.f, .min_p = 0.1f, .seed = 9});
  for (int i = 0; i < 1000; ++i) EXPECT_NE(s.sample(l, 3, {}), 2);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogits) {
  const float l[3] = {2.f, 1.9f, -1.f};
  Sampler s({.temp = 0.f, .repeat_penalty = 2.f, .repeat_last_n = 4});
  const int32_t hist[1] = {0};
  EXPECT_EQ(s.sample(l, 3, hist), 1);  // 2/2 = 1 < 1.9
}

TEST(Sampler, SameSeedSameDraws) {
  const float l[6] = {0.1f, 0.2f, 0.3f, 0.2f, 0.1f, 0.0f};
  SamplerParams p{.temp = 1.f, .top_k = 0, .top_p = 1.f, .min_p = 0.f, .seed = 42};
  Sampler a(p), b(p);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.sample(l, 6, {}), b.sample(l, 6, {}));
}

TEST(Sampler, InvalidParametersAreErrors) {
  EXPECT_FALSE(validate({.top_p = 0.f}).ok());
  EXPECT_FALSE(validate({.min_p = 2.f}).ok());
  EXPECT_FALSE(validate({.repeat_penalty = 0.f}).ok());
  EXPECT_TRUE(validate({}).ok());
}

// A grammar whose readings multiply past grammar::Matcher::kMaxStacks (after n a's: every
// sequence of closers, and the closers only after 30 a's of the base case): the matcher refuses
// the next "a", no token is allowed, and the draw is the end of generation with the reason in
// grammar_error() (TextStream::next() returns it as an error). Bounded: near 12 draws.
TEST(Sampler, AGrammarTooAmbiguousEndsTheTextWithItsReason) {
  grammar::VocabText v;
  v.text = {"", "a", "1", "}"};
  v.eog = {1, 0, 0, 0};
  auto g = grammar::parse_gbnf("root ::= s\ns ::= \"a\" s \"1\" | \"a\" s \"}\" | \"a\"{30}");
  ASSERT_TRUE(g.ok()) << g.message();
  Sampler s({.temp = 0.f},
            grammar::Constraint(std::make_shared<const grammar::Grammar>(std::move(*g)),
                                std::make_shared<const grammar::TokenTrie>(std::move(v))));
  const float l[4] = {0.f, 5.f, 1.f, 1.f};  // "a" first
  int n = 0;
  int32_t id = 1;
  while (n < 64 && (id = s.sample(l, 4, {})) == 1) {
    ++n;
    ASSERT_TRUE(s.grammar_error().empty());
  }
  EXPECT_EQ(id, 0);  // the end of generation
  EXPECT_GE(n, 8);
  EXPECT_LE(n, 12);
  EXPECT_NE(s.grammar_error().find("too ambiguous"), std::string::npos) << s.grammar_error();
}

}  // namespace
}  // namespace tova::runtime
