// One Mamba2 layer (the kMamba2 mixer kind, layer_mamba2.cpp: norm, ssm_in, the causal conv1d +
// bias + silu, softplus steps, the selective scan, the skip, the gate and group norm, ssm_out)
// at the shape of Granite-4.0-H-Tiny's Mamba2 layers (1536 wide, d_inner 3072 in 48 heads of
// 64, one group, state 128, a 4-tap conv), Q8_0 projections, 1 and 2 threads, one sequence:
//   ntok:1    one decode step of the layer (the state carried from call to call)
//   ntok:512  a pp512 batch (the prompt path: the scan's recurrent form, token by token per head)
// and the scan alone for one head of 64 x 128 through 512 tokens (scan_head64x128: recurrent
// against chunked), which with the layer's ntok:512 time says what share of a prompt the scan
// takes. Counters: tok/s of this one layer (Granite-4.0-H-Tiny has 36 of them).
// Short; run it niced:
//   nice -n 19 bench_mamba2 --benchmark_min_time=0.5   (TOVA_SIMD=avx2 for the AVX2 kernels)
#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "kernels/quant.h"
#include "kernels/ssm_scan.h"
#include "kv/multi_state.h"
#include "model/layer_kinds.h"
#include "layer_bench.h"
#include "simd_env.h"
#include "tova/policy_spec.h"
#include "tova/simd_target.h"

namespace tova::model {
namespace {

constexpr int kEmbd = 1536, kInner = 3072, kHeads = 48, kState = 128, kGroups = 1, kConv = 4;

struct Layer {
  ModelConfig c;
  LayerWeights L;
  bench::WeightStore store{2};
};

const Layer& layer() {
  static const std::unique_ptr<Layer> l = [] {
    auto l = std::make_unique<Layer>();
    std::mt19937 g(1);
    ModelConfig& c = l->c;
    c.n_embd = kEmbd;
    c.rms_eps = 1e-5f;
    c.mamba2 = {.conv_kernel = kConv,
                .d_inner = kInner,
                .d_state = kState,
                .n_head = kHeads,
                .n_group = kGroups};
    const Mamba2Config& m = c.mamba2;
    LayerWeights& L = l->L;
    L.mixer_kind = MixerKind::kMamba2;
    L.attn_norm.assign(kEmbd, 1.f);
    Mamba2Weights& W = L.mamba2;
    auto matrix = [&](kernels::WeightMatrix& w, int64_t n_out, int64_t n_in) {
      w = l->store.add(GgmlType::kQ8_0, n_out, n_in, g);
    };
    matrix(W.in, m.in_proj_dim(), kEmbd);
    matrix(W.out, kEmbd, kInner);
    std::normal_distribution<float> n01(0.f, 0.5f);
    W.conv.resize(static_cast<size_t>(m.conv_dim()) * kConv);
    for (float& v : W.conv) v = n01(g);
    W.conv_b.assign(m.conv_dim(), 0.f);
    W.dt_bias.assign(kHeads, 0.5f);
    W.a.assign(kHeads, -1.f);
    W.d.assign(kHeads, 1.f);
    W.norm.assign(kInner, 1.f);
    return l;
  }();
  return *l;
}

void bm_mamba2(benchmark::State& state, int64_t n_tok, int n_threads) {
  const Layer& l = layer();
  bench::time_recurrent_mixer(state, l.c, l.L, MixerKind::kMamba2, n_tok, n_threads);
}

// The scan alone: one head of 64 x 128 through 512 tokens, one thread (the state, 32 KiB, in L1),
// token by token or in chunks of 64.
void bm_scan(benchmark::State& state, bool chunked) {
  constexpr int64_t P = kInner / kHeads, N = kState, n_tok = 512, stride = P + 2 * N + 1;
  std::mt19937 g(3);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> in(n_tok * stride), y(n_tok * P), st(P * N, 0.f);
  for (float& v : in) v = u(g);
  for (int64_t t = 0; t < n_tok; ++t) in[t * stride + P + 2 * N] = 0.1f + 0.05f * u(g);
  std::vector<int> rows(n_tok);
  std::iota(rows.begin(), rows.end(), 0);
  const kernels::SsmScanRun run{.rows = rows.data(),
                                .n_tok = n_tok,
                                .x = in.data(),
                                .x_stride = stride,
                                .b = in.data() + P,
                                .c = in.data() + P + N,
                                .bc_stride = stride,
                                .dt = in.data() + P + 2 * N,
                                .dt_stride = stride,
                                .y = y.data(),
                                .y_stride = P};
  std::vector<float> work(kernels::ssm_chunk_workspace_floats(P, N));
  for (auto _ : state) {
    if (chunked) {
      kernels::ssm_scan_chunked(st.data(), run, -1.f, P, N, work.data());
    } else {
      kernels::ssm_scan(st.data(), run, -1.f, P, N);
    }
    benchmark::DoNotOptimize(y.data());
  }
  bench::count_tokens(state, n_tok);
}

void register_all() {
  benchmark::RegisterBenchmark("scan_head64x128/recurrent/ntok:512", bm_scan, false)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("scan_head64x128/chunked/ntok:512", bm_scan, true)
      ->Unit(benchmark::kMillisecond);
  bench::register_ntok_threads("granite_4_0_h_tiny", bm_mamba2);
}

}  // namespace
}  // namespace tova::model

int main(int argc, char** argv) {
  return tova::bench::run_benchmarks(argc, argv, tova::model::register_all);
}
