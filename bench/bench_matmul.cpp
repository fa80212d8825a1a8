// matmul throughput for TinyLlama-sized matrices in every weight type, 1 and 2 threads.
//
// Counters: GB/s = weight bytes streamed per second (what bounds decode), GFLOP/s = 2 * n_out *
// n_in * n_tok per second (what bounds prompt processing), and tinyllama_tok/s = GFLOP/s / 2.2,
// the prompt speed a TinyLlama-1.1B forward pass (~2.2 GFLOP per token) would have if every
// matmul ran at this rate.
//
// Each benchmark cycles through enough copies of its matrix to exceed the caches
// (TOVA_BENCH_ARENA_MB, default 1024), so n_tok = 1 measures streaming from DRAM as in decode.
//
//   bench_matmul --benchmark_filter='q4_0/2048x2048/ntok:1/'
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"
#include "simd_env.h"
#include "tova/simd_target.h"

namespace tova::kernels {
namespace {

constexpr double kTinyLlamaFlopsPerToken = 2.2e9;

size_t arena_bytes() {
  const char* env = std::getenv("TOVA_BENCH_ARENA_MB");
  const long mb = env != nullptr ? std::atol(env) : 1024;
  return static_cast<size_t>(mb > 0 ? mb : 1) << 20;
}

// Copies of one quantized matrix, laid end to end.
struct Arena {
  GgmlType type;
  int64_t n_out, n_in;
  uint64_t row_bytes = 0, matrix_bytes = 0;
  int copies = 0;
  std::vector<uint8_t> data;
};

// The arena of the running benchmark; rebuilt only when type or shape change (benchmarks are
// registered grouped by both), so one arena is alive at a time.
const Arena& get_arena(GgmlType type, int64_t n_out, int64_t n_in) {
  static std::unique_ptr<Arena> arena;
  if (arena && arena->type == type && arena->n_out == n_out && arena->n_in == n_in) return *arena;
  arena.reset();
  auto a = std::make_unique<Arena>();
  a->type = type;
  a->n_out = n_out;
  a->n_in = n_in;
  a->row_bytes = bytes_per_row(type, n_in).value();
  a->matrix_bytes = a->row_bytes * static_cast<uint64_t>(n_out);
  a->copies = static_cast<int>(std::max<uint64_t>(1, arena_bytes() / a->matrix_bytes));
  a->data.resize(a->matrix_bytes * static_cast<uint64_t>(a->copies));
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<float> row(static_cast<size_t>(n_in));
  for (int64_t o = 0; o < n_out; ++o) {
    for (auto& v : row) v = dist(rng);
    quantize_row_ref(type, row.data(), a->data.data() + o * a->row_bytes, n_in);
  }
  for (int c = 1; c < a->copies; ++c) {
    std::memcpy(a->data.data() + c * a->matrix_bytes, a->data.data(), a->matrix_bytes);
  }
  arena = std::move(a);
  return *arena;
}

ThreadPool& pool(int n_threads) {
  static ThreadPool pool1(1), pool2(2);
  return n_threads == 1 ? pool1 : pool2;
}

void bm_matmul(benchmark::State& state, GgmlType type, int64_t n_out, int64_t n_in, int64_t n_tok,
               int n_threads) {
  const Arena& a = get_arena(type, n_out, n_in);
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n_tok * n_in));
  for (auto& v : x) v = dist(rng);
  std::vector<float> y(static_cast<size_t>(n_tok * n_out));
  ThreadPool& p = pool(n_threads);
  int copy = 0;
  for (auto _ : state) {
    const WeightMatrix w{type, a.data.data() + copy * a.matrix_bytes, n_in, n_out, a.row_bytes};
    matmul(w, x.data(), n_tok, y.data(), p);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
    copy = (copy + 1) % a.copies;
  }
  const double iters = static_cast<double>(state.iterations());
  const double flops = 2.0 * static_cast<double>(n_out * n_in * n_tok);
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(a.matrix_bytes) * iters / 1e9,
                                              benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * iters / 1e9, benchmark::Counter::kIsRate);
  state.counters["tinyllama_tok/s"] =
      benchmark::Counter(flops * iters / kTinyLlamaFlopsPerToken, benchmark::Counter::kIsRate);
  state.SetLabel(simd_target_name());
}

void register_all() {
  // Every type the kernels implement (the registry: core/dtype).
  const std::span<const GgmlType> types = compute_types();
  struct Shape {
    int64_t n_out, n_in;
  };
  // TinyLlama-1.1B: attention projections (2048 x 2048) and the FFN up/gate (5632 x 2048).
  const Shape shapes[] = {{2048, 2048}, {5632, 2048}};
  for (GgmlType t : types) {
    for (const Shape& s : shapes) {
      for (int64_t n_tok : {1, 2, 3, 4, 8, 64, 512}) {
        for (int threads : {1, 2}) {
          const std::string name = std::string(type_name(t)) + "/" + std::to_string(s.n_out) + "x" +
                                   std::to_string(s.n_in) + "/ntok:" + std::to_string(n_tok) +
                                   "/threads:" + std::to_string(threads);
          benchmark::RegisterBenchmark(name.c_str(), bm_matmul, t, s.n_out, s.n_in, n_tok, threads)
              ->UseRealTime()
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
  // gpt-oss-20b's MXFP4 experts (2880 x 2880: 90 blocks a row, not a multiple of 8) at the
  // token counts of decode and of a batched decode step's row tiles.
  for (int64_t n_tok : {1, 2, 4, 8}) {
    for (int threads : {1, 2}) {
      const std::string name = "mxfp4/2880x2880/ntok:" + std::to_string(n_tok) +
                               "/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(name.c_str(), bm_matmul, GgmlType::kMXFP4, int64_t{2880},
                                   int64_t{2880}, n_tok, threads)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace
}  // namespace tova::kernels

int main(int argc, char** argv) {
  tova::kernels::register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
