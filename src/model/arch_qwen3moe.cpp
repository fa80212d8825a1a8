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

std::vector<RandomShape> fixtures() {
  RandomShape q = fixture_shape("qwen3moe", "Qwen3-30B-A3B (scaled down)", "qwen3moe");
  q.rope_base = 1000000.f;
  q.rms_eps = 1e-6f;
  q.tied_output = false;
  q.head_dim = 32;  // n_head * head_dim = 128 != n_embd, as Qwen3-30B-A3B's 32 x 128 != 2048
  q.qk_norm = true;
  q.n_expert = 8;
  q.n_expert_used = 4;
  q.n_ff_exp = 32;
  return {q};
}

}  // namespace

extern const ArchSpec kArchQwen3Moe{.name = "qwen3moe",
                                    .experts = true,
                                    .configure = configure,
                                    .load_layer = load_layer,
                                    .fixtures = fixtures};

}  // namespace tova::model
