// --simd TARGET and TOVA_SIMD on the commands: the kernels run on the named target, `bench`
// says so in its simd line and JSON, and a target the CPU lacks is one clear error.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cli_util.h"

namespace tova::testing {
namespace {

std::string stories_path() { return shared_path("models/stories260K.gguf"); }

// The scalar target exists on every machine, so these tests do not depend on the CPU.
TEST(SimdCli, BenchRunsOnTheNamedTargetAndReportsIt) {
  TOVA_REQUIRE_SHARED();
  const CmdResult r =
      run_tova("bench --simd scalar -m " + stories_path() + " -p 8 -n 4 -r 1 -t 1 -o json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_array()) << r.out;
  for (const auto& t : j) {
    const std::string target = t["simd_target"];
    EXPECT_TRUE(target == "EMU128" || target == "SCALAR") << target;
  }
  const CmdResult md = run_tova("bench --simd scalar -m " + stories_path() + " -p 0 -n 2 -r 1 -t 1");
  ASSERT_EQ(md.code, 0) << md.err;
  EXPECT_TRUE(md.out.find("simd: EMU128") != std::string::npos ||
              md.out.find("simd: SCALAR") != std::string::npos)
      << md.out;
}

TEST(SimdCli, TheEnvironmentVariableChoosesTooAndTheFlagWins) {
  TOVA_REQUIRE_SHARED();
  ::setenv("TOVA_SIMD", "scalar", 1);
  const CmdResult env = run_tova("bench -m " + stories_path() + " -p 0 -n 2 -r 1 -t 1");
  const CmdResult flag = run_tova("bench --simd native -m " + stories_path() + " -p 0 -n 2 -r 1 -t 1");
  ::unsetenv("TOVA_SIMD");
  ASSERT_EQ(env.code, 0) << env.err;
  EXPECT_TRUE(env.out.find("simd: EMU128") != std::string::npos ||
              env.out.find("simd: SCALAR") != std::string::npos)
      << env.out;
  ASSERT_EQ(flag.code, 0) << flag.err;
  EXPECT_EQ(flag.out.find("simd: EMU128"), std::string::npos) << flag.out;
  EXPECT_EQ(flag.out.find("simd: SCALAR"), std::string::npos) << flag.out;
}

TEST(SimdCli, AnUnavailableTargetIsOneErrorNamingTheSupportedOnes) {
  TOVA_REQUIRE_SHARED();
  for (const std::string cmd : {"bench", "run", "ppl", "serve", "chat"}) {
    SCOPED_TRACE(cmd);
    const CmdResult r = run_tova(cmd + " --simd avx9000 -m " + stories_path());
    EXPECT_ONE_LINE_ERROR(r, "avx9000");
    EXPECT_NE(r.err.find("supported:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("scalar"), std::string::npos) << r.err;
  }
  ::setenv("TOVA_SIMD", "avx9000", 1);
  const CmdResult env = run_tova("run -m " + stories_path() + " -n 1 -p hi");
  ::unsetenv("TOVA_SIMD");
  EXPECT_ONE_LINE_ERROR(env, "avx9000");
}

}  // namespace
}  // namespace tova::testing
