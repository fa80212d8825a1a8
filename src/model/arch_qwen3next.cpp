// qwen3next: Qwen3-Next (80B-A3B). qwen35moe's hybrid (arch_qwen35moe.cpp: of every
// full_attention_interval layers three Gated DeltaNet layers and one gated attention layer,
// each followed by a softmax-routed mixture with a sigmoid-gated shared expert; the
// feed-forward's norm is post_attention_norm), as llama.cpp's src/models/qwen3next.cpp reads
// and computes it. Where its Gated DeltaNet differs from Qwen3.5's (deltanet_loader.cpp,
// layer_deltanet.cpp):
//   - value heads in the checkpoint's grouped order: value head h reads key head
//     h / (n_v_head / n_k_head) (Qwen3.5's files are reordered to h mod n_k_head);
//   - beta and alpha come fused as ssm_ba, per key head its r = n_v_head / n_k_head betas then
//     its r alphas (Qwen3.5: ssm_beta, ssm_alpha);
//   - files converted before llama.cpp's converter split it carry q, k, v and z fused as
//     ssm_in, per key head q (S), k (S), v (r S), z (r S); newer ones attn_qkv (all q, all k,
//     all v: the conv1d's channel order, the same as Qwen3.5's) and attn_gate;
//   - RoPE is plain NeoX on the first rope.dimension_count dims of each head (Qwen3.5:
//     interleaved M-RoPE sections, which on text turn the same pairs); a file with
//     rope.dimension_sections is refused by name (an unread key).
// The mixture: llama.cpp's graph always renormalizes the chosen experts' weights and reads no
// expert_weights_scale, so a file saying otherwise is refused by name. The multi-token
// prediction block (nextn_predict_layers) is the same block as qwen35moe's (a gated attention
// layer with the mixture, eh_proj, enorm, hnorm, optional embed_tokens / shared_head_*; llama.cpp's
// graph_mtp for both differs only in its RoPE call, which turns the same dims on text): loaded
// and drafted with as qwen35moe's (nextn_block.cpp, nextn_forward.cpp).
#include "model/arch.h"

namespace tova::model {

namespace {

Status configure(KeyReader& keys, ModelConfig& c) {
  TOVA_RETURN_IF_ERROR(read_deltanet_layers(keys, c));
  c.deltanet.heads = DeltaNetHeads::kGrouped;
  c.rope.mode = kernels::RopeMode::kNeox;
  TOVA_RETURN_IF_ERROR(read_expert_keys(
      keys, c, {.required = true, .norm = true, .shared_expert = true, .ff_exp_key = true}));
  const std::string& path = keys.file().path();
  if (!c.expert_weights_norm) {
    return make_error(
        "{}: {} false is not implemented for architecture 'qwen3next' (llama.cpp's "
        "graph always renormalizes the chosen experts' weights)",
        path, keys.key("expert_weights_norm"));
  }
  if (c.expert_weights_scale != 1.f) {
    return make_error(
        "{}: {} {} is not implemented for architecture 'qwen3next' (llama.cpp's "
        "graph reads no such key)",
        path, keys.key("expert_weights_scale"), c.expert_weights_scale);
  }
  return ok_status();
}

Status load_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  TOVA_RETURN_IF_ERROR(load_qwen35_mixer(ld, c, il, l));
  return load_moe_ffn(ld, c, il, l, /*shared_expert=*/true, "post_attention_norm");
}

}  // namespace

extern const ArchSpec kArchQwen3Next{
    .name = "qwen3next", .experts = true, .configure = configure, .load_layer = load_layer};

}  // namespace tova::model
