// The cost of one speculative verify step (issue 50): ONE forward pass of n tokens of one
// sequence appended to a state holding `depth` tokens, with a logits row after every token (a
// verify step's rows), against a pass of one token. Every round times each n (and each SIMD
// target) once, interleaved, on a copy of the same prefilled state (MultiState::clone, not
// timed), so that a loaded machine disturbs every column alike; the minimum and the median over
// the rounds are printed with cost(n) = t(n) / t(1) for each.
//
//   TOVA_BENCH_MODEL=/work/models-bench/tinyllama-q4_0.gguf bench_verify_step
//
// Environment: TOVA_BENCH_MODEL (a GGUF; required), TOVA_BENCH_DEPTH [128],
// TOVA_BENCH_STEPS [1,2,4,8], TOVA_BENCH_ROUNDS [15], TOVA_BENCH_THREADS [2],
// TOVA_BENCH_LOGITS [each | last: only the last token's row, as `tova bench -p n` times],
// TOVA_BENCH_SIMDS [the native target; e.g. avx3_dl,avx2 interleaves targets in one run],
// TOVA_BENCH_REPACK [the library's default; 1: repack weights at load (q4_0_r8), 0: not],
// TOVA_BENCH_PROFILE=n: time nothing, run steps of n tokens for TOVA_BENCH_SECONDS [20] (for
// `perf record`), or exactly TOVA_BENCH_COUNT steps (for `perf stat`: subtract a run of 0).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "eval/token_source.h"
#include "model/model.h"
#include "runtime/forward_batch.h"
#include "runtime/sequence.h"
#include "simd_env.h"
#include "tova/options.h"
#include "tova/simd_target.h"

namespace tova {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

int run() {
  const std::string path = env_or("TOVA_BENCH_MODEL", "");
  if (path.empty()) {
    std::fprintf(stderr, "TOVA_BENCH_MODEL: name a GGUF file\n");
    return 2;
  }
  const int depth = std::atoi(env_or("TOVA_BENCH_DEPTH", "128").c_str());
  const int rounds = std::max(1, std::atoi(env_or("TOVA_BENCH_ROUNDS", "15").c_str()));
  const int threads = std::max(1, std::atoi(env_or("TOVA_BENCH_THREADS", "2").c_str()));
  const bool each = env_or("TOVA_BENCH_LOGITS", "each") != "last";
  std::vector<int> steps;
  for (const std::string& s : split(env_or("TOVA_BENCH_STEPS", "1,2,4,8"))) {
    steps.push_back(std::max(1, std::atoi(s.c_str())));
  }
  std::vector<std::string> simds = split(env_or("TOVA_BENCH_SIMDS", ""));
  if (simds.empty()) simds.push_back(std::string(kernels::simd_target_name()));
  const int profile_n = std::atoi(env_or("TOVA_BENCH_PROFILE", "0").c_str());

  const std::string repack = env_or("TOVA_BENCH_REPACK", "");
  auto m = model::Model::load(
      path, {.repack = repack.empty() ? model::kRepackByDefault : repack != "0"});
  if (!m.ok()) {
    std::fprintf(stderr, "%s\n", m.message().c_str());
    return 1;
  }
  const model::Model& model = **m;
  std::fprintf(stderr, "repacked %d matrices (%.1f MB) in %.3f s\n", model.repack_stats().n_matrices,
               static_cast<double>(model.repack_stats().n_bytes) / 1e6, model.repack_stats().seconds);
  ThreadPool pool(threads);
  eval::TokenSource tokens(model, 1234);
  auto parsed = parse_cache_options("full", 0, "exact", "f16");
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s\n", parsed.message().c_str());
    return 1;
  }
  CacheOptions cache = *parsed;
  cache.reserve = depth + 64;
  auto st = runtime::make_state(model, cache, depth);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.message().c_str());
    return 1;
  }
  std::unique_ptr<kv::MultiState> first = std::move(*st);
  model::ForwardScratch scratch;
  std::vector<float> logits(static_cast<size_t>(64) * model.config().n_vocab);
  if (depth > 0) {
    const std::vector<int32_t> fill = tokens.draw(depth, true);
    if (Status s = runtime::feed(model, pool, scratch, *first, fill, 512, logits.data()); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      return 1;
    }
  }
  runtime::ForwardBatch batch;
  // One step of n tokens on a fresh copy of the prefilled state; returns its milliseconds.
  auto step = [&](int n) -> double {
    std::unique_ptr<kv::MultiState> state = first->clone();
    const std::vector<int32_t> t = tokens.draw(n, false);
    batch.clear();
    batch.add(*state, t, each ? runtime::LogitsAt::kEach : runtime::LogitsAt::kLast);
    const auto t0 = std::chrono::steady_clock::now();
    const Status s = batch.run(model, pool, scratch, logits.data());
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      std::exit(1);
    }
    return ms;
  };

  if (profile_n > 0) {
    const double seconds = std::atof(env_or("TOVA_BENCH_SECONDS", "20").c_str());
    if (Status s = kernels::set_simd_target(simds[0]); !s.ok()) return 2;
    // TOVA_BENCH_COUNT: exactly that many steps (0: none, for a `perf stat` baseline of the
    // load and the prefill, to subtract from a run of N steps).
    const char* count_env = std::getenv("TOVA_BENCH_COUNT");
    const int fixed = count_env != nullptr ? std::atoi(count_env) : -1;
    double total = 0;
    int count = 0;
    while (fixed >= 0 ? count < fixed : total < seconds * 1000.0) {
      total += step(profile_n);
      ++count;
    }
    std::printf("%d steps of %d tokens: %.2f ms each\n", count, profile_n,
                count > 0 ? total / count : 0.0);
    return 0;
  }

  // ms[simd][n][round]
  std::vector<std::vector<std::vector<double>>> ms(
      simds.size(), std::vector<std::vector<double>>(steps.size()));
  for (size_t si = 0; si < simds.size(); ++si) {  // warm-up, and a check of the target names
    if (Status s = kernels::set_simd_target(simds[si]); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.message().c_str());
      return 2;
    }
    for (int n : steps) step(n);
  }
  for (int r = 0; r < rounds; ++r) {
    for (size_t si = 0; si < simds.size(); ++si) {
      (void)kernels::set_simd_target(simds[si]);
      for (size_t ni = 0; ni < steps.size(); ++ni) ms[si][ni].push_back(step(steps[ni]));
    }
  }
  std::printf("model %s, depth %d, %d threads, %d rounds, logits %s\n", path.c_str(), depth,
              threads, rounds, each ? "each token" : "last token");
  std::printf("| simd | n | min ms | median ms | cost(n) min | cost(n) median |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (size_t si = 0; si < simds.size(); ++si) {
    double min1 = 0, med1 = 0;
    for (size_t ni = 0; ni < steps.size(); ++ni) {
      std::vector<double> v = ms[si][ni];
      std::sort(v.begin(), v.end());
      const double mn = v.front(), md = v[v.size() / 2];
      if (ni == 0) {
        min1 = mn;
        med1 = md;
      }
      std::printf("| %s | %d | %.2f | %.2f | %.2f | %.2f |\n", simds[si].c_str(), steps[ni], mn,
                  md, mn / min1, md / med1);
    }
  }
  return 0;
}

}  // namespace
}  // namespace tova

int main() { return tova::run(); }
