// The scalar references of a run of tokens through the gated delta rule (kernels/delta_rule.h):
// token by token (the recurrent form), and the chunked form written plainly in double from its
// formulas, so that a test can hold the fast chunked form to both.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/delta_rule.h"

namespace tova::kernels {

void gated_delta_rule_run_ref(float* m, const DeltaRuleRun& run, float scale, int64_t n) {
  for (int64_t t = 0; t < run.n_tok; ++t) {
    const int64_t r = run.rows[t];
    gated_delta_rule_ref(m, run.q + r * run.qkv_stride, run.k + r * run.qkv_stride,
                         run.v + r * run.qkv_stride, std::exp(run.g[r * run.gate_stride]),
                         run.beta[r * run.gate_stride], scale, n, run.out + r * run.out_stride);
  }
}

namespace {

// One chunk of L tokens from t0 of a run, in double: its tokens' q, k, v, beta, the cumulative
// log decay G, and the chunked form's three steps against the state S[i][j] (untransposed).
struct RefChunk {
  RefChunk(const DeltaRuleRun& r, int64_t t0_, int64_t L_, int64_t n_)
      : run(r), t0(t0_), L(L_), n(n_), G(L_) {
    for (int64_t t = 0; t < L; ++t) {
      G[t] = (t > 0 ? G[t - 1] : 0.0) + run.g[run.rows[t0 + t] * run.gate_stride];
    }
  }
  double q(int64_t t, int64_t i) const { return run.q[run.rows[t0 + t] * run.qkv_stride + i]; }
  double k(int64_t t, int64_t i) const { return run.k[run.rows[t0 + t] * run.qkv_stride + i]; }
  double v(int64_t t, int64_t i) const { return run.v[run.rows[t0 + t] * run.qkv_stride + i]; }
  double beta(int64_t t) const { return run.beta[run.rows[t0 + t] * run.gate_stride]; }
  double D(int64_t t, int64_t s) const { return std::exp(G[t] - G[s]); }
  double kdot(int64_t t, int64_t s) const {
    double d = 0;
    for (int64_t i = 0; i < n; ++i) d += k(t, i) * k(s, i);
    return d;
  }

  // U = Ut - W S0, where forward substitution solves
  // (I + A) [W | Ut] = [diag(beta exp(G)) K | diag(beta) V].
  std::vector<double> values(const std::vector<double>& S) const {
    std::vector<double> W(L * n), Ut(L * n);
    for (int64_t t = 0; t < L; ++t) {
      for (int64_t i = 0; i < n; ++i) {
        W[t * n + i] = beta(t) * std::exp(G[t]) * k(t, i);
        Ut[t * n + i] = beta(t) * v(t, i);
      }
      for (int64_t s = 0; s < t; ++s) {
        const double a = beta(t) * D(t, s) * kdot(t, s);
        for (int64_t i = 0; i < n; ++i) {
          W[t * n + i] -= a * W[s * n + i];
          Ut[t * n + i] -= a * Ut[s * n + i];
        }
      }
    }
    std::vector<double> U(L * n);
    for (int64_t t = 0; t < L; ++t) {
      for (int64_t j = 0; j < n; ++j) {
        double ws = 0;
        for (int64_t i = 0; i < n; ++i) ws += W[t * n + i] * S[i * n + j];
        U[t * n + j] = Ut[t * n + j] - ws;
      }
    }
    return U;
  }

  // O = scale (diag(exp(G)) Q S0 + (D o Q K^T, s <= t) U), into the run's output rows.
  void output(const std::vector<double>& S, const std::vector<double>& U, float scale) const {
    for (int64_t t = 0; t < L; ++t) {
      std::vector<double> p(t + 1);  // D[t][s] (q_t . k_s)
      for (int64_t s = 0; s <= t; ++s) {
        double qk = 0;
        for (int64_t i = 0; i < n; ++i) qk += q(t, i) * k(s, i);
        p[s] = D(t, s) * qk;
      }
      float* out = run.out + run.rows[t0 + t] * run.out_stride;
      for (int64_t j = 0; j < n; ++j) {
        double o = 0;
        for (int64_t i = 0; i < n; ++i) o += q(t, i) * S[i * n + j];
        o *= std::exp(G[t]);
        for (int64_t s = 0; s <= t; ++s) o += p[s] * U[s * n + j];
        out[j] = static_cast<float>(scale * o);
      }
    }
  }

  // S_L = exp(G_L) S0 + sum_s D[L][s] k_s u_s^T.
  void update(std::vector<double>& S, const std::vector<double>& U) const {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s_ij = std::exp(G[L - 1]) * S[i * n + j];
        for (int64_t s = 0; s < L; ++s) s_ij += D(L - 1, s) * k(s, i) * U[s * n + j];
        S[i * n + j] = s_ij;
      }
    }
  }

  const DeltaRuleRun& run;
  const int64_t t0, L, n;
  std::vector<double> G;  // cumulative log decay within the chunk
};

}  // namespace

void gated_delta_rule_chunked_ref(float* m, const DeltaRuleRun& run, float scale, int64_t n,
                                  int64_t chunk) {
  // S[i][j] (the state untransposed), in double through the whole run.
  std::vector<double> S(n * n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) S[i * n + j] = m[j * n + i];
  }
  for (int64_t t0 = 0; t0 < run.n_tok; t0 += chunk) {
    const RefChunk c(run, t0, std::min(chunk, run.n_tok - t0), n);
    const std::vector<double> U = c.values(S);
    c.output(S, U, scale);
    c.update(S, U);
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) m[j * n + i] = static_cast<float>(S[i * n + j]);
  }
}

void causal_conv1d_silu_ref(float* state, const float* w, float* x, int64_t x_stride,
                            const int* rows, int64_t n_tok, int64_t channels, int taps) {
  for (int64_t t = 0; t < n_tok; ++t) {
    float* row = x + rows[t] * x_stride;
    causal_conv1d_step(state, w, row, channels, taps, row);
    for (int64_t c = 0; c < channels; ++c) row[c] = row[c] / (1.f + std::exp(-row[c]));
  }
}

void causal_conv1d_ref(float* state, const float* w, float* x, int64_t x_stride, const int* rows,
                       int64_t n_tok, int64_t channels, int taps) {
  for (int64_t t = 0; t < n_tok; ++t) {
    float* row = x + rows[t] * x_stride;
    causal_conv1d_step(state, w, row, channels, taps, row);
  }
}

}  // namespace tova::kernels
