// Speed tests in the spirit of llama-bench, so the two engines can be compared on the same
// files: prompt processing (pp: n_prompt tokens in micro-batches) and decoding (tg: n_gen tokens
// one at a time), each after an untimed prefill of n_depth tokens, repeated and summarised as
// mean and standard deviation of tokens per second. Returns data; front-ends format it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "tova/eval/bench.h"
#include "model/model.h"
#include "runtime/sequence.h"

namespace tova::eval {

// The cases of `o` in the order they run: caches, then threads, then depths, then pp before tg.
std::vector<BenchCase> bench_cases(const BenchOptions& o);

BenchModelInfo describe_model(const model::Model& m, const std::string& filename);

// Bytes of K/V one attention step of `s` reads: every held state of every layer, in its
// storage type, and a hybrid model's recurrent states whole.
uint64_t kv_read_bytes(const kv::MultiState& s);

// Runs every case of `o` on `m`; the first error stops the run.
Result<std::vector<BenchResult>> run_bench(const model::Model& m, const std::string& filename,
                                           const BenchOptions& o);

}  // namespace tova::eval
