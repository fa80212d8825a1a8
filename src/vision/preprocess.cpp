#include "vision/preprocess.h"

#include <algorithm>
#include <cmath>

namespace tova::vision {

ImageSize fit_image_size(ImageSize in, int align, int64_t min_pixels, int64_t max_pixels) {
  const int width = in.width;
  const int height = in.height;
  if (width <= 0 || height <= 0 || align <= 0) return {0, 0};
  const float f = static_cast<float>(align);
  auto round_by = [&](float x) { return static_cast<int>(std::round(x / f)) * align; };
  auto ceil_by = [&](float x) { return static_cast<int>(std::ceil(x / f)) * align; };
  auto floor_by = [&](float x) { return static_cast<int>(std::floor(x / f)) * align; };

  int w = std::max(align, round_by(static_cast<float>(width)));
  int h = std::max(align, round_by(static_cast<float>(height)));
  const int64_t area = int64_t{w} * h;
  if (max_pixels > 0 && area > max_pixels) {
    const float beta = std::sqrt(static_cast<float>(height) * static_cast<float>(width) /
                                 static_cast<float>(max_pixels));
    h = std::max(align, floor_by(static_cast<float>(height) / beta));
    w = std::max(align, floor_by(static_cast<float>(width) / beta));
  } else if (min_pixels > 0 && area < min_pixels) {
    const float beta = std::sqrt(static_cast<float>(min_pixels) /
                                 (static_cast<float>(height) * static_cast<float>(width)));
    h = ceil_by(static_cast<float>(height) * beta);
    w = ceil_by(static_cast<float>(width) * beta);
  }
  return {w, h};
}

namespace {

float lerp(float s, float e, float t) { return s + (e - s) * t; }

// Corner-aligned bilinear resize (the first and last pixels map onto each other), each channel
// truncated to 8 bits as mtmd's resize_bilinear does.
RgbImage resize_bilinear(const RgbImage& src, int tw, int th) {
  RgbImage dst{.width = tw, .height = th};
  dst.rgb.resize(static_cast<size_t>(tw) * th * 3);
  const float x_ratio = tw > 1 ? static_cast<float>(src.width - 1) / static_cast<float>(tw - 1) : 0.f;
  const float y_ratio = th > 1 ? static_cast<float>(src.height - 1) / static_cast<float>(th - 1) : 0.f;
  for (int y = 0; y < th; ++y) {
    const float py = static_cast<float>(y) * y_ratio;
    const int y0 = std::min(static_cast<int>(py), src.height - 1);
    const int y1 = std::min(y0 + 1, src.height - 1);
    const float yf = py - static_cast<float>(y0);
    for (int x = 0; x < tw; ++x) {
      const float px = static_cast<float>(x) * x_ratio;
      const int x0 = std::min(static_cast<int>(px), src.width - 1);
      const int x1 = std::min(x0 + 1, src.width - 1);
      const float xf = px - static_cast<float>(x0);
      uint8_t* out = &dst.rgb[(static_cast<size_t>(y) * tw + x) * 3];
      for (int c = 0; c < 3; ++c) {
        const float top = lerp(src.at(x0, y0, c), src.at(x1, y0, c), xf);
        const float bottom = lerp(src.at(x0, y1, c), src.at(x1, y1, c), xf);
        out[c] = static_cast<uint8_t>(lerp(top, bottom, yf));
      }
    }
  }
  return dst;
}

}  // namespace

RgbImage resize_padded(const RgbImage& src, ImageSize target) {
  if (src.width == target.width && src.height == target.height) return src;
  const float scale_w = static_cast<float>(target.width) / static_cast<float>(src.width);
  const float scale_h = static_cast<float>(target.height) / static_cast<float>(src.height);
  const float scale = std::min(scale_w, scale_h);
  const int nw = std::min(static_cast<int>(std::ceil(static_cast<float>(src.width) * scale)),
                          target.width);
  const int nh = std::min(static_cast<int>(std::ceil(static_cast<float>(src.height) * scale)),
                          target.height);
  const RgbImage scaled = resize_bilinear(src, std::max(1, nw), std::max(1, nh));
  RgbImage dst{.width = target.width, .height = target.height};
  dst.rgb.assign(static_cast<size_t>(target.width) * target.height * 3, 0);  // black
  const int ox = (target.width - scaled.width) / 2;
  const int oy = (target.height - scaled.height) / 2;
  for (int y = 0; y < scaled.height; ++y) {
    const int dy = y + oy;
    if (dy < 0 || dy >= target.height) continue;
    for (int x = 0; x < scaled.width; ++x) {
      const int dx = x + ox;
      if (dx < 0 || dx >= target.width) continue;
      for (int c = 0; c < 3; ++c) {
        dst.rgb[(static_cast<size_t>(dy) * target.width + dx) * 3 + c] = scaled.at(x, y, c);
      }
    }
  }
  return dst;
}

PlanarImage normalize_planar(const RgbImage& img, const std::array<float, 3>& mean,
                             const std::array<float, 3>& std) {
  PlanarImage out{.width = img.width, .height = img.height};
  const size_t n = static_cast<size_t>(img.width) * img.height;
  out.data.resize(3 * n);
  for (size_t i = 0; i < n; ++i) {
    for (int c = 0; c < 3; ++c) {
      const float v = static_cast<float>(img.rgb[i * 3 + c]) / 255.0f;
      out.data[c * n + i] = (v - mean[c]) / std[c];
    }
  }
  return out;
}

Result<PlanarImage> preprocess_image(const RgbImage& img, const MmprojConfig& c) {
  if (img.width <= 0 || img.height <= 0) return make_error("empty image ({} x {})", img.width, img.height);
  const ImageSize target = fit_image_size({img.width, img.height}, c.patch_size * c.n_merge,
                                          c.min_pixels(), c.max_pixels());
  if (target.width <= 0 || target.height <= 0) {
    return make_error("image of {} x {} cannot be resized for the encoder", img.width, img.height);
  }
  return normalize_planar(resize_padded(img, target), c.image_mean, c.image_std);
}

}  // namespace tova::vision
