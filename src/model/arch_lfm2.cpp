// lfm2: Liquid AI's LFM2 and LFM2.5 dense models (350M to 2.6B). A hybrid: most layers mix
// tokens by a gated short convolution (layer_shortconv.cpp: in_proj to B, C, x; C * conv(B * x)
// over the last shortconv.l_cache tokens; out_proj, a fixed-size state per layer), a few attend
// (llama's attention with per-head RMSNorm of queries and keys, RoPE on halves). The pattern is
// attention.head_count_kv, an array with 0 at every convolution layer (ArchSpec::
// kv_heads_mark_recurrent). Every layer: x += mixer(rms_norm(x) · attn_norm);
// x += SwiGLU(rms_norm(x) · ffn_norm); the final norm is token_embd_norm. Keys and tensors as
// llama.cpp's src/models/lfm2.cpp reads them (conversion/lfm2.py writes them).
#include <fmt/format.h>

#include "model/arch.h"

namespace tova::model {
namespace {

// Kernel sizes accepted: LFM2 ships 3; beyond 64 a file is broken, not a model.
constexpr uint32_t kMaxConvKernel = 64;

}  // namespace

Status read_lfm2_keys(KeyReader& keys, ModelConfig& c) {
  const std::string& path = keys.file().path();
  TOVA_ASSIGN_OR_RETURN(uint32_t l_cache, keys.u32("shortconv.l_cache"));
  // The conv keeps l_cache - 1 inputs: a kernel of 1 would be no convolution (llama.cpp
  // asserts > 1), 0 no kernel at all.
  if (l_cache < 2 || l_cache > kMaxConvKernel) {
    return make_error("{}: {} {} is out of range (2..{})", path, keys.key("shortconv.l_cache"),
                      l_cache, kMaxConvKernel);
  }
  c.shortconv_l_cache = static_cast<int>(l_cache);
  // A sliding window on the attention layers (llama.cpp's LFM2 reads it as optional).
  TOVA_ASSIGN_OR_RETURN(uint32_t swa, keys.u32_or("attention.sliding_window", 0));
  if (swa > 0) {
    return make_error("{}: {} {}: sliding-window attention of lfm2 is not implemented", path,
                      keys.key("attention.sliding_window"), swa);
  }
  c.rope.mode = kernels::RopeMode::kNeox;
  return ok_status();
}

Status load_lfm2_mixer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  const std::string p = fmt::format("blk.{}.", il);
  const std::string pattern = c.arch_name + ".attention.head_count_kv";
  const std::string conv_in = p + "shortconv.in_proj.weight", attn_q = p + "attn_q.weight";
  if (c.recurrent(il)) {
    if (!ld.has(conv_in)) {
      return make_error("{}: the layer pattern ({}: 0 at layer {}) makes layer {} a "
                        "short-convolution layer, but it has no '{}'{}",
                        ld.file().path(), pattern, il, il, conv_in,
                        ld.has(attn_q) ? fmt::format(" (it has '{}')", attn_q) : "");
    }
    const int64_t E = c.n_embd;
    l.mixer_kind = MixerKind::kShortConv;
    ShortConvWeights& w = l.shortconv;
    TOVA_ASSIGN_OR_RETURN(l.attn_norm, ld.vector(p + "attn_norm.weight", c.n_embd));
    TOVA_ASSIGN_OR_RETURN(w.in_proj, ld.matrix(conv_in, c.n_embd, 3 * E));
    TOVA_ASSIGN_OR_RETURN(w.conv, ld.vectors(p + "shortconv.conv.weight", c.shortconv_l_cache, E));
    TOVA_ASSIGN_OR_RETURN(w.out_proj, ld.matrix(p + "shortconv.out_proj.weight", E, c.n_embd));
  } else {
    if (!ld.has(attn_q)) {
      return make_error("{}: the layer pattern ({}: {} at layer {}) makes layer {} an attention "
                        "layer, but it has no '{}'{}",
                        ld.file().path(), pattern, c.n_head_kv, il, il, attn_q,
                        ld.has(conv_in) ? fmt::format(" (it has '{}')", conv_in) : "");
    }
    TOVA_RETURN_IF_ERROR(load_attention(ld, c, il, l));
    TOVA_RETURN_IF_ERROR(load_qk_norm(ld, c, il, l));
  }
  return ok_status();
}

namespace {

Status load_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  TOVA_RETURN_IF_ERROR(load_lfm2_mixer(ld, c, il, l));
  return load_dense_ffn(ld, c, il, l);
}

}  // namespace

extern const ArchSpec kArchLfm2{.name = "lfm2",
                                .kv_heads_mark_recurrent = true,
                                .output_norm = "token_embd_norm.weight",
                                .configure = read_lfm2_keys,
                                .load_layer = load_layer};

}  // namespace tova::model
