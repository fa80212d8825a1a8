// The weights of a llama-family decoder: immutable views into the mapped GGUF file, checked
// against the architecture's shapes. Small vectors (norms, biases) are converted to float32.
#pragma once

#include <vector>

#include "core/result.h"
#include "io/gguf.h"
#include "kernels/matmul.h"
#include "model/config.h"

namespace tova::model {

struct LayerWeights {
  std::vector<float> attn_norm;  // [n_embd]
  kernels::WeightMatrix wq;      // [n_head * head_dim][n_embd]
  kernels::WeightMatrix wk;      // [n_head_kv * head_dim][n_embd]
  kernels::WeightMatrix wv;      // [n_head_kv * head_dim][n_embd]
  kernels::WeightMatrix wo;      // [n_embd][n_head * head_dim]
  std::vector<float> bq, bk, bv; // qwen2 only: [n_head * head_dim], [n_head_kv * head_dim] x2
  std::vector<float> ffn_norm;   // [n_embd]
  kernels::WeightMatrix w_gate;  // [n_ff][n_embd]
  kernels::WeightMatrix w_up;    // [n_ff][n_embd]
  kernels::WeightMatrix w_down;  // [n_embd][n_ff]
};

struct ModelWeights {
  kernels::WeightMatrix token_embd;  // [n_vocab][n_embd], rows are dequantized on lookup
  std::vector<float> output_norm;    // [n_embd]
  kernels::WeightMatrix output;      // [n_vocab][n_embd] (token_embd when tied)
  std::vector<LayerWeights> layers;
  uint64_t n_bytes = 0;              // bytes of weight data the forward pass reads
};

Result<ModelWeights> load_weights(const io::GgufFile& file, const ModelConfig& c);

}  // namespace tova::model
