// Preprocessing as llama.cpp's mtmd does it for gemma4v, on hand-computed cases: the resize
// rule's three branches (round only, scale down, scale up), the padded bilinear resize and the
// normalisation.
#include <gtest/gtest.h>

#include "vision/preprocess.h"

namespace tova::vision {
namespace {

// The gemma4v fixture's limits: patch 4, merge 3 (align 12), 40 .. 280 tokens of 144 pixels.
constexpr int kAlign = 12;
constexpr int64_t kMin = 40 * 144, kMax = 280 * 144;

TEST(FitImageSize, ThreeBranches) {
  auto fit = [](int w, int h) { return fit_image_size({w, h}, kAlign, kMin, kMax); };
  // 64 x 48 rounds to 60 x 48 = 2880 < 5760: scaled up by sqrt(5760 / 3072), sides ceiled.
  EXPECT_EQ(fit(64, 48).width, 96);
  EXPECT_EQ(fit(64, 48).height, 72);
  // 50 x 30: 48 x 36 (2.5 rounds away from zero), then up by 1.9596: 108 x 60.
  EXPECT_EQ(fit(50, 30).width, 108);
  EXPECT_EQ(fit(50, 30).height, 60);
  // 300 x 200 rounds to 300 x 204 = 61200 > 40320: down by 1.2199, sides floored: 240 x 156.
  EXPECT_EQ(fit(300, 200).width, 240);
  EXPECT_EQ(fit(300, 200).height, 156);
  // 200 x 150 rounds to 204 x 156 = 31824: within the limits, kept.
  EXPECT_EQ(fit(200, 150).width, 204);
  EXPECT_EQ(fit(200, 150).height, 156);
  // 1 x 1: 12 x 12, then up by sqrt(5760): 84 x 84.
  EXPECT_EQ(fit(1, 1).width, 84);
  EXPECT_EQ(fit(1, 1).height, 84);
}

TEST(ResizePadded, CentredOnBlack) {
  RgbImage src{.width = 2, .height = 1, .rgb = {10, 20, 30, 110, 120, 130}};
  // Into 6 x 2: scale min(3, 2) = 2, scaled to 4 x 2, 1 column of black each side.
  const RgbImage d = resize_padded(src, {6, 2});
  ASSERT_EQ(d.width, 6);
  ASSERT_EQ(d.height, 2);
  for (int y = 0; y < 2; ++y) {
    EXPECT_EQ(d.at(0, y, 0), 0);
    EXPECT_EQ(d.at(5, y, 2), 0);
    // Corner-aligned bilinear over 4 columns: x ratio 1/3, so 10, 43.33, 76.67, 110 truncated.
    EXPECT_EQ(d.at(1, y, 0), 10);
    EXPECT_EQ(d.at(2, y, 0), 43);
    EXPECT_EQ(d.at(3, y, 0), 76);
    EXPECT_EQ(d.at(4, y, 0), 110);
    EXPECT_EQ(d.at(4, y, 2), 130);
  }
}

TEST(NormalizePlanar, ChannelPlanes) {
  RgbImage src{.width = 2, .height = 1, .rgb = {255, 0, 51, 0, 255, 102}};
  const PlanarImage p = normalize_planar(src, {0.5f, 0.25f, 0.f}, {0.5f, 0.25f, 2.f});
  ASSERT_EQ(p.data.size(), 6u);
  EXPECT_FLOAT_EQ(p.data[0], 1.f);    // R of pixel 0: (1 - 0.5) / 0.5
  EXPECT_FLOAT_EQ(p.data[1], -1.f);   // R of pixel 1
  EXPECT_FLOAT_EQ(p.data[2], -1.f);   // G of pixel 0: (0 - 0.25) / 0.25
  EXPECT_FLOAT_EQ(p.data[3], 3.f);    // G of pixel 1
  EXPECT_FLOAT_EQ(p.data[4], 0.1f);   // B of pixel 0: 0.2 / 2
  EXPECT_FLOAT_EQ(p.data[5], 0.2f);
}

}  // namespace
}  // namespace tova::vision
