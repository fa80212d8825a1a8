// tova throughput end to end: the table, one JSON object per configuration, the plot folder,
// and one-line errors for budgets that cannot hold a sequence or bad sizes.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_util.h"

namespace tova::testing {
namespace {

std::string stories() { return shared_path("models/stories260K.gguf"); }
const std::string kSmall = " --ctx 64 --steps 2 -r 2 --warmup 1 -t 2 ";

TEST(ThroughputCli, JsonHasOneObjectPerConfiguration) {
  TOVA_REQUIRE_SHARED();
  const CmdResult r = run_tova("throughput -m " + stories() + kSmall +
                               "--full-batch 2 --kv-policy full,tova --kv-budget 8,16 -o json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_array()) << r.out;
  ASSERT_EQ(j.size(), 3u);  // full once, tova at each budget
  for (const auto& c : j) {
    for (const char* key : {"policy", "budget", "ctx", "bytes_per_seq", "max_batch", "avg_ts",
                            "stddev_ts", "relative"}) {
      EXPECT_TRUE(c.contains(key)) << key;
    }
    EXPECT_EQ(c["ctx"], 64);
    EXPECT_EQ(c["max_batch"].get<uint64_t>(),
              c["kv_memory"].get<uint64_t>() / c["bytes_per_seq"].get<uint64_t>());
  }
  EXPECT_EQ(j[0]["policy"], "full");
  EXPECT_TRUE(j[0]["budget"].is_null());
  EXPECT_EQ(j[0]["max_batch"], 2);
  EXPECT_EQ(j[1]["budget"], 8);
  EXPECT_EQ(j[2]["budget"], 16);
  EXPECT_GT(j[1]["max_batch"].get<int>(), j[2]["max_batch"].get<int>());
}

// Rows per K/V type: the memory is --full-batch `full` sequences in the FIRST type, and a q8_0
// sequence takes fewer bytes, so more of them fit (the paper's Table 1, extended).
TEST(ThroughputCli, RowsPerKvType) {
  TOVA_REQUIRE_SHARED();
  const CmdResult r = run_tova("throughput -m " + stories() + kSmall +
                               "--full-batch 2 --kv-policy full,tova --kv-budget 47 "
                               "--kv-type f16,q8_0 -o json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_array()) << r.out;
  ASSERT_EQ(j.size(), 4u);  // full and tova k=47 (3 whole key tiles), each in f16 and q8_0
  EXPECT_EQ(j[0]["kv_type"], "f16");
  EXPECT_EQ(j[1]["kv_type"], "q8_0");
  EXPECT_EQ(j[0]["max_batch"], 2);
  EXPECT_LT(j[1]["bytes_per_seq"].get<uint64_t>(), j[0]["bytes_per_seq"].get<uint64_t>());
  EXPECT_GT(j[3]["max_batch"].get<int>(), j[2]["max_batch"].get<int>());
  EXPECT_DOUBLE_EQ(j[0]["relative"].get<double>(), 1.0);
}

TEST(ThroughputCli, MarkdownTableAndPlotFolder) {
  TOVA_REQUIRE_SHARED();
  const std::string dir = make_temp_dir() + "/tp";
  const CmdResult r = run_tova("throughput -m " + stories() + kSmall +
                               "--kv-memory 64K --kv-policy tova --kv-budget 8 --out " + dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("| multi-state"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tova k=8"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir + "/results.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/throughput.png"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/throughput.gp"));
}

TEST(ThroughputCli, ImpossibleBudgetsAreOneLineErrors) {
  TOVA_REQUIRE_SHARED();
  CmdResult r = run_tova("throughput -m " + stories() + kSmall + "--kv-memory 1K");
  EXPECT_ONE_LINE_ERROR(r, "more than the budget of 1024 bytes");
  r = run_tova("throughput -m " + stories() + kSmall + "--kv-memory 12Q");
  EXPECT_ONE_LINE_ERROR(r, "is not a size in bytes");
  r = run_tova("throughput -m " + stories() + kSmall);
  EXPECT_ONE_LINE_ERROR(r, "exactly one of --kv-memory");
  r = run_tova("throughput -m " + stories() + kSmall +
               "--full-batch 2 --kv-policy tova "
               "--kv-budget 0");
  EXPECT_ONE_LINE_ERROR(r, "tova");
}

}  // namespace
}  // namespace tova::testing
