#include "model/weights.h"

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

Result<ModelWeights> load_weights(const io::GgufFile& f, const ModelConfig& c) {
  const ArchSpec* spec = find_arch(c.arch_name);
  if (spec == nullptr) {
    return make_error("{}: unsupported architecture '{}'", f.path(), c.arch_name);
  }
  TensorLoader ld(f);
  ModelWeights w;
  TOVA_ASSIGN_OR_RETURN(w.token_embd, ld.matrix("token_embd.weight", c.n_embd, c.n_vocab));
  TOVA_ASSIGN_OR_RETURN(w.output_norm, ld.vector("output_norm.weight", c.n_embd));
  if (c.tied_output) {
    w.output = w.token_embd;
  } else {
    TOVA_ASSIGN_OR_RETURN(w.output, ld.matrix("output.weight", c.n_embd, c.n_vocab));
  }
  // Llama-3.x: the converter bakes the llama3 rope scaling into per-frequency factors.
  if (spec->rope_freqs && ld.has("rope_freqs.weight")) {
    TOVA_ASSIGN_OR_RETURN(w.rope_freqs, ld.vector("rope_freqs.weight", c.rope.n_rot / 2));
    // Gemma 4's proportional RoPE leaves pairs unrotated with a factor of 1e30 (an angle of
    // ~0): finite factors up to that are taken as they are.
    for (float x : w.rope_freqs) {
      if (!(x > 0.f) || !(x <= 1e30f)) {
        return make_error("{}: tensor 'rope_freqs.weight' holds a factor {} (must be > 0)",
                          f.path(), x);
      }
    }
  }
  if (c.n_embd_per_layer > 0) {  // Gemma 4 E2B/E4B (arch_gemma4.cpp)
    const int64_t n_all = static_cast<int64_t>(c.n_layer) * c.n_embd_per_layer;
    TOVA_ASSIGN_OR_RETURN(w.ple_token_embd,
                          ld.matrix("per_layer_token_embd.weight", n_all, c.n_vocab));
    TOVA_ASSIGN_OR_RETURN(w.ple_model_proj,
                          ld.matrix("per_layer_model_proj.weight", c.n_embd, n_all));
    TOVA_ASSIGN_OR_RETURN(w.ple_proj_norm,
                          ld.vector("per_layer_proj_norm.weight", c.n_embd_per_layer));
  }
  w.layers.resize(c.n_layer);
  for (int il = 0; il < c.n_layer; ++il) {
    TOVA_RETURN_IF_ERROR(spec->load_layer(ld, c, il, w.layers[il]));
  }
  const uint64_t main_bytes = ld.n_bytes();
  w.nextn.resize(c.n_nextn);
  for (int i = 0; i < c.n_nextn; ++i) {
    TOVA_RETURN_IF_ERROR(spec->load_layer(ld, c, c.n_layer + i, w.nextn[i].layer));
    TOVA_RETURN_IF_ERROR(load_nextn_block(ld, c, i, w, w.nextn[i]));
  }
  w.n_bytes_nextn = ld.n_bytes() - main_bytes;
  TOVA_RETURN_IF_ERROR(ld.check_all_read(c.arch_name));
  w.n_bytes = main_bytes;
  if (c.n_embd_per_layer > 0) {
    // per_layer_token_embd is a lookup table (a row per token), not streamed by the forward
    // pass; token_embd stays counted where it is the tied output matrix.
    w.n_bytes -= w.ple_token_embd.row_bytes * static_cast<uint64_t>(w.ple_token_embd.n_out);
  }
  w.tensors_read = ld.tensors_read();
  return w;
}

}  // namespace tova::model
