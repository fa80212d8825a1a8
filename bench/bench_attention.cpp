// The attention kernel of one decode step over k held states, in TinyLlama's head layout (32
// query heads, 4 KV heads, head size 64) or SmolLM2's (9 query heads, 3 KV heads), with and
// without writing the probabilities a scoring policy (tova, h2o) asks for, and with K/V stored
// as f32, f16, bf16, q8_0 or q4_0 (type: the core/kv_type.h tag 0-4), rotated or not.
//
// Time is one layer's attention for one token on one thread (multiply by n_layer for a decode
// step); KV_GB is the K/V bytes read per second, to compare with the DRAM bandwidth. With
// layers:1 the same K/V is read on every iteration (from the cache once it fits); layers:30
// cycles through 30 copies, as a decode step reads 30 layers' K/V from memory.
//
//   bench_attention --benchmark_filter='type:(1|3)/rot:0/scores:0/heads:1'
//   TOVA_BENCH_TARGET=AVX2 bench_attention ...   # force a compiled Highway target
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <random>
#include <vector>

#include "core/kv_type.h"
#include "hwy/targets.h"
#include "simd_env.h"
#include "core/half.h"
#include "kernels/attention.h"
#include "kernels/kv_rows.h"
#include "kernels/quant.h"

namespace tova::kernels {
namespace {

constexpr int kHeadDim = 64;

struct Layout {
  int n_head, n_head_kv;
};
constexpr Layout kLayouts[] = {{32, 4}, {9, 3}};  // TinyLlama, SmolLM2

struct Inputs {
  std::vector<float> q;
  std::vector<uint8_t> k, v;  // n_copy copies of the key pools and value rows
  size_t k_copy = 0, v_copy = 0;  // bytes of one copy
  std::vector<int64_t> pos;
  std::vector<float> out, probs, scratch;
};

// n_copy copies of the K/V (one per layer), stored as LayerState stores them.
Inputs make_inputs(int n_slot, int n_head, int n_head_kv, int n_copy, const KvFormat& f) {
  Inputs in;
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0.f, 1.f);
  in.q.resize(n_head * kHeadDim);
  for (float& x : in.q) x = nd(rng);
  const size_t k_head = key_pool_bytes(f.k, kHeadDim, n_slot);
  const size_t v_row = kv_row_bytes(f.v, kHeadDim);
  in.k_copy = n_head_kv * k_head;
  in.v_copy = static_cast<size_t>(n_head_kv) * n_slot * v_row;
  in.k.resize(in.k_copy * n_copy);
  in.v.resize(in.v_copy * n_copy);
  std::vector<float> x(kHeadDim);
  std::vector<uint8_t> row(kv_row_bytes(f.k, kHeadDim));
  for (int c = 0; c < n_copy; ++c) {
    for (int g = 0; g < n_head_kv; ++g) {
      for (int s = 0; s < n_slot; ++s) {
        for (float& e : x) e = nd(rng);
        kv_store_rows_ref(f.k, f.rotate, x.data(), row.data(), 1, kHeadDim);
        key_put_row(f.k, kHeadDim,
                    &in.k[c * in.k_copy + g * k_head + key_tile_offset(f.k, kHeadDim, s)],
                    s % key_tile_slots(f.k), row.data());
        for (float& e : x) e = nd(rng);
        kv_store_rows_ref(f.v, f.rotate, x.data(),
                          &in.v[c * in.v_copy + (static_cast<size_t>(g) * n_slot + s) * v_row], 1,
                          kHeadDim);
      }
    }
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

// Args: {n_slot, type (KvType tag), rot (0/1), scores (0/1), layout (0 TinyLlama, 1 SmolLM2),
// K/V copies}.
void BM_attention(benchmark::State& state) {
  const int n_slot = static_cast<int>(state.range(0));
  const KvType type = static_cast<KvType>(state.range(1));
  const KvFormat f(type, type, state.range(2) != 0 && kv_quantized(type));
  const bool scores = state.range(3) != 0;
  const int n_head = kLayouts[state.range(4)].n_head;
  const int n_head_kv = kLayouts[state.range(4)].n_head_kv;
  const int n_copy = static_cast<int>(state.range(5));
  Inputs in = make_inputs(n_slot, n_head, n_head_kv, n_copy, f);
  AttentionArgs a{.q = in.q.data(),
                  .n_head = n_head,
                  .n_head_kv = n_head_kv,
                  .head_dim = kHeadDim,
                  .n_slot = n_slot,
                  .k = in.k.data(),
                  .v = in.v.data(),
                  .k_type = f.k,
                  .v_type = f.v,
                  .k_rotated = f.rotate,
                  .v_rotated = f.rotate,
                  .pos = in.pos.data(),
                  .max_pos = n_slot,
                  .scale = 0.125f,
                  .out = in.out.data(),
                  .probs = scores ? in.probs.data() : nullptr,
                  .scratch = in.scratch.data(),
                  .scratch_size = static_cast<int64_t>(in.scratch.size())};
  int copy = 0;
  for (auto _ : state) {
    a.k = in.k.data() + copy * in.k_copy;
    a.v = in.v.data() + copy * in.v_copy;
    copy = copy + 1 == n_copy ? 0 : copy + 1;
    attention(a);
    benchmark::DoNotOptimize(in.out.data());
    benchmark::ClobberMemory();
  }
  const double kv_bytes = static_cast<double>(n_head_kv) * n_slot * f.slot_bytes(kHeadDim);
  // Shown as "KV_GB=12.3/s".
  state.counters["KV_GB"] =
      benchmark::Counter(kv_bytes * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(f.label() + (scores ? " scores" : "") + " " + simd_target_name());
}

void args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"k", "type", "rot", "scores", "heads", "layers"});
  for (int layout : {0, 1}) {
    for (int type = 0; type < kKvTypeCount; ++type) {
      for (int scores : {0, 1}) {
        for (int k : {64, 512, 4096, 8192}) b->Args({k, type, 0, scores, layout, 1});
      }
    }
    for (int type : {3, 4}) b->Args({4096, type, 1, 0, layout, 1});
  }
  // From memory: SmolLM2's 30 layers of K/V at depth 4096 (94 MB in f16).
  for (int type = 0; type < kKvTypeCount; ++type) {
    for (int scores : {0, 1}) b->Args({4096, type, 0, scores, 1, 30});
  }
}

BENCHMARK(BM_attention)->Apply(args)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tova::kernels

// TOVA_BENCH_TARGET=NAME (a Highway target name such as AVX2 or AVX3_DL) runs every benchmark
// on that compiled target instead of the best one this CPU supports.
int main(int argc, char** argv) {
  if (const char* want = std::getenv("TOVA_BENCH_TARGET")) {
    bool found = false;
    for (int64_t t : hwy::SupportedAndGeneratedTargets()) {
      if (std::string(hwy::TargetName(t)) == want) {
        hwy::SetSupportedTargetsForTest(t);
        found = true;
      }
    }
    if (!found) {
      std::fprintf(stderr, "TOVA_BENCH_TARGET=%s: not a compiled target this CPU supports\n", want);
      return 1;
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
