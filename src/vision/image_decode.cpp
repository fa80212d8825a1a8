#include "vision/image_decode.h"

#include <stb_image.h>

#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

namespace tova::vision {

namespace {

constexpr int64_t kMaxImageFileBytes = int64_t{256} << 20;

struct StbFree {
  void operator()(unsigned char* p) const { stbi_image_free(p); }
};

}  // namespace

Result<ImageDims> read_image_dims(std::span<const uint8_t> bytes, const std::string& name) {
  if (bytes.empty()) return make_error("{}: empty image", name);
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return make_error("{}: image of {} bytes is too large", name, bytes.size());
  }
  int w = 0, h = 0, comp = 0;
  if (stbi_info_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()),
                            static_cast<int>(bytes.size()), &w, &h, &comp) == 0) {
    return make_error("{}: not an image stb_image can read (PNG, JPEG, BMP, GIF, TGA, PSD, PNM): {}",
                      name, stbi_failure_reason());
  }
  return ImageDims{.width = w, .height = h};
}

Result<RgbImage> decode_image(std::span<const uint8_t> bytes, const std::string& name) {
  // The header first: a lying or huge size is refused before any pixel memory is taken.
  TOVA_ASSIGN_OR_RETURN(const ImageDims dims, read_image_dims(bytes, name));
  const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
  const int len = static_cast<int>(bytes.size());
  const int w = dims.width, h = dims.height;
  int comp = 0;
  if (w <= 0 || h <= 0 || int64_t{w} * h > kMaxImagePixels) {
    return make_error("{}: image of {} x {} pixels is larger than the limit of {} pixels", name,
                      w, h, kMaxImagePixels);
  }
  int dw = 0, dh = 0;
  std::unique_ptr<unsigned char, StbFree> px(stbi_load_from_memory(data, len, &dw, &dh, &comp, 3));
  if (px == nullptr) {
    return make_error("{}: cannot decode the image ({} x {}): {}", name, w, h,
                      stbi_failure_reason());
  }
  if (dw != w || dh != h) {
    return make_error("{}: image decoded as {} x {}, its header says {} x {}", name, dw, dh, w, h);
  }
  RgbImage img{.width = w, .height = h};
  img.rgb.assign(px.get(), px.get() + static_cast<size_t>(w) * h * 3);
  return img;
}

Result<RgbImage> read_image_file(const std::string& path) {
  TOVA_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, read_file_bytes(path));
  return decode_image(bytes, path);
}

Result<std::vector<uint8_t>> read_file_bytes(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (f == nullptr) return make_error("{}: cannot open: {}", path, std::strerror(errno));
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) {
    bytes.insert(bytes.end(), buf, buf + n);
    if (static_cast<int64_t>(bytes.size()) > kMaxImageFileBytes) {
      return make_error("{}: image file larger than {} MiB", path, kMaxImageFileBytes >> 20);
    }
  }
  if (std::ferror(f.get())) return make_error("{}: read error", path);
  return bytes;
}

}  // namespace tova::vision
