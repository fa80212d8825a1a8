// An image made into the encoder's input as llama.cpp's mtmd makes it for gemma4v: resized
// (aspect ratio kept, both sides a multiple of patch_size * n_merge, the pixel count within the
// projector's token limits) with bilinear interpolation into a black-padded canvas, then scaled
// to [0, 1] and normalised by the file's mean and std, channel-planar.
#pragma once

#include <cstdint>
#include <vector>

#include "core/result.h"
#include "vision/image_decode.h"
#include "vision/mmproj_config.h"

namespace tova::vision {

struct ImageSize {
  int width = 0;
  int height = 0;
};

// The encoder's input: [3][height][width] floats (R plane, G plane, B plane).
struct PlanarImage {
  int width = 0;
  int height = 0;
  std::vector<float> data;
};

// The size an image of `in` is resized to: each side rounded to a multiple of `align`; if the
// area is then over max_pixels, both sides scaled down by the square root of the excess (floored
// to multiples of align, at least align), else if under min_pixels scaled up (ceiled). Float
// arithmetic as transformers' smart_resize is written in llama.cpp, so the sizes agree exactly.
ImageSize fit_image_size(ImageSize in, int align, int64_t min_pixels, int64_t max_pixels);

// Resizes `src` into a target x target canvas: scaled by the smaller of the two ratios
// (sides ceiled, capped at the target), bilinear (corner-aligned, as mtmd's resize_bilinear),
// centred on black.
RgbImage resize_padded(const RgbImage& src, ImageSize target);

// Pixel / 255, minus mean, divided by std, per channel; channel-planar.
PlanarImage normalize_planar(const RgbImage& img, const std::array<float, 3>& mean,
                             const std::array<float, 3>& std);

// All of the above for an mmproj's encoder. Errors: an empty image.
Result<PlanarImage> preprocess_image(const RgbImage& img, const MmprojConfig& c);

}  // namespace tova::vision
