// Streaming curves (eval/stream_report): windowed and cumulative perplexity from per-position
// NLLs, worked by hand.
#include "eval/stream_report.h"

#include <gtest/gtest.h>

#include <cmath>

#include "kv/policy_registry.h"

namespace tova::eval {
namespace {

TEST(StreamCurve, WindowsAndCumulativeByHand) {
  ConfigResult c;
  auto spec = kv::parse_policy("tova", 64);
  ASSERT_TRUE(spec.ok());
  c.policy = *spec;
  const double l2 = std::log(2.0), l4 = std::log(4.0);
  c.nll_by_position = {l2, l2, l2, l4, l4};  // 5 predictions
  const StreamCurve s = stream_curve(c, kv::PositionMode::kGap, 2);
  EXPECT_EQ(s.label, "tova k=64 gap");
  EXPECT_EQ(s.n_predictions, 5);
  ASSERT_EQ(s.window_end, (std::vector<int64_t>{2, 4, 5}));
  EXPECT_NEAR(s.window_ppl[0], 2.0, 1e-12);
  EXPECT_NEAR(s.window_ppl[1], std::exp((l2 + l4) / 2), 1e-12);  // 2^1.5
  EXPECT_NEAR(s.window_ppl[2], 4.0, 1e-12);
  EXPECT_NEAR(s.cumulative_ppl[0], 2.0, 1e-12);
  EXPECT_NEAR(s.cumulative_ppl[1], std::exp((3 * l2 + l4) / 4), 1e-12);
  EXPECT_NEAR(s.cumulative_ppl[2], std::exp((3 * l2 + 2 * l4) / 5), 1e-12);
  EXPECT_NEAR(s.ppl, s.cumulative_ppl[2], 1e-12);

  const std::string csv = stream_csv({s});
  EXPECT_EQ(csv.rfind("label,policy,budget,positions,window_end,window_ppl,cumulative_ppl\n", 0),
            0u);
  EXPECT_NE(csv.find("tova k=64 gap,tova,64,gap,5,4.000000,"), std::string::npos) << csv;
}

TEST(StreamCurve, FullIsLabelledFullAndOneWindowCoversShortSequences) {
  ConfigResult c;
  auto spec = kv::parse_policy("full", 0);
  ASSERT_TRUE(spec.ok());
  c.policy = *spec;
  c.nll_by_position = {1.0, 3.0};
  const StreamCurve s = stream_curve(c, kv::PositionMode::kAbsolute, 1024);
  EXPECT_EQ(s.label, "full");
  ASSERT_EQ(s.window_end, (std::vector<int64_t>{2}));
  EXPECT_NEAR(s.window_ppl[0], std::exp(2.0), 1e-12);
}

}  // namespace
}  // namespace tova::eval
