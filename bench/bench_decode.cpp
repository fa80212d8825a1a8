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

#include "simd_env.h"
#include "tova/engine.h"
#include "tova/random_model.h"
#include "tova/session.h"

namespace tova {
namespace {

constexpr int kBudget = 512;
constexpr int kThreads = 2;

struct Loaded {
  std::unique_ptr<Engine> engine;
  std::string error;
  std::string temp_path;
  ~Loaded() {
    if (!temp_path.empty()) std::filesystem::remove(temp_path);
  }
};

const Loaded& loaded() {
  static const std::unique_ptr<Loaded> l = [] {
    auto p = std::make_unique<Loaded>();
    Loaded& r = *p;
    std::string path;
    if (const char* env = std::getenv("TOVA_BENCH_MODEL"); env != nullptr && *env != '\0') {
      path = env;
    } else {
      path = (std::filesystem::temp_directory_path() /
              ("tova-bench-decode-" + std::to_string(getpid()) + ".gguf"))
                 .string();
      auto st = make_random_model(
          {.shape = "smollm", .type = "q8_0", .n_threads = kThreads}, path);
      if (!st.ok()) {
        r.error = st.message();
        return p;
      }
      r.temp_path = path;
    }
    auto e = Engine::load({.model_path = path, .n_threads = kThreads, .need_tokenizer = false});
    if (!e.ok()) {
      r.error = e.message();
      return p;
    }
    r.engine = std::move(*e);
    return p;
  }();
  return *l;
}

// Args: {policy index, depth}.
const char* const kPolicies[] = {"full", "window", "tova"};

void BM_decode_step(benchmark::State& state) {
  const Loaded& l = loaded();
  if (!l.engine) {
    state.SkipWithError(l.error.c_str());
    return;
  }
  const Engine& e = *l.engine;
  const char* policy = kPolicies[state.range(0)];
  const int depth = static_cast<int>(state.range(1));
  SessionOptions o;
  o.cache.policy = *kv::parse_policy(policy, kBudget);
  o.cache.reserve = depth;
  auto made = e.new_session(o);
  if (!made.ok()) {
    state.SkipWithError(made.message().c_str());
    return;
  }
  Session& s = **made;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> tok(3, e.n_vocab() - 1);
  std::vector<int32_t> prompt(depth);
  for (int32_t& t : prompt) t = tok(rng);
  // Untimed: fill the cache to `depth` with the exact semantics.
  if (auto st = s.feed(prompt); !st.ok()) {
    state.SkipWithError(st.message().c_str());
    return;
  }
  for (auto _ : state) {
    const int32_t t = tok(rng);
    auto st = s.feed({&t, 1});  // one token through every layer, with logits
    if (!st.ok()) {
      state.SkipWithError(st.message().c_str());
      break;
    }
  }
  state.counters["tok"] =  // shown as "tok=12.3/s"
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.SetLabel(o.cache.policy.bounded() ? std::string(policy) + " k=512" : std::string(policy));
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
