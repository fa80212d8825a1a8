// Batched decode against the machine's limits: B sequences, each holding the same multi-state,
// decode one token each per step in ONE forward pass (counters are rates: tokens/s, read_GB/s,
// GFLOP/s). Per B it reports the step time (the mean; median_ms: the median step) and what
// it achieved: bytes read per second (the weights once + every sequence's held K/V) and
// floating-point work per second (every matrix times B rows, plus attention over the held
// states), to set beside the machine's bandwidth (BM_read_bandwidth, measured in the same run)
// and peak compute (../shared/ANCHORS.md: FP32 FMA ~208 GFLOP/s, int8 VNNI ~806 GOP/s on two
// cores). A step cannot take less than max(bytes / bandwidth, flops / peak).
//
//   TOVA_BENCH_MODEL=/tmp/tinyllama-q4_0.gguf TOVA_BENCH_POLICY=tova TOVA_BENCH_BUDGET=512
//   TOVA_BENCH_DEPTH=4096 TOVA_BENCH_THREADS=2 bench_batched_decode   (one command line)
//
// The state: one sequence is prefilled with TOVA_BENCH_DEPTH random ordinary tokens (f16 K/V)
// and copied into the others (MultiState::clone), as `tova throughput` does. Defaults: the
// shared booklm-3m model (fits in cache: only a model of hundreds of MB says anything about
// DRAM), tova k=512, depth 1024, two threads.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "eval/bench.h"
#include "eval/token_source.h"
#include "model/model.h"
#include "runtime/sequence.h"
#include "simd_env.h"

namespace tova {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

std::string model_path() {
  const std::string env = env_or("TOVA_BENCH_MODEL", "");
  if (!env.empty()) return env;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  for (auto dir = exe.parent_path(); !dir.empty() && dir != dir.root_path();
       dir = dir.parent_path()) {
    const auto p = dir.parent_path() / "shared" / "models" / "booklm-3m.gguf";
    if (std::filesystem::exists(p)) return p.string();
  }
  return "booklm-3m.gguf";
}

// Decode steps one benchmark takes at most (a warm-up step, then kMaxSteps / 2 timed).
constexpr int kMaxSteps = 64;

int n_threads() { return std::atoi(env_or("TOVA_BENCH_THREADS", "2").c_str()); }

// The model, the pool and one prefilled state, made once for the whole run.
struct Fixture {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<kv::MultiState> first;
  std::unique_ptr<eval::TokenSource> tokens;
  uint64_t weight_bytes = 0;
  double weight_flops = 0;  // 2 x multiply-adds of every matrix, per token
  std::string error;
};

Fixture& fixture() {
  static Fixture f = [] {
    Fixture x;
    auto m = model::Model::load(model_path());
    if (!m.ok()) {
      x.error = m.message();
      return x;
    }
    x.model = std::move(*m);
    x.pool = std::make_unique<ThreadPool>(n_threads());
    x.tokens = std::make_unique<eval::TokenSource>(*x.model, 1234);
    const eval::BenchModelInfo info = eval::describe_model(*x.model, "");
    x.weight_bytes = info.decode_weight_bytes;
    const model::ModelWeights& w = x.model->weights();
    double macs = static_cast<double>(w.output.n_in) * w.output.n_out;
    for (const model::LayerWeights& l : w.layers) {
      for (const kernels::WeightMatrix* mat :
           {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
        macs += static_cast<double>(mat->n_in) * mat->n_out;
      }
    }
    x.weight_flops = 2 * macs;
    CacheOptions cache;
    auto spec = kv::parse_policy(env_or("TOVA_BENCH_POLICY", "tova"),
                                 std::atoi(env_or("TOVA_BENCH_BUDGET", "512").c_str()));
    if (!spec.ok()) {
      x.error = spec.message();
      return x;
    }
    cache.policy = *spec;
    cache.kv_type = kv::KvType::kF16;
    const int depth = std::atoi(env_or("TOVA_BENCH_DEPTH", "1024").c_str());
    // A `full` state holds room for the measured steps, so none of them times a cache doubling.
    cache.reserve = depth + kMaxSteps;
    auto st = runtime::make_state(*x.model, cache, depth);
    if (!st.ok()) {
      x.error = st.message();
      return x;
    }
    x.first = std::move(*st);
    model::ForwardScratch scratch;
    std::vector<float> last(x.model->config().n_vocab);
    const std::vector<int32_t> fill = x.tokens->draw(depth, true);
    const Status s = runtime::feed(*x.model, *x.pool, scratch, *x.first, fill, 512, last.data());
    if (!s.ok()) x.error = s.message();
    return x;
  }();
  return f;
}

void BM_batched_decode(benchmark::State& state) {
  Fixture& f = fixture();
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  const int B = static_cast<int>(state.range(0));
  const model::ModelConfig& c = f.model->config();
  std::vector<std::unique_ptr<kv::MultiState>> states;
  for (int b = 0; b < B; ++b) states.push_back(f.first->clone());
  model::ForwardScratch scratch;
  std::vector<float> logits(static_cast<size_t>(B) * c.n_vocab);
  std::vector<model::BatchToken> batch(B);
  uint64_t kv_bytes = 0;  // one sequence's held K/V, read once per step
  int64_t n_held = 0;     // summed over layers
  for (int il = 0; il < c.n_layer; ++il) {
    const kv::LayerState& l = states[0]->layer(il);
    kv_bytes += 2ull * l.n_held() * l.n_head_kv() * l.head_dim() * 2;  // f16 K and V
    n_held += l.n_held();
  }
  auto step = [&] {
    const std::vector<int32_t> ids = f.tokens->draw(B, false);
    for (int b = 0; b < B; ++b)
      batch[b] = {.token = ids[b], .state = states[b].get(), .logits = true};
    return f.model->forward(batch, *f.pool, scratch, logits.data());
  };
  if (const Status s = step(); !s.ok()) {
    state.SkipWithError(s.message().c_str());
    return;
  }
  // Each step's own time too: the median step is what a thread-scaling ratio should compare
  // on a shared machine, where one disturbed step moves the mean (the reported time).
  std::vector<double> step_ms;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    if (const Status s = step(); !s.ok()) {
      state.SkipWithError(s.message().c_str());
      return;
    }
    step_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(step_ms.begin(), step_ms.end());
  state.counters["median_ms"] = step_ms[step_ms.size() / 2];
  const double steps = static_cast<double>(state.iterations());
  const double bytes = static_cast<double>(f.weight_bytes) + static_cast<double>(kv_bytes) * B;
  // Attention: q.k and p.v over every held state, for every query head.
  const double att_flops = 4.0 * c.n_head * c.head_dim * static_cast<double>(n_held);
  const double flops = (f.weight_flops + att_flops) * B;
  state.counters["tokens"] = benchmark::Counter(steps * B, benchmark::Counter::kIsRate);
  state.counters["read_GB"] = benchmark::Counter(steps * bytes / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP"] = benchmark::Counter(steps * flops / 1e9, benchmark::Counter::kIsRate);
  state.counters["MB/step"] = bytes / 1e6;
  state.counters["GFLOP/step"] = flops / 1e9;
}
BENCHMARK(BM_batched_decode)
    ->RangeMultiplier(2)
    ->Range(1, 256)
    ->Iterations(kMaxSteps / 2)  // after one untimed warm-up step
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The machine's read bandwidth now, with the decode's thread count: a 1 GiB buffer summed with
// 64-bit adds, split between the threads.
void BM_read_bandwidth(benchmark::State& state) {
  const size_t n = size_t{1} << 30;
  static std::vector<uint64_t> buf(n / 8, 1);
  ThreadPool pool(n_threads());
  std::atomic<uint64_t> sink{0};
  for (auto _ : state) {
    pool.parallel_for(static_cast<int64_t>(buf.size()), 1 << 16, [&](int64_t b, int64_t e) {
      uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
      int64_t i = b;
      for (; i + 4 <= e; i += 4) {
        a0 += buf[i];
        a1 += buf[i + 1];
        a2 += buf[i + 2];
        a3 += buf[i + 3];
      }
      for (; i < e; ++i) a0 += buf[i];
      sink += a0 + a1 + a2 + a3;
    });
  }
  benchmark::DoNotOptimize(sink.load());
  state.counters["read_GB"] = benchmark::Counter(static_cast<double>(state.iterations()) * n / 1e9,
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_read_bandwidth)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);

}  // namespace
}  // namespace tova

BENCHMARK_MAIN();
