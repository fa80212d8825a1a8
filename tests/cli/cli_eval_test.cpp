// The built `tova ppl` / `tova trace` commands: bad input gives exit code 1, exactly one stderr
// line "tova: error: ...", and no output folder (not even a temporary one); good input writes
// the documented files.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli_util.h"
#include "test_data.h"

namespace tova::testing {
namespace {

namespace fs = std::filesystem;

struct RunResult {
  int code = -1;
  std::string out, err;
};

std::string tova_binary() { return binary_dir() + "/bin/tova"; }

class CliEval : public ::testing::Test {
 protected:
  void SetUp() override {
    // test_cli depends on the tova program: it is always built.
    TOVA_REQUIRE_SHARED();
    dir_ = make_temp_dir();
    model_ = shared_path("models/stories260K.gguf");
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  RunResult run(const std::string& args) {
    const std::string out = dir_ + "/.stdout", err = dir_ + "/.stderr";
    const std::string cmd = tova_binary() + " " + args + " >" + out + " 2>" + err;
    const int st = std::system(cmd.c_str());
    RunResult r;
    r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    fs::remove(out);
    fs::remove(err);
    return r;
  }

  std::string write(const std::string& name, const std::string& content) {
    const std::string p = dir_ + "/" + name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

  // Exit 1, one "tova: error:" line, and nothing left in dir_ but the input files.
  void expect_clean_failure(const RunResult& r, const std::string& needle,
                            const std::set<std::string>& inputs) {
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(r.err.rfind("tova: error:", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    for (const auto& e : fs::directory_iterator(dir_)) {
      EXPECT_TRUE(inputs.count(e.path().filename().string())) << "left behind: " << e.path();
    }
  }

  std::string dir_;
  std::string model_;
};

TEST_F(CliEval, PplRejectsEmptyText) {
  const std::string text = write("empty.txt", "");
  const RunResult r = run("ppl -m " + model_ + " -f " + text +
                          " --policies full,window --budgets 16 --ctx 64 --out " + dir_ + "/res");
  expect_clean_failure(r, "empty", {"empty.txt"});
}

TEST_F(CliEval, PplRejectsTextShorterThanOneChunk) {
  const std::string text = write("short.txt", "Once upon a time there was a cat.");
  const RunResult r = run("ppl -m " + model_ + " -f " + text +
                          " --policies full,window --budgets 16 --ctx 256 --out " + dir_ + "/res");
  expect_clean_failure(r, "fewer than one chunk", {"short.txt"});
}

TEST_F(CliEval, PplRejectsBudgetAboveCtx) {
  const RunResult r =
      run("ppl -m " + model_ + " --tokens " + shared_path("golden/tokens-1024.json") +
          " --policies window --budgets 16,128 --ctx 64 --out " + dir_ + "/res");
  expect_clean_failure(r, "above the context", {});
}

TEST_F(CliEval, PplRejectsUnknownPolicyListingValidOnes) {
  const RunResult r =
      run("ppl -m " + model_ + " --tokens " + shared_path("golden/tokens-1024.json") +
          " --policies full,lru --budgets 16 --ctx 64 --out " + dir_ + "/res");
  expect_clean_failure(r, "tova-head", {});
}

TEST_F(CliEval, PplRejectsSinkAtLeastBudget) {
  const RunResult r =
      run("ppl -m " + model_ + " --tokens " + shared_path("golden/tokens-1024.json") +
          " --policies sink:4 --budgets 4,16 --ctx 64");
  expect_clean_failure(r, "sink:4", {});
}

TEST_F(CliEval, PplRejectsNoPolicies) {
  const RunResult r = run("ppl -m " + model_ + " --tokens " +
                          shared_path("golden/tokens-1024.json") + " --budgets 16 --ctx 64");
  expect_clean_failure(r, "--kv-policy: none given", {});
}

TEST_F(CliEval, PplRejectsUnwritableOut) {
  const RunResult r =
      run("ppl -m " + model_ + " --tokens " + shared_path("golden/tokens-1024.json") +
          " --policies window --budgets 16 --ctx 64 --out /proc/forbidden/x");
  expect_clean_failure(r, "/proc/forbidden/x", {});
  EXPECT_FALSE(fs::exists("/proc/forbidden/x"));
}

TEST_F(CliEval, PplRejectsNonEmptyOutWithoutForce) {
  fs::create_directory(dir_ + "/res");
  write("res/keep.txt", "x");
  const RunResult r =
      run("ppl -m " + model_ + " --tokens " + shared_path("golden/tokens-1024.json") +
          " --policies window --budgets 16 --ctx 64 --chunks 1 --out " + dir_ + "/res");
  expect_clean_failure(r, "--force", {"res"});
  EXPECT_TRUE(fs::exists(dir_ + "/res/keep.txt"));  // untouched
}

TEST_F(CliEval, PplWritesTablesJsonCsvAndPlots) {
  const std::string out = dir_ + "/res";
  const RunResult r =
      run("ppl -m " + model_ + " --tokens " + shared_path("golden/tokens-1024.json") +
          " --policies full,window,tova --budgets 32,16 --ctx 128 --chunks 3"
          " --out " +
          out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("| policy \\ k | 16 | 32 | full |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| policy | k | ppl ± stderr |"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(out + "/results.json"));
  EXPECT_EQ(j["header"]["ctx"], 128);
  EXPECT_EQ(j["header"]["n_chunks"], 3);
  ASSERT_EQ(j["results"].size(), 5u);
  EXPECT_EQ(j["results"][0]["policy"], "full");
  EXPECT_TRUE(j["results"][0]["budget"].is_null());
  EXPECT_EQ(j["results"][1]["policy"], "window");
  EXPECT_EQ(j["results"][1]["budget"], 32);
  for (const auto& c : j["results"]) {
    EXPECT_EQ(c["nll_by_position"].size(), 127u);
    EXPECT_GT(c["ppl"].get<double>(), 1.0);
    EXPECT_FALSE(c["kl_p99"].is_null());
    EXPECT_FALSE(c["ppl_stderr"].is_null());
  }
  const std::string csv = slurp(out + "/results.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 6);
  EXPECT_EQ(csv.rfind("policy,budget,kv_type,ppl,ppl_stderr,mean_nll,kl_mean,kl_p99,top1_agree,"
                      "dnll_vs_full,dnll_vs_full_stderr\n",
                      0),
            0u);
  // Paired against full, chunk by chunk: full's own difference is 0, the others' have a paired
  // standard error (the plot's right panel).
  EXPECT_EQ(j["results"][0]["dnll_vs_full"], 0.0);
  EXPECT_GT(j["results"][1]["dnll_vs_full_stderr"].get<double>(), 0.0);
  const std::string gp = slurp(out + "/ppl.gp");
  EXPECT_NE(gp.find("set multiplot layout 1,2"), std::string::npos);
  EXPECT_NE(gp.find("paired against full"), std::string::npos);
  EXPECT_GT(fs::file_size(out + "/ppl.png"), 1000u);
  EXPECT_NE(slurp(out + "/ppl.svg").find("<svg"), std::string::npos);
  // Nothing else left next to the result (no temporary folder).
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir_)) n += e.path().filename() != "res";
  EXPECT_EQ(n, 0);
}

// --stream: one sequence per configuration over the whole input (here its first 600 ids); full
// only over --max-full-ctx; one curve per (bounded configuration, position mode); and the same
// perplexity as a one-chunk sweep of the same 600 ids.
TEST_F(CliEval, PplStreamWritesCurvesEqualToAOneChunkSweep) {
  const std::string tokens = shared_path("golden/tokens-1024.json");
  const std::string out = dir_ + "/stream";
  const RunResult r = run("ppl -m " + model_ + " -t 1 --tokens " + tokens +
                          " --stream --ctx 600 --window 100 --max-full-ctx 300"
                          " --policies full,tova --budgets 32 --kv-positions absolute,rank"
                          " --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("| tova k=32 rank | 599 |"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(out + "/results.json"));
  EXPECT_EQ(j["n_tokens"], 600);
  EXPECT_EQ(j["bos_added"], false);
  ASSERT_EQ(j["curves"].size(), 3u);
  EXPECT_EQ(j["curves"][0]["label"], "full");
  EXPECT_EQ(j["curves"][0]["n_predictions"], 299);
  EXPECT_EQ(j["curves"][1]["label"], "tova k=32 absolute");
  EXPECT_EQ(j["curves"][2]["label"], "tova k=32 rank");
  for (size_t i = 1; i < 3; ++i) {
    const auto& c = j["curves"][i];
    EXPECT_EQ(c["n_predictions"], 599);
    ASSERT_EQ(c["window_end"].size(), 6u);
    EXPECT_EQ(c["window_end"][5], 599);
    EXPECT_NEAR(c["cumulative_ppl"][5].get<double>(), c["ppl"].get<double>(), 1e-9);
  }
  const std::string csv = slurp(out + "/results.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 3 + 6 + 6);
  EXPECT_GT(fs::file_size(out + "/stream.png"), 1000u);

  const RunResult one = run("ppl -m " + model_ + " -t 1 --tokens " + tokens +
                            " --ctx 600 --chunks 1 --policies tova --budgets 32 --out " + dir_ +
                            "/one --no-plot");
  ASSERT_EQ(one.code, 0) << one.err;
  const nlohmann::json k = nlohmann::json::parse(slurp(dir_ + "/one/results.json"));
  // The same NLLs; only the order of the final sums differs.
  EXPECT_NEAR(k["results"][0]["ppl"].get<double>(), j["curves"][1]["ppl"].get<double>(), 1e-9);
}

TEST_F(CliEval, PplSeveralPositionModesNeedStream) {
  const RunResult r =
      run("ppl -m " + model_ + " --tokens " + shared_path("golden/tokens-1024.json") +
          " --policies tova --budgets 16 --ctx 64 --kv-positions absolute,gap");
  expect_clean_failure(r, "--kv-positions: several modes need a streamed sweep", {});
}

TEST_F(CliEval, TraceWritesJsonAndHeatMap) {
  const std::string out = dir_ + "/tr";
  const RunResult r =
      run("trace -m " + model_ + " --tokens " + shared_path("golden/tokens-128.json") +
          " --kv-policy window --kv-budget 3 --ctx 8 --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(out + "/trace.json"));
  EXPECT_EQ(j["n_tokens"], 8);
  EXPECT_EQ(j["layers"][0]["heads"][0]["survival"], nlohmann::json({3, 3, 3, 3, 3, 2, 1, 0}));
  EXPECT_EQ(j["layers"][0]["heads"][0]["alive_at_end"], nlohmann::json({0, 0, 0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(j["token_text"].size(), 8u);
  EXPECT_GT(fs::file_size(out + "/trace.png"), 1000u);
  EXPECT_NE(r.out.find("Token strings kept longest"), std::string::npos) << r.out;
  // One colour scale for every policy's map of 8 tokens: 1 + survival in 1..8, not auto.
  EXPECT_NE(slurp(out + "/trace.gp").find("set cbrange [1:8]"), std::string::npos);
}

// --compare-kv-type: the same trace again per type, a row per layer and the figures in
// trace.json; comparing f32 with itself finds no difference. A policy that never evicts, or
// an unknown type, is refused before anything runs.
TEST_F(CliEval, TraceComparesEvictionsAcrossKvTypes) {
  const std::string out = dir_ + "/tr";
  const std::string tokens = shared_path("golden/tokens-128.json");
  const RunResult r = run("trace -m " + model_ + " --tokens " + tokens +
                          " --kv-policy tova --kv-budget 16 --ctx 64 --no-plot --top 0"
                          " --compare-kv-type f32,q4_0 --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("q4_0 different eviction"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(out + "/trace.json"));
  const nlohmann::json& c = j["kv_type_comparison"];
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0]["kv_type"], "f32");
  EXPECT_EQ(c[0]["differ_mean"], 0.0);
  EXPECT_EQ(c[1]["kv_type"], "q4_0");
  EXPECT_GT(c[1]["differ_mean"].get<double>(), 0.0);
  EXPECT_EQ(c[1]["differ"].size(), j["layers"].size());

  expect_clean_failure(run("trace -m " + model_ + " --tokens " + tokens +
                           " --kv-policy full --compare-kv-type q8_0 --out " + dir_ + "/t2"),
                       "never evicts", {"tr"});
  expect_clean_failure(run("trace -m " + model_ + " --tokens " + tokens +
                           " --kv-policy tova --kv-budget 4 --compare-kv-type q3 --out " +
                           dir_ + "/t2"),
                       "q3", {"tr"});
}

TEST_F(CliEval, TraceRejectsBadInput) {
  const std::string tokens = shared_path("golden/tokens-128.json");
  expect_clean_failure(run("trace -m " + model_ + " --tokens " + tokens +
                           " --kv-policy nope --kv-budget 3 --out " + dir_ + "/tr"),
                       "valid:", {});
  expect_clean_failure(run("trace -m " + model_ + " --tokens " + tokens +
                           " --kv-policy tova --kv-budget 64 --ctx 32 --out " + dir_ + "/tr"),
                       "above the context", {});
  expect_clean_failure(run("trace -m " + model_ + " --tokens " + tokens +
                           " --kv-policy tova --kv-budget 4 --out /proc/forbidden/x"),
                       "/proc/forbidden/x", {});
  const std::string empty = write("empty.txt", "");
  expect_clean_failure(run("trace -m " + model_ + " -f " + empty +
                           " --kv-policy tova --kv-budget 4 --out " + dir_ + "/tr"),
                       "empty", {"empty.txt"});
}

// tova eval: the command (with 4 samples, not 10, to keep CI short; their needles at
// depths 0, 25, 50 and 75 %) on the retrieval model niah-13m: one record per sample with
// policy, budget and correct; the full cache finds single needles of 2,048-token samples, a
// 256-state window loses those older than 256 tokens; tables, CSV and plots written.
TEST_F(CliEval, EvalNiah13mAsWritten) {
  const std::string out = dir_ + "/niah";
  const RunResult r = run("eval niah_single -m " + shared_path("models/niah-13m-f16.gguf") +
                          " --template " + shared_path("models/niah-13m.templates.json") +
                          " --lengths 2048 --samples 4 --policies full,window --budgets 256 --out " +
                          out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("### niah_single"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| window | 256 |"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(out + "/results.json"));
  ASSERT_EQ(j["records"].size(), 8u);
  double full = 0, window = 0;
  for (const auto& e : j["records"]) {
    ASSERT_TRUE(e.contains("policy") && e.contains("budget") && e.contains("correct"));
    ASSERT_TRUE(e.contains("prompt_hash") && e.contains("answer") && e.contains("expected"));
    (e["policy"] == "full" ? full : window) += e["correct"].get<bool>() ? 0.25 : 0.0;
    if (e["policy"] == "window") {
      EXPECT_EQ(e["budget"], 256);
    }
  }
  EXPECT_GE(full, 0.9 - 1e-9);
  EXPECT_LE(window, 0.5 + 1e-9);
  const std::string csv = slurp(out + "/results.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 9);
  for (const char* f : {"/acc-niah_single.png", "/acc-niah_single.svg", "/heat-niah_single.png",
                        "/heat-niah_single.svg"}) {
    EXPECT_TRUE(fs::exists(out + f)) << f;
  }
}

// SnapKV's query-aware cut keeps needles that TOVA loses (docs/RESULTS.md (e)): 1,024-token
// samples (890 prompt tokens), k = 512, needles at depths 0-75 %, the first two older than the
// budget. SnapKV's cut, voted by the question's last queries, keeps them; TOVA evicts the digits
// while the haystack that follows them draws the attention (the grid: snapkv 10 of 10, tova 0).
TEST_F(CliEval, EvalSnapKvKeepsNeedlesTovaLoses) {
  const std::string out = dir_ + "/snap";
  const RunResult r = run("eval niah_single -m " + shared_path("models/niah-13m-f16.gguf") +
                          " --template " + shared_path("models/niah-13m.templates.json") +
                          " --lengths 1024 --samples 4 --policies snapkv,tova --budgets 512 "
                          "--no-plot --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(out + "/results.json"));
  ASSERT_EQ(j["records"].size(), 8u);
  int snapkv = 0, tova = 0;
  for (const auto& e : j["records"]) {
    (e["policy"] == "snapkv" ? snapkv : tova) += e["correct"].get<bool>() ? 1 : 0;
  }
  EXPECT_GE(snapkv, 3) << r.out;
  EXPECT_LE(tova, 1) << r.out;
}

TEST_F(CliEval, EvalRejectsAnUnknownTask) {
  const RunResult r = run("eval niah_sngle,vt -m " + model_ + " --lengths 512 --out " + dir_ +
                          "/res");
  expect_clean_failure(r, "unknown task 'niah_sngle' (valid: cwe, fwe, niah_multikey", {});
}

// Bad input that still runs: a length past the trained context (a warning naming it and the
// position modes), a budget past the length (a warning; its records equal full's), a haystack
// file too short (a warning; repeated).
TEST_F(CliEval, EvalWarnsAndRuns) {
  const std::string hay = write("hay.txt", "Tom has a red ball. It is round. Lily smiles.");
  const std::string out = dir_ + "/res";
  const RunResult r =
      run("eval passkey -m " + model_ + " --haystack " + hay +
          " --lengths 2100 --samples 1 --depths 50 --policies full,window --budgets 4000 "
          "--max-new 4 --no-plot --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("length 2100 is past the model's trained context of 2048 tokens"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--kv-positions"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("budget 4000 is at least every sample's length"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("haystack '" + hay + "' has 3 sentences"), std::string::npos) << r.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(out + "/results.json"));
  ASSERT_EQ(j["records"].size(), 2u);
  EXPECT_EQ(j["records"][0]["answer"], j["records"][1]["answer"]);
  EXPECT_EQ(j["warnings"].size(), 3u);
}


// --turns: bad counts are one line each.
TEST_F(CliEval, EvalRejectsBadTurns) {
  expect_clean_failure(run("eval niah_multikey -m " + model_ +
                           " --lengths 700 --samples 1 --turns 0 --out " + dir_ + "/res"),
                       "--turns must be at least 1, got 0", {});
  expect_clean_failure(run("eval niah_single -m " + model_ +
                           " --lengths 700 --samples 1 --turns 2 --out " + dir_ + "/res"),
                       "--turns 2: task 'niah_single' asks at most 1 question of one context", {});
  expect_clean_failure(run("eval niah_multikey -m " + model_ +
                           " --lengths 700 --samples 1 --turns 5 --out " + dir_ + "/res"),
                       "asks at most 4 questions", {});
}

// kvzip outside the task evaluation: one line saying why (nothing there runs its scoring pass).
TEST_F(CliEval, KvzipOutsideEvalIsOneLineSayingWhy) {
  for (const std::string& cmd :
       {"run -m " + model_ + " -p Once -n 4 --kv-policy kvzip --kv-budget 32",
        "ppl -m " + model_ + " --tokens " + shared_path("golden/tokens-1024.json") +
            " --policies full,kvzip --budgets 16 --ctx 64"}) {
    expect_clean_failure(run(cmd),
                         "KV policy 'kvzip' evicts only in its scoring pass (the model re-reads "
                         "its context), which only the task evaluation (tova eval) runs",
                         {});
  }
}

// kvzip under a chat template that cannot render its reconstruction prompt after the
// conversation as it was fed (llama2 rewrites the answer): one line naming the template; no
// results left behind.
TEST_F(CliEval, EvalRejectsAReconstructionTheTemplateCannotRender) {
  expect_clean_failure(run("eval niah_single -m " + model_ +
                           " --lengths 400 --samples 1 --max-new 4 --chat-template llama2"
                           " --policies kvzip --budgets 32 --out " + dir_ + "/res"),
                       "--chat-template 'llama2' cannot render kvzip's reconstruction prompt", {});
}

// Four questions of one haystack in one conversation on niah-13m: one record per turn carrying
// it, full's accuracy per turn in the tables (the ceiling), the per-turn cells and the answer
// NLL in the JSON, the turns plot written.
TEST_F(CliEval, EvalNiah13mTurns) {
  const std::string out = dir_ + "/turns";
  const RunResult r = run("eval niah_multikey -m " + shared_path("models/niah-13m-f16.gguf") +
                          " --template " + shared_path("models/niah-13m.templates.json") +
                          " --lengths 1024 --samples 1 --turns 4 --max-new 16 --policies "
                          "full,window --budgets 256 --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("### niah_multikey by turn"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| full | - | 1024 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("answer NLL"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(out + "/results.json"));
  ASSERT_EQ(j["records"].size(), 8u);
  std::set<int> turns;
  for (const auto& e : j["records"]) {
    turns.insert(e["turn"].get<int>());
    EXPECT_EQ(e["n_turns"], 4);
    EXPECT_TRUE(e["answer_nll"].is_number());
  }
  EXPECT_EQ(turns, (std::set<int>{1, 2, 3, 4}));
  EXPECT_EQ(j["turn_accuracy"].size(), 8u);
  EXPECT_EQ(j["turns"], 4);
  for (const char* f : {"/turns-niah_multikey.png", "/nll-niah_multikey.png"}) {
    EXPECT_TRUE(fs::exists(out + f)) << f;
  }
}

}  // namespace
}  // namespace tova::testing
