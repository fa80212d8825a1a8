// Prefill modes of spec/POLICIES.md at model level: chunk:1 is exact; chunk:C evicts once per
// chunk using the chunk's last token; chunk:inf keeps the top k of the last prompt token.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "model_test_util.h"

namespace tova::testing {
namespace {

CacheOptions with_prefill(const std::string& policy, int k, const std::string& mode) {
  CacheOptions o = cache_options(policy, k);
  o.prefill = *parse_prefill(mode);
  return o;
}

TEST(Prefill, ParseModes) {
  EXPECT_EQ(parse_prefill("exact")->chunk, 0);
  EXPECT_EQ(parse_prefill("chunk:16")->chunk, 16);
  EXPECT_TRUE(parse_prefill("chunk:inf")->inf);
  for (const char* bad : {"chunk:0", "chunk:-1", "chunk:", "chunky", "", "chunk:1x"}) {
    EXPECT_FALSE(parse_prefill(bad).ok()) << bad;
  }
}

TEST(Prefill, ChunkOfOneIsExact) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  auto ids = read_ids(shared_path("golden/tokens-1024.json"));
  ids.resize(100);
  ThreadPool pool(2);
  for (const char* p : {"tova", "h2o"}) {
    const auto a = all_logits(**m, ids, with_prefill(p, 20, "exact"), 1, pool);
    const auto b = all_logits(**m, ids, with_prefill(p, 20, "chunk:1"), 1, pool);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4)) << p;
  }
}

TEST(Prefill, ChunkInfKeepsTheTopKOfTheLastPromptToken) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  auto ids = read_ids(shared_path("golden/tokens-1024.json"));
  ids.resize(64);
  ThreadPool pool(1);
  // The whole prompt at once under chunk:inf sees exactly what full sees: same logits.
  std::unique_ptr<kv::MultiState> s;
  const auto got = all_logits(**m, ids, with_prefill("tova", 16, "chunk:inf"), 64, pool, &s);
  const auto full = all_logits(**m, ids, cache_options("full", 0), 64, pool);
  double max_diff = 0;
  for (size_t i = 0; i < got.size(); ++i) max_diff = std::max(max_diff, double(std::fabs(got[i] - full[i])));
  EXPECT_LT(max_diff, 1e-5);
  for (int il = 0; il < s->n_layer(); ++il) {
    EXPECT_EQ(s->layer(il).n_held(), 16);
    EXPECT_EQ(s->layer(il).n_evicted(), 48);
  }
  // Chunks of 16: the cache holds k=16 after every chunk, and memory is k + C slots.
  std::unique_ptr<kv::MultiState> c;
  all_logits(**m, ids, with_prefill("window", 16, "chunk:16"), 1, pool, &c);
  EXPECT_EQ(c->layer(0).n_slot(), 32);
  std::vector<int64_t> held;
  for (int sl = 0; sl < c->layer(0).n_slot(); ++sl) {
    if (c->layer(0).pos()[sl] >= 0) held.push_back(c->layer(0).pos()[sl]);
  }
  std::sort(held.begin(), held.end());
  ASSERT_EQ(held.size(), 16u);
  EXPECT_EQ(held.front(), 48);
  EXPECT_EQ(held.back(), 63);
}


// Decode after chunk:C reads what is held, not the k + C slots allocated: after each chunk the
// held states are packed into slots [0, k) (LayerState::slot_end() == k) and decode reads at
// most k + 1. Packing moves states and their policy state; where the states sit does not change
// what is computed: a twin whose held states were scattered over the high slots (through
// LayerState::restore, policy state permuted alike) decodes to the same held positions at every
// step and the same logits up to float summation order.
TEST(Prefill, DecodeAfterChunksReadsTheHeldStatesOnly) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  const model::Model& model = **m;
  const int n_vocab = model.config().n_vocab;
  auto ids = read_ids(shared_path("golden/tokens-1024.json"));
  constexpr int kBudget = 16, kChunk = 16, kPrompt = 64, kDecode = 24;
  ids.resize(kPrompt + kDecode);
  ThreadPool pool(2);
  model::ForwardScratch scratch;
  auto step = [&](kv::MultiState& st, size_t i0, size_t i1, float* logits) {
    std::vector<model::BatchToken> batch;
    for (size_t i = i0; i < i1; ++i) batch.push_back({.token = ids[i], .state = &st, .logits = true});
    auto r = model.forward(batch, pool, scratch, logits);
    ASSERT_TRUE(r.ok()) << r.message();
  };
  // Held positions of every (layer, KV head), sorted.
  auto held = [](const kv::MultiState& st) {
    std::vector<std::vector<int64_t>> out;
    for (int il = 0; il < st.n_layer(); ++il) {
      const kv::LayerState& L = st.layer(il);
      for (int g = 0; g < L.n_head_kv(); ++g) {
        std::vector<int64_t> p;
        for (int s = 0; s < L.n_slot(); ++s) {
          if (L.pos()[g * L.n_slot() + s] >= 0) p.push_back(L.pos()[g * L.n_slot() + s]);
        }
        std::sort(p.begin(), p.end());
        out.push_back(std::move(p));
      }
    }
    return out;
  };
  for (const std::string& policy : every_bounded_policy()) {
    SCOPED_TRACE(policy);
    auto state = runtime::make_state(model, with_prefill(policy, kBudget, "chunk:16"), kPrompt);
    ASSERT_TRUE(state.ok()) << state.message();
    kv::MultiState& a = **state;
    std::vector<float> logits(static_cast<size_t>(kChunk) * n_vocab);
    std::vector<int> was_held(a.n_layer(), 0);
    for (int i0 = 0; i0 < kPrompt; i0 += kChunk) {
      step(a, i0, i0 + kChunk, logits.data());
      for (int il = 0; il < a.n_layer(); ++il) {
        const kv::LayerState& L = a.layer(il);  // a layer's budget may differ from k (pyramidkv)
        if (!L.shared_heads() && L.buffer() == 0) {
          ASSERT_EQ(L.n_slot(), L.budget() + kChunk);
        } else if (L.buffer() > 0) {
          // rkv's pool grows with what it holds, up to budget + buffer + chunk.
          ASSERT_LE(L.n_slot(), L.budget() + L.buffer() + kChunk);
        }
        // Heads sharing a budget hold different counts: one may sit just above the largest.
        if (L.shared_heads()) {
          ASSERT_LE(L.slot_end(), L.n_held() + 1) << "layer " << il << " after chunk " << i0;
        } else {
          ASSERT_EQ(L.slot_end(), L.n_held()) << "layer " << il << " after chunk " << i0;
        }
        // Down to the budget at a chunk's end; rkv: only once more than budget + buffer are held.
        int& held = was_held[il];
        held += kChunk;
        if (held > L.budget() + L.buffer()) held = L.budget();
        ASSERT_EQ(L.n_held_total(), int64_t{held} * L.n_head_kv());
      }
    }
    // The twin: slot s of every KV head moves to slot n_slot - 1 - s.
    auto b = a.clone();
    for (int il = 0; il < b->n_layer(); ++il) {
      kv::LayerState& L = b->layer(il);
      const int n = L.n_slot();
      const size_t row = kv_row_bytes(L.kv_type().k, L.head_dim());  // keys and values alike here
      std::vector<int64_t> pos(static_cast<size_t>(L.n_head_kv()) * n);
      std::vector<uint8_t> keys(pos.size() * row), values(pos.size() * row);
      const auto* k = static_cast<const uint8_t*>(L.keys());
      const auto* v = static_cast<const uint8_t*>(L.values());
      for (int g = 0; g < L.n_head_kv(); ++g) {
        for (int s = 0; s < n; ++s) {
          const size_t from = static_cast<size_t>(g) * n + s, to = static_cast<size_t>(g) * n + (n - 1 - s);
          pos[to] = L.pos()[from];
          std::memcpy(&keys[to * row], k + from * row, row);
          std::memcpy(&values[to * row], v + from * row, row);
        }
      }
      std::vector<double> ps = L.policy().state();  // [group][n_slot] or empty
      // expected-attention's state is its last queries, tied to no slot: it stays as it is.
      if (!policy.starts_with("expected-attention")) {
        ASSERT_EQ(ps.size() % n, 0u);
        for (size_t r0 = 0; r0 < ps.size(); r0 += n) std::reverse(ps.begin() + r0, ps.begin() + r0 + n);
      }
      ASSERT_TRUE(L.restore(n, pos, keys, values, L.n_evicted(), ps).ok());
      ASSERT_EQ(L.slot_end(), n);
    }
    ASSERT_EQ(held(a), held(*b));
    std::vector<float> la(n_vocab), lb(n_vocab);
    for (int i = kPrompt; i < kPrompt + kDecode; ++i) {
      step(a, i, i + 1, la.data());
      step(*b, i, i + 1, lb.data());
      for (int il = 0; il < a.n_layer(); ++il) {
        // rkv evicts (and packs what it holds low) only when its buffer is full: until then a
        // state moved high stays there.
        if (a.layer(il).buffer() > 0) continue;
        ASSERT_LE(a.layer(il).slot_end(), a.layer(il).n_held() + 1) << "layer " << il;
        ASSERT_LE(b->layer(il).slot_end(), b->layer(il).n_held() + 1) << "layer " << il;
      }
      ASSERT_EQ(held(a), held(*b)) << "token " << i;
      for (int t = 0; t < n_vocab; ++t) ASSERT_NEAR(la[t], lb[t], 1e-4) << "token " << i;
    }
  }
}

}  // namespace
}  // namespace tova::testing
