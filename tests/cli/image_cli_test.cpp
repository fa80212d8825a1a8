// Images on the command line: `tova run --mmproj F --image FILE -p ...` (repeatable, at the
// prompt's <__media__> markers or before its text) and `tova chat --mmproj F` with /image FILE,
// on the gemma4 text fixture and the gemma4v mmproj fixture (tests/data); each refusal one line.
#include <gtest/gtest.h>

#include <string>

#include "cli_util.h"

namespace tova::testing {
namespace {

std::string data(const std::string& rel) { return std::string(TOVA_TEST_DATA_DIR) + "/" + rel; }

std::string base() {
  return "run -m " + data("arch/gemma4-f32.gguf") + " --mmproj " + data("vision/gemma4v-f32.gguf") +
         " -t 1 --temp 0 -n 6 ";
}

TEST(ImageCli, RunTakesImagesAtTheMarkersOrFirst) {
  const std::string disc = data("vision/disc-64x48.png");
  const std::string bars = data("vision/bars-50x30.jpg");
  const CmdResult one = run_tova(base() + "--image " + disc + " -p 'Once upon a time'");
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.err.find("images       :        1 fed, 48 tokens"), std::string::npos) << one.err;
  // The image first by default: the same as the marker put there.
  const CmdResult marked =
      run_tova(base() + "--image " + disc + " -p '<__media__>Once upon a time'");
  ASSERT_EQ(marked.code, 0) << marked.err;
  EXPECT_EQ(marked.out, one.out);
  // Two images under a budget smaller than either.
  const CmdResult two =
      run_tova(base() + "--image " + disc + " --image " + bars +
               " --kv-policy tova --kv-budget 16 -p 'A <__media__> and a <__media__>.'");
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_NE(two.err.find("2 fed, 93 tokens"), std::string::npos) << two.err;
  EXPECT_NE(two.err.find("16 held now"), std::string::npos) << two.err;
}

TEST(ImageCli, RunRefusesInOneLine) {
  const std::string disc = data("vision/disc-64x48.png");
  EXPECT_ONE_LINE_ERROR(run_tova("run -m " + data("arch/gemma4-f32.gguf") + " --image " + disc),
                        "--mmproj");
  // Not an image: the file named.
  EXPECT_ONE_LINE_ERROR(run_tova(base() + "--image " + data("arch/gemma4-f32.gguf")),
                        "gemma4-f32.gguf");
  EXPECT_ONE_LINE_ERROR(run_tova(base() + "--image /nonexistent.png"), "/nonexistent.png");
  EXPECT_ONE_LINE_ERROR(
      run_tova(base() + "--image " + disc + " --image " + disc + " -p 'one <__media__> only'"),
      "too many images");
  // An mmproj of another text model: both files named.
  const CmdResult other = run_tova("run -m " + data("arch/gemma3-f32.gguf") + " --mmproj " +
                                   data("vision/gemma4v-f32.gguf") + " --image " + disc);
  EXPECT_ONE_LINE_ERROR(other, "gemma3-f32.gguf");
  EXPECT_NE(other.err.find("gemma4v-f32.gguf"), std::string::npos) << other.err;
  // Gemma 4 E (per-layer embeddings): refused at load, not at the first image.
  EXPECT_ONE_LINE_ERROR(run_tova("run -m " + data("arch/gemma4e-f32.gguf") + " --mmproj " +
                                 data("vision/gemma4v-f32.gguf") + " --image " + disc),
                        "per-layer embeddings");
}

// --kv-keep-images: two images under a budget smaller than either are both held (the images
// line says so); without --mmproj, or past --kv-keep-images-max, one error line.
TEST(ImageCli, RunKeepsImages) {
  const std::string disc = data("vision/disc-64x48.png");
  const std::string bars = data("vision/bars-50x30.jpg");
  const std::string two_images = "--image " + disc + " --image " + bars +
                                 " --kv-policy tova --kv-budget 16 -p 'A <__media__> and a "
                                 "<__media__>.' ";
  const CmdResult kept = run_tova(base() + two_images + "--kv-keep-images");
  ASSERT_EQ(kept.code, 0) << kept.err;
  EXPECT_NE(kept.err.find("2 fed, 93 tokens, 2 held"), std::string::npos) << kept.err;
  EXPECT_NE(kept.err.find("kept: --kv-keep-images"), std::string::npos) << kept.err;
  EXPECT_ONE_LINE_ERROR(run_tova(base() + two_images + "--kv-keep-images --kv-keep-images-max 1"),
                        "--kv-keep-images-max 1");
  EXPECT_ONE_LINE_ERROR(run_tova("run -m " + data("arch/gemma4-f32.gguf") +
                                 " -t 1 -n 2 --kv-keep-images -p 'Once'"),
                        "no mmproj (--mmproj)");
  // serve: refused at start without --mmproj, and with a cap below --image-max-count.
  EXPECT_ONE_LINE_ERROR(run_tova("serve -m " + data("arch/gemma4-f32.gguf") +
                                 " --port 0 --kv-keep-images"),
                        "no --mmproj");
  EXPECT_ONE_LINE_ERROR(run_tova("serve -m " + data("arch/gemma4-f32.gguf") + " --mmproj " +
                                 data("vision/gemma4v-f32.gguf") +
                                 " --port 0 --kv-keep-images --kv-keep-images-max 1 "
                                 "--image-max-count 2"),
                        "--kv-keep-images-max 1 is below --image-max-count 2");
  // chat: an image past the most kept is one error line at /image, and the chat goes on.
  const CmdResult chat = run_tova(
      "chat -m " + data("arch/gemma4-f32.gguf") + " --mmproj " + data("vision/gemma4v-f32.gguf") +
          " -t 1 --temp 0 -n 4 --chat-template chatml --kv-policy tova --kv-budget 16 "
          "--kv-keep-images --kv-keep-images-max 1",
      "/image " + disc + "\nwhat is it?\n/image " + bars + "\nand this?\n/stats\n/quit\n");
  ASSERT_EQ(chat.code, 0) << chat.err;
  EXPECT_NE(chat.out.find("tova: error: this conversation keeps 1 images already, the most it "
                          "keeps (--kv-keep-images-max 1)"),
            std::string::npos)
      << chat.out;
  EXPECT_NE(chat.err.find("1 fed, 48 tokens, 1 held"), std::string::npos) << chat.err;
}

TEST(ImageCli, ChatAttachesImages) {
  const std::string args = "chat -m " + data("arch/gemma4-f32.gguf") + " --mmproj " +
                           data("vision/gemma4v-f32.gguf") +
                           " -t 1 --temp 0 -n 4 --chat-template chatml --kv-policy tova --kv-budget 16";
  const CmdResult r = run_tova(args, "/image " + data("vision/disc-64x48.png") +
                                         "\nwhat is it?\n/image /nonexistent.png\n/image " +
                                         data("vision/bars-50x30.jpg") + "\nand this?\n/stats\n/quit\n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(image 64 x 48: 48 tokens, with the next message)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tova: error: /nonexistent.png"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("2 fed, 93 tokens"), std::string::npos) << r.err;
  // Without --mmproj, /image says what is missing and the chat goes on.
  const CmdResult no = run_tova("chat -m " + data("arch/gemma4-f32.gguf") +
                                    " -t 1 --temp 0 -n 2 --chat-template chatml",
                                "/image " + data("vision/disc-64x48.png") + "\nhi\n/quit\n");
  ASSERT_EQ(no.code, 0) << no.err;
  EXPECT_NE(no.out.find("/image needs --mmproj"), std::string::npos) << no.out;
}

}  // namespace
}  // namespace tova::testing
