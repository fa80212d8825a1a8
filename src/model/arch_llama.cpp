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

std::vector<RandomShape> fixtures() {
  RandomShape l3 = fixture_shape("llama3", "Llama-3.2-1B (scaled down)", "llama");
  l3.rope_base = 500000.f;
  l3.tied_output = true;
  l3.head_dim = 16;
  l3.llama3_orig_ctx = 64;
  RandomShape mi = fixture_shape("mistral", "Mistral-Nemo-12B (scaled down)", "llama");
  mi.rope_base = 1000000.f;
  mi.head_dim = 32;  // attention.key_length: n_head * head_dim != n_embd, as Nemo's 32 x 128
                     // != 5120
  RandomShape mx = fixture_shape("mixtral", "Mixtral-8x7B (scaled down)", "llama");
  mx.rope_base = 1000000.f;
  mx.n_ff = 32;  // feed_forward_length: each expert's width
  mx.n_expert = 8;
  mx.n_expert_used = 2;
  return {l3, mi, mx};
}

}  // namespace

extern const ArchSpec kArchLlama{.name = "llama",
                                 .rope_freqs = true,
                                 .experts = true,
                                 .configure = configure,
                                 .load_layer = load_layer,
                                 .fixtures = fixtures};

}  // namespace tova::model
