// The dense feed-forward kind (layer_kinds.h): the gated feed-forward of every dense family,
// act(gate · h + gate_b) * (up · h + up_b) projected down (+ down_b), with SiLU (llama, qwen,
// phi3) or GELU-tanh (Gemma), and Gemma's RMSNorm of the output before the residual add; the
// biases where the layer has them (Falcon-H1's optional ffn_{gate,up,down}.bias: gate and up
// together).
#include "kernels/ops.h"
#include "model/forward_util.h"
#include "model/layer_kinds.h"

namespace tova::model {

void dense_ffn_block(const LayerPass& p, const LayerWeights& L) {
  const ModelConfig& c = p.c;
  ForwardScratch& s = p.s;
  const int64_t n = p.n;
  const int64_t n_ff = L.w_gate.n_out;  // the layer's own (ModelConfig::n_ff_of)
  resize(s.xb, n * c.n_embd);
  resize(s.hb, n * n_ff);
  resize(s.hb2, n * n_ff);
  for_tokens(p.pool, n, c.n_embd, [&](int64_t i) {
    kernels::rms_norm(&s.x[i * c.n_embd], L.ffn_norm.data(), &s.xb[i * c.n_embd], c.n_embd,
                      c.rms_eps);
  });
  const kernels::WeightMatrix* gate_up[] = {&L.w_gate, &L.w_up};
  float* gate_up_out[] = {s.hb.data(), s.hb2.data()};
  p.matmul_multi(gate_up, s.xb.data(), n, gate_up_out);
  if (!L.ffn_gate_b.empty()) {  // Falcon-H1's optional biases (llama.cpp's build_ffn adds them)
    for_tokens(p.pool, n, 2 * n_ff, [&](int64_t i) {
      kernels::add(&s.hb[i * n_ff], L.ffn_gate_b.data(), n_ff);
      kernels::add(&s.hb2[i * n_ff], L.ffn_up_b.data(), n_ff);
    });
  }
  for_elems(p.pool, n * n_ff, [&](int64_t b, int64_t e) {
    if (c.ffn_act == FfnAct::kGeluTanh) {
      kernels::gelu_mul(s.hb.data() + b, s.hb2.data() + b, e - b);
    } else {
      kernels::silu_mul(s.hb.data() + b, s.hb2.data() + b, e - b);
    }
  });
  p.matmul(L.w_down, s.hb.data(), n, s.xb.data());
  for_tokens(p.pool, n, c.n_embd, [&](int64_t i) {
    float* xb = &s.xb[i * c.n_embd];
    if (!L.ffn_down_b.empty()) kernels::add(xb, L.ffn_down_b.data(), c.n_embd);
    if (!L.ffn_post_norm.empty()) {
      kernels::rms_norm(xb, L.ffn_post_norm.data(), xb, c.n_embd, c.rms_eps);
    }
    p.add_residual(&s.x[i * c.n_embd], xb);
  });
}

}  // namespace tova::model
