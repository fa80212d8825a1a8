// One decode step (one token through every layer, with logits) of a random-weight model of
// SmolLM2-135M's shape, after `depth` tokens, under full / window / tova at budget 512. A
// bounded policy's step should cost the same at any depth; full's grows with the depth.
//
// The model is written once into a temporary file (Q8_0, the shared starcoder vocabulary) unless
// TOVA_BENCH_MODEL names a GGUF to use instead. Vocabularies are looked up in
// $TOVA_SHARED_DIR/vocab, then ../shared/vocab next to the source tree.
//
//   bench_decode --benchmark_filter='tova'
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kv/policy_registry.h"
#include "model/model.h"
#include "model/random_model.h"
#include "runtime/sequence.h"
#include "simd_env.h"

namespace tova {
namespace {

constexpr int kBudget = 512;
constexpr int kThreads = 2;

struct Loaded {
  std::unique_ptr<model::Model> model;
  std::string error;
  std::string temp_path;
  ~Loaded() {
    if (!temp_path.empty()) std::filesystem::remove(temp_path);
  }
};

ThreadPool& pool() {
  static ThreadPool p(kThreads);
  return p;
}

const Loaded& loaded() {
  static const std::unique_ptr<Loaded> l = [] {
    auto p = std::make_unique<Loaded>();
    Loaded& r = *p;
    std::string path;
    if (const char* env = std::getenv("TOVA_BENCH_MODEL"); env != nullptr && *env != '\0') {
      path = env;
    } else {
      auto shape = model::find_random_shape("smollm");
      const std::vector<std::string> dirs = model::default_vocab_dirs();
      auto vocab = model::find_vocab(*shape, dirs);
      if (!vocab.ok()) {
        r.error = vocab.message();
        return p;
      }
      path = (std::filesystem::temp_directory_path() /
              ("tova-bench-decode-" + std::to_string(getpid()) + ".gguf"))
                 .string();
      auto st = model::write_random_model(
          {.shape = *shape, .type = GgmlType::kQ8_0, .vocab_path = *vocab}, path, pool());
      if (!st.ok()) {
        r.error = st.message();
        return p;
      }
      r.temp_path = path;
    }
    auto m = model::Model::load(path);
    if (!m.ok()) {
      r.error = m.message();
      return p;
    }
    r.model = std::move(*m);
    return p;
  }();
  return *l;
}

// Args: {policy index, depth}.
const char* const kPolicies[] = {"full", "window", "tova"};

void BM_decode_step(benchmark::State& state) {
  const Loaded& l = loaded();
  if (!l.model) {
    state.SkipWithError(l.error.c_str());
    return;
  }
  const model::Model& m = *l.model;
  const char* policy = kPolicies[state.range(0)];
  const int depth = static_cast<int>(state.range(1));
  CacheOptions o;
  o.policy = *kv::parse_policy(policy, kBudget);
  auto made = runtime::make_state(m, o, depth);
  if (!made.ok()) {
    state.SkipWithError(made.message().c_str());
    return;
  }
  std::unique_ptr<kv::MultiState> ms = std::move(*made);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> tok(3, m.config().n_vocab - 1);
  std::vector<int32_t> prompt(depth);
  for (int32_t& t : prompt) t = tok(rng);
  model::ForwardScratch scratch;
  std::vector<float> logits(m.config().n_vocab);
  // Untimed: fill the cache to `depth` with the exact semantics.
  if (auto st = runtime::feed(m, pool(), scratch, *ms, prompt, 512, logits.data()); !st.ok()) {
    state.SkipWithError(st.message().c_str());
    return;
  }
  for (auto _ : state) {
    const model::BatchToken bt{.token = tok(rng), .state = ms.get(), .logits = true};
    auto st = m.forward({&bt, 1}, pool(), scratch, logits.data());
    if (!st.ok()) {
      state.SkipWithError(st.message().c_str());
      break;
    }
  }
  state.counters["tok"] =  // shown as "tok=12.3/s"
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.SetLabel(o.policy.bounded() ? std::string(policy) + " k=512" : std::string(policy));
}

BENCHMARK(BM_decode_step)
    ->ArgNames({"policy", "depth"})
    ->ArgsProduct({{0, 1, 2}, {512, 4096}})
    ->Iterations(64)  // bounded, so full's cache grows by at most 64 during the measurement
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace tova

BENCHMARK_MAIN();
