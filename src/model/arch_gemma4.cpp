// gemma4: Google's Gemma 4 text decoder: 31B dense, the E2B/E4B models (per-layer embeddings,
// layer_per_layer_input.cpp; shared-K/V layers, layer_attention_shared.cpp; a per-layer
// feed-forward width) and the 26B-A4B mixture (experts beside the dense feed-forward,
// layer_ffn_moe.cpp). As llama.cpp 34af94cd computes it (src/models/gemma4.cpp):
// - token embeddings x sqrt(n_embd); RMSNorm before and after the attention and the
//   feed-forward (attn_post_norm, ffn_post_norm; the weights are used as stored: Gemma 4's
//   converter adds no 1); a GELU-gated feed-forward (tanh approximation); tied output and an
//   optional final soft-capping of the logits;
// - sliding-window layers and global layers, chosen per layer by the file's
//   attention.sliding_window_pattern (a bool per layer), each kind with its own head size
//   (key_length_swa / key_length) and KV heads (head_count_kv, an array where they differ), so
//   the multi-state holds each layer in its own shape;
// - per-head RMSNorm of queries and keys (q/k norm weights), and of values without a weight;
//   the attention scale is 1 (the norms set the scale);
// - global layers without attn_v take their values from the key projection (K = V, before the
//   key norm);
// - RoPE on halves (NEOX): window layers rotate rope.dimension_count_swa dims with
//   rope.freq_base_swa (default 10000); global layers use Gemma 4's "proportional" RoPE as the
//   converter encodes it, rope.dimension_count = the head size with rope_freqs.weight dividing
//   the angles (1 for the rotated pairs, 1e30, i.e. no rotation, for the rest);
// - an optional per-layer blk.N.layer_output_scale [1]: the residual stream is multiplied by it
//   at the end of the layer.
#include <cmath>

#include <fmt/format.h>

#include "model/arch.h"

namespace tova::model {
namespace {

// The E models' last attention.shared_kv_layers layers compute no K/V: each attends over the
// K/V of the last earlier layer of its kind (window or global) that has its own. llama.cpp
// (llama-model.cpp's reuse callback) names that layer by a formula, n_kv - 2 for a window layer
// and n_kv - 1 for a global one (n_kv: the layers with K/V), which is the same layer when the
// last K/V layer is global and the one before it a window layer, as in every E model; a file
// where they differ is refused rather than computed one way or the other.
Status read_shared_kv(KeyReader& keys, ModelConfig& c) {
  const std::string& path = keys.file().path();
  TOVA_ASSIGN_OR_RETURN(uint32_t n_shared, keys.u32_or("attention.shared_kv_layers", 0));
  if (n_shared == 0) return ok_status();
  const int n_kv = c.n_layer - static_cast<int>(n_shared);
  if (n_shared >= static_cast<uint32_t>(c.n_layer) || n_kv < 2) {
    return make_error("{}: {} {} leaves fewer than 2 of the {} layers with K/V of their own",
                      path, keys.key("attention.shared_kv_layers"), n_shared, c.n_layer);
  }
  c.layer_kv_owner.assign(c.n_layer, -1);
  for (int il = n_kv; il < c.n_layer; ++il) {
    const bool window = c.layer_window[il] > 0;
    int owner = -1;
    for (int j = n_kv - 1; j >= 0 && owner < 0; --j) {
      if ((c.layer_window[j] > 0) == window) owner = j;
    }
    const int llama_owner = n_kv - (window ? 2 : 1);
    if (owner != llama_owner) {
      return make_error("{}: {} {}: layer {} ({}) would reuse the K/V of layer {} (the last "
                        "earlier one of its kind) where llama.cpp reads layer {}",
                        path, keys.key("attention.shared_kv_layers"), n_shared, il,
                        window ? "window" : "global", owner, llama_owner);
    }
    // Same kind: the same window, head size and rotation; the KV heads must agree too.
    if (c.layer_n_head_kv[il] != c.layer_n_head_kv[owner]) {
      return make_error("{}: {}: layer {} has {} KV heads, the layer {} whose K/V it reuses {}",
                        path, keys.key("attention.head_count_kv"), il, c.layer_n_head_kv[il],
                        owner, c.layer_n_head_kv[owner]);
    }
    c.layer_kv_owner[il] = owner;
  }
  return ok_status();
}

// The MoE variant (26B-A4B; expert_count > 0): llama.cpp's gemma4 routes by softmax and always
// renormalizes the chosen weights, with no further scale, whatever the file says; a file that
// says otherwise is refused rather than computed one way or the other. The experts' width is
// expert_feed_forward_length (required: llama.cpp has no default for it).
Status read_experts(KeyReader& keys, ModelConfig& c) {
  if (c.n_expert == 0) return ok_status();
  const std::string& path = keys.file().path();
  if (!keys.has("expert_feed_forward_length")) {
    return make_error("{}: {} is missing (the experts' width)", path,
                      keys.key("expert_feed_forward_length"));
  }
  TOVA_RETURN_IF_ERROR(read_expert_keys(keys, c, {.norm = true, .ff_exp_key = true}));
  if (!c.expert_weights_norm) {
    return make_error("{}: {} false: Gemma 4 renormalizes the chosen experts' weights", path,
                      keys.key("expert_weights_norm"));
  }
  if (c.expert_weights_scale != 1.f) {
    return make_error("{}: {} {}: Gemma 4 scales the chosen experts' weights by nothing", path,
                      keys.key("expert_weights_scale"), c.expert_weights_scale);
  }
  c.moe_beside_dense = true;
  return ok_status();
}

Status configure(KeyReader& keys, ModelConfig& c) {
  const std::string& path = keys.file().path();
  c.rope.mode = kernels::RopeMode::kNeox;
  c.ffn_act = FfnAct::kGeluTanh;
  c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
  c.attn_scale = 1.f;  // llama.cpp's f_attention_scale for Gemma 4 (self.scaling = 1.0)
  c.v_norm = true;
  TOVA_ASSIGN_OR_RETURN(c.final_softcap, keys.f32_or("final_logit_softcapping", 0.f));
  if (c.final_softcap != 0.f && !(c.final_softcap > 0.f && std::isfinite(c.final_softcap))) {
    return make_error("{}: {} {} must be positive", path, keys.key("final_logit_softcapping"),
                      c.final_softcap);
  }
  // Per-layer embeddings (E2B/E4B): their width; the tensors are read by load_weights.
  TOVA_ASSIGN_OR_RETURN(uint32_t n_per_layer, keys.u32_or("embedding_length_per_layer_input", 0));
  if (n_per_layer > (1u << 16)) {
    return make_error("{}: {} {} is out of range", path,
                      keys.key("embedding_length_per_layer_input"), n_per_layer);
  }
  c.n_embd_per_layer = static_cast<int>(n_per_layer);
  // The window and which layers have it.
  TOVA_ASSIGN_OR_RETURN(uint32_t window, keys.u32("attention.sliding_window"));
  if (window < 2 || window > (1u << 30)) {
    return make_error("{}: {} {} is out of range", path, keys.key("attention.sliding_window"),
                      window);
  }
  TOVA_ASSIGN_OR_RETURN(std::vector<uint32_t> is_swa,
                        keys.u32_array("attention.sliding_window_pattern", c.n_layer));
  c.layer_window.assign(c.n_layer, 0);
  for (int il = 0; il < c.n_layer; ++il) {
    if (is_swa[il] != 0) c.layer_window[il] = static_cast<int>(window);
  }
  // Window layers' head size and rotation (the global layers' are the common keys').
  TOVA_ASSIGN_OR_RETURN(uint32_t hd_swa, keys.u32("attention.key_length_swa"));
  TOVA_ASSIGN_OR_RETURN(uint32_t hd_v_swa, keys.u32("attention.value_length_swa"));
  if (hd_swa == 0 || hd_swa % 2 != 0 || hd_swa > 1024 || hd_v_swa != hd_swa) {
    return make_error("{}: unsupported window-layer head size ({} {}, {} {})", path,
                      keys.key("attention.key_length_swa"), hd_swa,
                      keys.key("attention.value_length_swa"), hd_v_swa);
  }
  TOVA_ASSIGN_OR_RETURN(uint32_t n_rot_swa,
                        keys.u32_or("rope.dimension_count_swa", static_cast<uint32_t>(c.rope.n_rot)));
  if (n_rot_swa == 0 || n_rot_swa % 2 != 0 || n_rot_swa > hd_swa) {
    return make_error("{}: {} {} does not fit the window layers' head size {}", path,
                      keys.key("rope.dimension_count_swa"), n_rot_swa, hd_swa);
  }
  c.rope_window = c.rope;
  c.rope_window.n_rot = static_cast<int>(n_rot_swa);
  c.rope_window.freq_scale = 1.f;  // llama.cpp's rope_freq_scale_train_swa
  TOVA_ASSIGN_OR_RETURN(c.rope_window.freq_base, keys.f32_or("rope.freq_base_swa", 10000.f));
  if (!(c.rope_window.freq_base > 0.f) || !std::isfinite(c.rope_window.freq_base)) {
    return make_error("{}: {} {} must be positive", path, keys.key("rope.freq_base_swa"),
                      c.rope_window.freq_base);
  }
  c.layer_head_dim.assign(c.n_layer, c.head_dim);
  if (c.layer_n_head_kv.empty()) c.layer_n_head_kv.assign(c.n_layer, c.n_head_kv);
  for (int il = 0; il < c.n_layer; ++il) {
    if (c.layer_window[il] > 0) c.layer_head_dim[il] = static_cast<int>(hd_swa);
  }
  TOVA_RETURN_IF_ERROR(read_experts(keys, c));
  return read_shared_kv(keys, c);
}

// An MoE layer (a router, ffn_gate_inp, in the layer; llama.cpp decides per layer the same
// way): the dense feed-forward already loaded stays beside the experts (layer_ffn_moe.cpp),
// with the router's input scale ffn_gate_inp.scale, the norms pre_ffw_norm_2 (the experts'
// input), post_ffw_norm_1 (the dense output), post_ffw_norm_2 (the experts' output), the
// experts' gate and up fused (ffn_gate_up_exps [n_embd, 2 n_ff_exp, n_expert]: gate rows
// first) or apart, ffn_down_exps, and a scale per expert (ffn_down_exps.scale, optional as
// in llama.cpp).
Status load_experts(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  const std::string p = fmt::format("blk.{}.", il);
  const int64_t e = c.n_expert, f = c.n_ff_exp, d = c.n_embd;
  l.ffn_kind = FfnKind::kMoe;
  MoeWeights& m = l.moe;
  TOVA_ASSIGN_OR_RETURN(m.router, ld.matrix(p + "ffn_gate_inp.weight", d, e));
  TOVA_ASSIGN_OR_RETURN(m.router_in_scale, ld.vector(p + "ffn_gate_inp.scale", d));
  TOVA_ASSIGN_OR_RETURN(l.ffn_pre_norm_2, ld.vector(p + "pre_ffw_norm_2.weight", d));
  TOVA_ASSIGN_OR_RETURN(l.ffn_post_norm_1, ld.vector(p + "post_ffw_norm_1.weight", d));
  TOVA_ASSIGN_OR_RETURN(l.ffn_post_norm_2, ld.vector(p + "post_ffw_norm_2.weight", d));
  if (ld.has(p + "ffn_gate_up_exps.weight")) {
    for (const char* t : {"ffn_gate_exps.weight", "ffn_up_exps.weight"}) {
      if (ld.has(p + t)) {
        return make_error("{}: tensor '{}' beside '{}': the experts' gate and up twice",
                          ld.file().path(), p + t, p + "ffn_gate_up_exps.weight");
      }
    }
    TOVA_ASSIGN_OR_RETURN(std::vector<kernels::WeightMatrix> gate_up,
                          ld.matrices(p + "ffn_gate_up_exps.weight", d, 2 * f, e));
    for (const kernels::WeightMatrix& gu : gate_up) {
      m.gate.push_back(TensorLoader::rows(gu, 0, f));
      m.up.push_back(TensorLoader::rows(gu, f, f));
    }
  } else {
    TOVA_ASSIGN_OR_RETURN(m.gate, ld.matrices(p + "ffn_gate_exps.weight", d, f, e));
    TOVA_ASSIGN_OR_RETURN(m.up, ld.matrices(p + "ffn_up_exps.weight", d, f, e));
  }
  TOVA_ASSIGN_OR_RETURN(m.down, ld.matrices(p + "ffn_down_exps.weight", f, d, e));
  if (ld.has(p + "ffn_down_exps.scale")) {
    TOVA_ASSIGN_OR_RETURN(m.down_scale, ld.vector(p + "ffn_down_exps.scale", e));
  }
  return ok_status();
}

Status load_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  const std::string p = fmt::format("blk.{}.", il);
  const int64_t hd = c.layer_head_dim[il];
  const int64_t q_dim = c.n_head * hd;
  const int64_t kv_dim = c.layer_n_head_kv[il] * hd;
  const bool global = c.layer_window[il] == 0;
  // The global layers' proportional RoPE lives in rope_freqs.weight (read by load_weights):
  // without it llama.cpp refuses the file, and so does tova rather than rotate every pair.
  if (global && !ld.has("rope_freqs.weight")) {
    return make_error("{}: missing tensor 'rope_freqs.weight' (the global layers' proportional "
                      "RoPE, layer {})",
                      ld.file().path(), il);
  }
  TOVA_ASSIGN_OR_RETURN(l.attn_norm, ld.vector(p + "attn_norm.weight", c.n_embd));
  TOVA_ASSIGN_OR_RETURN(l.wq, ld.matrix(p + "attn_q.weight", c.n_embd, q_dim));
  if (c.shared_kv(il)) {
    // Its queries attend over an earlier layer's K/V (layer_attention_shared.cpp): K and V
    // projections, if the converter kept them, are computed neither here nor by llama.cpp.
    l.mixer_kind = MixerKind::kSharedKv;
    if (ld.has(p + "attn_k.weight")) {
      TOVA_RETURN_IF_ERROR(ld.unused(p + "attn_k.weight", {c.n_embd, kv_dim}));
    }
    if (ld.has(p + "attn_v.weight")) {
      TOVA_RETURN_IF_ERROR(ld.unused(p + "attn_v.weight", {c.n_embd, kv_dim}));
    }
    if (ld.has(p + "attn_k_norm.weight")) {
      TOVA_RETURN_IF_ERROR(ld.unused(p + "attn_k_norm.weight", {hd}));
    }
  } else {
    TOVA_ASSIGN_OR_RETURN(l.wk, ld.matrix(p + "attn_k.weight", c.n_embd, kv_dim));
    if (ld.has(p + "attn_v.weight")) {
      TOVA_ASSIGN_OR_RETURN(l.wv, ld.matrix(p + "attn_v.weight", c.n_embd, kv_dim));
    } else {
      l.v_is_k = true;
    }
    TOVA_ASSIGN_OR_RETURN(l.k_norm, ld.vector(p + "attn_k_norm.weight", hd));
    l.v_norm.assign(hd, 1.f);
  }
  TOVA_ASSIGN_OR_RETURN(l.wo, ld.matrix(p + "attn_output.weight", q_dim, c.n_embd));
  TOVA_ASSIGN_OR_RETURN(l.q_norm, ld.vector(p + "attn_q_norm.weight", hd));
  TOVA_ASSIGN_OR_RETURN(l.attn_post_norm, ld.vector(p + "post_attention_norm.weight", c.n_embd));
  if (ld.has(p + "layer_output_scale.weight")) {
    TOVA_ASSIGN_OR_RETURN(std::vector<float> scale,
                          ld.vector(p + "layer_output_scale.weight", 1));
    if (!std::isfinite(scale[0])) {
      return make_error("{}: tensor '{}layer_output_scale.weight' is not finite",
                        ld.file().path(), p);
    }
    l.out_scale = scale[0];
  }
  TOVA_RETURN_IF_ERROR(load_dense_ffn(ld, c, il, l));
  if (c.n_expert > 0 && ld.has(p + "ffn_gate_inp.weight")) {
    TOVA_RETURN_IF_ERROR(load_experts(ld, c, il, l));
  }
  TOVA_ASSIGN_OR_RETURN(l.ffn_post_norm, ld.vector(p + "post_ffw_norm.weight", c.n_embd));
  if (c.n_embd_per_layer > 0) {  // the layer's per-layer input (layer_per_layer_input.cpp)
    TOVA_ASSIGN_OR_RETURN(l.ple_gate, ld.matrix(p + "inp_gate.weight", c.n_embd,
                                                c.n_embd_per_layer));
    TOVA_ASSIGN_OR_RETURN(l.ple_proj, ld.matrix(p + "proj.weight", c.n_embd_per_layer,
                                                c.n_embd));
    TOVA_ASSIGN_OR_RETURN(l.ple_post_norm, ld.vector(p + "post_norm.weight", c.n_embd));
  }
  return ok_status();
}

}  // namespace

extern const ArchSpec kArchGemma4{.name = "gemma4",
                                  .rope_freqs = true,
                                  .experts = true,
                                  .layer_kv_heads = true,
                                  .configure = configure,
                                  .load_layer = load_layer};

}  // namespace tova::model
