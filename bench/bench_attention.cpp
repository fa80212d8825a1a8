// The attention kernel of one decode step over k held states, in TinyLlama's head layout (32
// query heads, 4 KV heads, head size 64) or SmolLM2's (9 query heads, 3 KV heads), with and
// without writing the probabilities a scoring policy (tova, h2o) asks for, and with f32 or f16
// K/V.
//
// Time is one layer's attention for one token on one thread (multiply by n_layer for a decode
// step); KV_GB is the K/V bytes read per second, to compare with the DRAM bandwidth. With
// layers:1 the same K/V is read on every iteration (from the cache once it fits); layers:30
// cycles through 30 copies, as a decode step reads 30 layers' K/V from memory.
//
//   bench_attention --benchmark_filter='f16:1/scores:0/heads:1'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "simd_env.h"
#include "core/half.h"
#include "kernels/attention.h"

namespace tova::kernels {
namespace {

constexpr int kHeadDim = 64;

struct Layout {
  int n_head, n_head_kv;
};
constexpr Layout kLayouts[] = {{32, 4}, {9, 3}};  // TinyLlama, SmolLM2

struct Inputs {
  std::vector<float> q;
  std::vector<float> k32, v32;
  std::vector<uint16_t> k16, v16;
  std::vector<int64_t> pos;
  std::vector<float> out, probs, scratch;
};

// n_copy copies of the K/V (one per layer), each [n_head_kv][n_slot][head_dim].
Inputs make_inputs(int n_slot, int n_head, int n_head_kv, int n_copy) {
  Inputs in;
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0.f, 1.f);
  in.q.resize(n_head * kHeadDim);
  for (float& x : in.q) x = nd(rng);
  const size_t n_kv = static_cast<size_t>(n_head_kv) * n_slot * kHeadDim * n_copy;
  in.k32.resize(n_kv);
  in.v32.resize(n_kv);
  in.k16.resize(n_kv);
  in.v16.resize(n_kv);
  for (size_t i = 0; i < n_kv; ++i) {
    in.k32[i] = nd(rng);
    in.v32[i] = nd(rng);
    in.k16[i] = fp32_to_fp16(in.k32[i]);
    in.v16[i] = fp32_to_fp16(in.v32[i]);
  }
  // Every slot live, positions shuffled as after evictions.
  in.pos.resize(static_cast<size_t>(n_head_kv) * n_slot);
  for (int g = 0; g < n_head_kv; ++g) {
    for (int s = 0; s < n_slot; ++s) in.pos[static_cast<size_t>(g) * n_slot + s] = s;
    std::shuffle(in.pos.begin() + static_cast<size_t>(g) * n_slot,
                 in.pos.begin() + static_cast<size_t>(g + 1) * n_slot, rng);
  }
  in.out.resize(n_head * kHeadDim);
  in.probs.resize(static_cast<size_t>(n_head) * n_slot);
  in.scratch.resize(static_cast<size_t>(n_head / n_head_kv) * n_slot);
  return in;
}

// Args: {n_slot, f16 (0/1), scores (0/1), layout (0 TinyLlama, 1 SmolLM2), K/V copies}.
void BM_attention(benchmark::State& state) {
  const int n_slot = static_cast<int>(state.range(0));
  const bool f16 = state.range(1) != 0;
  const bool scores = state.range(2) != 0;
  const int n_head = kLayouts[state.range(3)].n_head;
  const int n_head_kv = kLayouts[state.range(3)].n_head_kv;
  const int n_copy = static_cast<int>(state.range(4));
  Inputs in = make_inputs(n_slot, n_head, n_head_kv, n_copy);
  AttentionArgs a{.q = in.q.data(),
                  .n_head = n_head,
                  .n_head_kv = n_head_kv,
                  .head_dim = kHeadDim,
                  .n_slot = n_slot,
                  .k = f16 ? static_cast<const void*>(in.k16.data()) : in.k32.data(),
                  .v = f16 ? static_cast<const void*>(in.v16.data()) : in.v32.data(),
                  .kv_f16 = f16,
                  .pos = in.pos.data(),
                  .max_pos = n_slot,
                  .scale = 0.125f,
                  .out = in.out.data(),
                  .probs = scores ? in.probs.data() : nullptr,
                  .scratch = in.scratch.data(),
                  .scratch_size = static_cast<int64_t>(in.scratch.size())};
  const size_t copy_elems = static_cast<size_t>(n_head_kv) * n_slot * kHeadDim;
  int copy = 0;
  for (auto _ : state) {
    a.k = f16 ? static_cast<const void*>(in.k16.data() + copy * copy_elems)
              : in.k32.data() + copy * copy_elems;
    a.v = f16 ? static_cast<const void*>(in.v16.data() + copy * copy_elems)
              : in.v32.data() + copy * copy_elems;
    copy = copy + 1 == n_copy ? 0 : copy + 1;
    attention(a);
    benchmark::DoNotOptimize(in.out.data());
    benchmark::ClobberMemory();
  }
  const double kv_bytes = 2.0 * n_head_kv * n_slot * kHeadDim * (f16 ? 2 : 4);
  // Shown as "KV_GB=12.3/s".
  state.counters["KV_GB"] =
      benchmark::Counter(kv_bytes * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(f16 ? "f16" : "f32") + (scores ? " scores" : ""));
}

void args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"k", "f16", "scores", "heads", "layers"});
  for (int layout : {0, 1}) {
    for (int f16 : {0, 1}) {
      for (int scores : {0, 1}) {
        for (int k : {64, 512, 4096, 8192}) b->Args({k, f16, scores, layout, 1});
      }
    }
  }
  // From memory: SmolLM2's 30 layers of f16 K/V at depth 4096 (94 MB).
  for (int scores : {0, 1}) b->Args({4096, 1, scores, 1, 30});
}

BENCHMARK(BM_attention)->Apply(args)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tova::kernels

BENCHMARK_MAIN();
