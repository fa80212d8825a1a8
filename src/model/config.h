// Hyper-parameters of a decoder read from GGUF metadata ({arch}.*), validated.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.h"
#include "io/gguf.h"
#include "kernels/ops.h"

namespace tova::model {

enum class Arch { kLlama, kQwen2 };

struct ModelConfig {
  Arch arch = Arch::kLlama;
  std::string arch_name;   // general.architecture
  std::string name;        // general.name, if any
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
  bool qkv_bias = false;     // qwen2
  bool tied_output = false;  // no output.weight: the token embedding is reused
};

// The architectures tova implements, for error messages.
const char* supported_architectures();

Result<ModelConfig> load_config(const io::GgufFile& file);

}  // namespace tova::model
