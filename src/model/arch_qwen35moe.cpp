// qwen35moe: Qwen3.5 and Qwen3.6 mixtures (35B-A3B, 122B-A10B, 397B-A17B). qwen35's layers
// (Gated DeltaNet x 3 + gated attention, arch_qwen35.cpp) with a mixture-of-experts
// feed-forward in every layer: softmax router over expert_count experts, the top
// expert_used_count renormalized to sum 1, times expert_weights_scale, plus a shared SwiGLU
// expert of expert_shared_feed_forward_length scaled by sigmoid(ffn_gate_inp_shexp · h)
// (layer_ffn_moe.cpp); the feed-forward's norm is post_attention_norm. As llama.cpp's
// src/models/qwen35moe.cpp.
#include "model/arch.h"

namespace tova::model {

namespace {

Status configure(KeyReader& keys, ModelConfig& c) {
  TOVA_RETURN_IF_ERROR(read_deltanet_keys(keys, c));
  return read_expert_keys(
      keys, c, {.required = true, .norm = true, .shared_expert = true, .ff_exp_key = true});
}

Status load_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  TOVA_RETURN_IF_ERROR(load_qwen35_mixer(ld, c, il, l));
  return load_moe_ffn(ld, c, il, l, /*shared_expert=*/true, "post_attention_norm");
}

}  // namespace

extern const ArchSpec kArchQwen35Moe{.name = "qwen35moe",
                                     .experts = true,
                                     .configure = configure,
                                     .load_layer = load_layer};

}  // namespace tova::model
