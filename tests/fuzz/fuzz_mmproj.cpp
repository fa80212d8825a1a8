// Harness: an mmproj GGUF from a byte buffer, through the reader, the clip.* config and the
// gemma4v weight table (every tensor checked or refused by name); what opens encodes one small
// image. Errors are one line.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/thread_pool.h"
#include "io/gguf.h"
#include "vision/gemma4v.h"
#include "vision/mmproj_config.h"
#include "vision/preprocess.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tova;
  auto f = io::GgufFile::from_bytes(std::span<const uint8_t>(data, size), "fuzz.gguf");
  if (!f.ok()) return 0;
  auto c = vision::read_mmproj_config(**f);
  if (!c.ok()) {
    if (c.message().find('\n') != std::string::npos) __builtin_trap();
    return 0;
  }
  auto w = vision::load_gemma4v(**f, *c);
  if (!w.ok()) {
    if (w.message().find('\n') != std::string::npos) __builtin_trap();
    return 0;
  }
  // Small shapes only: the work grows with n_embd, n_ff, layers and the patch count.
  if (int64_t{c->n_embd} * c->n_layer * (c->n_embd + c->n_ff) > (int64_t{1} << 20) ||
      c->patch_size * c->n_merge > 64) {
    return 0;
  }
  vision::RgbImage img{.width = 16, .height = 12};
  img.rgb.assign(16 * 12 * 3, 128);
  auto planar = vision::preprocess_image(img, *c);
  if (!planar.ok()) return 0;
  if (int64_t{planar->width} * planar->height > 256 * 256) return 0;
  static ThreadPool pool(1);
  auto e = vision::encode_gemma4v(*w, *c, *planar, pool);
  if (!e.ok() && e.message().find('\n') != std::string::npos) __builtin_trap();
  return 0;
}
