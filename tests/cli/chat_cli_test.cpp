// tova chat: answers stream on one bounded session; /stats shows the states held and evicted;
// /reset starts afresh (the same greedy answer to the same first message); /quit exits 0.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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

// The answers of a chat's lines ("> answer" each; the last prompt has none).
std::vector<std::string> answers(const std::string& out) {
  std::vector<std::string> a;
  size_t at = 0;
  while ((at = out.find("> ", at)) != std::string::npos) {
    const size_t end = out.find('\n', at);
    if (end == std::string::npos) break;
    if (end > at + 2) a.push_back(out.substr(at + 2, end - at - 2));
    at = end + 1;
  }
  return a;
}

// --session: a conversation split over two processes answers as one process does, under a
// bounded policy in a moved position mode; the file is refused where it does not fit.
TEST(ChatCli, SessionResumesTheConversation) {
  TOVA_REQUIRE_SHARED();
  const std::string dir = make_temp_dir();
  const std::string sess = dir + "/chat.bin";
  const std::string cache = "-n 10 --kv-policy tova --kv-budget 24 --kv-positions gap ";
  const auto one = chat("hello\nand then?\nwhat next?\n", cache + "--chat-template chatml");
  ASSERT_EQ(one.code, 0) << one.err;
  const auto a =
      chat("hello\nand then?\n", cache + "--chat-template chatml --session " + sess);
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_TRUE(std::filesystem::exists(sess));
  EXPECT_FALSE(std::filesystem::exists(sess + ".tmp"));
  // Resumed: template, cache options and messages come from the file.
  const auto b = chat("what next?\n", "-n 10 --session " + sess);
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_NE(b.err.find("resumed " + sess + ": 4 messages"), std::string::npos) << b.err;
  EXPECT_NE(b.err.find("tova chat (tova k=24"), std::string::npos) << b.err;
  EXPECT_NE(b.err.find("gap"), std::string::npos) << b.err;
  const auto want = answers(one.out);
  ASSERT_EQ(want.size(), 3u) << one.out;
  auto got = answers(a.out);
  const auto more = answers(b.out);
  got.insert(got.end(), more.begin(), more.end());
  EXPECT_EQ(got, want) << a.out << "\n---\n" << b.out;

  EXPECT_ONE_LINE_ERROR(chat("hi\n", "--system hello --session " + sess), "already holds one");
  EXPECT_ONE_LINE_ERROR(chat("hi\n", "--chat-template llama2 --session " + sess),
                        "chat template chatml");
  // A tova run session file is not a conversation.
  const std::string run_file = dir + "/run.bin";
  ASSERT_EQ(run_tova("run -n 3 --session " + run_file).code, 0);
  EXPECT_ONE_LINE_ERROR(chat("hi\n", "--session " + run_file), "not saved by tova chat");
  std::filesystem::remove_all(dir);
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
  EXPECT_ONE_LINE_ERROR(run_tova("serve -ub 0"), "--ubatch-size");
}

}  // namespace
}  // namespace tova::testing
