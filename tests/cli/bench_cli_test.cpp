// tova bench and tova make-random end to end: llama-bench-like JSON and tables, one-line errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_util.h"

namespace tova::testing {
namespace {

std::string stories() { return shared_path("models/stories260K.gguf"); }

TEST(BenchCli, JsonHasOneObjectPerTestWithTheRequiredFields) {
  TOVA_REQUIRE_SHARED();
  const CmdResult r = run_tova("bench -m " + stories() + " -p 16 -n 8 -r 2 -t 2 -o json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u) << r.out;
  for (const char* key : {"model_filename", "model_type", "n_threads", "kv_policy", "kv_budget",
                          "n_prompt", "n_gen", "n_depth", "avg_ts", "stddev_ts", "samples_ts"}) {
    EXPECT_TRUE(j[0].contains(key)) << key;
    EXPECT_TRUE(j[1].contains(key)) << key;
  }
  EXPECT_EQ(j[0]["n_prompt"], 16);
  EXPECT_EQ(j[0]["n_gen"], 0);
  EXPECT_EQ(j[1]["n_prompt"], 0);
  EXPECT_EQ(j[1]["n_gen"], 8);
  EXPECT_EQ(j[0]["n_depth"], 0);
  EXPECT_EQ(j[0]["n_threads"], 2);
  EXPECT_EQ(j[0]["kv_policy"], "full");
  EXPECT_EQ(j[0]["model_filename"], stories());
  EXPECT_EQ(j[0]["model_type"].get<std::string>().rfind("llama ", 0), 0u) << j[0]["model_type"];
  for (const auto& t : j) {
    ASSERT_EQ(t["samples_ts"].size(), 2u);
    const double a = t["samples_ts"][0], b = t["samples_ts"][1];
    EXPECT_GT(a, 0);
    EXPECT_GT(b, 0);
    EXPECT_NEAR(t["avg_ts"].get<double>(), (a + b) / 2, 1e-6 * (a + b));
    // Sample standard deviation of two values: |a - b| / sqrt(2).
    EXPECT_NEAR(t["stddev_ts"].get<double>(), std::fabs(a - b) / std::sqrt(2.0), 1e-6 * (a + b));
  }
}

TEST(BenchCli, ListsDepthAndPoliciesMultiplyTheTests) {
  TOVA_REQUIRE_SHARED();
  const CmdResult r = run_tova("bench -m " + stories() +
                               " -p 0 -n 4 -d 0,40 -r 1 -t 1 --kv-policy tova,window "
                               "--kv-budget 16 --kv-type f16 -o json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_array()) << r.out;
  ASSERT_EQ(j.size(), 4u) << r.out;  // 2 policies x 2 depths x tg only
  EXPECT_EQ(j[0]["kv_policy"], "tova");
  EXPECT_EQ(j[0]["kv_budget"], 16);
  EXPECT_EQ(j[0]["kv_type"], "f16");
  EXPECT_EQ(j[1]["n_depth"], 40);
  EXPECT_EQ(j[1]["test"], "tg4 @ d40");
  EXPECT_EQ(j[3]["kv_policy"], "window");
}

TEST(BenchCli, MarkdownTableLikeLlamaBench) {
  TOVA_REQUIRE_SHARED();
  const CmdResult r = run_tova("bench -m " + stories() + " -p 8 -n 4 -r 1 -t 1 -d 8");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"| model", " size |", "t/s |", "pp8 @ d8", "tg4 @ d8", "full f32", " ± ",
                        "F32", "simd: "}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  }
}

TEST(BenchCli, BadFlagsAreOneLineErrors) {
  TOVA_REQUIRE_SHARED();
  const std::string m = " -m " + stories();
  EXPECT_ONE_LINE_ERROR(run_tova("bench" + m + " -p 16,x"), "-p");
  EXPECT_ONE_LINE_ERROR(run_tova("bench" + m + " -n -3"), "-n");
  EXPECT_ONE_LINE_ERROR(run_tova("bench" + m + " -o xml"), "xml");
  EXPECT_ONE_LINE_ERROR(run_tova("bench" + m + " -r 0"), "-r");
  EXPECT_ONE_LINE_ERROR(run_tova("bench" + m + " --kv-policy lru --kv-budget 8"), "(valid: adakv:BASE, ");
  EXPECT_ONE_LINE_ERROR(run_tova("bench" + m + " --kv-policy tova"), "at least 1");
  EXPECT_ONE_LINE_ERROR(run_tova("bench" + m + " --kv-type f8"), "invalid KV type");
  EXPECT_ONE_LINE_ERROR(run_tova("bench -m /nonexistent/model.gguf"), "model.gguf");
}

TEST(MakeRandomCli, WritesAFileBenchCanRunAndRejectsBadInput) {
  TOVA_REQUIRE_SHARED();
  const std::string dir = make_temp_dir();
  const std::string out = dir + "/tiny.gguf";
  const CmdResult w = run_tova("make-random --shape tiny --type q8_0 -t 2 --out " + out);
  ASSERT_EQ(w.code, 0) << w.err;
  EXPECT_NE(w.err.find("wrote " + out), std::string::npos) << w.err;
  const CmdResult b = run_tova("bench -m " + out + " -p 8 -n 2 -r 1 -t 1 -o json");
  ASSERT_EQ(b.code, 0) << b.err;
  const nlohmann::json j = nlohmann::json::parse(b.out, nullptr, false);
  ASSERT_TRUE(j.is_array()) << b.out;
  EXPECT_EQ(j[0]["model_type"], "llama 18M Q8_0");

  EXPECT_ONE_LINE_ERROR(run_tova("make-random --shape gpt5 --out " + out), "tinyllama, smollm");
  EXPECT_ONE_LINE_ERROR(run_tova("make-random --shape tiny --type iq2_xxs --out " + out), "q4_0");
  EXPECT_ONE_LINE_ERROR(run_tova("make-random --shape tiny --out " + dir + "/no/x.gguf"),
                        "cannot create");
  EXPECT_ONE_LINE_ERROR(run_tova("make-random --shape tiny --out " + out + " --vocab " +
                                 shared_path("vocab/ggml-vocab-starcoder.gguf")),
                        "needs 32000");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tova::testing
