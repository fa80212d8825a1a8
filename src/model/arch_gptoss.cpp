// gpt-oss: OpenAI's gpt-oss-20b and gpt-oss-120b (llama.cpp's LLM_ARCH_OPENAI_MOE). Every layer
// is attention followed by a mixture of experts:
// - attention with q/k/v and output biases, RoPE on halves (NEOX) with YaRN scaling
//   (rope.scaling.type yarn: factor, original_context_length, attn_factor; read_rope_scaling),
//   scale 1/sqrt(rope dims), and learned attention sinks: attn_sinks.weight [n_head], one logit
//   per head in the softmax's denominator (kernels::AttentionArgs::sinks);
// - sliding-window attention on alternating layers: layer il has the window
//   (attention.sliding_window, required and > 0) unless il % pattern == pattern - 1, pattern
//   attention.sliding_window_pattern (default 2: even layers windowed, odd layers global, as
//   llama.cpp's set_swa_pattern); window layers rotate with rope.freq_base_swa (default the
//   global base) and the same scaling;
// - the feed-forward norm is the file's post_attention_norm.weight (the converter's name for
//   the norm before the MoE block, not a norm of the attention output);
// - router ffn_gate_inp with a bias; the top expert_used_count logits are chosen, then a
//   softmax over those k gives their weights (MoeGating::kSoftmaxOfChosen; no renormalisation
//   or scale: expert_weights_norm/scale keys are not read by llama.cpp for this family and
//   are refused here);
// - experts ffn_{gate,up,down}_exps with biases (.bias [n_ff_exp, n_expert] and
//   [n_embd, n_expert]) and the clamped SwiGLU (alpha 1.702, limit 7, up + 1:
//   kernels::swiglu_oai_mul).
#include <cmath>

#include <fmt/format.h>

#include "model/arch.h"

namespace tova::model {
namespace {

Status configure(KeyReader& keys, ModelConfig& c) {
  const std::string& path = keys.file().path();
  c.rope.mode = kernels::RopeMode::kNeox;
  c.ffn_act = FfnAct::kSwigluOai;
  c.moe_gating = MoeGating::kSoftmaxOfChosen;
  c.expert_weights_norm = false;
  c.expert_weights_scale = 1.f;
  c.attn_scale = 1.f / std::sqrt(static_cast<float>(c.rope.n_rot));
  if (c.n_expert == 0) {
    return make_error("{}: {} is 0 or absent, but architecture '{}' is a mixture of experts",
                      path, keys.key("expert_count"), c.arch_name);
  }
  TOVA_ASSIGN_OR_RETURN(uint32_t ff_exp, keys.u32("expert_feed_forward_length"));
  if (ff_exp == 0 || ff_exp > (1u << 20)) {
    return make_error("{}: {} {} is out of range", path, keys.key("expert_feed_forward_length"),
                      ff_exp);
  }
  c.n_ff_exp = static_cast<int>(ff_exp);
  // llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE 3 (softmax over the chosen) is the only meaning
  // this family's router has.
  TOVA_ASSIGN_OR_RETURN(uint32_t gating, keys.u32_or("expert_gating_func", 3));
  if (gating != 3) {
    return make_error("{}: {} {} is not gpt-oss's router (3, softmax over the chosen experts)",
                      path, keys.key("expert_gating_func"), gating);
  }

  // The window: required, as llama.cpp requires it for this family.
  TOVA_ASSIGN_OR_RETURN(uint32_t window, keys.u32("attention.sliding_window"));
  if (window == 0 || window > (1u << 30)) {
    return make_error("{}: {} {} is out of range (gpt-oss's window layers need a window > 0)",
                      path, keys.key("attention.sliding_window"), window);
  }
  TOVA_ASSIGN_OR_RETURN(uint32_t pattern, keys.u32_or("attention.sliding_window_pattern", 2));
  c.layer_window.assign(c.n_layer, 0);
  for (int il = 0; il < c.n_layer; ++il) {
    const bool windowed = pattern == 0 || static_cast<uint32_t>(il) % pattern < pattern - 1;
    if (windowed) c.layer_window[il] = static_cast<int>(window);
  }
  c.rope_window = c.rope;
  TOVA_ASSIGN_OR_RETURN(c.rope_window.freq_base,
                        keys.f32_or("rope.freq_base_swa", c.rope.freq_base));
  if (!(c.rope_window.freq_base > 0.f) || !std::isfinite(c.rope_window.freq_base)) {
    return make_error("{}: {} {} must be positive", path, keys.key("rope.freq_base_swa"),
                      c.rope_window.freq_base);
  }
  return ok_status();
}

Status load_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  const std::string p = fmt::format("blk.{}.", il);
  const int64_t e = c.n_expert, f = c.n_ff_exp;
  TOVA_RETURN_IF_ERROR(load_attention(ld, c, il, l));
  // llama.cpp reads the q/k/v biases where the file has them (every converted gpt-oss does).
  if (ld.has(p + "attn_q.bias") || ld.has(p + "attn_k.bias") || ld.has(p + "attn_v.bias")) {
    TOVA_RETURN_IF_ERROR(load_qkv_bias(ld, c, il, l));
  }
  TOVA_ASSIGN_OR_RETURN(l.bo, ld.vector(p + "attn_output.bias", c.n_embd));
  TOVA_ASSIGN_OR_RETURN(l.attn_sinks, ld.vector(p + "attn_sinks.weight", c.n_head));
  for (float s : l.attn_sinks) {
    if (!std::isfinite(s)) {
      return make_error("{}: tensor '{}' holds a non-finite sink {}", ld.file().path(),
                        p + "attn_sinks.weight", s);
    }
  }

  l.ffn_kind = FfnKind::kMoe;
  MoeWeights& m = l.moe;
  TOVA_ASSIGN_OR_RETURN(l.ffn_norm, ld.vector(p + "post_attention_norm.weight", c.n_embd));
  for (const char* t : {"ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"}) {
    if (ld.has(p + "ffn_gate_inp.weight") && !ld.has(p + t)) {
      return make_error("{}: missing tensor '{}': a router ('{}') without its experts",
                        ld.file().path(), p + t, p + "ffn_gate_inp.weight");
    }
  }
  TOVA_ASSIGN_OR_RETURN(m.router, ld.matrix(p + "ffn_gate_inp.weight", c.n_embd, e));
  TOVA_ASSIGN_OR_RETURN(m.router_b, ld.vector(p + "ffn_gate_inp.bias", e));
  TOVA_ASSIGN_OR_RETURN(m.gate, ld.matrices(p + "ffn_gate_exps.weight", c.n_embd, f, e));
  TOVA_ASSIGN_OR_RETURN(m.up, ld.matrices(p + "ffn_up_exps.weight", c.n_embd, f, e));
  TOVA_ASSIGN_OR_RETURN(m.down, ld.matrices(p + "ffn_down_exps.weight", f, c.n_embd, e));
  TOVA_ASSIGN_OR_RETURN(m.gate_b, ld.vectors(p + "ffn_gate_exps.bias", f, e));
  TOVA_ASSIGN_OR_RETURN(m.up_b, ld.vectors(p + "ffn_up_exps.bias", f, e));
  TOVA_ASSIGN_OR_RETURN(m.down_b, ld.vectors(p + "ffn_down_exps.bias", c.n_embd, e));
  return ok_status();
}

}  // namespace

extern const ArchSpec kArchGptOss{.name = "gpt-oss",
                                  .experts = true,
                                  .yarn = true,
                                  .configure = configure,
                                  .load_layer = load_layer};

}  // namespace tova::model
