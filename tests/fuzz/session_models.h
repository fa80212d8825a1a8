// The models the session_file harness decodes for, one per kind of state a multi-state holds:
// byte 0 of an input picks one (model_of), so that every kind is fuzzed. Shared by the harness
// and its seed maker (make_session_seeds.cpp). Loaded once per process, with the harness's
// scratch buffers: an input costs its decoding and one token, nothing per model.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_shared_dir.h"

namespace tova::fuzz {

struct SessionModel {
  const char* name;  // seed file prefix
  const char* kind;  // the state kinds its layers hold
  std::string path;
};

inline constexpr size_t kSessionModels = 5;

inline std::array<SessionModel, kSessionModels> session_models() {
  const std::string arch = TOVA_FUZZ_TEST_DATA_DIR "/arch/";
  return {{
      {"stories260K", "attention (bounded K/V)", shared_dir() + "/models/stories260K.gguf"},
      {"gemma3", "attention + sliding window K/V", arch + "gemma3-f32.gguf"},
      {"gemma4e", "attention + window + shared K/V (layers that own none)",
       arch + "gemma4e-f32.gguf"},
      {"qwen35", "attention + recurrent (Gated DeltaNet)", arch + "qwen35-f32.gguf"},
      {"lfm2", "attention + recurrent (short convolution, no delta state)",
       arch + "lfm2-f32.gguf"},
  }};
}

// Byte 0 of an input: bit 2 set: the harness rewrites the header's size and checksum to fit the
// bytes (so mutations of the payload reach its parser instead of failing the checksum); the
// other bits, as a number, modulo the number of models, pick the model (bits 0-1 alone for the
// first four, as before the fifth was added); the rest of the input is the file.
inline constexpr unsigned kFixHeader = 4;
inline size_t model_of(uint8_t lead) {
  return ((lead & 3u) | ((lead >> 3) << 2)) % kSessionModels;
}
inline uint8_t lead_byte(size_t model, bool fix_header) {
  return static_cast<uint8_t>((model & 3u) | ((model >> 2) << 3) | (fix_header ? kFixHeader : 0));
}

}  // namespace tova::fuzz
