// falcon-h1: TII's Falcon-H1 (0.5B, 1.5B, 1.5B-Deep, 3B, 7B, 34B). Every layer runs attention
// and Mamba2 side by side on the same normed input (the parallel-mixers kind,
// layer_parallel.cpp), then a SwiGLU feed-forward:
//   h  = rms_norm(x) · attn_norm
//   x += attention(h) + mamba2(h)     (attention: NeoX RoPE, GQA, scale 1/sqrt(head_dim);
//                                      mamba2: layer_mamba2.cpp)
//   x += down · (silu(gate · h') * (up · h')),  h' = rms_norm(x) · ffn_norm
// as llama.cpp's src/models/falcon-h1.cpp builds it and llama-model.cpp loads it for FALCON_H1.
// Each layer keeps K/V (bounded by the sequence's policy: the only state that grows) and a
// Mamba2 state of fixed size.
//
// Falcon-H1's muP multipliers are folded into the weights by the converter
// (conversion/falcon_h1.py): embedding_multiplier into token_embd, lm_head_multiplier into
// output, attention_in_multiplier into attn_q/k/v (key_multiplier into attn_k),
// attention_out_multiplier into attn_output, ssm_in_multiplier and the five ssm_multipliers
// into ssm_in's z/x/B/C/dt rows, ssm_out_multiplier into ssm_out, mlp_multipliers into
// ffn_gate and ffn_down. The file carries no multiplier key; any key llama.cpp does not read
// for this family (attention.scale among them: llama.cpp never reads it here) stays unread and
// is refused by name (KeyReader::check_all_read).
//
// Keys (the converter's FalconH1Model over Mamba2Model): embedding_length, block_count,
// context_length, feed_forward_length, attention.head_count, attention.head_count_kv (one
// count), attention.key_length / value_length, attention.layer_norm_rms_epsilon,
// rope.freq_base, vocab_size, ssm.conv_kernel / inner_size / state_size / time_step_rank /
// group_count (mamba2_loader.cpp); rope.dimension_count is not written (head_dim rotated).
// Tensors per layer: attn_norm, attn_q/k/v/output, ssm_in, ssm_conv1d (+ bias, optional),
// ssm_dt.bias, ssm_a, ssm_d, ssm_norm (optional: mamba_rms_norm), ssm_out, ffn_norm (no
// ".weight" suffix, as the converter names it), ffn_gate/up/down; optional attn_q/k/v.bias (all
// three) and ffn_gate/up/down.bias (all three), which llama.cpp adds where present. Refused by
// name: attn_output.bias and rope_freqs.weight, which llama.cpp 34af94cd loads for this family but
// never applies (falcon-h1.cpp passes no output bias and no frequency factors), so a file with them
// has no reference to match.
#include <fmt/format.h>

#include "model/arch.h"

namespace tova::model {
namespace {

Status configure(KeyReader& keys, ModelConfig& c) {
  // llama.cpp requires the epsilon for this family (load_config's default would compute another
  // model than the file's).
  if (!keys.has("attention.layer_norm_rms_epsilon")) {
    return make_error("{}: {} is absent (architecture '{}' needs it)", keys.file().path(),
                      keys.key("attention.layer_norm_rms_epsilon"), c.arch_name);
  }
  TOVA_RETURN_IF_ERROR(read_mamba2_keys(keys, c));
  c.rope.mode = kernels::RopeMode::kNeox;  // llama.cpp: LLAMA_ROPE_TYPE_NEOX for FALCON_H1
  c.layer_parallel.assign(c.n_layer, true);
  return ok_status();
}

// A tensor llama.cpp loads for this family but never computes with.
Status refuse_unapplied(const TensorLoader& ld, const std::string& name) {
  if (!ld.has(name)) return ok_status();
  return make_error(
      "{}: tensor '{}' is not applied by llama.cpp's falcon-h1 graph (the "
      "reference tova matches), so tova refuses it rather than guess",
      ld.file().path(), name);
}

// The optional biases that come in threes: one present asks for all (the missing one is named).
Status need_all(const TensorLoader& ld, const std::string& p, const char* const (&names)[3]) {
  bool any = false;
  for (const char* n : names) any |= ld.has(p + n);
  if (!any) return ok_status();
  for (const char* n : names) {
    if (!ld.has(p + n)) {
      return make_error("{}: missing tensor '{}' (the layer has the other {} biases)",
                        ld.file().path(), p + n, names[0]);
    }
  }
  return ok_status();
}

Status load_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  const std::string p = fmt::format("blk.{}.", il);
  if (il == 0) TOVA_RETURN_IF_ERROR(refuse_unapplied(ld, "rope_freqs.weight"));
  TOVA_RETURN_IF_ERROR(refuse_unapplied(ld, p + "attn_output.bias"));
  TOVA_RETURN_IF_ERROR(load_attention(ld, c, il, l));
  static constexpr const char* kQkvBias[] = {"attn_q.bias", "attn_k.bias", "attn_v.bias"};
  TOVA_RETURN_IF_ERROR(need_all(ld, p, kQkvBias));
  if (ld.has(p + kQkvBias[0])) TOVA_RETURN_IF_ERROR(load_qkv_bias(ld, c, il, l));
  TOVA_RETURN_IF_ERROR(load_mamba2(ld, c, il, l, /*optional_bias_norm=*/true));
  l.mixer_kind = MixerKind::kAttnMamba2;
  // The feed-forward norm without a ".weight" suffix: the converter's tensor map takes
  // pre_ff_layernorm.weight whole as FFN_PRE_NORM, "blk.N.ffn_norm", and llama.cpp loads that
  // name (a "blk.N.ffn_norm.weight" stays unread and is refused by name).
  const int64_t ff = c.n_ff;
  if (ff <= 0) {
    return make_error("{}: {}.feed_forward_length is absent or 0", ld.file().path(), c.arch_name);
  }
  l.ffn_kind = FfnKind::kDense;
  TOVA_ASSIGN_OR_RETURN(l.ffn_norm, ld.vector(p + "ffn_norm", c.n_embd));
  TOVA_ASSIGN_OR_RETURN(l.w_gate, ld.matrix(p + "ffn_gate.weight", c.n_embd, ff));
  TOVA_ASSIGN_OR_RETURN(l.w_up, ld.matrix(p + "ffn_up.weight", c.n_embd, ff));
  TOVA_ASSIGN_OR_RETURN(l.w_down, ld.matrix(p + "ffn_down.weight", ff, c.n_embd));
  static constexpr const char* kFfnBias[] = {"ffn_gate.bias", "ffn_up.bias", "ffn_down.bias"};
  TOVA_RETURN_IF_ERROR(need_all(ld, p, kFfnBias));
  if (ld.has(p + kFfnBias[0])) {
    TOVA_ASSIGN_OR_RETURN(l.ffn_gate_b, ld.vector(p + "ffn_gate.bias", ff));
    TOVA_ASSIGN_OR_RETURN(l.ffn_up_b, ld.vector(p + "ffn_up.bias", ff));
    TOVA_ASSIGN_OR_RETURN(l.ffn_down_b, ld.vector(p + "ffn_down.bias", c.n_embd));
  }
  return ok_status();
}

}  // namespace

extern const ArchSpec kArchFalconH1{
    .name = "falcon-h1", .configure = configure, .load_layer = load_layer};

}  // namespace tova::model
