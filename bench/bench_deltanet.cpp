// One Gated DeltaNet layer (model::deltanet_block: norm, the qkv/z/beta/alpha projections, the
// causal conv1d + silu, l2 norms, gates, the delta rule, gated RMSNorm, ssm_out) at the shape
// of Qwen3.5-4B's DeltaNet layers (2560 wide, 16 key heads and 32 value heads of 128, a 4-tap
// conv), Q8_0 projections, 1 and 2 threads, one sequence:
//   ntok:1    one decode step of the layer (the state carried from call to call)
//   ntok:512  a pp512 batch (the prompt path: the chunked delta rule)
// and the delta rule alone for one head (rule_head128: recurrent against chunked).
// Counters: tok/s of this one layer (Qwen3.5-4B has 24 of them). Short; run it niced:
//   nice -n 19 bench_deltanet --benchmark_min_time=0.5   (TOVA_SIMD=avx2 for the AVX2 kernels)
#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "kernels/delta_rule.h"
#include "kernels/quant.h"
#include "kv/multi_state.h"
#include "model/layer_kinds.h"
#include "layer_bench.h"
#include "simd_env.h"
#include "tova/policy_spec.h"
#include "tova/simd_target.h"

namespace tova::model {
namespace {

constexpr int kEmbd = 2560, kKeyHeads = 16, kValueHeads = 32, kHeadDim = 128, kConv = 4;

struct Layer {
  ModelConfig c;
  LayerWeights L;
  bench::WeightStore store{5};
};

const Layer& layer() {
  static const std::unique_ptr<Layer> l = [] {
    auto l = std::make_unique<Layer>();
    std::mt19937 g(1);
    ModelConfig& c = l->c;
    c.n_embd = kEmbd;
    c.rms_eps = 1e-6f;
    c.deltanet = {.conv_kernel = kConv, .n_k_head = kKeyHeads, .n_v_head = kValueHeads,
                  .head_dim = kHeadDim};
    const DeltaNetConfig& d = c.deltanet;
    LayerWeights& L = l->L;
    L.mixer_kind = MixerKind::kDeltaNet;
    L.attn_norm.assign(kEmbd, 1.f);
    DeltaNetWeights& W = L.deltanet;
    auto matrix = [&](kernels::WeightMatrix& m, int64_t n_out, int64_t n_in) {
      m = l->store.add(GgmlType::kQ8_0, n_out, n_in, g);
    };
    matrix(W.qkv, d.conv_dim(), kEmbd);
    matrix(W.z, d.value_dim(), kEmbd);
    matrix(W.beta, kValueHeads, kEmbd);
    matrix(W.alpha, kValueHeads, kEmbd);
    matrix(W.out, kEmbd, d.value_dim());
    std::normal_distribution<float> n01(0.f, 0.5f);
    W.conv.resize(static_cast<size_t>(d.conv_dim()) * kConv);
    for (float& v : W.conv) v = n01(g);
    W.dt_bias.assign(kValueHeads, 0.5f);
    W.a.assign(kValueHeads, -1.f);
    W.norm.assign(kHeadDim, 1.f);
    return l;
  }();
  return *l;
}

void bm_deltanet(benchmark::State& state, int64_t n_tok, int n_threads) {
  const Layer& l = layer();
  bench::time_recurrent_mixer(state, l.c, l.L, MixerKind::kDeltaNet, n_tok, n_threads);
}

// The delta rule alone, one value head of 128 through 512 tokens, one thread: the recurrent
// form token by token against the chunked form (the state, 64 KB, stays in L2 either way).
void bm_rule(benchmark::State& state, bool chunked) {
  constexpr int64_t n = kHeadDim, n_tok = 512;
  std::mt19937 g(3);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> qkv(n_tok * 3 * n), gates(n_tok * 2), out(n_tok * n), m(n * n, 0.f);
  for (float& v : qkv) v = u(g);
  for (int64_t t = 0; t < n_tok; ++t) {
    kernels::l2_norm(&qkv[t * 3 * n], n, 1e-6f);
    kernels::l2_norm(&qkv[t * 3 * n + n], n, 1e-6f);
    gates[2 * t] = -0.1f * std::fabs(u(g));
    gates[2 * t + 1] = 0.5f * (1 + u(g));
  }
  std::vector<int> rows(n_tok);
  std::iota(rows.begin(), rows.end(), 0);
  const kernels::DeltaRuleRun run{.rows = rows.data(), .n_tok = n_tok, .q = qkv.data(),
                                  .k = qkv.data() + n, .v = qkv.data() + 2 * n,
                                  .qkv_stride = 3 * n, .g = gates.data(), .beta = gates.data() + 1,
                                  .gate_stride = 2, .out = out.data(), .out_stride = n};
  std::vector<float> work(kernels::delta_chunk_workspace_floats(n));
  const float scale = 1.f / std::sqrt(static_cast<float>(n));
  for (auto _ : state) {
    if (chunked) {
      kernels::gated_delta_rule_chunked(m.data(), run, scale, n, work.data());
    } else {
      for (int64_t t = 0; t < n_tok; ++t) {
        kernels::gated_delta_rule(m.data(), &qkv[t * 3 * n], &qkv[t * 3 * n + n],
                                  &qkv[t * 3 * n + 2 * n], std::exp(gates[2 * t]),
                                  gates[2 * t + 1], scale, n, &out[t * n]);
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
  bench::count_tokens(state, n_tok);
}

void register_all() {
  benchmark::RegisterBenchmark("rule_head128/recurrent/ntok:512", bm_rule, false)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("rule_head128/chunked/ntok:512", bm_rule, true)
      ->Unit(benchmark::kMillisecond);
  bench::register_ntok_threads("qwen35_4b", bm_deltanet);
}

}  // namespace
}  // namespace tova::model

int main(int argc, char** argv) {
  return tova::bench::run_benchmarks(argc, argv, tova::model::register_all);
}
