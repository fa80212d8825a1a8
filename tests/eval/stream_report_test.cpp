// Streaming curves (eval/stream_report): windowed and cumulative perplexity from per-position
// NLLs, worked by hand.
#include "eval/stream_report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "plots.h"
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
  const std::string gp = plot::stream_plot_script({s}, "t", 3);
  EXPECT_NE(gp.find("set arrow from 3,graph 0"), std::string::npos);
  EXPECT_NE(gp.find("trained context (3)"), std::string::npos);
  EXPECT_NE(gp.find("stream.svg"), std::string::npos);
}

// What a researcher needs to read a stream plot: every series its own colour and dash, a linear
// y axis cut at 3x full's first window (a curve that falls apart leaves the top instead of
// squashing the rest onto a log axis).
TEST(StreamCurve, PlotSeriesAreDistinctAndTheAxisIsLinearAndCut) {
  std::vector<StreamCurve> curves;
  for (const char* p : {"full", "window", "h2o", "tova", "snapkv", "keydiff"}) {
    for (kv::PositionMode m : {kv::PositionMode::kAbsolute, kv::PositionMode::kGap}) {
      if (std::string(p) == "full" && m != kv::PositionMode::kAbsolute) continue;
      ConfigResult c;
      c.policy = *kv::parse_policy(p, 64);
      c.nll_by_position = {2.0, 2.5, 9.0};
      curves.push_back(stream_curve(c, m, 1));
    }
  }
  const std::string gp = plot::stream_plot_script(curves, "t", 2);
  EXPECT_EQ(gp.find("logscale"), std::string::npos);
  EXPECT_NEAR(plot::stream_plot_ymax(curves), 3 * std::exp(2.0), 1e-9);
  std::set<std::string> styles;
  const size_t plot = gp.find("\nplot ");
  for (size_t at = gp.find(" lc rgb ", plot); at != std::string::npos;
       at = gp.find(" lc rgb ", at + 1)) {
    const size_t end = gp.find(" title", at);
    const std::string st = gp.substr(at, end - at);
    EXPECT_TRUE(styles.insert(st).second) << "two series styled " << st;
  }
  EXPECT_EQ(styles.size(), curves.size());
  // Twelve series: twelve colours and twelve dashes, every one different.
  std::set<std::string> colours, dashes;
  for (size_t i = 0; i < 12; ++i) {
    const std::string s = plot::series_style(i);
    colours.insert(s.substr(0, s.find(" dt ")));
    dashes.insert(s.substr(s.find(" dt ")));
  }
  EXPECT_EQ(colours.size(), 12u);
  EXPECT_EQ(dashes.size(), 12u);
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
