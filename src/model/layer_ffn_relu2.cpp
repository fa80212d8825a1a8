// The squared-ReLU feed-forward kind (layer_kinds.h): Nemotron-H's MLP layers, as llama.cpp
// builds them (build_ffn with LLM_FFN_RELU_SQR and no gate: relu, then the square):
//   h  = rms_norm(x) · ffn_norm                 (Nemotron-H: the layer's attn_norm)
//   u  = up · h + up_b                          [n_ff]
//   x += down · max(u, 0)^2 + down_b            [n_embd]
// without a gate, so one projection in and one out; the biases where the layer has them.
#include <algorithm>

#include "kernels/ops.h"
#include "model/forward_util.h"
#include "model/layer_kinds.h"

namespace tova::model {

void relu2_ffn_block(const LayerPass& p, const LayerWeights& L) {
  const ModelConfig& c = p.c;
  ForwardScratch& s = p.s;
  const int64_t n = p.n, E = c.n_embd;
  const int64_t n_ff = L.w_up.n_out;  // the layer's own (ModelConfig::n_ff_of)
  resize(s.xb, n * E);
  resize(s.hb, n * n_ff);
  for_tokens(p.pool, n, E, [&](int64_t i) {
    kernels::rms_norm(&s.x[i * E], L.ffn_norm.data(), &s.xb[i * E], E, c.rms_eps);
  });
  p.matmul(L.w_up, s.xb.data(), n, s.hb.data());
  for_tokens(p.pool, n, n_ff, [&](int64_t i) {
    float* u = &s.hb[i * n_ff];
    if (!L.ffn_up_b.empty()) kernels::add(u, L.ffn_up_b.data(), n_ff);
    for (int64_t e = 0; e < n_ff; ++e) {
      const float r = std::max(u[e], 0.f);
      u[e] = r * r;
    }
  });
  p.matmul(L.w_down, s.hb.data(), n, s.xb.data());
  for_tokens(p.pool, n, E, [&](int64_t i) {
    float* xb = &s.xb[i * E];
    if (!L.ffn_down_b.empty()) kernels::add(xb, L.ffn_down_b.data(), E);
    p.add_residual(&s.x[i * E], xb);
  });
}

}  // namespace tova::model
