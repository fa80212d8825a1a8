// The gemma4v loader's inverse: a random-weight mmproj with every key and tensor a converted
// Gemma 4 mmproj has (convert_hf_to_gguf's Gemma4VisionAudioModel, vision part), scaled down,
// plus the optional parts tova must get right too (clamp scalars, std_bias/std_scale, a
// non-trivial mean/std). `tova make-random --projector gemma4v` writes it; the goldens
// (scripts/make_vision_goldens.sh) come from llama.cpp's mtmd on the same file.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "core/result.h"

namespace tova::vision {

struct Gemma4vFixtureOptions {
  // kF32, kF16 or kQ8_0: the matrices' type (the patch convolution is f16 in quantized files,
  // its rows of 3 * patch^2 not being whole Q8_0 blocks; norms, scalars, position tables f32).
  GgmlType type = GgmlType::kF32;
  int projection_dim = 64;  // the text model's embedding width
  int n_embd = 32;
  int n_ff = 64;
  int n_layer = 2;
  int n_head = 2;
  int patch_size = 4;
  int pos_size = 128;  // position table rows: patches per side at most
  uint64_t seed = 1;
};

struct Gemma4vFixtureStats {
  int n_tensors = 0;
  uint64_t n_bytes = 0;
};

// Writes the file atomically; errors name the option or the file.
Result<Gemma4vFixtureStats> write_gemma4v_fixture(const Gemma4vFixtureOptions& o,
                                                  const std::string& path);

}  // namespace tova::vision
