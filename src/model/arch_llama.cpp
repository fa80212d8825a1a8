// llama: LLaMA-1/2/3.x, Mistral, TinyLlama, SmolLM, Yi... Pre-norm decoder with RMSNorm,
// grouped-query attention, RoPE on adjacent pairs (the converter permutes Q/K rows), SiLU-gated
// feed-forward. Llama-3.x files carry rope_freqs.weight; Mistral files set key_length.
// Mixtral is a llama file with experts (expert_count > 0): every layer's feed-forward is a
// mixture of feed_forward_length-wide SwiGLU experts, softmax router, top-k weights
// renormalized to sum 1 (llama.cpp reads no expert_feed_forward_length for llama).
#include "model/arch.h"

namespace tova::model {
namespace {

Status configure(KeyReader& keys, ModelConfig& c) {
  c.rope.mode = kernels::RopeMode::kNorm;
  return read_expert_keys(keys, c, {.norm = true});
}

Status load_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  TOVA_RETURN_IF_ERROR(load_attention(ld, c, il, l));
  if (c.n_expert > 0) return load_moe_ffn(ld, c, il, l, /*shared_expert=*/false);
  return load_dense_ffn(ld, c, il, l);
}

}  // namespace

extern const ArchSpec kArchLlama{.name = "llama",
                                 .rope_freqs = true,
                                 .experts = true,
                                 .configure = configure,
                                 .load_layer = load_layer};

}  // namespace tova::model
