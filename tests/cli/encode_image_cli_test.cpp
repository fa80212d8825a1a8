// tova make-random --projector and tova encode-image end to end: a fixture written, an image
// encoded into the token count the preprocessing rule gives, one-line errors for a projector
// that does not fit the text model (both files named), a broken image and an unknown projector.
#include <gtest/gtest.h>

#include <string>

#include "cli_util.h"

namespace tova::testing {
namespace {

TEST(EncodeImageCli, FixtureImageTokensAndErrors) {
  TOVA_REQUIRE_SHARED();  // the vocabulary of the text model of another width
  const std::string dir = make_temp_dir();
  const std::string mm = dir + "/g4v.gguf";
  const std::string data = std::string(TOVA_TEST_DATA_DIR);
  const CmdResult w = run_tova("make-random --projector gemma4v --type q8_0 -o " + mm);
  ASSERT_EQ(w.code, 0) << w.err;
  EXPECT_NE(w.err.find("width 64"), std::string::npos) << w.err;
  const std::string image = data + "/vision/bars-50x30.jpg";
  const CmdResult e = run_tova("encode-image --mmproj " + mm + " --image " + image + " -m " +
                               data + "/arch/gemma4-f32.gguf -t 1 -o " + dir + "/e.f32");
  ASSERT_EQ(e.code, 0) << e.err;
  // 50 x 30 becomes 108 x 60 pixels: 27 x 15 patches of 4, pooled by 3: 9 x 5 tokens.
  EXPECT_NE(e.out.find("image 50 x 30: 45 tokens (9 x 5) of width 64"), std::string::npos) << e.out;
  EXPECT_EQ(slurp(dir + "/e.f32").size(), size_t{45} * 64 * 4);

  // A text model of another width (256): one line naming both files.
  const std::string wide = dir + "/tiny.gguf";
  ASSERT_EQ(run_tova("make-random --shape tiny --type q8_0 -t 1 --out " + wide).code, 0);
  const CmdResult bad =
      run_tova("encode-image --mmproj " + mm + " --image " + image + " -m " + wide);
  EXPECT_ONE_LINE_ERROR(bad, "tiny.gguf");
  EXPECT_NE(bad.err.find(mm), std::string::npos) << bad.err;
  EXPECT_ONE_LINE_ERROR(run_tova("encode-image --mmproj " + mm + " --image " + mm), "g4v.gguf");
  EXPECT_ONE_LINE_ERROR(run_tova("make-random --projector qwen3vl_merger -o " + mm), "gemma4v");
}

}  // namespace
}  // namespace tova::testing
