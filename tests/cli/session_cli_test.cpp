// tova run --session: a run split in two equals one run (greedy text), and a hostile session
// file is one clear error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli_util.h"

namespace tova::testing {
namespace {

std::string strip_newlines(std::string s) {
  std::erase(s, '\n');
  return s;
}

// The K/V type travels in the file: a resumed run keeps it, and --kv-type, -ctk, -ctv change
// the sides they name (the state is converted), the others stay as saved.
TEST(Cli, SessionKeepsOrConvertsItsKvType) {
  TOVA_REQUIRE_SHARED();
  const std::string m = "-m " + shared_path("models/stories260K.gguf");
  const std::string dir = make_temp_dir();
  const std::string sess = dir + "/s.bin";
  const CmdResult a = run_tova("run " + m + " -n 30 --temp 0 -t 2 --kv-policy tova --kv-budget 16 "
                               "--kv-type q8_0 --session " + sess);
  ASSERT_EQ(a.code, 0) << a.err;
  const CmdResult b = run_tova("run " + m + " -n 10 --temp 0 -t 2 --session " + sess);
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_NE(b.err.find("allocated (q8_0)"), std::string::npos) << b.err;
  const CmdResult c = run_tova("run " + m + " -n 10 --temp 0 -t 2 -ctv f16 --session " + sess);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.err.find("allocated (k=q8_0,v=f16)"), std::string::npos) << c.err;
  std::filesystem::remove_all(dir);
}

TEST(Cli, SplitRunWithSessionEqualsOneRun) {
  TOVA_REQUIRE_SHARED();
  const std::string m = "-m " + shared_path("models/stories260K.gguf");
  const std::string cache = " --temp 0 -t 2 --kv-policy tova --kv-budget 32 --kv-positions gap";
  const std::string dir = make_temp_dir();
  const std::string sess = dir + "/s.bin";
  const CmdResult one = run_tova("run " + m + " -n 120" + cache);
  ASSERT_EQ(one.code, 0) << one.err;
  const CmdResult a = run_tova("run " + m + " -n 70" + cache + " --session " + sess);
  ASSERT_EQ(a.code, 0) << a.err;
  // The resumed run takes its cache options from the file.
  const CmdResult b = run_tova("run " + m + " -n 50 --temp 0 -t 2 --session " + sess);
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(strip_newlines(a.out + b.out), strip_newlines(one.out));
  // Both runs report what the file cost: the first saved it, the second loaded and saved it.
  EXPECT_NE(a.err.find("session save :"), std::string::npos) << a.err;
  EXPECT_EQ(a.err.find("session load :"), std::string::npos) << a.err;
  EXPECT_NE(b.err.find("session load :"), std::string::npos) << b.err;
  EXPECT_NE(b.err.find("session save :"), std::string::npos) << b.err;
  EXPECT_EQ(one.err.find("session"), std::string::npos) << one.err;
  // No temporary file is left beside it.
  EXPECT_FALSE(std::filesystem::exists(sess + ".tmp"));
  // Another model refuses the file, naming it.
  const CmdResult other = run_tova("run -m " + shared_path("models/booklm-3m.gguf") +
                                   " -n 5 --temp 0 --session " + sess);
  EXPECT_NE(other.code, 0);
  EXPECT_NE(other.err.find("another model"), std::string::npos) << other.err;
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace tova::testing
