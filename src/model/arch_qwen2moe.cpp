// qwen2moe: Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B. qwen2's attention (q/k/v biases, RoPE on halves)
// with a mixture-of-experts feed-forward in every layer: softmax router, top-k of expert_count
// SwiGLU experts (weights not renormalized), plus a shared SwiGLU expert of
// expert_shared_feed_forward_length scaled by sigmoid(ffn_gate_inp_shexp · h).
#include "model/arch.h"

namespace tova::model {
namespace {

Status configure(KeyReader& keys, ModelConfig& c) {
  c.rope.mode = kernels::RopeMode::kNeox;
  return read_expert_keys(keys, c, {.required = true, .shared_expert = true, .ff_exp_key = true});
}

Status load_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  TOVA_RETURN_IF_ERROR(load_attention(ld, c, il, l));
  TOVA_RETURN_IF_ERROR(load_qkv_bias(ld, c, il, l));
  return load_moe_ffn(ld, c, il, l, /*shared_expert=*/true);
}

}  // namespace

extern const ArchSpec kArchQwen2Moe{.name = "qwen2moe",
                                    .experts = true,
                                    .configure = configure,
                                    .load_layer = load_layer};

}  // namespace tova::model
