// The eval plots (apps/plot/task_plots.cpp) of eval's records.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "eval/task_report.h"
#include "plots.h"

namespace tova::eval {
namespace {

// The plots give each policy one colour and one dash (apps/plot/plots.h series_style), the same in
// the accuracy, answer-NLL and per-turn plots: 12 bounded policies, none styled like another.
TEST(TaskReport, EveryPolicyHasItsOwnColourAndDashInEveryPlot) {
  const std::vector<std::string> pols = {"window", "sink:4", "h2o", "tova", "snapkv", "keydiff",
                                         "kvzip", "expected-attention", "rkv", "tova+merge",
                                         "h2o+merge", "pyramidkv:8"};
  std::vector<EvalRecord> recs;
  auto add = [&](const std::string& p, int budget) {
    for (int turn = 1; turn <= 2; ++turn) {
      for (int i = 0; i < 2; ++i) {
        recs.push_back({.task = "t", .length = 100, .sample = i, .policy = p, .budget = budget,
                        .score = (i + turn) % 2 * 1.0, .turn = turn, .n_turns = 2,
                        .answer_nll = 1.0 + i + turn, .answer_tokens = 2});
      }
    }
  };
  add("full", -1);
  for (const std::string& p : pols) {
    for (int k : {8, 16}) add(p, k);
  }
  const std::string dir = ::testing::TempDir() + "/plot_styles";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto stems = plot::plot_eval(recs, "styles", dir);
  ASSERT_TRUE(stems.ok()) << stems.message();
  std::map<std::string, std::string> style_of;  // policy -> style, over every plot
  for (const char* stem : {"acc-t", "nll-t", "turns-t"}) {
    std::ifstream in(dir + "/" + stem + ".gp");
    ASSERT_TRUE(in) << stem;
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string gp = ss.str();
    std::set<std::string> styles;
    for (const std::string& p : pols) {
      const std::string title = "title \"" + p + "\"";
      size_t at = gp.find(title);
      ASSERT_NE(at, std::string::npos) << stem << ": " << p;
      for (; at != std::string::npos; at = gp.find(title, at + 1)) {
        const size_t lc = gp.rfind(" lc rgb ", at);
        ASSERT_NE(lc, std::string::npos) << stem << ": " << p;
        const std::string st = gp.substr(lc, at - lc);
        auto [it, fresh] = style_of.emplace(p, st);
        EXPECT_EQ(it->second, st) << stem << ": " << p << " styled two ways";
        styles.insert(st);
      }
    }
    EXPECT_EQ(styles.size(), pols.size()) << stem << ": two policies share a style";
  }
}

}  // namespace
}  // namespace tova::eval
