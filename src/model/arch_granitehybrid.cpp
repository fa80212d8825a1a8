// granitehybrid: IBM's Granite 4.0-H (Micro 3B dense, Tiny 7B-A1B and Small 32B-A9B mixtures of
// experts). A hybrid: most layers mix tokens by Mamba2 (layer_mamba2.cpp: in projection to
// z/x/B/C/dt, causal conv1d, selective scan, gated group RMSNorm, out projection; a fixed-size
// state per layer), a few attend (llama's attention, no RoPE: the converter writes
// rope.scaling.finetuned false for the hybrids, which llama.cpp reads as "no positions"). The
// pattern is attention.head_count_kv, an array with 0 at every Mamba2 layer
// (ArchSpec::kv_heads_mark_recurrent). Every layer:
//   x += residual_scale * mixer(rms_norm(x) · attn_norm)
//   x += residual_scale * ffn(rms_norm(x) · ffn_norm)
// the feed-forward dense SwiGLU, or (expert_count > 0) softmax-routed SwiGLU experts of
// feed_forward_length, chosen weights renormalized, plus an ungated shared expert of
// expert_shared_feed_forward_length. Granite's multipliers: token embeddings x embedding_scale,
// attention scores x attention.scale, logits / logit_scale (each optional; 0 or absent: none).
// Keys and tensors as llama.cpp's src/models/granite-hybrid.cpp reads them (conversion/
// granite.py and mamba.py write them: ssm_a = -exp(A_log), ssm_norm [n_group][d_inner / n_group]).
// The Mamba2 keys and tensors, which nemotron_h shares, are read by mamba2_loader.cpp.
#include <fmt/format.h>

#include <cmath>

#include "model/arch.h"

namespace tova::model {
namespace {

constexpr uint32_t kMaxDim = 1u << 20;

// A Granite multiplier: absent or 0 means none (llama.cpp tests each for 0).
Result<float> multiplier(KeyReader& keys, const char* key) {
  TOVA_ASSIGN_OR_RETURN(float v, keys.f32_or(key, 0.f));
  if (!std::isfinite(v) || v < 0.f) {
    return make_error("{}: {} {} is invalid", keys.file().path(), keys.key(key), v);
  }
  return v;
}

Status configure(KeyReader& keys, ModelConfig& c) {
  const std::string& path = keys.file().path();
  TOVA_RETURN_IF_ERROR(read_mamba2_keys(keys, c));
  TOVA_ASSIGN_OR_RETURN(float embd, multiplier(keys, "embedding_scale"));
  TOVA_ASSIGN_OR_RETURN(float residual, multiplier(keys, "residual_scale"));
  TOVA_ASSIGN_OR_RETURN(float attn, multiplier(keys, "attention.scale"));
  TOVA_ASSIGN_OR_RETURN(float logit, multiplier(keys, "logit_scale"));
  if (embd != 0.f) c.embd_scale = embd;
  if (residual != 0.f) c.residual_scale = residual;
  if (attn != 0.f) c.attn_scale = attn;
  if (logit != 0.f) c.logit_scale = logit;
  // rope.scaling.finetuned switches RoPE for Granite (default on); the hybrids ship it false.
  bool rope = true;
  if (const io::GgufValue* v = keys.file().find(keys.key("rope.scaling.finetuned"))) {
    if (v->type != io::GgufValueType::kBool) {
      return make_error("{}: {} must be a bool", path, keys.key("rope.scaling.finetuned"));
    }
    keys.accept("rope.scaling.finetuned");
    rope = v->b;
  }
  if (!rope) c.layer_nope.assign(c.n_layer, 1);
  c.rope.mode = kernels::RopeMode::kNorm;
  // A mixture: llama.cpp's experts are feed_forward_length wide, softmax-routed with the chosen
  // weights renormalized and no weight scale; its shared expert expert_shared_feed_forward_length
  // wide. Other expert keys it does not read stay unread and are refused by name.
  if (c.n_expert > 0) {
    if (c.n_ff <= 0) {
      return make_error("{}: {} is absent or 0 (each expert's width in granitehybrid)", path,
                        keys.key("feed_forward_length"));
    }
    c.n_ff_exp = c.n_ff;
    c.expert_weights_norm = true;
    TOVA_ASSIGN_OR_RETURN(uint32_t ff_sh, keys.u32_or("expert_shared_feed_forward_length", 0));
    if (ff_sh > kMaxDim) {
      return make_error("{}: {} {} is out of range", path,
                        keys.key("expert_shared_feed_forward_length"), ff_sh);
    }
    c.n_ff_shexp = static_cast<int>(ff_sh);
  }
  return ok_status();
}

Status load_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  const std::string p = fmt::format("blk.{}.", il);
  const std::string pattern = c.arch_name + ".attention.head_count_kv";
  const std::string ssm_in = p + "ssm_in.weight", attn_q = p + "attn_q.weight";
  if (c.recurrent(il)) {
    if (!ld.has(ssm_in)) {
      return make_error(
          "{}: the layer pattern ({}: 0 at layer {}) makes layer {} a Mamba2 layer, "
          "but it has no '{}'{}",
          ld.file().path(), pattern, il, il, ssm_in,
          ld.has(attn_q) ? fmt::format(" (it has '{}')", attn_q) : "");
    }
    TOVA_ASSIGN_OR_RETURN(l.attn_norm, ld.vector(p + "attn_norm.weight", c.n_embd));
    TOVA_RETURN_IF_ERROR(load_mamba2(ld, c, il, l));
  } else {
    if (!ld.has(attn_q)) {
      return make_error(
          "{}: the layer pattern ({}: {} at layer {}) makes layer {} an attention "
          "layer, but it has no '{}'{}",
          ld.file().path(), pattern, c.n_head_kv, il, il, attn_q,
          ld.has(ssm_in) ? fmt::format(" (it has '{}')", ssm_in) : "");
    }
    TOVA_RETURN_IF_ERROR(load_attention(ld, c, il, l));
  }
  if (c.n_expert == 0) return load_dense_ffn(ld, c, il, l);
  TOVA_RETURN_IF_ERROR(load_moe_ffn(ld, c, il, l, /*shared_expert=*/false));
  if (c.n_ff_shexp == 0) return ok_status();
  // The shared expert, without a gate (llama.cpp adds its output to the experts' as it is).
  const int64_t fs = c.n_ff_shexp;
  MoeWeights& m = l.moe;
  m.shared_ungated = true;
  TOVA_ASSIGN_OR_RETURN(m.shared_gate, ld.matrix(p + "ffn_gate_shexp.weight", c.n_embd, fs));
  TOVA_ASSIGN_OR_RETURN(m.shared_up, ld.matrix(p + "ffn_up_shexp.weight", c.n_embd, fs));
  TOVA_ASSIGN_OR_RETURN(m.shared_down, ld.matrix(p + "ffn_down_shexp.weight", fs, c.n_embd));
  return ok_status();
}

}  // namespace

extern const ArchSpec kArchGraniteHybrid{.name = "granitehybrid",
                                         .experts = true,
                                         .kv_heads_mark_recurrent = true,
                                         .configure = configure,
                                         .load_layer = load_layer};

}  // namespace tova::model
