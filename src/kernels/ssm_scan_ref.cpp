// The scalar reference of Mamba2's selective scan (kernels/ssm_scan.h).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/ssm_scan.h"

namespace tova::kernels {

void ssm_scan_ref(float* state, const SsmScanRun& run, float a, int64_t head_dim, int64_t d_state) {
  for (int64_t t = 0; t < run.n_tok; ++t) {
    const int64_t r = run.rows[t];
    const double dt = run.dt[r * run.dt_stride];
    const double decay = std::exp(dt * a);
    const float* x = run.x + r * run.x_stride;
    const float* B = run.b + r * run.bc_stride;
    const float* C = run.c + r * run.bc_stride;
    float* y = run.y + r * run.y_stride;
    for (int64_t p = 0; p < head_dim; ++p) {
      float* s = state + p * d_state;
      const double x_dt = x[p] * dt;
      double sum = 0.0;
      for (int64_t j = 0; j < d_state; ++j) {
        const double v = s[j] * decay + B[j] * x_dt;
        s[j] = static_cast<float>(v);
        sum += v * C[j];
      }
      y[p] = static_cast<float>(sum);
    }
  }
}

void ssm_scan_chunked_ref(float* state, const SsmScanRun& run, float a, int64_t head_dim,
                          int64_t d_state, int64_t chunk) {
  const int64_t P = head_dim, N = d_state;
  std::vector<double> S(P * N), G, y;
  for (int64_t e = 0; e < P * N; ++e) S[e] = state[e];
  for (int64_t t0 = 0; t0 < run.n_tok; t0 += chunk) {
    const int64_t L = std::min(chunk, run.n_tok - t0);
    auto row = [&](int64_t t) { return static_cast<int64_t>(run.rows[t0 + t]); };
    auto dt = [&](int64_t t) { return static_cast<double>(run.dt[row(t) * run.dt_stride]); };
    auto X = [&](int64_t t, int64_t p) {
      return static_cast<double>(run.x[row(t) * run.x_stride + p]);
    };
    auto B = [&](int64_t t, int64_t j) {
      return static_cast<double>(run.b[row(t) * run.bc_stride + j]);
    };
    auto C = [&](int64_t t, int64_t j) {
      return static_cast<double>(run.c[row(t) * run.bc_stride + j]);
    };
    G.assign(L, 0.0);
    double acc = 0.0;
    for (int64_t t = 0; t < L; ++t) G[t] = acc += dt(t) * a;
    // Y = M X + diag(exp(G)) C S0^T.
    for (int64_t t = 0; t < L; ++t) {
      y.assign(P, 0.0);
      for (int64_t s = 0; s <= t; ++s) {
        double cb = 0.0;
        for (int64_t j = 0; j < N; ++j) cb += C(t, j) * B(s, j);
        const double m = cb * std::exp(G[t] - G[s]) * dt(s);
        for (int64_t p = 0; p < P; ++p) y[p] += m * X(s, p);
      }
      const double eg = std::exp(G[t]);
      for (int64_t p = 0; p < P; ++p) {
        double cs = 0.0;
        for (int64_t j = 0; j < N; ++j) cs += C(t, j) * S[p * N + j];
        run.y[row(t) * run.y_stride + p] = static_cast<float>(y[p] + eg * cs);
      }
    }
    // S_L = exp(G_L) S0 + sum_s exp(G_L - G_s) dt_s x_s B_s^T.
    const double eL = std::exp(G[L - 1]);
    for (int64_t p = 0; p < P; ++p) {
      for (int64_t j = 0; j < N; ++j) {
        double v = eL * S[p * N + j];
        for (int64_t s = 0; s < L; ++s) v += std::exp(G[L - 1] - G[s]) * dt(s) * X(s, p) * B(s, j);
        S[p * N + j] = v;
      }
    }
  }
  for (int64_t e = 0; e < P * N; ++e) state[e] = static_cast<float>(S[e]);
}

}  // namespace tova::kernels
