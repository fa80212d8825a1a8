// Shared helpers for model-level tests: run a token list through a sequence and collect the
// logits of every position; read golden files.
#pragma once

#include <cmath>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "model/model.h"
#include "runtime/sequence.h"
#include "test_data.h"

namespace tova::testing {

inline std::vector<int32_t> read_ids(const std::string& path) {
  std::ifstream in(path);
  nlohmann::json j = nlohmann::json::parse(in);
  if (j.is_object()) j = j["tokens"];
  return j.get<std::vector<int32_t>>();
}

inline std::vector<float> read_f32(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

// Every registered policy in the forms worth running (kv::all_policy_examples: the registry,
// not a list kept here), `full` included.
inline std::vector<std::string> every_policy() { return kv::all_policy_examples(); }
inline std::vector<std::string> every_bounded_policy() {
  std::vector<std::string> out;
  for (const std::string& p : every_policy()) {
    if (p != "full") out.push_back(p);
  }
  return out;
}

inline CacheOptions cache_options(const std::string& policy, int budget) {
  CacheOptions o;
  auto spec = kv::parse_policy(policy, budget);
  EXPECT_TRUE(spec.ok()) << spec.message();
  o.policy = *spec;
  return o;
}

// Logits of every position ([n][n_vocab]) of one sequence fed in micro-batches of n_batch.
inline std::vector<float> all_logits(const model::Model& m, const std::vector<int32_t>& ids,
                                     const CacheOptions& o, int n_batch,
                                     ThreadPool& pool,
                                     std::unique_ptr<kv::MultiState>* state_out = nullptr) {
  const int n_vocab = m.config().n_vocab;
  auto state = runtime::make_state(m, o, static_cast<int64_t>(ids.size()));
  EXPECT_TRUE(state.ok()) << state.message();
  model::ForwardScratch scratch;
  std::vector<float> logits(ids.size() * n_vocab);
  const int step = (*state)->max_new() > 1 ? (*state)->max_new() : n_batch;
  for (size_t i0 = 0; i0 < ids.size(); i0 += step) {
    std::vector<model::BatchToken> batch;
    for (size_t i = i0; i < std::min(ids.size(), i0 + step); ++i) {
      batch.push_back({.token = ids[i], .state = state->get(), .logits = true});
    }
    auto st = m.forward(batch, pool, scratch, &logits[i0 * n_vocab]);
    EXPECT_TRUE(st.ok()) << st.message();
  }
  if (state_out) *state_out = std::move(state).value();
  return logits;
}

// -log softmax(logits)[target], in double.
inline double nll(const float* logits, int n_vocab, int32_t target) {
  double mx = logits[0];
  for (int i = 1; i < n_vocab; ++i) mx = std::max(mx, static_cast<double>(logits[i]));
  double sum = 0;
  for (int i = 0; i < n_vocab; ++i) sum += std::exp(logits[i] - mx);
  return std::log(sum) + mx - logits[target];
}

// The least count that is at least `percent` % of n (90 % of 128: 116, not 115).
inline int at_least_percent(size_t n, int percent) {
  return static_cast<int>((n * percent + 99) / 100);
}

inline int argmax_row(const float* row, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i) {
    if (row[i] > row[best]) best = i;
  }
  return best;
}

}  // namespace tova::testing
