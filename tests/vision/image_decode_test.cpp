// Hostile images: each is one clear error or a valid image, never a crash.
#include <gtest/gtest.h>

#include <stb_image_write.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "test_data.h"
#include "vision/gemma4v_fixture.h"
#include "vision/image_decode.h"
#include "vision/mmproj.h"

namespace tova::vision {
namespace {

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string image_path(const std::string& name) {
  return std::string(TOVA_TEST_DATA_DIR) + "/vision/" + name;
}

std::vector<uint8_t> png_of(int w, int h) {
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3, 77), out;
  stbi_write_png_to_func(
      [](void* ctx, void* data, int size) {
        auto* o = static_cast<std::vector<uint8_t>*>(ctx);
        o->insert(o->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + size);
      },
      &out, w, h, 3, rgb.data(), w * 3);
  return out;
}

TEST(ImageDecode, CommittedImagesDecode) {
  for (const char* name : {"disc-64x48.png", "bars-50x30.jpg"}) {
    auto img = read_image_file(image_path(name));
    ASSERT_TRUE(img.ok()) << img.message();
    EXPECT_GT(img->width, 0);
    EXPECT_EQ(img->rgb.size(), size_t(img->width) * img->height * 3);
  }
}

TEST(ImageDecode, EmptyAndGarbage) {
  EXPECT_FALSE(decode_image({}, "empty").ok());
  const std::vector<uint8_t> junk(1000, 0x5a);
  auto r = decode_image(junk, "junk.png");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("junk.png"), std::string::npos) << r.message();
}

TEST(ImageDecode, TruncatedFilesAreOneError) {
  for (const char* name : {"disc-64x48.png", "scene-300x200.jpg"}) {
    const std::vector<uint8_t> b = file_bytes(image_path(name));
    ASSERT_GT(b.size(), 100u);
    for (size_t n : {size_t{4}, size_t{40}, b.size() / 2}) {
      auto r = decode_image(std::span(b.data(), n), name);
      // stb_image decodes what a truncated JPEG holds (the rest grey), as llama.cpp does; a
      // truncated PNG is an error. Either way: a result, no crash.
      if (!r.ok()) {
        EXPECT_NE(r.message().find(name), std::string::npos) << r.message();
      } else {
        EXPECT_EQ(r->rgb.size(), size_t(r->width) * r->height * 3);
      }
    }
    EXPECT_FALSE(decode_image(std::span(b.data(), 40), name).ok());
  }
}

// A PNG whose IHDR claims w x h (its pixel data is a 2 x 2 image's).
std::vector<uint8_t> lying_png(uint32_t w, uint32_t h) {
  std::vector<uint8_t> b = png_of(2, 2);
  for (int i = 0; i < 4; ++i) {
    b[16 + i] = static_cast<uint8_t>(w >> (24 - 8 * i));
    b[20 + i] = static_cast<uint8_t>(h >> (24 - 8 * i));
  }
  return b;
}

TEST(ImageDecode, LyingHeaderOverTheLimitIsRefusedBeforeDecoding) {
  // 20000 x 20000: stb_image's own header check refuses it (over 2^30 bytes).
  auto r = decode_image(lying_png(20000, 20000), "lying.png");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("lying.png"), std::string::npos) << r.message();
  // 8200 x 8200 passes stb_image's check; tova's pixel limit refuses it before decoding.
  r = decode_image(lying_png(8200, 8200), "big.png");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("8200 x 8200"), std::string::npos) << r.message();
}

TEST(ImageDecode, LyingHeaderUnderTheLimitIsAnError) {
  // 300 x 300 claimed, 2 x 2 worth of data.
  std::vector<uint8_t> b = png_of(2, 2);
  b[18] = 1;
  b[19] = 44;
  b[22] = 1;
  b[23] = 44;
  auto r = decode_image(b, "short.png");
  EXPECT_FALSE(r.ok());
}

TEST(ImageDecode, OnePixelImageEncodes) {
  const std::string dir = testing::make_temp_dir();
  ASSERT_TRUE(write_gemma4v_fixture({}, dir + "/mm.gguf").ok());
  auto m = Mmproj::open(dir + "/mm.gguf");
  ASSERT_TRUE(m.ok()) << m.message();
  auto img = decode_image(png_of(1, 1), "1x1.png");
  ASSERT_TRUE(img.ok()) << img.message();
  ThreadPool pool(1);
  auto e = (*m)->encode(*img, pool);
  ASSERT_TRUE(e.ok()) << e.message();
  EXPECT_EQ(e->n_tokens, 49);  // 84 x 84 pixels: 21 x 21 patches, 7 x 7 tokens
}

}  // namespace
}  // namespace tova::vision
