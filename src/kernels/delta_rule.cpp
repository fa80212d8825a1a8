#include "kernels/delta_rule.h"

#include <algorithm>
#include <cmath>
#include <vector>


namespace tova::kernels {

void gated_delta_rule_ref(float* m, const float* q, const float* k, const float* v, float decay,
                          float beta, float scale, int64_t n, float* out) {
  for (int64_t e = 0; e < n * n; ++e) m[e] *= decay;
  std::vector<float> delta(n);
  for (int64_t j = 0; j < n; ++j) {
    double sk = 0.0;
    for (int64_t i = 0; i < n; ++i) sk += static_cast<double>(m[j * n + i]) * k[i];
    delta[j] = (v[j] - static_cast<float>(sk)) * beta;
  }
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < n; ++i) m[j * n + i] += k[i] * delta[j];
  }
  for (int64_t j = 0; j < n; ++j) {
    double sq = 0.0;
    for (int64_t i = 0; i < n; ++i) sq += static_cast<double>(m[j * n + i]) * q[i];
    out[j] = static_cast<float>(sq) * scale;
  }
}

void l2_norm(float* x, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float s = 1.f / std::max(std::sqrt(static_cast<float>(sum)), eps);
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void causal_conv1d_step(float* state, const float* w, const float* x, int64_t channels, int taps,
                        float* y) {
  for (int64_t c = 0; c < channels; ++c) {
    float* st = state + c * taps;
    const float* wc = w + c * (taps + 1);
    float sum = 0.f;
    for (int t = 0; t < taps; ++t) sum += st[t] * wc[t];
    sum += x[c] * wc[taps];
    if (taps > 0) {
      std::copy(st + 1, st + taps, st);
      st[taps - 1] = x[c];
    }
    y[c] = sum;
  }
}

}  // namespace tova::kernels
