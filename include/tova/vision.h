// Images in: mmproj files (llama.cpp's vision encoder + projector GGUFs) and their random-weight
// fixtures (`tova make-random --projector gemma4v`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tova/result.h"

namespace tova {

// The projector types tova computes ("gemma4v").
std::string projector_type_choices();

struct RandomMmprojOptions {
  std::string projector = "gemma4v";
  std::string type = "f32";  // the matrices' type: f32, f16 or q8_0
  // The text model's embedding width the projector maps to; 0: the width of the projector's
  // text-family fixture (`tova make-random --arch gemma4`: 64).
  int projection_dim = 0;
  uint64_t seed = 1;
};

struct RandomMmprojReport {
  int n_tensors = 0;
  uint64_t n_bytes = 0;
  int projection_dim = 0;
};

// Writes a random-weight mmproj fixture at `path`; an error names the unknown projector or type.
Result<RandomMmprojReport> make_random_mmproj(const RandomMmprojOptions& o, const std::string& path);

}  // namespace tova
