// The most float32 multiply-adds one thread issues per second: 12 independent FMA chains
// (enough to hide the latency on Zen 4 and recent Intel cores), no loads. The ceiling that
// bench_matmul's float GFLOP/s are read against (docs/RESULTS.md (e), "Speed"): a matmul
// already near it gains little from any kernel change. Counter GFLOP/s = 2 * MACs per second.
//
//   bench_fma_peak --benchmark_filter='avx512'
#include <benchmark/benchmark.h>

#include <immintrin.h>

#include <cstdint>

namespace {

constexpr int kChains = 12;
constexpr int64_t kRounds = 1 << 20;  // FMA rounds per benchmark iteration

template <class V>
float lane0(const V& v) {
  return v[0];
}

__attribute__((target("avx512f"))) float fma_chains_512(int64_t rounds) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.9999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t r = 0; r < rounds; ++r) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  float s = 0;
  for (int i = 0; i < kChains; ++i) s += lane0(acc[i]);
  return s;
}

__attribute__((target("avx2,fma"))) float fma_chains_256(int64_t rounds) {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(0.001f * static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.9999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t r = 0; r < rounds; ++r) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  float s = 0;
  for (int i = 0; i < kChains; ++i) s += lane0(acc[i]);
  return s;
}

void run(benchmark::State& state, float (*fn)(int64_t), int lanes, bool supported) {
  if (!supported) {
    state.SkipWithError("this CPU lacks the instruction set");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(fn(kRounds));
  const double flops = 2.0 * kRounds * kChains * lanes;
  state.counters["GFLOP/s"] = benchmark::Counter(
      flops * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

void BM_Avx512(benchmark::State& state) {
  run(state, &fma_chains_512, 16, __builtin_cpu_supports("avx512f"));
}
void BM_Avx2(benchmark::State& state) {
  run(state, &fma_chains_256, 8, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
}

BENCHMARK(BM_Avx512)->Name("fma_peak/avx512")->UseRealTime();
BENCHMARK(BM_Avx2)->Name("fma_peak/avx2")->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
