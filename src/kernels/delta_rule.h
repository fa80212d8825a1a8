// The kernels of the Gated DeltaNet layer kind (model/layer_deltanet.cpp), as llama.cpp's CPU
// backend computes them (ggml ops ssm_conv, l2_norm and gated_delta_net).
//
// The gated delta rule, one token, one value head, with S the head's [n][n] state matrix,
// q and k l2-normalized [n], v [n], decay = exp(g) (g <= 0) and beta in (0, 1):
//   S     <- decay * S
//   delta  = beta * (v - S^T k)                       (delta[j] = beta (v[j] - sum_i S[i][j] k[i]))
//   S     <- S + k delta^T                            (S[i][j] += k[i] delta[j])
//   out    = scale * S^T q                            (out[j] = scale sum_i S[i][j] q[i])
// The state is stored transposed, as llama.cpp stores it (row j holds column j of S), so each
// of these is a pass over contiguous rows; the fast form does all four for one row before the
// next (one pass over the state per token), which computes every element exactly as the four
// passes do.
#pragma once

#include <cmath>
#include <cstdint>

namespace tova::kernels {

// One token of the gated delta rule for one head; m: [n][n] the transposed state, updated in
// place; out: [n].
void gated_delta_rule(float* m, const float* q, const float* k, const float* v, float decay,
                      float beta, float scale, int64_t n, float* out);
// The scalar reference (four separate passes, sums in double).
void gated_delta_rule_ref(float* m, const float* q, const float* k, const float* v, float decay,
                          float beta, float scale, int64_t n, float* out);

// x /= max(||x||_2, eps) over n floats (ggml_l2_norm; the sum of squares in double).
void l2_norm(float* x, int64_t n, float eps);

// One token of a causal depthwise conv1d over `channels` channels of kernel size taps + 1:
//   y[c] = sum_{t < taps} state[c][t] * w[c][t] + x[c] * w[c][taps]
// then state[c] shifts left by one and takes x[c] (state: [channels][taps], oldest first;
// w: [channels][taps + 1]). Sums in float, tap by tap in order, as ggml_ssm_conv. Scalar only:
// a handful of taps per channel reading a row of state, no gain from lanes across taps, and the
// layer's matrices cost a hundred times more.
void causal_conv1d_step(float* state, const float* w, const float* x, int64_t channels, int taps,
                        float* y);

// softplus as ggml computes it: x above 20, else log(1 + exp(x)) in float.
inline float softplus(float x) { return x > 20.f ? x : std::log(1.f + std::exp(x)); }

}  // namespace tova::kernels
