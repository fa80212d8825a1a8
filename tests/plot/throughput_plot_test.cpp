// The throughput plot (apps/plot/throughput_plot.cpp) of eval/throughput's report.
#include <gtest/gtest.h>

#include "eval/throughput.h"
#include "eval/throughput_reports.h"
#include "plots.h"

namespace tova {
namespace {

TEST(ThroughputPlot, FullIsDrawnAtItsContext) {
  eval::ThroughputReport rep;
  rep.kv_memory = 1000;
  rep.ctx = 64;
  rep.results.push_back({.policy = "full", .budget = -1, .ctx = 64, .bytes_per_seq = 400,
                         .max_batch = 2, .batch = 2, .avg_ts = 10, .stddev_ts = 1,
                         .relative = 1});
  rep.results.push_back({.policy = "tova", .budget = 8, .ctx = 64, .bytes_per_seq = 60,
                         .max_batch = 16, .batch = 16, .avg_ts = 50, .stddev_ts = 2,
                         .relative = 5});
  const std::string gp = plot::throughput_plot_script(rep, "t");
  EXPECT_NE(gp.find("throughput.png"), std::string::npos);
  EXPECT_NE(gp.find("64 1.000000 2 10.000"), std::string::npos) << gp;  // full at k = ctx
}

// A bounded state larger than the full cache at the same ctx saves nothing: left out of the
// plot and named under it.
TEST(ThroughputPlot, StatesLargerThanFullAreNotDrawnButNamed) {
  const eval::ThroughputReport rep = testing::report_with_a_state_larger_than_full();
  const std::string gp = plot::throughput_plot_script(rep, "t");
  EXPECT_EQ(gp.find("\n128 "), std::string::npos) << gp;
  EXPECT_NE(gp.find("larger than full's at ctx 64: tova k=128"), std::string::npos) << gp;
}

}  // namespace
}  // namespace tova
