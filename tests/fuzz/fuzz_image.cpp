// Harness: the image path on arbitrary bytes: decoding (stb_image behind vision::decode_image),
// then, for what decodes, the gemma4v fixture's preprocessing and encoder. A decoded image has
// exactly width x height x 3 bytes; the encoder's input has sides that are multiples of
// patch x merge (a long strip past the position tables is one error);
// errors are one line. Images are capped at 512 x 512 here so that a run stays fast (the
// decoder's own limit, kMaxImagePixels, is tested in tests/vision).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/thread_pool.h"
#include "vision/image_decode.h"
#include "vision/mmproj.h"
#include "vision/preprocess.h"

namespace {

const tova::vision::Mmproj* fixture() {
  static std::unique_ptr<tova::vision::Mmproj> m = [] {
    auto r = tova::vision::Mmproj::open(std::string(TOVA_FUZZ_TEST_DATA_DIR) +
                                        "/vision/gemma4v-q8_0.gguf");
    if (!r.ok()) __builtin_trap();  // the committed fixture must open
    return std::move(r).value();
  }();
  return m.get();
}

bool one_line(const std::string& s) { return s.find('\n') == std::string::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tova::vision;
  auto img = decode_image(std::span<const uint8_t>(data, size), "fuzz.img");
  if (!img.ok()) {
    if (!one_line(img.message())) __builtin_trap();
    return 0;
  }
  if (img->width <= 0 || img->height <= 0 ||
      img->rgb.size() != static_cast<size_t>(img->width) * img->height * 3) {
    __builtin_trap();
  }
  if (int64_t{img->width} * img->height > 512 * 512) return 0;
  const Mmproj* mm = fixture();
  const MmprojConfig& c = mm->config();
  auto planar = preprocess_image(*img, c);
  if (!planar.ok()) {
    if (!one_line(planar.message())) __builtin_trap();
    return 0;
  }
  const int align = c.patch_size * c.n_merge;
  if (planar->width % align != 0 || planar->height % align != 0 ||
      planar->data.size() != static_cast<size_t>(planar->width) * planar->height * 3) {
    __builtin_trap();
  }
  static tova::ThreadPool pool(1);
  auto e = mm->encode(*img, pool);
  if (!e.ok()) {
    if (!one_line(e.message())) __builtin_trap();
    return 0;
  }
  if (e->n_tokens <= 0 ||
      e->data.size() != static_cast<size_t>(e->n_tokens) * c.projection_dim) {
    __builtin_trap();
  }
  return 0;
}
