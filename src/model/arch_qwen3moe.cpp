// qwen3moe: Qwen3-30B-A3B, Qwen3-235B-A22B, Qwen3-Coder-30B-A3B. qwen3's attention (no biases,
// per-head RMSNorm of queries and keys before RoPE on halves) with a mixture-of-experts
// feed-forward in every layer: softmax router, top-k (expert_used_count) of expert_count
// SwiGLU experts of expert_feed_forward_length, chosen weights renormalized to sum 1.
#include "model/arch.h"

namespace tova::model {
namespace {

Status configure(KeyReader& keys, ModelConfig& c) {
  c.rope.mode = kernels::RopeMode::kNeox;
  return read_expert_keys(keys, c, {.required = true, .norm = true, .ff_exp_key = true});
}

Status load_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  TOVA_RETURN_IF_ERROR(load_attention(ld, c, il, l));
  TOVA_RETURN_IF_ERROR(load_qk_norm(ld, c, il, l));
  return load_moe_ffn(ld, c, il, l, /*shared_expert=*/false);
}

}  // namespace

extern const ArchSpec kArchQwen3Moe{.name = "qwen3moe",
                                    .experts = true,
                                    .configure = configure,
                                    .load_layer = load_layer};

}  // namespace tova::model
