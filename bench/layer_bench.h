// What the one-layer benchmarks share (bench_deltanet, bench_mamba2, bench_moe_ffn): random
// weight matrices stored in a GGUF type and kept alive beside the layer, the ntok x threads
// grid they register, and main.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"
#include "kv/multi_state.h"
#include "model/layer_kinds.h"
#include "tova/policy_spec.h"
#include "tova/simd_target.h"

namespace tova::bench {

// The bytes of a layer's weight matrices (WeightMatrix points into them).
class WeightStore {
 public:
  WeightStore() = default;
  explicit WeightStore(size_t n_matrices) { reserve(n_matrices); }
  void reserve(size_t n_matrices) { bytes_.reserve(n_matrices); }
  // n_out rows of n_in as `type`: `distinct` random rows (N(0, 0.02)) quantized by the scalar
  // reference, repeated (0: every row its own). A store never holds more than it reserved, so
  // the matrices it gave out stay where they are.
  kernels::WeightMatrix add(GgmlType type, int64_t n_out, int64_t n_in, std::mt19937& g,
                            int64_t distinct = 0) {
    const uint64_t rb = bytes_per_row(type, n_in).value();
    const int64_t n_rand = distinct > 0 ? std::min(distinct, n_out) : n_out;
    std::normal_distribution<float> d(0.f, 0.02f);
    std::vector<float> x(n_in);
    std::vector<uint8_t> m(rb * n_out);
    for (int64_t r = 0; r < n_rand; ++r) {
      for (float& v : x) v = d(g);
      kernels::quantize_row_ref(type, x.data(), m.data() + r * rb, n_in);
    }
    for (int64_t o = n_rand; o < n_out; ++o) {
      std::memcpy(m.data() + o * rb, m.data() + (o % n_rand) * rb, rb);
    }
    bytes_.push_back(std::move(m));
    return {.type = type, .data = bytes_.back().data(), .n_in = n_in, .n_out = n_out,
            .row_bytes = rb};
  }

 private:
  std::vector<std::vector<uint8_t>> bytes_;
};

// name/ntok:N/threads:T for a decode step (1 token) and a pp512 batch, on 1 and 2 threads:
// fn(state, n_tok, threads, args...).
template <class Fn, class... Args>
void register_ntok_threads(const std::string& name, Fn fn, Args... args) {
  for (int64_t n_tok : {1, 512}) {
    for (int threads : {1, 2}) {
      const std::string full =
          name + "/ntok:" + std::to_string(n_tok) + "/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(full.c_str(), fn, args..., n_tok, threads)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}

// Pools of 1 and 2 threads, made once.
inline ThreadPool& bench_pool(int n_threads) {
  static ThreadPool pool1(1), pool2(2);
  return n_threads == 1 ? pool1 : pool2;
}

// The tok/s counter (n_tok tokens an iteration) and the SIMD target as the label.
inline void count_tokens(benchmark::State& state, int64_t n_tok) {
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(n_tok) * state.iterations(),
                                               benchmark::Counter::kIsRate);
  state.SetLabel(kernels::simd_target_name());
}

// One recurrent mixer layer (its kind's block, layer_kinds.h) over n_tok tokens of one
// sequence, its state carried from iteration to iteration; the input rows restored (untimed)
// before each.
inline void time_recurrent_mixer(benchmark::State& state, const model::ModelConfig& c,
                                 const model::LayerWeights& L, model::MixerKind kind,
                                 int64_t n_tok, int n_threads) {
  const model::MixerSpec& spec = model::mixer_spec(kind);
  kv::MultiStateOptions o{.n_layer = 1, .n_head = 1, .n_head_kv = 1, .head_dim = 16,
                          .policy = kv::parse_policy("full", 0).value(),
                          .max_new = static_cast<int>(n_tok)};
  o.recurrent.push_back(spec.recurrent_shape(c));
  std::unique_ptr<kv::MultiState> ms = kv::MultiState::create(o).value();
  std::mt19937 g(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x0(n_tok * c.n_embd);
  for (float& v : x0) v = nd(g);
  model::ForwardScratch s;
  s.runs.push_back({.state = ms.get()});
  s.runs[0].idx.resize(n_tok);
  for (int64_t i = 0; i < n_tok; ++i) s.runs[0].idx[i] = static_cast<int>(i);
  ThreadPool& p = bench_pool(n_threads);
  for (auto _ : state) {
    state.PauseTiming();
    s.x = x0;
    state.ResumeTiming();
    spec.block({.c = c, .s = s, .pool = p, .n = n_tok}, 0,
               {.mixer = kind, .holds = model::MixerState::kRecurrent, .state = 0}, L);
    benchmark::DoNotOptimize(s.x.data());
  }
  count_tokens(state, n_tok);
}

inline int run_benchmarks(int argc, char** argv, void (*register_all)()) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace tova::bench
