// llama-bench-style speed tests (tova bench).
// Part of the evaluation API (tova/eval.h); each takes a loaded Engine and returns plain records.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tova/engine.h"
#include "tova/options.h"
#include "tova/result.h"

namespace tova::eval {

// ---- Speed (tova bench) -----------------------------------------------------------------------
// Speed tests in the spirit of llama-bench, so the two engines can be compared on the same
// files: prompt processing (pp: n_prompt tokens in micro-batches) and decoding (tg: n_gen tokens
// one at a time), each after an untimed prefill of n_depth tokens, repeated and summarised as
// mean and standard deviation of tokens per second.

// One test: exactly one of n_prompt (pp) and n_gen (tg) is positive.
struct BenchCase {
  int n_prompt = 0;
  int n_gen = 0;
  int n_depth = 0;  // tokens fed (untimed) before the test, in a fresh state each repetition
  int n_threads = 1;
  CacheOptions cache;

  std::string name() const;        // "pp512", "tg128 @ d4096"
  std::string cache_label() const;  // "full", "tova k=512", "window k=512 chunk:64"
};

struct BenchProgress {
  int index = 0;    // of the case, from 0
  int n_cases = 0;
  std::string name;  // BenchCase::name()
  std::string phase;  // "warmup" | "depth" | "run"
  int repetition = 0;  // from 0 ("run" and "depth" only)
};

struct BenchOptions {
  // Every combination is one pp case per n_prompt and one tg case per n_gen (0 entries skip).
  std::vector<int> n_prompt = {512};
  std::vector<int> n_gen = {128};
  std::vector<int> n_depth = {0};
  std::vector<int> n_threads = {2};
  std::vector<CacheOptions> caches = {CacheOptions{}};  // no policy name: full
  int n_batch = 512;    // prompt tokens per forward pass (exact prefill)
  int repetitions = 5;
  bool warmup = true;   // one untimed run first (a whole pp, or one tg token), as llama-bench
  uint64_t seed = 1234;  // for the random token ids
  std::function<void(const BenchProgress&)> on_progress;  // optional
};

struct BenchModelInfo {
  std::string filename;     // as given
  std::string arch;         // "llama"
  std::string size_label;   // "1.1B", "135M"
  std::string weight_type;  // the layers' main weight type, upper case: "Q4_0"
  std::string model_type;   // "llama 1.1B Q4_0", llama-bench's model column
  uint64_t n_bytes = 0;     // all tensor data
  uint64_t n_params = 0;
  // Weight bytes one decode step reads: every layer matrix plus the output matrix (the token
  // embedding contributes one row).
  uint64_t decode_weight_bytes = 0;
};

struct BenchResult {
  BenchCase test;
  BenchModelInfo model;
  int n_batch = 0;
  std::vector<double> samples_ns;  // one per repetition
  std::vector<double> samples_ts;  // tokens per second, one per repetition
  double avg_ns = 0, stddev_ns = 0;
  double avg_ts = 0, stddev_ts = 0;
  uint64_t kv_bytes = 0;  // K/V memory of the state after the last repetition
  // tg only: bytes read per decoded token (weights + the K/V held at the end of the test,
  // which bounds the average from above) and the bandwidth that implies at avg_ts.
  uint64_t read_bytes_per_token = 0;
  double read_gbps = 0;
};

// The cases of `o` in the order they run: caches, then threads, then depths, then pp before tg.
std::vector<BenchCase> bench_cases(const BenchOptions& o);
BenchModelInfo describe_model(const Engine& engine, const std::string& filename);
// Runs every case of `o` on the engine's model; the first error stops the run.
Result<std::vector<BenchResult>> run_bench(const Engine& engine, const std::string& filename,
                                           const BenchOptions& o);

}  // namespace tova::eval
