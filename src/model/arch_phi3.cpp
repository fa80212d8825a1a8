// phi3: Phi-3, Phi-3.5, Phi-4. llama's layer with the Q, K and V matrices fused into one
// attn_qkv (rows: q, then k, then v) and the gate and up matrices fused into one ffn_up (rows:
// gate, then up), RoPE on halves (NEOX). The fused matrices are split into row ranges at load
// time, so the forward pass is llama's.
// Refused, by name: longrope/su scaling (rope_factors_long/short tensors, rope.scaling.attn_factor:
// Phi-3-128k, Phi-3.5, Phi-4-mini), and a sliding window shorter than the context (Phi-3-mini-4k's
// 2047: llama.cpp ignores it and computes full attention, which is not the model past the window).
#include <fmt/format.h>

#include "model/arch.h"

namespace tova::model {
namespace {

Status configure(KeyReader& keys, ModelConfig& c) {
  c.rope.mode = kernels::RopeMode::kNeox;
  // Selects between long and short rope factors (refused) and feeds yarn (refused): with
  // neither, it changes nothing.
  if (keys.has("rope.scaling.original_context_length")) {
    keys.accept("rope.scaling.original_context_length");
  }
  if (keys.has("attention.sliding_window")) {
    TOVA_ASSIGN_OR_RETURN(uint32_t window, keys.u32("attention.sliding_window"));
    // 0: none (Phi-4); at least the context: never applies.
    if (window != 0 && static_cast<int64_t>(window) < c.n_ctx_train) {
      return make_error(
          "{}: {} {} is shorter than context_length {}: sliding-window attention "
          "is not implemented",
          keys.file().path(), keys.key("attention.sliding_window"), window, c.n_ctx_train);
    }
  }
  return ok_status();
}

Status load_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  const int64_t q_dim = static_cast<int64_t>(c.n_head) * c.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(c.n_head_kv) * c.head_dim;
  const std::string p = fmt::format("blk.{}.", il);
  TOVA_ASSIGN_OR_RETURN(l.attn_norm, ld.vector(p + "attn_norm.weight", c.n_embd));
  if (ld.has(p + "attn_qkv.weight")) {
    TOVA_ASSIGN_OR_RETURN(auto qkv, ld.matrix(p + "attn_qkv.weight", c.n_embd, q_dim + 2 * kv_dim));
    l.wq = TensorLoader::rows(qkv, 0, q_dim);
    l.wk = TensorLoader::rows(qkv, q_dim, kv_dim);
    l.wv = TensorLoader::rows(qkv, q_dim + kv_dim, kv_dim);
  } else {
    TOVA_ASSIGN_OR_RETURN(l.wq, ld.matrix(p + "attn_q.weight", c.n_embd, q_dim));
    TOVA_ASSIGN_OR_RETURN(l.wk, ld.matrix(p + "attn_k.weight", c.n_embd, kv_dim));
    TOVA_ASSIGN_OR_RETURN(l.wv, ld.matrix(p + "attn_v.weight", c.n_embd, kv_dim));
  }
  TOVA_ASSIGN_OR_RETURN(l.wo, ld.matrix(p + "attn_output.weight", q_dim, c.n_embd));
  if (c.n_ff <= 0) {
    return make_error("{}: {}.feed_forward_length is absent or 0, but layer {} has a dense "
                      "feed-forward",
                      ld.file().path(), c.arch_name, il);
  }
  TOVA_ASSIGN_OR_RETURN(l.ffn_norm, ld.vector(p + "ffn_norm.weight", c.n_embd));
  TOVA_ASSIGN_OR_RETURN(auto up, ld.matrix(p + "ffn_up.weight", c.n_embd, 2 * int64_t{c.n_ff}));
  l.w_gate = TensorLoader::rows(up, 0, c.n_ff);  // ggml_swiglu: silu(first half) * second half
  l.w_up = TensorLoader::rows(up, c.n_ff, c.n_ff);
  TOVA_ASSIGN_OR_RETURN(l.w_down, ld.matrix(p + "ffn_down.weight", c.n_ff, c.n_embd));
  return ok_status();
}

}  // namespace

extern const ArchSpec kArchPhi3{
    .name = "phi3", .configure = configure, .load_layer = load_layer};

}  // namespace tova::model
