#include "model/weights.h"

#include <fmt/format.h>

#include "kernels/quant.h"

namespace tova::model {
namespace {

class Loader {
 public:
  Loader(const io::GgufFile& f) : f_(f) {}

  // A matrix with ggml dims {n_in, n_out}.
  Result<kernels::WeightMatrix> matrix(const std::string& name, int64_t n_in, int64_t n_out) {
    TOVA_ASSIGN_OR_RETURN(const io::GgufTensorInfo* t, tensor(name, {n_in, n_out}));
    if (!is_compute_supported(t->type)) {
      return make_error("{}: tensor '{}' has weight type {}, which tova does not support "
                        "(supported: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, "
                        "q6_k)",
                        f_.path(), name, type_name(t->type));
    }
    TOVA_ASSIGN_OR_RETURN(uint64_t row, bytes_per_row(t->type, n_in));
    n_bytes += t->n_bytes;
    return kernels::WeightMatrix{
        .type = t->type, .data = t->data, .n_in = n_in, .n_out = n_out, .row_bytes = row};
  }

  Result<std::vector<float>> vector(const std::string& name, int64_t n) {
    TOVA_ASSIGN_OR_RETURN(const io::GgufTensorInfo* t, tensor(name, {n}));
    if (t->type != GgmlType::kF32 && t->type != GgmlType::kF16 && t->type != GgmlType::kBF16) {
      return make_error("{}: tensor '{}' has type {}, expected f32, f16 or bf16", f_.path(),
                        name, type_name(t->type));
    }
    std::vector<float> v(n);
    kernels::dequantize_row_ref(t->type, t->data, v.data(), n);
    n_bytes += t->n_bytes;
    return v;
  }

  uint64_t n_bytes = 0;

 private:
  Result<const io::GgufTensorInfo*> tensor(const std::string& name,
                                           const std::vector<int64_t>& dims) {
    const io::GgufTensorInfo* t = f_.find_tensor(name);
    if (t == nullptr) return make_error("{}: missing tensor '{}'", f_.path(), name);
    if (t->dims != dims) {
      return make_error("{}: tensor '{}' has shape [{}], expected [{}] for this architecture",
                        f_.path(), name, fmt::join(t->dims, ", "), fmt::join(dims, ", "));
    }
    return t;
  }

  const io::GgufFile& f_;
};

}  // namespace

Result<ModelWeights> load_weights(const io::GgufFile& f, const ModelConfig& c) {
  Loader ld(f);
  ModelWeights w;
  const int64_t q_dim = static_cast<int64_t>(c.n_head) * c.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(c.n_head_kv) * c.head_dim;
  TOVA_ASSIGN_OR_RETURN(w.token_embd, ld.matrix("token_embd.weight", c.n_embd, c.n_vocab));
  TOVA_ASSIGN_OR_RETURN(w.output_norm, ld.vector("output_norm.weight", c.n_embd));
  if (c.tied_output) {
    w.output = w.token_embd;
  } else {
    TOVA_ASSIGN_OR_RETURN(w.output, ld.matrix("output.weight", c.n_embd, c.n_vocab));
  }
  w.layers.resize(c.n_layer);
  for (int il = 0; il < c.n_layer; ++il) {
    LayerWeights& l = w.layers[il];
    const std::string p = fmt::format("blk.{}.", il);
    TOVA_ASSIGN_OR_RETURN(l.attn_norm, ld.vector(p + "attn_norm.weight", c.n_embd));
    TOVA_ASSIGN_OR_RETURN(l.wq, ld.matrix(p + "attn_q.weight", c.n_embd, q_dim));
    TOVA_ASSIGN_OR_RETURN(l.wk, ld.matrix(p + "attn_k.weight", c.n_embd, kv_dim));
    TOVA_ASSIGN_OR_RETURN(l.wv, ld.matrix(p + "attn_v.weight", c.n_embd, kv_dim));
    TOVA_ASSIGN_OR_RETURN(l.wo, ld.matrix(p + "attn_output.weight", q_dim, c.n_embd));
    if (c.qkv_bias) {
      TOVA_ASSIGN_OR_RETURN(l.bq, ld.vector(p + "attn_q.bias", q_dim));
      TOVA_ASSIGN_OR_RETURN(l.bk, ld.vector(p + "attn_k.bias", kv_dim));
      TOVA_ASSIGN_OR_RETURN(l.bv, ld.vector(p + "attn_v.bias", kv_dim));
    }
    TOVA_ASSIGN_OR_RETURN(l.ffn_norm, ld.vector(p + "ffn_norm.weight", c.n_embd));
    TOVA_ASSIGN_OR_RETURN(l.w_gate, ld.matrix(p + "ffn_gate.weight", c.n_embd, c.n_ff));
    TOVA_ASSIGN_OR_RETURN(l.w_up, ld.matrix(p + "ffn_up.weight", c.n_embd, c.n_ff));
    TOVA_ASSIGN_OR_RETURN(l.w_down, ld.matrix(p + "ffn_down.weight", c.n_ff, c.n_embd));
  }
  w.n_bytes = ld.n_bytes;
  return w;
}

}  // namespace tova::model
