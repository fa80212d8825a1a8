// One flag vocabulary (README "Commands"): llama.cpp's names where it has one, tova's own once;
// the spellings of 0.1 still work for a release, give what the new ones give, and are not in
// --help.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_util.h"
#include "test_data.h"

namespace tova::testing {
namespace {

std::string model() { return shared_path("models/stories260K.gguf"); }

// A perplexity sweep under the old and the new spellings: the same table.
TEST(FlagAliases, PplOldAndNewSpellingsGiveTheSameSweep) {
  TOVA_REQUIRE_SHARED();
  const std::string base = "ppl -m " + model() + " -t 1 --tokens " +
                           shared_path("golden/tokens-128.json") + " --chunks 1 ";
  const CmdResult now = run_tova(base + "--kv-policy full,tova --kv-budget 16,24 -c 64 -b 8");
  ASSERT_EQ(now.code, 0) << now.err;
  EXPECT_NE(now.out.find("tova"), std::string::npos) << now.out;
  for (const char* old : {"--policies full,tova --budgets 16,24 --ctx 64 --batch 8",
                          "--policies=full,tova --budgets=16,24 --ctx=64 --batch=8",
                          "--kv-policy full,tova --kv-budget 16,24 --ctx-size 64 --batch-size 8"}) {
    const CmdResult r = run_tova(base + old);
    ASSERT_EQ(r.code, 0) << old << ": " << r.err;
    EXPECT_EQ(r.out, now.out) << old;
  }
}

// Each old spelling reaches the option of the new one: the same value gives the same result (an
// out-of-range value: the same one-line error, naming the new flag).
TEST(FlagAliases, EveryOldSpellingIsTheNewOption) {
  TOVA_REQUIRE_SHARED();
  struct Case {
    const char* old_args;
    const char* new_args;
    const char* new_flag;
  };
  const Case cases[] = {
      {"serve --ctx 1", "serve -c 1", "--ctx-size"},
      {"serve --step-tokens 0", "serve -ub 0", "--ubatch-size"},
      {"throughput --ctx 0", "throughput -c 0", "--ctx-size"},
      {"trace --ctx 0 --out x", "trace -c 0 --out x", "--ctx-size"},
      {"ppl --ctx 1", "ppl -c 1", "--ctx-size"},
      {"ppl --batch 0", "ppl -b 0", "--batch-size"},
      {"eval --batch 0", "eval -b 0", "--batch-size"},
      {"eval --budgets x", "eval --kv-budget x", "--kv-budget"},
      {"ppl --budgets x", "ppl --kv-budget x", "--kv-budget"},
      {"ppl --policies lru --kv-budget 8 --tokens /nonexistent.json",
       "ppl --kv-policy lru --kv-budget 8 --tokens /nonexistent.json", "nonexistent"},
      {"run --kv-type-k q5", "run -ctk q5", "q5"},
      {"run --kv-type-v q5", "run --cache-type-v q5", "q5"},
  };
  for (const Case& c : cases) {
    const std::string m = " -m " + model() + " -t 1";
    const CmdResult a = run_tova(c.old_args + m);
    const CmdResult b = run_tova(c.new_args + m);
    EXPECT_ONE_LINE_ERROR(b, c.new_flag);
    EXPECT_EQ(a.code, b.code) << c.old_args;
    EXPECT_EQ(a.err, b.err) << c.old_args;
  }
}

TEST(FlagAliases, HelpListsOnlyTheNewSpellings) {
  struct Help {
    const char* command;
    std::vector<const char*> listed, hidden;
  };
  const Help helps[] = {
      {"ppl", {"--ctx-size", "--kv-policy", "--kv-budget", "--batch-size", "--cache-type-k"},
       {"--ctx ", "--policies", "--budgets", "--batch ", "--kv-type-k"}},
      {"eval", {"--kv-policy", "--kv-budget", "--batch-size"}, {"--policies", "--budgets"}},
      {"serve", {"--ctx-size", "--ubatch-size", "--parallel", "--cache-type-v"},
       {"--ctx ", "--step-tokens", "--kv-type-v"}},
      {"throughput", {"--ctx-size"}, {"--ctx "}},
      {"trace", {"--ctx-size"}, {"--ctx "}},
      {"run", {"--ctx-size", "--cache-type-k", "--cache-type-v"}, {"--kv-type-k"}},
  };
  for (const Help& h : helps) {
    const CmdResult r = run_tova(std::string(h.command) + " --help");
    ASSERT_EQ(r.code, 0) << h.command;
    for (const char* f : h.listed) EXPECT_NE(r.out.find(f), std::string::npos) << h.command << " " << f;
    for (const char* f : h.hidden) EXPECT_EQ(r.out.find(f), std::string::npos) << h.command << " " << f;
  }
}

}  // namespace
}  // namespace tova::testing
