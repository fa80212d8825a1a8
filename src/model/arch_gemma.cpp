// gemma2, gemma3: Google's Gemma 2 and Gemma 3 text decoders. llama's layer plus:
// - token embeddings multiplied by sqrt(n_embd);
// - RMSNorms of the attention output and of the feed-forward output before each residual add
//   (attn_post_norm, ffn_post_norm; the converter folds Gemma's "1 + w" into the weights);
// - a GELU-gated feed-forward (tanh approximation), RoPE on halves (NEOX);
// - sliding-window attention on most layers: layer il has a window unless il % pattern ==
//   pattern - 1 (pattern 2 for Gemma 2, 6 for Gemma 3); the window layers of Gemma 3 rotate
//   with their own base (rope.freq_base_swa, default 10000) and no scaling;
// - attention scale 1/sqrt(head_dim), or 1/sqrt(n_embd / n_head) for the 27B models (identified,
//   as llama.cpp does, by their layer count: the GGUF does not carry query_pre_attn_scalar);
// - Gemma 2: soft-capping of attention scores (cap 50) and of the logits (cap 30);
//   Gemma 3: per-head RMSNorm of queries and keys before RoPE (as qwen3), an optional final
//   soft-capping, and no attention soft-capping.
// The output matrix is the token embedding (Gemma files carry no output.weight).
#include <cmath>

#include <fmt/format.h>

#include "model/arch.h"

namespace tova::model {
namespace {

// Reads the window and its layer pattern; `pattern_default` is the family's.
Status read_windows(KeyReader& keys, ModelConfig& c, uint32_t window_default,
                    uint32_t pattern_default) {
  TOVA_ASSIGN_OR_RETURN(uint32_t window, keys.u32_or("attention.sliding_window", window_default));
  TOVA_ASSIGN_OR_RETURN(uint32_t pattern,
                        keys.u32_or("attention.sliding_window_pattern", pattern_default));
  if (window == 0) return ok_status();  // no window layer
  if (window < 2 || window > (1u << 30)) {
    return make_error("{}: {} {} is out of range", keys.file().path(),
                      keys.key("attention.sliding_window"), window);
  }
  c.layer_window.assign(c.n_layer, 0);
  for (int il = 0; il < c.n_layer; ++il) {
    // Pattern 0: every layer has a window; else the last layer of each group of `pattern` is
    // global.
    const bool windowed = pattern == 0 || static_cast<uint32_t>(il) % pattern < pattern - 1;
    if (windowed) c.layer_window[il] = static_cast<int>(window);
  }
  return ok_status();
}

// The attention scale of gemma_pytorch's configs: query_pre_attn_scalar is n_embd / n_head for
// the 27B models and head_dim for the others.
void set_attention_scale(ModelConfig& c, int layers_27b) {
  const int denom = c.n_layer == layers_27b ? c.n_embd / c.n_head : c.head_dim;
  c.attn_scale = 1.f / std::sqrt(static_cast<float>(denom));
}

void set_common(ModelConfig& c) {
  c.rope.mode = kernels::RopeMode::kNeox;
  c.ffn_act = FfnAct::kGeluTanh;
  c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
}

Status positive(KeyReader& keys, const char* key, float v) {
  if (!(v > 0.f) || !std::isfinite(v)) {
    return make_error("{}: {} {} must be positive", keys.file().path(), keys.key(key), v);
  }
  return ok_status();
}

Status configure_gemma2(KeyReader& keys, ModelConfig& c) {
  set_common(c);
  TOVA_ASSIGN_OR_RETURN(c.attn_softcap, keys.f32_or("attn_logit_softcapping", 50.f));
  TOVA_ASSIGN_OR_RETURN(c.final_softcap, keys.f32_or("final_logit_softcapping", 30.f));
  TOVA_RETURN_IF_ERROR(positive(keys, "attn_logit_softcapping", c.attn_softcap));
  TOVA_RETURN_IF_ERROR(positive(keys, "final_logit_softcapping", c.final_softcap));
  TOVA_RETURN_IF_ERROR(read_windows(keys, c, 4096, 2));
  // Window layers rotate like the others unless the file says otherwise.
  c.rope_window = c.rope;
  TOVA_ASSIGN_OR_RETURN(c.rope_window.freq_base,
                        keys.f32_or("rope.freq_base_swa", c.rope.freq_base));
  TOVA_RETURN_IF_ERROR(positive(keys, "rope.freq_base_swa", c.rope_window.freq_base));
  set_attention_scale(c, 46);
  return ok_status();
}

Status configure_gemma3(KeyReader& keys, ModelConfig& c) {
  set_common(c);
  TOVA_ASSIGN_OR_RETURN(c.final_softcap, keys.f32_or("final_logit_softcapping", 0.f));
  if (c.final_softcap != 0.f) {
    TOVA_RETURN_IF_ERROR(positive(keys, "final_logit_softcapping", c.final_softcap));
  }
  TOVA_RETURN_IF_ERROR(read_windows(keys, c, 0, 6));
  // Window layers: base 10000 (or rope.freq_base_swa) and no scaling; the global layers take
  // rope.freq_base (1e6) and the file's linear scaling (factor 8 from Gemma 3 4B up).
  c.rope_window = c.rope;
  c.rope_window.freq_scale = 1.f;
  TOVA_ASSIGN_OR_RETURN(c.rope_window.freq_base, keys.f32_or("rope.freq_base_swa", 10000.f));
  TOVA_RETURN_IF_ERROR(positive(keys, "rope.freq_base_swa", c.rope_window.freq_base));
  set_attention_scale(c, 62);
  return ok_status();
}

Status load_post_norms(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  const std::string p = fmt::format("blk.{}.", il);
  TOVA_ASSIGN_OR_RETURN(l.attn_post_norm, ld.vector(p + "post_attention_norm.weight", c.n_embd));
  TOVA_ASSIGN_OR_RETURN(l.ffn_post_norm, ld.vector(p + "post_ffw_norm.weight", c.n_embd));
  return ok_status();
}

Status load_gemma2_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  TOVA_RETURN_IF_ERROR(load_llama_layer(ld, c, il, l));
  return load_post_norms(ld, c, il, l);
}

Status load_gemma3_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  TOVA_RETURN_IF_ERROR(load_gemma2_layer(ld, c, il, l));
  return load_qk_norm(ld, c, il, l);
}

}  // namespace

extern const ArchSpec kArchGemma2{.name = "gemma2",
                                  .configure = configure_gemma2,
                                  .load_layer = load_gemma2_layer};
extern const ArchSpec kArchGemma3{.name = "gemma3",
                                  .configure = configure_gemma3,
                                  .load_layer = load_gemma3_layer};

}  // namespace tova::model
