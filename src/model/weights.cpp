#include "model/weights.h"

#include <fmt/format.h>

#include "model/arch.h"
#include "model/tensor_loader.h"

namespace tova::model {

Result<ModelWeights> load_weights(const io::GgufFile& f, const ModelConfig& c) {
  const ArchSpec* spec = find_arch(c.arch_name);
  if (spec == nullptr) {
    return make_error("{}: unsupported architecture '{}'", f.path(), c.arch_name);
  }
  TensorLoader ld(f);
  ModelWeights w;
  TOVA_ASSIGN_OR_RETURN(w.token_embd, ld.matrix("token_embd.weight", c.n_embd, c.n_vocab));
  TOVA_ASSIGN_OR_RETURN(w.output_norm, ld.vector(spec->output_norm, c.n_embd));
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
