// Hyper-parameters of a decoder read from GGUF metadata ({arch}.*), validated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "io/gguf.h"
#include "kernels/ops.h"

namespace tova::model {

enum class Arch { kLlama, kQwen2, kQwen3, kPhi3 };

struct ModelConfig {
  Arch arch = Arch::kLlama;
  std::string arch_name;  // general.architecture
  std::string name;       // general.name, if any
  int n_vocab = 0;
  int n_ctx_train = 0;
  int n_embd = 0;
  int n_layer = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;
  int n_ff = 0;
  float rms_eps = 1e-5f;
  kernels::RopeParams rope;
  bool tied_output = false;  // no output.weight: the token embedding is reused
  // The "{arch}." metadata keys the loader read (every such key of the file), sorted.
  std::vector<std::string> keys_read;
};

// The architectures tova implements, for error messages.
const char* supported_architectures();

Result<ModelConfig> load_config(const io::GgufFile& file);

}  // namespace tova::model
