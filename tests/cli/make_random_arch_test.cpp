// tova make-random --arch: the committed fixtures (tests/data/arch) are exactly what the command
// writes, so they can be regenerated and checked; bad names are one-line errors.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_util.h"
#include "model/fixture/families.h"
#include "test_data.h"

namespace tova::testing {
namespace {

TEST(MakeRandomArchCli, WritesTheCommittedFixturesByteForByte) {
  const std::string dir = make_temp_dir();
  int n = 0;
  for (const model::FixtureFamily* a : model::all_fixture_families()) {
    for (const model::RandomShape& f : a->fixtures()) {
      const std::string& arch = f.name;
      ++n;
      const std::string out = dir + "/" + arch + ".gguf";
      const CmdResult w =
          run_tova(std::string("make-random --arch ") + arch + " --type f32 -t 2 --out " + out);
      ASSERT_EQ(w.code, 0) << w.err;
      const std::string committed = std::string(TOVA_TEST_DATA_DIR) + "/arch/" + arch + "-f32.gguf";
      EXPECT_TRUE(slurp(out) == slurp(committed)) << arch << ": differs from " << committed;
    }
  }
  EXPECT_GE(n, 7);
  EXPECT_ONE_LINE_ERROR(run_tova("make-random --arch gemma3n --out " + dir + "/x.gguf"),
                        model::random_arch_choices());
  EXPECT_ONE_LINE_ERROR(run_tova("make-random --out " + dir + "/x.gguf"), "--shape or --arch");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tova::testing
