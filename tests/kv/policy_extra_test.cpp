// Hand-computed cases for the policies of docs/POLICIES-EXTRA.md (snapkv, snapkv+tova,
// pyramidkv, adakv, keydiff), and a float64 reference of each rule run against the cache on
// random inputs. The harness plays the model's part in the step order of kv/layer_step: a
// token joins, its query row attends (the probabilities are given), the layer evicts (with the
// prompt held whole by the prompt-holding policies); rows carry their positions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "kv/key_similarity.h"
#include "kv/multi_state.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

constexpr int kExtraHead = 4;  // query heads 0,1 read KV head 0; heads 2,3 read KV head 1
constexpr int kExtraHeadKv = 2;
constexpr int kExtraDim = 2;

using Held = std::vector<int64_t>;
using ProbFn = std::function<double(int head, int64_t query, int64_t pos)>;
using KeyFn = std::function<std::array<float, kExtraDim>(int head_kv, int64_t pos)>;

class Steps {
 public:
  Steps(const std::string& policy, int budget, int64_t prompt_end, int max_new = 1,
        int n_layer = 1) {
    auto spec = parse_policy(policy, budget);
    EXPECT_TRUE(spec.ok()) << spec.message();
    auto ms = MultiState::create({.n_layer = n_layer,
                                  .n_head = kExtraHead,
                                  .n_head_kv = kExtraHeadKv,
                                  .head_dim = kExtraDim,
                                  .policy = *spec,
                                  .max_new = max_new,
                                  .prompt_end = prompt_end});
    EXPECT_TRUE(ms.ok()) << ms.message();
    ms_ = std::move(ms).value();
  }
  LayerState& layer(int il = 0) { return ms_->layer(il); }
  MultiState& state() { return *ms_; }

  // Tokens [n_seen, n_seen + n) join as one step (n > 1: a chunk), their rows attend with
  // prob(head, query position, key position) (only held, causal keys), then the layer evicts.
  void step(int n, const ProbFn& prob = {}, const KeyFn& key = {}) {
    LayerState& L = layer();
    const int64_t first = ms_->n_seen();
    const int64_t last = first + n - 1;
    for (int64_t p = first; p <= last; ++p) {
      float k[kExtraHeadKv * kExtraDim] = {}, v[kExtraHeadKv * kExtraDim] = {};
      for (int g = 0; g < kExtraHeadKv && key; ++g) {
        const auto kk = key(g, p);
        for (int d = 0; d < kExtraDim; ++d) k[g * kExtraDim + d] = kk[d];
      }
      int32_t slots[kExtraHeadKv];
      L.insert(p, k, v, slots);
      if (n == 1) observe(p, last, prob);
    }
    if (n > 1) {
      for (int64_t q = first; q <= last; ++q) observe(q, last, prob);
    }
    ms_->advance(n);
    L.evict(last);
  }

  Held held(int g, int il = 0) {
    LayerState& L = layer(il);
    Held out;
    for (int s = 0; s < L.n_slot(); ++s) {
      const int64_t p = L.pos()[g * L.n_slot() + s];
      if (p >= 0) out.push_back(p);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  void observe(int64_t q, int64_t last, const ProbFn& prob) {
    LayerState& L = layer();
    if (ms_->score_need() == ScoreNeed::kNone) return;
    std::vector<float> probs(static_cast<size_t>(kExtraHead) * L.n_slot(), 0.f);
    for (int h = 0; h < kExtraHead; ++h) {
      const int g = h / (kExtraHead / kExtraHeadKv);
      for (int s = 0; s < L.n_slot(); ++s) {
        const int64_t p = L.pos()[g * L.n_slot() + s];
        if (p >= 0 && p <= q && prob) probs[h * L.n_slot() + s] = static_cast<float>(prob(h, q, p));
      }
    }
    SlotView v = L.view();
    v.query_pos = q;
    v.step_last_pos = last;
    L.policy().observe(v, probs.data());
  }

  std::unique_ptr<MultiState> ms_;
};

// Probabilities in sixteenths given per KV group (both query heads of a group alike) and per
// query row: rows[query] = {pos: sixteenths}; rows not listed put nothing anywhere.
ProbFn rows16(std::map<int64_t, std::map<int64_t, double>> g0,
              std::map<int64_t, std::map<int64_t, double>> g1) {
  return [g0 = std::move(g0), g1 = std::move(g1)](int h, int64_t q, int64_t p) {
    const auto& g = h < 2 ? g0 : g1;
    auto r = g.find(q);
    if (r == g.end()) return 0.0;
    auto c = r->second.find(p);
    return c == r->second.end() ? 0.0 : c->second / 16.0;
  };
}

// snapkv:2, k = 5, a prompt of 12 tokens. The rows of positions 10 and 11 vote (W = 2); 10 and
// 11 stay (the W newest); 3 of positions 0..9 stay by their votes max-pooled over 7.
//   KV head 0: votes (two rows, two heads, sixteenths) p2 = 2x(4+2) = 12, p5 = 2x1 = 2,
//     p8 = 2x2 = 4; pooled p0..p5 = 12, p6..p9 = 4: keep the three largest positions of the
//     12s: {3, 4, 5} (ties evict the smallest position). Without pooling it would keep 2, 8, 5.
//   KV head 1: votes p0 = 16, p9 = 16; pooled p0..p3 = 16, p4 = p5 = 0, p6..p9 = 16: keep
//     {7, 8, 9}.
ProbFn snap_prompt() {
  return rows16({{10, {{2, 4}, {8, 2}, {10, 10}}}, {11, {{2, 2}, {5, 1}, {11, 13}}}},
                {{10, {{0, 8}, {10, 8}}}, {11, {{9, 8}, {11, 8}}}});
}

TEST(SnapKv, HoldsThePromptThenKeepsThePooledVotesAndTheWindow) {
  Steps s("snapkv:2", 5, /*prompt_end=*/12);
  EXPECT_EQ(s.layer().n_slot(), 13);  // the whole prompt, plus the joining token
  for (int i = 0; i < 11; ++i) s.step(1, snap_prompt());
  EXPECT_EQ(s.held(0).size(), 11u);  // nothing evicted before the prompt's last token
  s.step(1, snap_prompt());
  EXPECT_EQ(s.held(0), (Held{3, 4, 5, 10, 11}));
  EXPECT_EQ(s.held(1), (Held{7, 8, 9, 10, 11}));
  // After the cut the pool shrinks to k + 1 and the chosen states stay; the W newest slide.
  EXPECT_EQ(s.layer().n_slot(), 6);
  s.step(1);
  EXPECT_EQ(s.held(0), (Held{3, 4, 5, 11, 12}));
  s.step(1);
  EXPECT_EQ(s.held(0), (Held{3, 4, 5, 12, 13}));
  EXPECT_EQ(s.held(1), (Held{7, 8, 9, 12, 13}));
}

TEST(SnapKv, PlusTovaDecodesByTheCurrentQueryPerKvHead) {
  Steps s("snapkv+tova:2", 5, 12);
  for (int i = 0; i < 12; ++i) s.step(1, snap_prompt());
  ASSERT_EQ(s.held(0), (Held{3, 4, 5, 10, 11}));
  // Token 12: head 0's row gives pos4 the least, head 1's row pos11.
  s.step(1, rows16({{12, {{3, 3}, {4, 1}, {5, 4}, {10, 4}, {11, 2}, {12, 2}}}},
                   {{12, {{7, 4}, {8, 4}, {9, 4}, {10, 2}, {11, 1}, {12, 1}}}}));
  EXPECT_EQ(s.held(0), (Held{3, 5, 10, 11, 12}));
  EXPECT_EQ(s.held(1), (Held{7, 8, 9, 10, 12}));
}

TEST(SnapKv, ChunkedPrefillCutsAtEachChunksEnd) {
  // chunk:4, W = 2, k = 3, prompt of 8: after chunk 0..3 the rows of 2 and 3 vote; 2 and 3
  // stay, and one of {0, 1}: head 0 votes p1 (8), head 1 p0 (8), but pooled over 7 neighbours
  // both candidates score 8 in each head, and the tie evicts the smaller position.
  Steps s("snapkv:2", 3, 8, /*max_new=*/4);
  EXPECT_EQ(s.layer().n_slot(), 7);  // k + C
  s.step(4, rows16({{2, {{1, 2}}}, {3, {{1, 2}}}}, {{2, {{0, 2}}}, {3, {{0, 2}}}}));
  EXPECT_EQ(s.held(0), (Held{1, 2, 3}));
  EXPECT_EQ(s.held(1), (Held{1, 2, 3}));
  // Chunk 4..7: only its rows 6 and 7 vote, over {1, 2, 3, 4, 5} (head 0): p3 gets 6, pooled
  // over 7 neighbours every candidate scores 6: the largest position among them stays (5).
  s.step(4, rows16({{6, {{3, 3}}}, {7, {{3, 3}}}}, {{6, {{0, 1}}}, {7, {{4, 1}}}}));
  EXPECT_EQ(s.held(0), (Held{5, 6, 7}));
  EXPECT_EQ(s.held(1), (Held{5, 6, 7}));
}

TEST(SnapKv, BudgetAtLeastThePromptKeepsEverything) {
  Steps s("snapkv:2", 12, 12);
  for (int i = 0; i < 12; ++i) s.step(1, snap_prompt());
  EXPECT_EQ(s.held(0).size(), 12u);
  EXPECT_EQ(s.layer().n_evicted(), 0);
}

TEST(PyramidKv, BudgetsFallLinearlyWithTheSameTotal) {
  // k = 40, W = 8, 4 layers: chosen shares 62.4, 42.13, 21.87, 1.6 (mean 32, the last 32/20)
  // -> 62, 42, 21, 1 rounded down, the two largest remainders (layers 2 and 3) get one more:
  // 62, 42, 22, 2, plus W.
  Steps s("pyramidkv:8", 40, 100, 1, /*n_layer=*/4);
  std::vector<int> b;
  for (int il = 0; il < 4; ++il) b.push_back(s.layer(il).budget());
  EXPECT_EQ(b, (std::vector<int>{70, 50, 30, 10}));
  EXPECT_EQ(std::accumulate(b.begin(), b.end(), 0), 4 * 40);
  // Until the prompt's cut every layer holds everything; a follower-sized state says so.
  EXPECT_EQ(s.state().holds_all_until(), 99);
  // A budget at most W: every layer k.
  Steps t("pyramidkv:8", 8, 100, 1, 4);
  for (int il = 0; il < 4; ++il) EXPECT_EQ(t.layer(il).budget(), 8);
}

TEST(AdaKv, TheLowestScoreOfAnyHeadGoes) {
  // adakv:tova, k = 3: 6 states per layer shared by the two KV heads (floor 1).
  Steps s("adakv:tova", 3, 0);
  for (int i = 0; i < 3; ++i) s.step(1);
  // Token 3: head 0 scores p0 1, p1 6, p2 6, p3 3; head 1 scores 4 each. The two lowest of
  // the layer are both head 0's: p0 and p3.
  s.step(1, rows16({{3, {{0, 1}, {1, 6}, {2, 6}, {3, 3}}}}, {{3, {{0, 4}, {1, 4}, {2, 4}, {3, 4}}}}));
  EXPECT_EQ(s.held(0), (Held{1, 2}));
  EXPECT_EQ(s.held(1), (Held{0, 1, 2, 3}));
  EXPECT_EQ(s.layer().n_held(0), 2);
  EXPECT_EQ(s.layer().n_held(1), 4);
  // Token 4: head 0 {1: 5, 2: 5, 4: 6}, head 1 {0: 1, 1: 1, 2: 5, 3: 4, 4: 5}: head 1's p0
  // and p1 go.
  s.step(1, rows16({{4, {{1, 5}, {2, 5}, {4, 6}}}}, {{4, {{0, 1}, {1, 1}, {2, 5}, {3, 4}, {4, 5}}}}));
  EXPECT_EQ(s.held(0), (Held{1, 2, 4}));
  EXPECT_EQ(s.held(1), (Held{2, 3, 4}));
  // Memory: a head may hold 6 - 1 (the other's floor) + 1 joining.
  EXPECT_EQ(s.layer().n_slot(), 6);
}

TEST(AdaKv, NoHeadFallsBelowItsFloor) {
  // k = 2: 4 states shared, floor 1.
  Steps s("adakv:tova", 2, 0);
  s.step(1);
  s.step(1);
  s.step(1, rows16({{2, {{0, 0.5}, {1, 0.5}, {2, 15}}}}, {{2, {{0, 5}, {1, 5}, {2, 6}}}}));
  EXPECT_EQ(s.held(0), (Held{2}));
  EXPECT_EQ(s.held(1), (Held{0, 1, 2}));
  // Head 0's two states score lowest, but it may lose only one: then head 1's lowest (p0).
  s.step(1, rows16({{3, {{2, 1}, {3, 1}}}}, {{3, {{0, 2}, {1, 5}, {2, 2}, {3, 7}}}}));
  EXPECT_EQ(s.held(0), (Held{3}));
  EXPECT_EQ(s.held(1), (Held{1, 2, 3}));
}

TEST(AdaKv, OverSnapKvCutsThePromptAcrossHeads) {
  // adakv:snapkv:2, k = 5 on snapkv's prompt: the layer keeps 10 states; each head keeps its
  // 2 newest (scored +inf), and the 6 best pooled votes of the layer: head 1's votes (16) beat
  // head 0's (12), so head 1 keeps all 8 of its 16s... but only 6 go: the 6 largest positions
  // among head 1's eight 16s: {2, 3, 6, 7, 8, 9}.
  Steps s("adakv:snapkv:2", 5, 12);
  for (int i = 0; i < 12; ++i) s.step(1, snap_prompt());
  EXPECT_EQ(s.held(0), (Held{10, 11}));
  EXPECT_EQ(s.held(1), (Held{2, 3, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(s.layer().n_held_total(), 10);
}

TEST(KeyDiff, EvictsTheKeyClosestToTheMeanDirection) {
  // Head 0 keys (1,0) (0,1) (1,0.1): unit mean (0.665, 0.366); cosines 0.876 0.483 0.919 ->
  // evict pos2. Head 1 keys (0,1) (0,2) (1,0): cosines 0.894 0.894 0.447 -> a tie: pos0.
  const std::map<int64_t, std::array<float, 2>> k0 = {{0, {1, 0}}, {1, {0, 1}}, {2, {1, 0.1f}}};
  const std::map<int64_t, std::array<float, 2>> k1 = {{0, {0, 1}}, {1, {0, 2}}, {2, {1, 0}}};
  Steps s("keydiff", 2, 0);
  const KeyFn key = [&](int g, int64_t p) { return (g == 0 ? k0 : k1).at(p); };
  for (int i = 0; i < 3; ++i) s.step(1, {}, key);
  EXPECT_EQ(s.held(0), (Held{0, 1}));
  EXPECT_EQ(s.held(1), (Held{1, 2}));
}

TEST(KeyDiff, SimilarityByHand) {
  const float keys[2][3][2] = {{{1, 0}, {0, 1}, {1, 0.1f}}, {{0, 1}, {0, 2}, {1, 0}}};
  const int64_t pos[2][3] = {{0, 1, 2}, {0, 1, -1}};  // head 1's last slot is free
  double out[6] = {9, 9, 9, 9, 9, 9};
  key_similarity({.keys = keys, .pos = &pos[0][0], .n_head_kv = 2, .n_slot = 3, .slot_end = 3,
                  .head_dim = 2},
                 out);
  const double u2x = 1 / std::sqrt(1.01), u2y = 0.1 / std::sqrt(1.01);
  const double ax = (1 + u2x) / 3, ay = (1 + u2y) / 3, an = std::hypot(ax, ay);
  EXPECT_NEAR(out[0], ax / an, 1e-7);  // the third key is float (0.1f)
  EXPECT_NEAR(out[1], ay / an, 1e-7);
  EXPECT_NEAR(out[2], (u2x * ax + u2y * ay) / an, 1e-7);
  EXPECT_DOUBLE_EQ(out[3], 1.0);  // both held keys point the same way
  EXPECT_DOUBLE_EQ(out[4], 1.0);
  EXPECT_EQ(out[5], 9);  // a free slot is left alone
}

// ---------------------------------------------------------------------------------------------
// Float64 references: each rule re-implemented on positions (not slots), straight from
// docs/POLICIES-EXTRA.md, run against the cache on random inputs: the states kept must be the
// same, step after step. Probabilities and keys are multiples of 1/64 (sums exact in float and
// double), so ties happen and the tie rule is checked too.

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}
// A pseudo-random probability in sixty-fourths for (head, query, key), a function of the seed.
double rnd64(uint64_t seed, int h, int64_t q, int64_t p) {
  return static_cast<double>(mix(seed * 1000003 + h * 7919 + q * 104729 + p) % 17) / 64.0;
}

using HeldSets = std::vector<std::set<int64_t>>;  // [head_kv]

HeldSets held_sets(Steps& s) {
  HeldSets out(kExtraHeadKv);
  for (int g = 0; g < kExtraHeadKv; ++g) {
    for (int64_t p : s.held(g)) out[g].insert(p);
  }
  return out;
}

// SnapKV's cut for one KV head (exact prefill): votes of rows > P - 1 - W summed over the
// group's heads, pooled over 7 in position order among the candidates, the W' newest kept.
std::set<int64_t> snap_cut(uint64_t seed, int g, int64_t P, int k, int W, std::set<int64_t>* chosen) {
  const int Wp = std::min(W, k);
  std::vector<double> vote(P, 0.0);
  for (int64_t q = std::max<int64_t>(0, P - W); q < P; ++q) {
    for (int h = 2 * g; h < 2 * g + 2; ++h) {
      for (int64_t p = 0; p <= q; ++p) vote[p] += rnd64(seed, h, q, p);
    }
  }
  const int64_t n_cand = std::max<int64_t>(0, P - Wp);
  std::vector<std::pair<double, int64_t>> cand;  // (pooled, position)
  for (int64_t i = 0; i < n_cand; ++i) {
    double best = 0;
    for (int64_t j = std::max<int64_t>(0, i - 3); j <= std::min(n_cand - 1, i + 3); ++j) {
      best = std::max(best, vote[j]);
    }
    cand.push_back({best, i});
  }
  std::sort(cand.begin(), cand.end());  // lowest first, ties: smallest position first
  std::set<int64_t> kept;
  for (int64_t p = n_cand; p < P; ++p) kept.insert(p);
  const int64_t n_evict = std::max<int64_t>(0, P - k);
  for (size_t i = n_evict; i < cand.size(); ++i) {
    kept.insert(cand[i].second);
    chosen->insert(cand[i].second);
  }
  return kept;
}

TEST(SnapKvReference, RandomPromptsCutAndWindowAsTheRuleSays) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const int64_t P = 20 + static_cast<int64_t>(mix(seed) % 25);
    const int k = 4 + static_cast<int>(mix(seed + 1) % 12);
    const int W = 1 + static_cast<int>(mix(seed + 2) % 6);
    SCOPED_TRACE("seed " + std::to_string(seed) + " P " + std::to_string(P) + " k " +
                 std::to_string(k) + " W " + std::to_string(W));
    Steps s("snapkv:" + std::to_string(W), k, P);
    const ProbFn prob = [&](int h, int64_t q, int64_t p) { return rnd64(seed, h, q, p); };
    for (int64_t i = 0; i < P; ++i) s.step(1, prob);
    HeldSets want(kExtraHeadKv);
    std::vector<std::set<int64_t>> chosen(kExtraHeadKv);
    for (int g = 0; g < kExtraHeadKv; ++g) want[g] = snap_cut(seed, g, P, k, W, &chosen[g]);
    ASSERT_EQ(held_sets(s), want) << "after the cut";
    // Decoding: each new token joins; the oldest state not chosen at the cut goes.
    for (int t = 0; t < 15; ++t) {
      s.step(1, prob);
      for (int g = 0; g < kExtraHeadKv; ++g) {
        want[g].insert(P + t);
        if (static_cast<int>(want[g].size()) > k) {
          for (int64_t p : want[g]) {
            if (!chosen[g].count(p)) {
              want[g].erase(p);
              break;
            }
          }
        }
      }
      ASSERT_EQ(held_sets(s), want) << "decode step " << t;
    }
  }
}

TEST(AdaKvReference, RandomStepsShareTheLayersBudgetAsTheRuleSays) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const int k = 2 + static_cast<int>(mix(seed) % 9);
    const int floor = std::max(1, k / 5);
    SCOPED_TRACE("seed " + std::to_string(seed) + " k " + std::to_string(k));
    Steps s("adakv:tova", k, 0);
    const ProbFn prob = [&](int h, int64_t q, int64_t p) { return rnd64(seed, h, q, p); };
    HeldSets want(kExtraHeadKv);
    for (int64_t t = 0; t < 40; ++t) {
      s.step(1, prob);
      for (auto& w : want) w.insert(t);
      // tova-head's score of every held state: the mean of the group's two rows at query t.
      struct C {
        double score;
        int64_t pos;
        int head;
      };
      std::vector<C> all;
      for (int g = 0; g < kExtraHeadKv; ++g) {
        for (int64_t p : want[g]) {
          all.push_back({(rnd64(seed, 2 * g, t, p) + rnd64(seed, 2 * g + 1, t, p)) / 2, p, g});
        }
      }
      std::sort(all.begin(), all.end(), [](const C& a, const C& b) {
        if (a.score != b.score) return a.score < b.score;
        return a.pos != b.pos ? a.pos < b.pos : a.head < b.head;
      });
      int64_t excess = static_cast<int64_t>(want[0].size() + want[1].size()) - 2 * k;
      for (const C& c : all) {
        if (excess <= 0) break;
        if (static_cast<int>(want[c.head].size()) <= floor) continue;
        want[c.head].erase(c.pos);
        --excess;
      }
      ASSERT_EQ(held_sets(s), want) << "step " << t;
    }
  }
}

TEST(KeyDiffReference, RandomKeysEvictTheClosestToTheMeanDirection) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const int k = 2 + static_cast<int>(mix(seed) % 8);
    SCOPED_TRACE("seed " + std::to_string(seed) + " k " + std::to_string(k));
    auto key = [&](int g, int64_t p) {
      const float x = static_cast<float>(static_cast<int>(mix(seed * 31 + g * 7 + p) % 33) - 16) / 8.f;
      const float y = static_cast<float>(static_cast<int>(mix(seed * 37 + g * 5 + p) % 33) - 16) / 8.f;
      return std::array<float, kExtraDim>{x, y};
    };
    Steps s("keydiff", k, 0);
    HeldSets want(kExtraHeadKv);
    for (int64_t t = 0; t < 30; ++t) {
      s.step(1, {}, key);
      for (int g = 0; g < kExtraHeadKv; ++g) {
        want[g].insert(t);
        if (static_cast<int>(want[g].size()) <= k) continue;
        double ax = 0, ay = 0;
        for (int64_t p : want[g]) {
          const auto kk = key(g, p);
          const double n = std::hypot(double{kk[0]}, double{kk[1]});
          if (n > 0) {
            ax += kk[0] / n;
            ay += kk[1] / n;
          }
        }
        ax /= want[g].size();
        ay /= want[g].size();
        const double an = std::hypot(ax, ay);
        int64_t worst = -1;
        double worst_cos = -2;
        for (int64_t p : want[g]) {  // increasing positions: a tie keeps the first (smallest)
          const auto kk = key(g, p);
          const double n = std::hypot(double{kk[0]}, double{kk[1]});
          const double c = n == 0 || an == 0 ? 0.0 : (kk[0] * ax + kk[1] * ay) / (n * an);
          if (c > worst_cos) {
            worst_cos = c;
            worst = p;
          }
        }
        want[g].erase(worst);
      }
      ASSERT_EQ(held_sets(s), want) << "step " << t;
    }
  }
}

TEST(PyramidKvReference, BudgetsSumToKPerLayerAndFallFromFirstToLast) {
  for (int L : {2, 5, 8, 32}) {
    for (int k : {9, 40, 128, 513}) {
      for (int W : {1, 8, 32}) {
        Steps s("pyramidkv:" + std::to_string(W), k, 0, 1, L);
        int64_t sum = 0;
        for (int il = 0; il < L; ++il) {
          sum += s.layer(il).budget();
          if (il > 0) EXPECT_LE(s.layer(il).budget(), s.layer(il - 1).budget());
          if (k > W) {
            // The linear share in float64, within the one state rounding moves it.
            const double m = k - W, lo = m / 20, hi = 2 * m - lo;
            EXPECT_NEAR(s.layer(il).budget(), W + hi - il * (hi - lo) / (L - 1), 1.0);
          }
        }
        EXPECT_EQ(sum, int64_t{L} * k) << "L " << L << " k " << k << " W " << W;
      }
    }
  }
}

}  // namespace
}  // namespace tova::kv
