// How fast the weights of a GGUF file stream from memory with one and two threads, when the file is
// mapped (page cache) and when it is read into memory of its own (io::read_file_to_memory, the
// default since the mapped file streamed slower). Every tensor byte is summed with 64-bit adds,
// half of each tensor per thread, as a decode step reads them. Reports bytes/s (Google
// Benchmark's G/s are GiB/s). Arguments: load (0 mapped, 1 read) / threads.
//
//   TOVA_BENCH_MODEL=/path/to/tinyllama-f16.gguf bench_weight_stream
//
// Without TOVA_BENCH_MODEL it uses ../shared/models/booklm-3m.gguf (which fits in cache, so
// only a model of hundreds of MB says anything about DRAM).
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "core/thread_pool.h"
#include "io/gguf.h"
#include "simd_env.h"

namespace tova {
namespace {

std::string model_path() {
  if (const char* env = std::getenv("TOVA_BENCH_MODEL"); env != nullptr && *env != '\0') {
    return env;
  }
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  for (auto dir = exe.parent_path(); !dir.empty() && dir != dir.root_path();
       dir = dir.parent_path()) {
    const auto p = dir.parent_path() / "shared" / "models" / "booklm-3m.gguf";
    if (std::filesystem::exists(p)) return p.string();
  }
  return "booklm-3m.gguf";
}

uint64_t sum_bytes(const uint8_t* p, uint64_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  uint64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t w[4];
    std::memcpy(w, p + i, 32);
    a += w[0];
    b += w[1];
    c += w[2];
    d += w[3];
  }
  for (; i < n; ++i) a += p[i];
  return a + b + c + d;
}

void BM_stream_weights(benchmark::State& state) {
  const auto load = state.range(0) == 0 ? io::GgufFile::Load::kMap : io::GgufFile::Load::kRead;
  auto f = io::GgufFile::open(model_path(), load);
  if (!f.ok()) {
    state.SkipWithError(f.message().c_str());
    return;
  }
  ThreadPool pool(static_cast<int>(state.range(1)));
  uint64_t bytes = 0;
  for (const auto& t : (*f)->tensors()) bytes += t.n_bytes;
  auto pass = [&] {
    uint64_t total = 0;
    for (const auto& t : (*f)->tensors()) {
      std::atomic<uint64_t> s{0};
      pool.parallel_for(static_cast<int64_t>(t.n_bytes), 4096, [&](int64_t b, int64_t e) {
        s.fetch_add(sum_bytes(t.data + b, static_cast<uint64_t>(e - b)));
      });
      total += s.load();
    }
    return total;
  };
  benchmark::DoNotOptimize(pass());  // untimed: fault every page of the mapping in first
  for (auto _ : state) benchmark::DoNotOptimize(pass());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.SetLabel(std::string(load == io::GgufFile::Load::kMap ? "mapped" : "read into memory") +
                 ", " + std::to_string(state.range(1)) + " thread(s)");
}
BENCHMARK(BM_stream_weights)
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tova

BENCHMARK_MAIN();
