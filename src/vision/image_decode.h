// PNG and JPEG (and the other formats stb_image reads: BMP, GIF's first frame, TGA, PSD, PNM)
// decoded into 8-bit RGB, with Debian's libstb (the same decoder llama.cpp's mtmd uses).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"

namespace tova::vision {

// An 8-bit RGB image: row-major [height][width][3].
struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;

  uint8_t at(int x, int y, int c) const {
    return rgb[(static_cast<size_t>(y) * width + x) * 3 + c];
  }
};

// Images larger than this many pixels are refused before they are decoded (a 20000 x 20000
// PNG would take 1.2 GB as RGB; every projector downsizes far below this anyway).
inline constexpr int64_t kMaxImagePixels = int64_t{8192} * 8192;

// Decodes an image held in memory; `name` is what the error names (the file, "image 2").
// Errors: an empty buffer, a format stb_image does not recognise, a truncated or corrupt file
// (stb_image's reason is given), a size over kMaxImagePixels.
Result<RgbImage> decode_image(std::span<const uint8_t> bytes, const std::string& name);

// An image's width and height from its header alone (nothing decoded). Errors as decode_image's
// for bytes that are not an image.
struct ImageDims {
  int width = 0;
  int height = 0;
};
Result<ImageDims> read_image_dims(std::span<const uint8_t> bytes, const std::string& name);

// Reads a file's bytes (at most 256 MiB, the image files' limit).
Result<std::vector<uint8_t>> read_file_bytes(const std::string& path);

// Reads and decodes an image file (at most 256 MiB).
Result<RgbImage> read_image_file(const std::string& path);

}  // namespace tova::vision
