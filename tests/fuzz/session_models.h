// The models the session_file harness decodes for, one per kind of state a multi-state holds:
// byte 0 of an input picks one (its low two bits), so that every kind is fuzzed. Shared by the
// harness and its seed maker (make_session_seeds.cpp).
#pragma once

#include <array>
#include <string>

#include "fuzz_shared_dir.h"

namespace tova::fuzz {

struct SessionModel {
  const char* name;  // seed file prefix
  const char* kind;  // the state kinds its layers hold
  std::string path;
};

inline std::array<SessionModel, 4> session_models() {
  const std::string arch = TOVA_FUZZ_TEST_DATA_DIR "/arch/";
  return {{
      {"stories260K", "attention (bounded K/V)", shared_dir() + "/models/stories260K.gguf"},
      {"gemma3", "attention + sliding window K/V", arch + "gemma3-f32.gguf"},
      {"gemma4e", "attention + window + shared K/V (layers that own none)",
       arch + "gemma4e-f32.gguf"},
      {"qwen35", "attention + recurrent (Gated DeltaNet)", arch + "qwen35-f32.gguf"},
  }};
}

// Byte 0 of an input: bits 0-1 the model; bit 2 set: the harness rewrites the header's size and
// checksum to fit the bytes (so mutations of the payload reach its parser instead of failing the
// checksum); the rest of the input is the file.
inline constexpr unsigned kFixHeader = 4;

}  // namespace tova::fuzz
