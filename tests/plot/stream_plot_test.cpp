// The stream plot (apps/plot/stream_plot.cpp) of eval/stream_report's curves.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "eval/stream_report.h"
#include "kv/policy_registry.h"
#include "plots.h"

namespace tova::eval {
namespace {

// The trained context is marked, and the script writes stream.svg.
TEST(StreamPlot, MarksTheTrainedContext) {
  ConfigResult c;
  c.policy = *kv::parse_policy("tova", 64);
  c.nll_by_position = {std::log(2.0), std::log(4.0), std::log(4.0), std::log(2.0), std::log(4.0)};
  const StreamCurve s = stream_curve(c, kv::PositionMode::kGap, 2);
  const std::string gp = plot::stream_plot_script({s}, "t", 3);
  EXPECT_NE(gp.find("set arrow from 3,graph 0"), std::string::npos);
  EXPECT_NE(gp.find("trained context (3)"), std::string::npos);
  EXPECT_NE(gp.find("stream.svg"), std::string::npos);
}

// What a researcher needs to read a stream plot: every series its own colour and dash, a linear
// y axis cut at 3x full's first window (a curve that falls apart leaves the top instead of
// squashing the rest onto a log axis).
TEST(StreamPlot, SeriesAreDistinctAndTheAxisIsLinearAndCut) {
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

}  // namespace
}  // namespace tova::eval
