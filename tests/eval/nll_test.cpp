// Hand-computed checks of the evaluation arithmetic, chunking and sweep configuration lists.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "eval/nll.h"
#include "eval/ppl_sweep.h"

namespace tova::eval {
namespace {

TEST(Nll, LogSoftmaxOfEqualLogitsIsMinusLogN) {
  const float logits[2] = {0.f, 0.f};
  double out[2];
  log_softmax(logits, out);
  EXPECT_DOUBLE_EQ(out[0], -std::log(2.0));
  EXPECT_DOUBLE_EQ(out[1], -std::log(2.0));
}

TEST(Nll, LogSoftmaxIsShiftInvariantAndStable) {
  const float a[3] = {1.f, 2.f, 3.f};
  const float b[3] = {1001.f, 1002.f, 1003.f};  // exp(1003) overflows without the max shift
  double la[3], lb[3];
  log_softmax(a, la);
  log_softmax(b, lb);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(la[i], lb[i], 1e-12);
  // By hand: log(e^3 / (e + e^2 + e^3)) = -log(1 + e^-1 + e^-2) = -0.40760596...
  EXPECT_NEAR(la[2], -0.4076059644443803, 1e-12);
}

TEST(Nll, TwoTokenCaseByHand) {
  // p = (3/4, 1/4) from logits (ln 3, 0); q = (1/2, 1/2).
  const float lp[2] = {static_cast<float>(std::log(3.0)), 0.f};
  const float lq[2] = {0.f, 0.f};
  double p[2], q[2];
  log_softmax(lp, p);
  log_softmax(lq, q);
  EXPECT_NEAR(std::exp(p[0]), 0.75, 1e-7);        // ln 3 is rounded to float
  EXPECT_NEAR(nll(p, 1), -std::log(0.25), 1e-7);  // 1.3862944
  EXPECT_NEAR(nll(q, 0), std::log(2.0), 1e-15);
  // KL(p||q) = 3/4 ln(3/2) + 1/4 ln(1/2) = 0.130812036
  EXPECT_NEAR(kl_divergence(p, q), 0.13081203594113697, 1e-7);
  // KL(q||p) = 1/2 ln(2/3) + 1/2 ln(2) = 1/2 ln(4/3) = 0.143841036
  EXPECT_NEAR(kl_divergence(q, p), 0.5 * std::log(4.0 / 3.0), 1e-7);
  // The form with p's probabilities precomputed gives the same bits.
  const double pp[2] = {std::exp(p[0]), std::exp(p[1])};
  EXPECT_EQ(kl_divergence(pp, p, q), kl_divergence(p, q));
}

TEST(Nll, KlOfIdenticalDistributionsIsZero) {
  const float l[5] = {0.3f, -1.f, 2.5f, 0.f, 7.f};
  double p[5];
  log_softmax(l, p);
  EXPECT_EQ(kl_divergence(p, p), 0.0);
}

TEST(Nll, KlIgnoresZeroProbabilityTerms) {
  // p puts exp(-1e4) (0 in double) on token 1, where q is -inf: that term must contribute 0.
  const double p[2] = {0.0, -1e4};
  const double q[2] = {0.0, -INFINITY};
  EXPECT_EQ(kl_divergence(p, q), 0.0);
}

TEST(Nll, ArgmaxTiesGoToTheSmallestIndex) {
  const float l[4] = {1.f, 3.f, 3.f, 2.f};
  EXPECT_EQ(argmax(l), 1);
  const float one[1] = {-5.f};
  EXPECT_EQ(argmax(one), 0);
}

TEST(Nll, MeanAndStandardError) {
  const double xs[4] = {1, 2, 3, 4};
  const MeanSe m = mean_and_se(xs);
  EXPECT_DOUBLE_EQ(m.mean, 2.5);
  EXPECT_NEAR(m.se, std::sqrt(5.0 / 3.0) / 2.0, 1e-15);  // sd = sqrt(5/3), n = 4
  const double one[1] = {7};
  EXPECT_DOUBLE_EQ(mean_and_se(one).mean, 7);
  EXPECT_TRUE(std::isnan(mean_and_se(one).se));
}

TEST(Nll, PerplexityWithDeltaMethodError) {
  const double chunks[2] = {1.0, 2.0};
  const Perplexity p = perplexity(chunks);
  EXPECT_DOUBLE_EQ(p.mean_nll, 1.5);
  EXPECT_NEAR(p.ppl, 4.4816890703380645, 1e-12);
  // se(mean) = sd / sqrt(2) = 0.5; ppl_se = e^1.5 * 0.5
  EXPECT_NEAR(p.ppl_se, 2.2408445351690323, 1e-12);
}

TEST(Nll, QuantileInterpolatesLikeNumpy) {
  std::vector<float> xs(100);
  std::iota(xs.begin(), xs.end(), 1.f);
  std::reverse(xs.begin(), xs.end());
  EXPECT_NEAR(quantile(xs, 0.99), 99.01, 1e-9);  // rank 98.01 between 99 and 100
  EXPECT_DOUBLE_EQ(quantile(xs, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile(xs, 1.0), 100.0);
  std::vector<float> one = {3.f};
  EXPECT_DOUBLE_EQ(quantile(one, 0.99), 3.0);
  std::vector<float> none;
  EXPECT_TRUE(std::isnan(quantile(none, 0.5)));
}

TEST(Chunks, BosThenTheNextCtxMinusOneTokens) {
  std::vector<int32_t> ids(10);
  std::iota(ids.begin(), ids.end(), 0);
  auto c = make_chunks(ids, {.ctx = 4, .bos = 99});
  ASSERT_TRUE(c.ok()) << c.message();
  ASSERT_EQ(c->size(), 3u);  // 10 ids / 3 per chunk; the last id is dropped
  EXPECT_EQ((*c)[0], (std::vector<int32_t>{99, 0, 1, 2}));
  EXPECT_EQ((*c)[2], (std::vector<int32_t>{99, 6, 7, 8}));
  auto two = make_chunks(ids, {.ctx = 4, .bos = 99, .max_chunks = 2});
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->size(), 2u);
}

TEST(Chunks, IdsAsGivenWithoutBos) {
  std::vector<int32_t> ids(10);
  std::iota(ids.begin(), ids.end(), 0);
  auto c = make_chunks(ids, {.ctx = 4});
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->size(), 2u);
  EXPECT_EQ((*c)[1], (std::vector<int32_t>{4, 5, 6, 7}));
}

TEST(Chunks, TooShortIsAnError) {
  std::vector<int32_t> ids(5, 1);
  auto c = make_chunks(ids, {.ctx = 8, .bos = 1});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.message().find("5 tokens"), std::string::npos) << c.message();
  EXPECT_FALSE(make_chunks(ids, {.ctx = 1}).ok());
}

TEST(SweepConfigs, FullOnceThenPolicyTimesBudget) {
  const std::vector<std::string> pol = {"window", "full", "sink:4"};
  const std::vector<int> bud = {64, 16};
  auto c = sweep_configs(pol, bud, 128);
  ASSERT_TRUE(c.ok()) << c.message();
  std::vector<std::string> got;
  for (const auto& s : *c) {
    got.push_back(s.label() + "/" + (s.bounded() ? std::to_string(s.budget) : "-"));
  }
  EXPECT_EQ(got, (std::vector<std::string>{"full/-", "window/64", "window/16", "sink:4/64",
                                           "sink:4/16"}));
}

TEST(SweepConfigs, Errors) {
  auto err = [](std::vector<std::string> p, std::vector<int> b, int ctx) {
    auto c = sweep_configs(p, b, ctx);
    EXPECT_FALSE(c.ok());
    return c.ok() ? std::string() : c.message();
  };
  EXPECT_NE(err({}, {16}, 64).find("policies: none given"), std::string::npos);
  EXPECT_NE(err({"nope"}, {16}, 64).find("valid:"), std::string::npos);
  EXPECT_NE(err({"window"}, {128}, 64).find("above the context"), std::string::npos);
  EXPECT_NE(err({"window"}, {0}, 64).find("below 1"), std::string::npos);
  EXPECT_NE(err({"sink:4"}, {4}, 64).find("sink:4"), std::string::npos);
  EXPECT_NE(err({"window"}, {}, 64).find("needs budgets"), std::string::npos);
  EXPECT_NE(err({"tova", "tova"}, {8}, 64).find("twice"), std::string::npos);
  EXPECT_NE(err({"full", "full"}, {8}, 64).find("twice"), std::string::npos);
  EXPECT_NE(err({"window"}, {8, 8}, 64).find("twice"), std::string::npos);
  // full alone needs no budgets.
  EXPECT_TRUE(sweep_configs(std::vector<std::string>{"full"}, {}, 64).ok());
}

}  // namespace
}  // namespace tova::eval
