// nemotron_h: NVIDIA's Nemotron-H and Nemotron Nano 2 (9B, 12B) hybrids. Each layer is ONE block
// with its own pre-norm (attn_norm, whatever the block) and residual:
//   'M'  x += mamba2(rms_norm(x) · attn_norm)       (layer_mamba2.cpp, a fixed-size state)
//   '*'  x += attention(rms_norm(x) · attn_norm)    (llama's attention without RoPE: NoPE, as
//                                                    llama.cpp computes this family; optional
//                                                    q/k/v and output biases)
//   '-'  x += down · relu(up · (rms_norm(x) · attn_norm))^2   (layer_ffn_relu2.cpp: ungated
//                                                    squared ReLU, optional up/down biases)
// The pattern (the converter's hybrid_override_pattern) is carried by two per-layer arrays
// (ArchSpec::layer_blocks, config.cpp): feed_forward_length (0 except at '-' layers) and
// attention.head_count_kv (0 except at '*' layers); both 0 is a Mamba2 layer. Keys and tensors
// as llama.cpp's src/models/nemotron-h.cpp and llama-model.cpp read them for NEMOTRON_H, written
// by conversion/nemotron.py (NemotronHModel over GraniteHybridModel): the Mamba2 ones are
// granitehybrid's (mamba2_loader.cpp). No Granite multipliers (llama.cpp reads none for this
// family: such a key stays unread and is refused by name), attention scale 1/sqrt(head_dim).
// A Mamba2 layer's mixer only (no feed-forward), an attention layer's attention only, a '-'
// layer's feed-forward only (MixerKind::kNone: it holds nothing in the multi-state).
//
// nemotron_h_moe (Nemotron 3 Nano 30B-A3B): the same layers, its feed-forward layers ('E') a
// mixture (layer_ffn_moe.cpp) as llama.cpp's nemotron-h.cpp builds it: router ffn_gate_inp
// over h, sigmoid of each logit, the expert_used_count largest sigmoid + exp_probs_b.bias
// chosen, weighted by their sigmoids (renormalized where expert_weights_norm says, times
// expert_weights_scale); experts without a gate, down_e · relu(up_e · h)^2; with
// moe_latent_size the experts read ffn_latent_down · h and their sum goes through
// ffn_latent_up; plus the ungated shared expert ffn_down_shexp · relu(ffn_up_shexp · h)^2.
// Grouped routing (expert_group_count > 1) and the multi-token prediction block
// (nextn_predict_layers) are not implemented: refused by name.
#include <fmt/format.h>

#include "model/arch.h"

namespace tova::model {
namespace {

Status configure(KeyReader& keys, ModelConfig& c) {
  TOVA_RETURN_IF_ERROR(read_mamba2_keys(keys, c));
  // llama.cpp builds no RoPE for this family (rope type none): every attention layer is NoPE.
  // The converter also writes rope.scaling.finetuned false (read_rope_scaling takes it as a
  // label) and a rope.dimension_count that nothing rotates by.
  c.layer_nope.assign(c.n_layer, 1);
  c.rope.mode = kernels::RopeMode::kNorm;
  // The LayerNorm epsilon of the multi-token prediction head llama.cpp loads for the MoE
  // variant: no layer of this family's main pass uses it.
  if (keys.has("attention.layer_norm_epsilon")) {
    TOVA_ASSIGN_OR_RETURN(float eps, keys.f32("attention.layer_norm_epsilon"));
    (void)eps;
  }
  return ok_status();
}

// The layer's one block is not the one the pattern says: one line naming the pattern's keys.
Status wrong_block(const TensorLoader& ld, const ModelConfig& c, int il, const char* kind,
                   const std::string& missing) {
  const int kv = c.recurrent(il) || c.ffn_only(il) ? 0 : c.n_head_kv;
  return make_error("{}: the layer pattern ({}.feed_forward_length {} and "
                    "{}.attention.head_count_kv {} at layer {}) makes layer {} {} layer, but it "
                    "has no '{}'",
                    ld.file().path(), c.arch_name, c.n_ff_of(il), c.arch_name, kv, il, il, kind,
                    missing);
}

// A '*' layer: llama's attention with the biases llama.cpp reads where present.
Status load_attention_block(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  const std::string p = fmt::format("blk.{}.", il);
  TOVA_RETURN_IF_ERROR(load_attention(ld, c, il, l));
  // The attention kind adds q, k and v biases together: one present asks for all three (an
  // error names the missing one).
  if (ld.has(p + "attn_q.bias") || ld.has(p + "attn_k.bias") || ld.has(p + "attn_v.bias")) {
    TOVA_RETURN_IF_ERROR(load_qkv_bias(ld, c, il, l));
  }
  if (ld.has(p + "attn_output.bias")) {
    TOVA_ASSIGN_OR_RETURN(l.bo, ld.vector(p + "attn_output.bias", c.n_embd));
  }
  l.ffn_kind = FfnKind::kNone;
  return ok_status();
}

// A '-' layer: the squared-ReLU feed-forward, normed by the layer's attn_norm.
Status load_relu2_block(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  const std::string p = fmt::format("blk.{}.", il);
  const int64_t E = c.n_embd, ff = c.n_ff_of(il);
  l.mixer_kind = MixerKind::kNone;
  l.ffn_kind = FfnKind::kReluSqr;
  TOVA_ASSIGN_OR_RETURN(l.ffn_norm, ld.vector(p + "attn_norm.weight", E));
  TOVA_ASSIGN_OR_RETURN(l.w_up, ld.matrix(p + "ffn_up.weight", E, ff));
  TOVA_ASSIGN_OR_RETURN(l.w_down, ld.matrix(p + "ffn_down.weight", ff, E));
  if (ld.has(p + "ffn_up.bias")) {
    TOVA_ASSIGN_OR_RETURN(l.ffn_up_b, ld.vector(p + "ffn_up.bias", ff));
  }
  if (ld.has(p + "ffn_down.bias")) {
    TOVA_ASSIGN_OR_RETURN(l.ffn_down_b, ld.vector(p + "ffn_down.bias", E));
  }
  return ok_status();
}

// An 'E' layer of nemotron_h_moe: the mixture, normed by the layer's attn_norm.
Status load_moe_block(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  const std::string p = fmt::format("blk.{}.", il);
  const int64_t E = c.n_embd, n = c.n_expert, f = c.n_ff_exp, fs = c.n_ff_shexp;
  const int64_t d = c.moe_latent > 0 ? c.moe_latent : E;  // the experts' width
  l.mixer_kind = MixerKind::kNone;
  l.ffn_kind = FfnKind::kMoe;
  MoeWeights& m = l.moe;
  TOVA_ASSIGN_OR_RETURN(l.ffn_norm, ld.vector(p + "attn_norm.weight", E));
  TOVA_ASSIGN_OR_RETURN(m.router, ld.matrix(p + "ffn_gate_inp.weight", E, n));
  TOVA_ASSIGN_OR_RETURN(m.select_bias, ld.vector(p + "exp_probs_b.bias", n));
  if (c.moe_latent > 0) {
    TOVA_ASSIGN_OR_RETURN(m.latent_down, ld.matrix(p + "ffn_latent_down.weight", E, d));
    TOVA_ASSIGN_OR_RETURN(m.latent_up, ld.matrix(p + "ffn_latent_up.weight", d, E));
  }
  TOVA_ASSIGN_OR_RETURN(m.up, ld.matrices(p + "ffn_up_exps.weight", d, f, n));
  TOVA_ASSIGN_OR_RETURN(m.down, ld.matrices(p + "ffn_down_exps.weight", f, d, n));
  m.shared_ungated = true;
  TOVA_ASSIGN_OR_RETURN(m.shared_up, ld.matrix(p + "ffn_up_shexp.weight", E, fs));
  TOVA_ASSIGN_OR_RETURN(m.shared_down, ld.matrix(p + "ffn_down_shexp.weight", fs, E));
  return ok_status();
}

// The mixture's keys, as llama.cpp reads them for NEMOTRON_H_MOE (the converter writes every
// one): expert_feed_forward_length and expert_shared_feed_forward_length required (llama.cpp's
// defaults would give tensors of width 0), expert_weights_norm (default false) and
// expert_weights_scale (default 1), expert_shared_count (one shared expert's tensors whatever
// it says), expert_group_count <= 1 (grouped routing is not implemented), moe_latent_size.
Status configure_moe(KeyReader& keys, ModelConfig& c) {
  const std::string& path = keys.file().path();
  TOVA_RETURN_IF_ERROR(configure(keys, c));
  for (const char* key : {"expert_feed_forward_length", "expert_shared_feed_forward_length"}) {
    if (!keys.has(key)) {
      return make_error("{}: {} is absent (architecture '{}' needs it)", path, keys.key(key),
                        c.arch_name);
    }
  }
  TOVA_RETURN_IF_ERROR(read_expert_keys(keys, c,
                                        {.required = true,
                                         .norm = false,
                                         .shared_expert = true,
                                         .ff_exp_key = true,
                                         .sigmoid_gating = true}));
  // llama.cpp routes this family by sigmoid whatever the file says: a file naming another
  // gating is refused rather than computed as another model.
  if (keys.has("expert_gating_func") && c.moe_gating != MoeGating::kSigmoid) {
    return make_error("{}: {} names softmax gating, but architecture '{}' routes by sigmoid",
                      path, keys.key("expert_gating_func"), c.arch_name);
  }
  c.moe_gating = MoeGating::kSigmoid;
  TOVA_ASSIGN_OR_RETURN(uint32_t n_shared, keys.u32_or("expert_shared_count", 1));
  if (n_shared < 1) {
    return make_error("{}: {} {}: this architecture has a shared expert", path,
                      keys.key("expert_shared_count"), n_shared);
  }
  TOVA_ASSIGN_OR_RETURN(uint32_t n_groups, keys.u32_or("expert_group_count", 0));
  if (n_groups > 1) {
    return make_error("{}: {} {}: grouped expert routing is not implemented", path,
                      keys.key("expert_group_count"), n_groups);
  }
  TOVA_ASSIGN_OR_RETURN(uint32_t latent, keys.u32_or("moe_latent_size", 0));
  if (latent > (1u << 20)) {
    return make_error("{}: {} {} is out of range", path, keys.key("moe_latent_size"), latent);
  }
  c.moe_latent = static_cast<int>(latent);
  return ok_status();
}

Status load_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  const std::string p = fmt::format("blk.{}.", il);
  if (c.recurrent(il)) {
    if (!ld.has(p + "ssm_in.weight")) return wrong_block(ld, c, il, "a Mamba2", p + "ssm_in.weight");
    TOVA_ASSIGN_OR_RETURN(l.attn_norm, ld.vector(p + "attn_norm.weight", c.n_embd));
    l.ffn_kind = FfnKind::kNone;
    return load_mamba2(ld, c, il, l);
  }
  if (c.ffn_only(il)) {
    const std::string up = p + (c.n_expert > 0 ? "ffn_up_exps.weight" : "ffn_up.weight");
    if (!ld.has(up)) return wrong_block(ld, c, il, "a feed-forward", up);
    return c.n_expert > 0 ? load_moe_block(ld, c, il, l) : load_relu2_block(ld, c, il, l);
  }
  if (!ld.has(p + "attn_q.weight")) {
    return wrong_block(ld, c, il, "an attention", p + "attn_q.weight");
  }
  return load_attention_block(ld, c, il, l);
}

}  // namespace

extern const ArchSpec kArchNemotronH{.name = "nemotron_h",
                                     .layer_blocks = true,
                                     .configure = configure,
                                     .load_layer = load_layer};

extern const ArchSpec kArchNemotronHMoe{.name = "nemotron_h_moe",
                                        .experts = true,
                                        .layer_blocks = true,
                                        .configure = configure_moe,
                                        .load_layer = load_layer};

}  // namespace tova::model
