// Table-driven tests with hand-computed answers for every policy of spec/POLICIES.md: who is
// evicted at each step. The harness plays the attention kernel's part: it hands each policy
// probabilities chosen per (query head, position), so every expected answer below can be
// checked with pen and paper. Probabilities are multiples of 1/16, exact in float.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>

#include "kv/multi_state.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

constexpr int kPolHead = 4;    // query heads 0,1 read KV head 0; heads 2,3 read KV head 1
constexpr int kPolHeadKv = 2;

using HeadProbFn = std::function<float(int head, int64_t pos)>;

class Harness {
 public:
  Harness(const std::string& policy, int budget, int max_new = 1) {
    auto spec = parse_policy(policy, budget);
    EXPECT_TRUE(spec.ok()) << spec.message();
    auto ms = MultiState::create({.n_layer = 1,
                                  .n_head = kPolHead,
                                  .n_head_kv = kPolHeadKv,
                                  .head_dim = 2,
                                  .policy = *spec,
                                  .max_new = max_new,
                                  .initial_slots = 2});
    EXPECT_TRUE(ms.ok()) << ms.message();
    ms_ = std::move(ms).value();
  }

  LayerState& layer() { return ms_->layer(0); }

  void insert() {
    const float kv[kPolHeadKv * 2] = {};
    int32_t slots[kPolHeadKv];
    layer().insert(ms_->n_seen(), kv, kv, slots);
    ms_->advance(1);
  }

  // Hands the policy one query row's probabilities (if it asked for scores).
  void observe(const HeadProbFn& prob) {
    LayerState& L = layer();
    if (ms_->score_need() == ScoreNeed::kNone) return;
    std::vector<float> probs(static_cast<size_t>(kPolHead) * L.n_slot(), 0.f);
    for (int h = 0; h < kPolHead; ++h) {
      const int g = h / (kPolHead / kPolHeadKv);
      for (int s = 0; s < L.n_slot(); ++s) {
        const int64_t p = L.pos()[g * L.n_slot() + s];
        if (p >= 0) probs[h * L.n_slot() + s] = prob(h, p);
      }
    }
    L.policy().observe(L.view(), probs.data());
  }

  // One exact step: the token joins, attends (prob), then the policy evicts down to k.
  void step(const HeadProbFn& prob = [](int, int64_t) { return 0.f; }) {
    insert();
    observe(prob);
    layer().evict_to(ms_->budget());
  }

  std::vector<int64_t> held(int g) {
    std::vector<int64_t> out;
    for (int s = 0; s < layer().n_slot(); ++s) {
      const int64_t p = layer().pos()[g * layer().n_slot() + s];
      if (p >= 0) out.push_back(p);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  MultiState& state() { return *ms_; }

 private:
  std::unique_ptr<MultiState> ms_;
};

using Held = std::vector<int64_t>;

// Probabilities that are the same for every head: table[pos] / 16.
HeadProbFn same(std::vector<float> sixteenths) {
  return [t = std::move(sixteenths)](int, int64_t pos) { return t.at(pos) / 16.f; };
}
// Per KV-head group: g0 for heads 0-1, g1 for heads 2-3.
HeadProbFn grouped(std::vector<float> g0, std::vector<float> g1) {
  return [g0 = std::move(g0), g1 = std::move(g1)](int h, int64_t pos) {
    return (h < 2 ? g0 : g1).at(pos) / 16.f;
  };
}

TEST(PolicyRegistry, ListsEveryPolicyOfTheSpec) {
  std::set<std::string> names;
  for (const PolicyInfo* p : all_policies()) names.insert(p->name);
  // spec/POLICIES.md's seven, and those of docs/POLICIES-EXTRA.md.
  for (const char* n : {"full", "window", "sink", "h2o", "h2o-head", "tova", "tova-head",
                        "snapkv", "snapkv+tova", "pyramidkv", "adakv", "keydiff", "kvzip"}) {
    EXPECT_TRUE(names.count(n)) << n;
  }
  const std::string choices = policy_choices();
  for (const char* n : {"adakv:BASE", "full", "h2o", "sink:N", "snapkv[:W]", "tova-head"}) {
    EXPECT_NE(choices.find(n), std::string::npos) << n << " in " << choices;
  }
}

// Every registered policy's examples parse, and those are what every-policy tests run.
TEST(PolicyRegistry, EveryPolicyHasRunnableExamples) {
  std::set<std::string> covered;
  for (const std::string& e : all_policy_examples()) {
    auto spec = parse_policy(e, 24);
    ASSERT_TRUE(spec.ok()) << e << ": " << spec.message();
    covered.insert(spec->name);
  }
  // An unlisted policy (kvzip: it evicts only in a pass the task evaluation runs) is left out
  // of the per-step every-policy tests on purpose; it has tests of its own.
  for (const PolicyInfo* p : all_policies()) {
    if (p->listed) EXPECT_TRUE(covered.count(p->name)) << p->name;
  }
}

TEST(PolicyRegistry, InvalidCombinationsAreOneClearError) {
  auto expect_error = [](const std::string& text, int k, const std::string& needle) {
    auto r = parse_policy(text, k);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.message().find(needle), std::string::npos) << r.message();
    EXPECT_EQ(r.message().find('\n'), std::string::npos);
  };
  expect_error("lru", 8, "unknown KV policy 'lru' (valid: ");
  expect_error("lru", 8, "full, h2o, h2o-head");
  expect_error("adakv", 8, "needs a base policy");
  expect_error("adakv:window", 8, "no head-wise scores");
  expect_error("adakv:adakv:tova", 8, "no head-wise scores");
  // A base that takes a policy is refused before it is parsed: a deep chain is one error,
  // not a recursion as deep as the text (a stack overflow under ASan).
  std::string chain;
  for (int i = 0; i < 200000; ++i) chain += "adakv:";
  expect_error(chain + "tova", 8, "'adakv' has no head-wise scores");
  expect_error("adakv:lru", 8, "unknown KV policy 'lru'");
  expect_error("snapkv:0", 8, "observation window");
  expect_error("tova", 0, "at least 1");
  expect_error("window", -3, "at least 1");
  expect_error("sink:4", 4, "N < the budget");
  expect_error("sink:9", 4, "N < the budget");
  expect_error("sink", 8, "needs an argument");
  expect_error("sink:x", 8, "not an integer");
  expect_error("tova:3", 8, "takes no argument");
  EXPECT_TRUE(parse_policy("sink:3", 4).ok());
  EXPECT_EQ(parse_policy("snapkv", 8)->label(), "snapkv");
  EXPECT_EQ(parse_policy("snapkv:16", 8)->label(), "snapkv:16");
  EXPECT_EQ(parse_policy("adakv:snapkv:16", 8)->label(), "adakv:snapkv:16");
  EXPECT_TRUE(parse_policy("full", 0).ok());  // unbounded: the budget is ignored
}

TEST(Window, EvictsTheOldest) {
  Harness h("window", 3);
  const std::vector<Held> expect = {{0}, {0, 1}, {0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 5}};
  for (const Held& e : expect) {
    h.step();
    EXPECT_EQ(h.held(0), e);
    EXPECT_EQ(h.held(1), e);
  }
  EXPECT_EQ(h.layer().n_evicted(), 3);
}

TEST(Sink, NeverEvictsTheFirstNPositions) {
  Harness h("sink:2", 4);
  for (int i = 0; i < 9; ++i) h.step();
  EXPECT_EQ(h.held(0), (Held{0, 1, 7, 8}));
  EXPECT_EQ(h.held(1), (Held{0, 1, 7, 8}));
}

TEST(Sink, ZeroSinksIsAWindow) {
  Harness h("sink:0", 2);
  for (int i = 0; i < 5; ++i) h.step();
  EXPECT_EQ(h.held(0), (Held{3, 4}));
}

TEST(Tova, EvictsTheLowestMeanOverAllHeads) {
  Harness h("tova", 2);
  h.step();
  h.step();
  EXPECT_EQ(h.held(0), (Held{0, 1}));
  // Means over the 4 heads: pos0 (8+2+6+4)/4=5, pos1 (3+10+6+3)/4=5.5, pos2 5.5 -> evict 0.
  const std::vector<std::vector<float>> t2 = {{8, 3, 5}, {2, 10, 4}, {6, 6, 4}, {4, 3, 9}};
  h.step([&](int hd, int64_t p) { return t2[hd][p] / 16.f; });
  EXPECT_EQ(h.held(0), (Held{1, 2}));
  EXPECT_EQ(h.held(1), (Held{1, 2}));
  h.step(same({0, 3, 8, 5}));  // pos1 is lowest
  EXPECT_EQ(h.held(0), (Held{2, 3}));
  // The new token may evict itself: it still took part in this step.
  h.step(same({0, 0, 8, 7, 1}));
  EXPECT_EQ(h.held(0), (Held{2, 3}));
  EXPECT_EQ(h.held(1), (Held{2, 3}));
  // Ties go to the smallest position.
  h.step(same({0, 0, 4, 4, 0, 8}));
  EXPECT_EQ(h.held(0), (Held{3, 5}));
  EXPECT_EQ(h.layer().n_evicted(), 4);
}

TEST(Tova, LayerWiseUsesTheMeanOverAllQueryHeads) {
  Harness h("tova", 2);
  h.step();
  h.step();
  // Group 0 would drop pos0, group 1 pos1; over all heads pos1 is lowest (4.4 vs 5.6).
  h.step(grouped({2, 7, 7}, {9.6f, 1.6f, 4.8f}));
  EXPECT_EQ(h.held(0), (Held{0, 2}));
  EXPECT_EQ(h.held(1), (Held{0, 2}));
}

TEST(TovaHead, KvHeadsKeepDifferentTokens) {
  Harness h("tova-head", 2);
  h.step();
  h.step();
  h.step(grouped({2, 7, 7}, {9.6f, 1.6f, 4.8f}));
  EXPECT_EQ(h.held(0), (Held{1, 2}));
  EXPECT_EQ(h.held(1), (Held{0, 2}));
  h.step(grouped({0, 3, 5, 8}, {11, 0, 2, 3}));
  EXPECT_EQ(h.held(0), (Held{2, 3}));
  EXPECT_EQ(h.held(1), (Held{0, 3}));
  // Memory stays k+1 slots per KV head.
  EXPECT_EQ(h.layer().n_slot(), 3);
}

TEST(H2o, KeepsTheRecentHalfAndEvictsTheLowestAccumulatedScore) {
  Harness h("h2o", 4);  // k/2 = 2 most recent are protected
  h.step(same({16}));
  h.step(same({8, 8}));
  h.step(same({4, 8, 4}));
  h.step(same({2, 2, 6, 6}));  // acc: 30 18 10 6
  EXPECT_EQ(h.held(0), (Held{0, 1, 2, 3}));
  // acc 32 22 12 10 4; pos3 is lowest of all but recent; pos2 goes.
  h.step(same({2, 4, 2, 4, 4}));
  EXPECT_EQ(h.held(0), (Held{0, 1, 3, 4}));
  // acc 33 23 16 8 4 -> pos3 (16) among {0, 1, 3}.
  h.step(same({1, 1, 0, 6, 4, 4}));
  EXPECT_EQ(h.held(0), (Held{0, 1, 4, 5}));
  EXPECT_EQ(h.held(1), (Held{0, 1, 4, 5}));
  // acc 33 33 10 6 2 -> pos4 among {0, 1, 4}.
  h.step(same({0, 10, 0, 0, 2, 2, 2}));
  EXPECT_EQ(h.held(0), (Held{0, 1, 5, 6}));
}

TEST(H2o, AnEvictedStateScoreIsDroppedAndASlotRestartsAtZero) {
  Harness h("h2o", 2);  // recent 1
  h.step(same({16}));
  h.step(same({1, 15}));
  h.step(same({0, 15, 1}));  // acc 17 30 1: evict 0 (2 is recent)
  EXPECT_EQ(h.held(0), (Held{1, 2}));
  // pos3 reuses pos0's slot and must start from 0, not 17: acc pos1 31, pos2 1+14=15 -> 2 goes.
  h.step(same({0, 1, 14, 1}));
  EXPECT_EQ(h.held(0), (Held{1, 3}));
}

TEST(H2oHead, AccumulatesPerKvHead) {
  // g0: acc0 = 16+12+8 = 36, acc1 = 4+4 = 8 -> evict 1; g1: acc0 20, acc1 24 -> evict 0.
  Harness h("h2o-head", 2);
  h.step(grouped({16}, {16}));
  h.step(grouped({12, 4}, {2, 14}));
  h.step(grouped({8, 4, 4}, {2, 10, 4}));
  EXPECT_EQ(h.held(0), (Held{0, 2}));
  EXPECT_EQ(h.held(1), (Held{1, 2}));

  Harness l("h2o", 2);  // layer-wise: acc0 28, acc1 16 -> evict 1 everywhere
  l.step(grouped({16}, {16}));
  l.step(grouped({12, 4}, {2, 14}));
  l.step(grouped({8, 4, 4}, {2, 10, 4}));
  EXPECT_EQ(l.held(0), (Held{0, 2}));
  EXPECT_EQ(l.held(1), (Held{0, 2}));
}

TEST(Chunked, TovaEvictsWithTheLastRowOfTheChunk) {
  Harness h("tova", 2, /*max_new=*/4);
  for (int i = 0; i < 4; ++i) h.insert();
  h.observe(same({16, 0, 0, 0}));  // an earlier row: ignored by tova
  h.observe(same({1, 7, 6, 2}));   // the last row: keep the top 2 = {1, 2}
  EXPECT_EQ(h.layer().evict_to(2), 2);
  EXPECT_EQ(h.held(0), (Held{1, 2}));
  EXPECT_EQ(h.layer().n_slot(), 4);  // what it held, grown from 2; at most k + C = 6
  EXPECT_EQ(h.layer().max_slots(), 6);
}

TEST(Chunked, H2oAccumulatesEveryRowOfTheChunk) {
  Harness h("h2o", 2, /*max_new=*/4);  // recent 1: pos3
  for (int i = 0; i < 4; ++i) h.insert();
  h.observe(same({16, 0, 0, 0}));
  h.observe(same({2, 7, 6, 1}));  // acc 18 7 6 1 -> evict the two lowest of {0,1,2}: 2 and 1
  EXPECT_EQ(h.layer().evict_to(2), 2);
  EXPECT_EQ(h.held(0), (Held{0, 3}));
}

TEST(Chunked, HeldStatesPackLowAndH2oScoresFollowThem) {
  Harness h("h2o", 2, /*max_new=*/4);  // recent 1
  for (int i = 0; i < 4; ++i) h.insert();
  h.observe(same({16, 0, 0, 0}));
  h.observe(same({2, 7, 6, 1}));  // acc 18 7 6 1: pos2 and pos1 go, pos0 and pos3 stay
  EXPECT_EQ(h.layer().evict_to(2), 2);
  // pos3 moved from slot 3 into the freed slot 1, so the next step reads slots 0..2 only.
  EXPECT_EQ(h.layer().slot_end(), 2);
  EXPECT_EQ(h.layer().view().end(), 2);
  for (int g = 0; g < kPolHeadKv; ++g) {
    EXPECT_EQ(h.layer().pos()[g * h.layer().n_slot() + 1], 3) << "KV head " << g;
  }
  h.insert();  // pos4 joins slot 2
  EXPECT_EQ(h.layer().slot_end(), 3);
  // acc: pos0 18, pos3 1 + 12 = 13 (its score moved with it; slot 1's old 7 would give 19),
  // pos4 4 (recent, protected): pos3 goes.
  h.observe(same({0, 0, 0, 12, 4}));
  EXPECT_EQ(h.layer().evict_to(2), 1);
  EXPECT_EQ(h.held(0), (Held{0, 4}));
}

// A bounded pool grows (from 2 slots here) to k + 1 and no further; `full` keeps growing.
TEST(MultiState, BoundedPoliciesStopGrowingAtKPlusOneAndFullGrows) {
  Harness w("tova", 8);
  Harness f("full", 0);
  const uint64_t full0 = f.state().bytes();
  uint64_t bytes9 = 0;
  for (int i = 0; i < 1000; ++i) {
    w.step(same(std::vector<float>(1000, 1)));
    f.step();
    if (i == 9) bytes9 = w.state().bytes();
  }
  EXPECT_EQ(w.state().bytes(), bytes9);
  EXPECT_EQ(w.layer().n_held(), 8);
  EXPECT_EQ(w.layer().n_slot(), 9);
  EXPECT_EQ(f.layer().n_held(), 1000);
  EXPECT_GT(f.state().bytes(), full0 * 100);
}

}  // namespace
}  // namespace tova::kv
