// tova chat: answers stream on one bounded session; /stats shows the states held and evicted;
// /reset starts afresh (the same greedy answer to the same first message); /quit exits 0.
#include <gtest/gtest.h>

#include <fstream>

#include "cli_util.h"

namespace tova::testing {
namespace {

CmdResult chat(const std::string& input, const std::string& args) {
  return run_tova("chat -t 1 --temp 0 " + args, input);
}

TEST(ChatCli, TurnsStatsResetAndQuit) {
  const auto r = chat("hello\nand then?\n/stats\n/reset\nhello\n/quit\n",
                      "-n 12 --kv-policy tova --kv-budget 16 --chat-template chatml");
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_EQ(r.out.rfind("> ", 0), 0u) << r.out;
  const std::string first = r.out.substr(2, r.out.find('\n') - 2);
  ASSERT_FALSE(first.empty()) << r.out;
  const size_t reset = r.out.find("(conversation reset)\n> ");
  ASSERT_NE(reset, std::string::npos) << r.out;
  EXPECT_EQ(r.out.substr(reset + 23, first.size()), first) << r.out;
  EXPECT_NE(r.err.find("policy tova, budget 16"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("16 states held"), std::string::npos) << r.err;
}

TEST(ChatCli, UnknownTemplateIsOneLineError) {
  const auto r = chat("hi\n", "--chat-template klingon");
  EXPECT_ONE_LINE_ERROR(r, "unknown chat template 'klingon'");
}

}  // namespace
}  // namespace tova::testing

namespace tova::testing {
namespace {

// llama-server's two-letter flags reach tova serve's options (checked through their range
// errors, so no server starts).
TEST(ServeCli, LlamaServerShortFlagsAreAliases) {
  EXPECT_ONE_LINE_ERROR(run_tova("serve -np 0"), "--parallel");
  EXPECT_ONE_LINE_ERROR(run_tova("serve -ub 0"), "--step-tokens");
}

}  // namespace
}  // namespace tova::testing
