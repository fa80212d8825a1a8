// Writes the committed test images of tests/data/vision (PNG and JPEG, a few KB each) with
// Debian's libstb (stb_image_write). Built and run by scripts/make_vision_goldens.sh:
//   make_test_images OUT_DIR
// Each image is a fixed drawing (gradients, discs, bars): sizes chosen so that the gemma4v
// fixture's preprocessing takes each path of mtmd's resize (scaled up without padding, scaled up
// with padding, scaled down, a tall image).
#include <stb_image_write.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

struct Image {
  int w, h;
  std::vector<unsigned char> rgb;
};

Image draw(int w, int h, int variant) {
  Image img{w, h, std::vector<unsigned char>(static_cast<size_t>(w) * h * 3)};
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const double u = static_cast<double>(x) / w, v = static_cast<double>(y) / h;
      double r = 255 * u, g = 255 * v, b = 128 + 100 * std::sin(6.0 * (u + variant * 0.3) + 3 * v);
      // A disc and a bar whose places depend on the variant.
      const double cx = 0.3 + 0.1 * variant, cy = 0.5, rad = 0.25;
      if ((u - cx) * (u - cx) + (v - cy) * (v - cy) < rad * rad) {
        r = 250 - 40 * variant;
        g = 40;
        b = 60 + 50 * variant;
      }
      if (u > 0.7 && u < 0.8) {
        r = 20;
        g = 20 + 60 * variant;
        b = 200;
      }
      unsigned char* p = &img.rgb[(static_cast<size_t>(y) * w + x) * 3];
      p[0] = static_cast<unsigned char>(std::lround(std::fmin(255, std::fmax(0, r))));
      p[1] = static_cast<unsigned char>(std::lround(std::fmin(255, std::fmax(0, g))));
      p[2] = static_cast<unsigned char>(std::lround(std::fmin(255, std::fmax(0, b))));
    }
  }
  return img;
}

bool write(const std::string& path, const Image& img) {
  const bool png = path.size() > 4 && path.compare(path.size() - 4, 4, ".png") == 0;
  const int ok = png ? stbi_write_png(path.c_str(), img.w, img.h, 3, img.rgb.data(), img.w * 3)
                     : stbi_write_jpg(path.c_str(), img.w, img.h, 3, img.rgb.data(), 90);
  if (ok == 0) std::fprintf(stderr, "make_test_images: cannot write %s\n", path.c_str());
  return ok != 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_test_images OUT_DIR\n");
    return 1;
  }
  const std::string dir = argv[1];
  bool ok = true;
  ok &= write(dir + "/disc-64x48.png", draw(64, 48, 0));    // scaled up, no padding
  ok &= write(dir + "/bars-50x30.jpg", draw(50, 30, 1));    // scaled up, padded left/right
  ok &= write(dir + "/scene-300x200.jpg", draw(300, 200, 2));  // scaled down
  ok &= write(dir + "/tall-40x130.png", draw(40, 130, 3));  // tall, padded
  return ok ? 0 : 1;
}
