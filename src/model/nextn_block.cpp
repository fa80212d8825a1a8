// The multi-token prediction (MTP, "nextn") block of a file (qwen35, qwen35moe: {arch}.
// nextn_predict_layers > 0): the tensors past its decoder layer, as llama.cpp's loaders read
// them (src/models/qwen35.cpp, qwen35moe.cpp: nextn.eh_proj, enorm, hnorm, and the optional
// embed_tokens, shared_head_head, shared_head_norm). The block drafts the token after next
// from the main model's last hidden state and the next token; the main pass never runs it, so
// a file with the block computes exactly what the file without it computes; the drafter
// (runtime/drafter_mtp.cpp) runs it through Model::forward_nextn (nextn_forward.cpp).
#include <fmt/format.h>

#include "model/weights.h"

namespace tova::model {

Status load_nextn_block(TensorLoader& ld, const ModelConfig& c, int i, const ModelWeights& w,
                        NextnWeights& n) {
  const int il = c.n_layer + i;
  const std::string p = fmt::format("blk.{}.nextn.", il);
  const int64_t d = c.n_embd;
  TOVA_ASSIGN_OR_RETURN(n.eh_proj, ld.matrix(p + "eh_proj.weight", 2 * d, d));
  TOVA_ASSIGN_OR_RETURN(n.enorm, ld.vector(p + "enorm.weight", d));
  TOVA_ASSIGN_OR_RETURN(n.hnorm, ld.vector(p + "hnorm.weight", d));
  if (ld.has(p + "embed_tokens.weight")) {
    TOVA_ASSIGN_OR_RETURN(n.embed, ld.matrix(p + "embed_tokens.weight", d, c.n_vocab));
  } else {
    n.embed = w.token_embd;
  }
  if (ld.has(p + "shared_head_norm.weight")) {
    TOVA_ASSIGN_OR_RETURN(n.head_norm, ld.vector(p + "shared_head_norm.weight", d));
  } else {
    n.head_norm = w.output_norm;
  }
  if (ld.has(p + "shared_head_head.weight")) {
    TOVA_ASSIGN_OR_RETURN(n.head, ld.matrix(p + "shared_head_head.weight", d, c.n_vocab));
  } else {
    n.head = w.output;
  }
  return ok_status();
}

Result<ModelConfig> nextn_config(const ModelConfig& c) {
  if (c.n_embd_per_layer > 0) {
    return make_error("a multi-token prediction block with per-layer inputs is not supported");
  }
  ModelConfig b = c;
  b.n_layer = 1;
  b.layer_n_ff.clear();
  b.layer_window.clear();
  b.layer_nope.clear();
  b.layer_n_head_kv.clear();
  b.layer_head_dim.clear();
  b.layer_recurrent.clear();
  b.layer_parallel.clear();
  b.layer_kv_owner.clear();
  b.n_layer_dense_lead = 0;
  b.n_nextn = 0;
  return b;
}

}  // namespace tova::model
