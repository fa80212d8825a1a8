// Shared by the policy golden tests: run many configurations of one token list as sequences
// of ONE batch (as `tova ppl` does) and collect each one's per-token NLL and the positions it
// keeps at the end; compare kept positions with a golden's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "model_test_util.h"

namespace tova::testing {

using KeptPositions = std::vector<std::vector<std::vector<int64_t>>>;  // [layer][head_kv] sorted

struct PolicyRun {
  std::vector<double> nll;  // of token p + 1 after p, for every p but the last
  KeptPositions kept;
};

// Micro-batches of 16 positions x every configuration.
inline std::vector<PolicyRun> run_policies(const model::Model& m, const std::vector<int32_t>& ids,
                                           const std::vector<CacheOptions>& configs) {
  const int n_vocab = m.config().n_vocab;
  ThreadPool pool(2);
  std::vector<std::unique_ptr<kv::MultiState>> states;
  for (const CacheOptions& o : configs) {
    auto st = runtime::make_state(m, o, static_cast<int64_t>(ids.size()));
    EXPECT_TRUE(st.ok()) << st.message();
    states.push_back(std::move(st).value());
  }
  std::vector<PolicyRun> runs(configs.size());
  model::ForwardScratch scratch;
  constexpr size_t kChunk = 16;
  std::vector<float> logits;
  for (size_t p0 = 0; p0 < ids.size(); p0 += kChunk) {
    const size_t p1 = std::min(ids.size(), p0 + kChunk);
    std::vector<model::BatchToken> batch;
    for (size_t c = 0; c < configs.size(); ++c) {
      for (size_t p = p0; p < p1; ++p) {
        batch.push_back({.token = ids[p], .state = states[c].get(), .logits = true});
      }
    }
    logits.resize(batch.size() * n_vocab);
    auto st = m.forward(batch, pool, scratch, logits.data());
    EXPECT_TRUE(st.ok()) << st.message();
    for (size_t c = 0; c < configs.size(); ++c) {
      for (size_t p = p0; p < p1; ++p) {
        if (p + 1 >= ids.size()) continue;
        const float* row = &logits[((c * (p1 - p0)) + (p - p0)) * n_vocab];
        runs[c].nll.push_back(nll(row, n_vocab, ids[p + 1]));
      }
    }
  }
  for (size_t c = 0; c < configs.size(); ++c) {
    const kv::MultiState& s = *states[c];
    runs[c].kept.resize(s.n_layer());
    for (int il = 0; il < s.n_layer(); ++il) {
      const kv::LayerState& L = s.layer(il);
      runs[c].kept[il].resize(L.n_head_kv());
      for (int g = 0; g < L.n_head_kv(); ++g) {
        for (int sl = 0; sl < L.n_slot(); ++sl) {
          const int64_t p = L.pos()[g * L.n_slot() + sl];
          if (p >= 0) runs[c].kept[il][g].push_back(p);
        }
        std::sort(runs[c].kept[il][g].begin(), runs[c].kept[il][g].end());
      }
    }
  }
  return runs;
}

// The share of the golden's kept positions that the run also kept.
inline double kept_overlap(const KeptPositions& gold, const KeptPositions& run) {
  size_t inter = 0, total = 0;
  for (size_t il = 0; il < gold.size(); ++il) {
    for (size_t h = 0; h < gold[il].size(); ++h) {
      const std::set<int64_t> b(run[il][h].begin(), run[il][h].end());
      for (int64_t p : gold[il][h]) inter += b.count(p);
      total += gold[il][h].size();
    }
  }
  return total ? static_cast<double>(inter) / total : 1.0;
}

}  // namespace tova::testing
