// Gemma 4 E2B/E4B's per-layer embeddings (layer_kinds.h), as llama.cpp 34af94cd computes them
// (src/models/gemma4.cpp: build_inp_per_layer, project_per_layer_inputs and the block after
// each layer's feed-forward). Every layer il gets its own P-wide input (P =
// embedding_length_per_layer_input), made once per token before the first layer:
//   ple[il] = (rms_norm(per_layer_model_proj · x0 / sqrt(n_embd))[il] * per_layer_proj_norm
//              + per_layer_token_embd[token][il] * sqrt(P)) / sqrt(2),
// x0 the token embedding already scaled by sqrt(n_embd); after the layer's feed-forward (and
// before its layer_output_scale) the layer adds
//   post_norm(proj · (gelu(inp_gate · x) * ple[il])).
// GELU is the tanh approximation, as in the feed-forward (llama.cpp's ggml_gelu).
#include <cmath>
#include <vector>

#include "kernels/ops.h"
#include "kernels/quant.h"
#include "model/forward_util.h"
#include "model/layer_kinds.h"

namespace tova::model {
namespace {

// The kind's buffers, P = n_embd_per_layer.
struct PerLayerInputScratch : KindScratch {
  std::vector<float> ple;       // [n_tok][n_layer][P] every layer's input
  std::vector<float> ple_gate;  // [n_tok][P] a layer's gate, then gate * input
};

}  // namespace

void per_layer_inputs(const LayerPass& p, const ModelWeights& w, std::span<const int32_t> tokens) {
  const ModelConfig& c = p.c;
  ForwardScratch& s = p.s;
  PerLayerInputScratch& b = s.own<PerLayerInputScratch>();
  const int64_t n = p.n;
  const int64_t P = c.n_embd_per_layer;
  const int64_t n_all = c.n_layer * P;  // per token
  resize(b.ple, n * n_all);
  p.matmul(w.ple_model_proj, s.x.data(), n, b.ple.data());
  const float proj_scale = 1.f / std::sqrt(static_cast<float>(c.n_embd));
  const float embd_scale = std::sqrt(static_cast<float>(P));
  const float mix_scale = 1.f / std::sqrt(2.f);
  for_tokens(p.pool, n, n_all, [&](int64_t i) {
    // The token's row of per_layer_token_embd, dequantized: [n_layer][P].
    thread_local std::vector<float> row;
    if (row.size() < static_cast<size_t>(n_all)) row.resize(n_all);
    kernels::dequantize_row(w.ple_token_embd.type,
                            w.ple_token_embd.data + w.ple_token_embd.row_bytes * tokens[i],
                            row.data(), n_all);
    float* t = &b.ple[i * n_all];
    kernels::scale(t, proj_scale, n_all);
    for (int64_t il = 0; il < c.n_layer; ++il) {
      float* x = t + il * P;
      kernels::rms_norm(x, w.ple_proj_norm.data(), x, P, c.rms_eps);
      const float* e = row.data() + il * P;
      for (int64_t j = 0; j < P; ++j) x[j] = (x[j] + e[j] * embd_scale) * mix_scale;
    }
  });
}

void per_layer_input_block(const LayerPass& p, int il, const LayerWeights& L) {
  const ModelConfig& c = p.c;
  ForwardScratch& s = p.s;
  PerLayerInputScratch& b = s.own<PerLayerInputScratch>();
  const int64_t n = p.n;
  const int64_t P = c.n_embd_per_layer;
  const int64_t n_all = c.n_layer * P;
  resize(b.ple_gate, n * P);
  resize(s.xb, n * c.n_embd);
  p.matmul(L.ple_gate, s.x.data(), n, b.ple_gate.data());
  for_tokens(p.pool, n, P, [&](int64_t i) {
    kernels::gelu_mul(&b.ple_gate[i * P], &b.ple[i * n_all + il * P], P);
  });
  p.matmul(L.ple_proj, b.ple_gate.data(), n, s.xb.data());
  for_tokens(p.pool, n, c.n_embd, [&](int64_t i) {
    float* xb = &s.xb[i * c.n_embd];
    kernels::rms_norm(xb, L.ple_post_norm.data(), xb, c.n_embd, c.rms_eps);
    kernels::add(&s.x[i * c.n_embd], xb, c.n_embd);
  });
}

}  // namespace tova::model
