// The tensors most families share (declared in arch.h for the architecture files): llama's
// attention and dense feed-forward, the mixture-of-experts feed-forward, q/k/v biases and q/k
// norms. Beside the families, below load_weights (weights.cpp), which calls the families.
#include <fmt/format.h>

#include "model/arch.h"
#include "model/tensor_loader.h"

namespace tova::model {

Status load_attention(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  const int64_t q_dim = static_cast<int64_t>(c.n_head) * c.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(c.n_head_kv) * c.head_dim;
  const std::string p = fmt::format("blk.{}.", il);
  TOVA_ASSIGN_OR_RETURN(l.attn_norm, ld.vector(p + "attn_norm.weight", c.n_embd));
  TOVA_ASSIGN_OR_RETURN(l.wq, ld.matrix(p + "attn_q.weight", c.n_embd, q_dim));
  TOVA_ASSIGN_OR_RETURN(l.wk, ld.matrix(p + "attn_k.weight", c.n_embd, kv_dim));
  TOVA_ASSIGN_OR_RETURN(l.wv, ld.matrix(p + "attn_v.weight", c.n_embd, kv_dim));
  TOVA_ASSIGN_OR_RETURN(l.wo, ld.matrix(p + "attn_output.weight", q_dim, c.n_embd));
  return ok_status();
}

Status load_dense_ffn(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l,
                      const char* norm) {
  const std::string p = fmt::format("blk.{}.", il);
  l.ffn_kind = FfnKind::kDense;
  TOVA_ASSIGN_OR_RETURN(l.ffn_norm, ld.vector(p + norm + ".weight", c.n_embd));
  const int n_ff = c.n_ff_of(il);
  if (n_ff <= 0) {
    return make_error("{}: {}.feed_forward_length is absent or 0, but layer {} has a dense "
                      "feed-forward",
                      ld.file().path(), c.arch_name, il);
  }
  TOVA_ASSIGN_OR_RETURN(l.w_gate, ld.matrix(p + "ffn_gate.weight", c.n_embd, n_ff));
  TOVA_ASSIGN_OR_RETURN(l.w_up, ld.matrix(p + "ffn_up.weight", c.n_embd, n_ff));
  TOVA_ASSIGN_OR_RETURN(l.w_down, ld.matrix(p + "ffn_down.weight", n_ff, c.n_embd));
  return ok_status();
}

Status load_moe_ffn(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l,
                    bool shared_expert, const char* norm) {
  const std::string p = fmt::format("blk.{}.", il);
  if (c.n_expert <= 0) {
    // A router or experts in a file that declares no experts.
    for (const char* t : {"ffn_gate_inp.weight", "ffn_gate_exps.weight", "ffn_up_exps.weight",
                          "ffn_down_exps.weight"}) {
      if (ld.has(p + t)) {
        return make_error("{}: tensor '{}' belongs to a mixture of experts, but the file's {}."
                          "expert_count is 0 or absent",
                          ld.file().path(), p + t, c.arch_name);
      }
    }
    return make_error("{}: {}.expert_count is 0 or absent: architecture '{}' is a mixture of "
                      "experts",
                      ld.file().path(), c.arch_name, c.arch_name);
  }
  l.ffn_kind = FfnKind::kMoe;
  MoeWeights& m = l.moe;
  const int64_t e = c.n_expert, f = c.n_ff_exp;
  TOVA_ASSIGN_OR_RETURN(l.ffn_norm, ld.vector(p + norm + ".weight", c.n_embd));
  if (!ld.has(p + "ffn_gate_inp.weight")) {
    return make_error("{}: missing tensor '{}' (the router of the layer's {} experts)",
                      ld.file().path(), p + "ffn_gate_inp.weight", e);
  }
  TOVA_ASSIGN_OR_RETURN(m.router, ld.matrix(p + "ffn_gate_inp.weight", c.n_embd, e));
  for (const char* t : {"ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"}) {
    if (!ld.has(p + t)) {
      return make_error("{}: missing tensor '{}': a router ('{}') without its experts",
                        ld.file().path(), p + t, p + "ffn_gate_inp.weight");
    }
  }
  TOVA_ASSIGN_OR_RETURN(m.gate, ld.matrices(p + "ffn_gate_exps.weight", c.n_embd, f, e));
  TOVA_ASSIGN_OR_RETURN(m.up, ld.matrices(p + "ffn_up_exps.weight", c.n_embd, f, e));
  TOVA_ASSIGN_OR_RETURN(m.down, ld.matrices(p + "ffn_down_exps.weight", f, c.n_embd, e));
  if (!shared_expert) return ok_status();
  const int64_t fs = c.n_ff_shexp;
  if (ld.has(p + "ffn_gate_inp_shexp.weight")) {
    for (const char* t : {"ffn_gate_shexp.weight", "ffn_up_shexp.weight",
                          "ffn_down_shexp.weight"}) {
      if (!ld.has(p + t)) {
        return make_error("{}: missing tensor '{}': a shared-expert gate ('{}') without the "
                          "shared expert",
                          ld.file().path(), p + t, p + "ffn_gate_inp_shexp.weight");
      }
    }
  }
  if (fs <= 0) {
    return make_error("{}: {}.expert_shared_feed_forward_length is absent (and so is "
                      "feed_forward_length, its default), but layer {} has a shared expert ('{}')",
                      ld.file().path(), c.arch_name, il, p + "ffn_gate_inp_shexp.weight");
  }
  TOVA_ASSIGN_OR_RETURN(m.shared_gate_inp, ld.vector(p + "ffn_gate_inp_shexp.weight", c.n_embd));
  TOVA_ASSIGN_OR_RETURN(m.shared_gate, ld.matrix(p + "ffn_gate_shexp.weight", c.n_embd, fs));
  TOVA_ASSIGN_OR_RETURN(m.shared_up, ld.matrix(p + "ffn_up_shexp.weight", c.n_embd, fs));
  TOVA_ASSIGN_OR_RETURN(m.shared_down, ld.matrix(p + "ffn_down_shexp.weight", fs, c.n_embd));
  return ok_status();
}

Status load_llama_layer(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  TOVA_RETURN_IF_ERROR(load_attention(ld, c, il, l));
  return load_dense_ffn(ld, c, il, l);
}

Status load_qkv_bias(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  const int64_t q_dim = static_cast<int64_t>(c.n_head) * c.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(c.n_head_kv) * c.head_dim;
  const std::string p = fmt::format("blk.{}.", il);
  TOVA_ASSIGN_OR_RETURN(l.bq, ld.vector(p + "attn_q.bias", q_dim));
  TOVA_ASSIGN_OR_RETURN(l.bk, ld.vector(p + "attn_k.bias", kv_dim));
  TOVA_ASSIGN_OR_RETURN(l.bv, ld.vector(p + "attn_v.bias", kv_dim));
  return ok_status();
}

Status load_qk_norm(TensorLoader& ld, const ModelConfig& c, int il, LayerWeights& l) {
  const std::string p = fmt::format("blk.{}.", il);
  TOVA_ASSIGN_OR_RETURN(l.q_norm, ld.vector(p + "attn_q_norm.weight", c.head_dim));
  TOVA_ASSIGN_OR_RETURN(l.k_norm, ld.vector(p + "attn_k_norm.weight", c.head_dim));
  return ok_status();
}

}  // namespace tova::model
