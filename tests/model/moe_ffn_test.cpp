// The mixture-of-experts kind (layer_ffn_moe.cpp) against a float64 reference written out here
// from llama.cpp's build_moe_ffn arithmetic (softmax gating): one token (the decode path) and
// several (grouped by expert), renormalized or not, with and without a shared expert.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "model/layer_kinds.h"

namespace tova::model {
namespace {

constexpr int kEmbd = 16, kExpert = 6, kUsed = 3, kFfExp = 8, kFfShexp = 12;

struct F32Matrix {
  std::vector<float> w;  // [n_out][n_in]
  kernels::WeightMatrix view(int64_t n_in, int64_t n_out) const {
    return {.type = GgmlType::kF32,
            .data = reinterpret_cast<const uint8_t*>(w.data()),
            .n_in = n_in,
            .n_out = n_out,
            .row_bytes = static_cast<uint64_t>(n_in) * 4};
  }
};

std::vector<float> randn(std::mt19937& g, size_t n, float sd) {
  std::normal_distribution<float> d(0.f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

std::vector<double> matvec(const std::vector<float>& w, const std::vector<double>& x, int n_out) {
  const int n_in = static_cast<int>(x.size());
  std::vector<double> y(n_out, 0.0);
  for (int o = 0; o < n_out; ++o) {
    for (int i = 0; i < n_in; ++i) y[o] += double{w[o * n_in + i]} * x[i];
  }
  return y;
}

double silu(double v) { return v / (1.0 + std::exp(-v)); }

struct Case {
  int n_tok;
  bool norm;
  bool shared;
};

class MoeFfn : public ::testing::TestWithParam<Case> {};

TEST_P(MoeFfn, MatchesAFloat64Reference) {
  const Case k = GetParam();
  std::mt19937 g(7 + k.n_tok + 2 * k.norm + 4 * k.shared);
  ModelConfig c;
  c.n_embd = kEmbd;
  c.rms_eps = 1e-5f;
  c.n_expert = kExpert;
  c.n_expert_used = kUsed;
  c.n_ff_exp = kFfExp;
  c.n_ff_shexp = k.shared ? kFfShexp : 0;
  c.expert_weights_norm = k.norm;
  c.expert_weights_scale = k.norm ? 1.f : 0.5f;

  LayerWeights L;
  L.ffn_kind = FfnKind::kMoe;
  L.ffn_norm = randn(g, kEmbd, 0.1f);
  for (float& w : L.ffn_norm) w += 1.f;
  F32Matrix router{randn(g, kExpert * kEmbd, 0.8f)};
  std::vector<F32Matrix> gate, up, down;
  for (int e = 0; e < kExpert; ++e) {
    gate.push_back({randn(g, kFfExp * kEmbd, 0.3f)});
    up.push_back({randn(g, kFfExp * kEmbd, 0.3f)});
    down.push_back({randn(g, kEmbd * kFfExp, 0.3f)});
  }
  L.moe.router = router.view(kEmbd, kExpert);
  for (int e = 0; e < kExpert; ++e) {
    L.moe.gate.push_back(gate[e].view(kEmbd, kFfExp));
    L.moe.up.push_back(up[e].view(kEmbd, kFfExp));
    L.moe.down.push_back(down[e].view(kFfExp, kEmbd));
  }
  F32Matrix sh_gate{randn(g, kFfShexp * kEmbd, 0.3f)}, sh_up{randn(g, kFfShexp * kEmbd, 0.3f)},
      sh_down{randn(g, kEmbd * kFfShexp, 0.3f)};
  if (k.shared) {
    L.moe.shared_gate_inp = randn(g, kEmbd, 0.5f);
    L.moe.shared_gate = sh_gate.view(kEmbd, kFfShexp);
    L.moe.shared_up = sh_up.view(kEmbd, kFfShexp);
    L.moe.shared_down = sh_down.view(kFfShexp, kEmbd);
  }

  ForwardScratch s;
  s.x = randn(g, static_cast<size_t>(k.n_tok) * kEmbd, 1.f);
  const std::vector<float> x0 = s.x;
  ThreadPool pool(2);
  const LayerPass p{.c = c, .s = s, .pool = pool, .n = k.n_tok};
  moe_ffn_block(p, L);

  for (int t = 0; t < k.n_tok; ++t) {
    std::vector<double> h(kEmbd);
    double ss = 0;
    for (int i = 0; i < kEmbd; ++i) ss += double{x0[t * kEmbd + i]} * x0[t * kEmbd + i];
    const double inv = 1.0 / std::sqrt(ss / kEmbd + c.rms_eps);
    for (int i = 0; i < kEmbd; ++i) h[i] = x0[t * kEmbd + i] * inv * L.ffn_norm[i];
    std::vector<double> pr = matvec(router.w, h, kExpert);
    const double mx = *std::max_element(pr.begin(), pr.end());
    double sum = 0;
    for (double& v : pr) sum += (v = std::exp(v - mx));
    for (double& v : pr) v /= sum;
    std::vector<int> order(kExpert);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return pr[a] > pr[b]; });
    order.resize(kUsed);
    double wsum = 0;
    for (int e : order) wsum += pr[e];
    std::vector<double> out(kEmbd, 0.0);
    for (int e : order) {
      double w = k.norm ? pr[e] / wsum : pr[e];
      w *= c.expert_weights_scale;
      const auto ga = matvec(gate[e].w, h, kFfExp), u = matvec(up[e].w, h, kFfExp);
      std::vector<double> a(kFfExp);
      for (int i = 0; i < kFfExp; ++i) a[i] = silu(ga[i]) * u[i];
      const auto y = matvec(down[e].w, a, kEmbd);
      for (int i = 0; i < kEmbd; ++i) out[i] += w * y[i];
    }
    if (k.shared) {
      double gl = 0;
      for (int i = 0; i < kEmbd; ++i) gl += double{L.moe.shared_gate_inp[i]} * h[i];
      const double sg = 1.0 / (1.0 + std::exp(-gl));
      const auto ga = matvec(sh_gate.w, h, kFfShexp), u = matvec(sh_up.w, h, kFfShexp);
      std::vector<double> a(kFfShexp);
      for (int i = 0; i < kFfShexp; ++i) a[i] = silu(ga[i]) * u[i];
      const auto y = matvec(sh_down.w, a, kEmbd);
      for (int i = 0; i < kEmbd; ++i) out[i] += sg * y[i];
    }
    for (int i = 0; i < kEmbd; ++i) {
      const double want = x0[t * kEmbd + i] + out[i];
      EXPECT_NEAR(s.x[t * kEmbd + i], want, 1e-5 * (1 + std::fabs(want)))
          << "token " << t << " element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, MoeFfn,
                         ::testing::Values(Case{1, true, false}, Case{1, false, true},
                                           Case{5, true, false}, Case{5, false, true},
                                           Case{33, true, true}));

}  // namespace
}  // namespace tova::model
