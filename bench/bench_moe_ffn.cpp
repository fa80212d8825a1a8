// One mixture-of-experts FFN layer (model::moe_ffn_block: router, top-k, the chosen experts'
// gate/up/down, combine) at the real shapes of issue 33, 1 and 2 threads:
//   gpt_oss:  gpt-oss-20b, 2880 wide, 32 experts of 2880, top-4, MXFP4 experts, biases,
//             top-k then softmax, the clamped SwiGLU;
//   qwen3moe: Qwen3-30B-A3B, 2048 wide, 128 experts of 768, top-8, Q3_K experts.
// The router is F32 (as the converted files keep it). The experts' weights are real blocks of
// the type, written by quantize_row_ref from random rows (a few rows repeated: the content
// does not change the speed); one layer is 260-420 MB, beyond the caches, so a decode call
// streams its chosen experts from DRAM as the model does. Each iteration takes new random
// inputs from a ring of 16, so the routing changes from call to call.
//
// ntok:1 is one decode step of one layer; ntok:512 a pp512 batch. Counters: tok/s of this one
// layer (divide by the layer count, 24 or 48, for the model's FFN share).
//
//   bench_moe_ffn --benchmark_filter='gpt_oss/ntok:1/'    (TOVA_SIMD=avx2 for the AVX2 kernels)
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "kernels/quant.h"
#include "model/layer_kinds.h"
#include "layer_bench.h"
#include "simd_env.h"
#include "tova/simd_target.h"

namespace tova::model {
namespace {

struct Shape {
  const char* name;
  int n_embd, n_expert, n_used, n_ff_exp;
  GgmlType type;
  bool gpt_oss;
};
constexpr Shape kShapes[] = {{"gpt_oss", 2880, 32, 4, 2880, GgmlType::kMXFP4, true},
                             {"qwen3moe", 2048, 128, 8, 768, GgmlType::kQ3_K, false}};

struct Layer {
  ModelConfig c;
  LayerWeights L;
  std::vector<float> router;
  bench::WeightStore store;  // the experts' bytes
};

// The layer of the running benchmark, rebuilt when the shape changes (one alive at a time).
const Layer& get_layer(const Shape& sh) {
  static std::unique_ptr<Layer> layer;
  static const Shape* built = nullptr;
  if (built == &sh) return *layer;
  layer.reset();
  auto l = std::make_unique<Layer>();
  std::mt19937 g(1);
  ModelConfig& c = l->c;
  c.n_embd = sh.n_embd;
  c.rms_eps = 1e-5f;
  c.n_expert = sh.n_expert;
  c.n_expert_used = sh.n_used;
  c.n_ff_exp = sh.n_ff_exp;
  if (sh.gpt_oss) {
    c.moe_gating = MoeGating::kSoftmaxOfChosen;
    c.ffn_act = FfnAct::kSwigluOai;
  } else {
    c.expert_weights_norm = true;
  }
  LayerWeights& L = l->L;
  L.ffn_kind = FfnKind::kMoe;
  L.ffn_norm.assign(sh.n_embd, 1.f);
  std::normal_distribution<float> d(0.f, 0.5f);
  l->router.resize(static_cast<size_t>(sh.n_expert) * sh.n_embd);
  for (float& v : l->router) v = d(g);
  L.moe.router = {.type = GgmlType::kF32,
                  .data = reinterpret_cast<const uint8_t*>(l->router.data()),
                  .n_in = sh.n_embd,
                  .n_out = sh.n_expert,
                  .row_bytes = static_cast<uint64_t>(sh.n_embd) * 4};
  if (sh.gpt_oss) {
    L.moe.router_b.assign(sh.n_expert, 0.f);
    L.moe.gate_b.assign(static_cast<size_t>(sh.n_expert) * sh.n_ff_exp, 0.01f);
    L.moe.up_b.assign(static_cast<size_t>(sh.n_expert) * sh.n_ff_exp, 0.01f);
    L.moe.down_b.assign(static_cast<size_t>(sh.n_expert) * sh.n_embd, 0.01f);
  }
  // Each expert from 16 random rows (quantizing thousands of rows per expert is slow).
  auto add = [&](std::vector<kernels::WeightMatrix>& to, int64_t n_out, int64_t n_in) {
    to.push_back(l->store.add(sh.type, n_out, n_in, g, 16));
  };
  l->store.reserve(3 * sh.n_expert);
  for (int e = 0; e < sh.n_expert; ++e) {
    add(L.moe.gate, sh.n_ff_exp, sh.n_embd);
    add(L.moe.up, sh.n_ff_exp, sh.n_embd);
    add(L.moe.down, sh.n_embd, sh.n_ff_exp);
  }
  layer = std::move(l);
  built = &sh;
  return *layer;
}

void bm_moe(benchmark::State& state, const Shape* sh, int64_t n_tok, int n_threads) {
  const Layer& l = get_layer(*sh);
  constexpr int kRing = 16;
  std::mt19937 g(7);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<std::vector<float>> xs(kRing, std::vector<float>(n_tok * sh->n_embd));
  for (auto& x : xs) {
    for (float& v : x) v = d(g);
  }
  ForwardScratch s;
  ThreadPool& p = bench::bench_pool(n_threads);
  int i = 0;
  for (auto _ : state) {
    state.PauseTiming();
    s.x = xs[i];
    i = (i + 1) % kRing;
    state.ResumeTiming();
    moe_ffn_block({.c = l.c, .s = s, .pool = p, .n = n_tok}, l.L);
    benchmark::DoNotOptimize(s.x.data());
  }
  bench::count_tokens(state, n_tok);
}

void register_all() {
  for (const Shape& sh : kShapes) bench::register_ntok_threads(sh.name, bm_moe, &sh);
}

}  // namespace
}  // namespace tova::model

int main(int argc, char** argv) {
  return tova::bench::run_benchmarks(argc, argv, tova::model::register_all);
}
