// Bounded pools start at what a sequence can reach and double up to k + extra (issue 24, item
// 5): every registered policy keeps exactly the states it keeps in a pool allocated whole, exact
// and chunked; a huge budget allocates only what is used; a budget whose bytes cannot fit is
// refused when the state is made.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kv/multi_state.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

constexpr int kGrowHead = 4, kGrowHeadKv = 2, kGrowHeadDim = 4;

std::unique_ptr<MultiState> make(const PolicySpec& spec, int initial, int max_new) {
  auto ms = MultiState::create({.n_layer = 1,
                                .n_head = kGrowHead,
                                .n_head_kv = kGrowHeadKv,
                                .head_dim = kGrowHeadDim,
                                .policy = spec,
                                .max_new = max_new,
                                .initial_slots = initial});
  EXPECT_TRUE(ms.ok()) << ms.message();
  return std::move(ms).value();
}

// Feeds the same tokens, scores and chunks to a pool that starts at one slot and to one that
// starts whole; after every step both hold the same positions in the same slots (below the
// smaller pool's size), and the growing one ends at k + extra.
void expect_growth_changes_nothing(const PolicySpec& spec, int max_new, int n_tok) {
  auto grow = make(spec, 1, max_new);
  auto whole = make(spec, 4096, max_new);
  // k + extra slots (k + buffer + extra for a buffering policy, rkv), or more where the policy
  // needs them (heads sharing a budget, adakv).
  const int max_slots = whole->layer(0).max_slots();
  if (spec.bounded() && !whole->layer(0).shared_heads()) {
    ASSERT_EQ(max_slots, whole->layer(0).budget() + whole->layer(0).buffer() + max_new);
  }
  ASSERT_EQ(whole->layer(0).n_slot(), spec.bounded() ? max_slots : 4096);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<float> kv(kGrowHeadKv * kGrowHeadDim, 0.5f);
  int64_t pos = 0;
  while (pos < n_tok) {
    const int chunk = std::min<int>(max_new, n_tok - pos);
    ASSERT_TRUE(grow->make_room(chunk).ok());
    std::vector<float> scores;  // one row of probabilities per token, shared by both
    for (int t = 0; t < chunk; ++t, ++pos) {
      for (MultiState* ms : {grow.get(), whole.get()}) {
        int32_t slots[kGrowHeadKv];
        ms->layer(0).insert(pos, kv.data(), kv.data(), slots);
      }
      const int n_slot = grow->layer(0).n_slot();
      scores.assign(static_cast<size_t>(kGrowHead) * n_slot, 0.f);
      for (float& x : scores) x = u(rng);
      for (MultiState* ms : {grow.get(), whole.get()}) {
        LayerState& L = ms->layer(0);
        if (ms->score_need() == ScoreNeed::kNone) continue;
        std::vector<float> probs(static_cast<size_t>(kGrowHead) * L.n_slot(), 0.f);
        for (int h = 0; h < kGrowHead; ++h) {
          for (int s = 0; s < n_slot; ++s) {
            const bool held = L.pos()[(h / (kGrowHead / kGrowHeadKv)) * L.n_slot() + s] >= 0;
            probs[static_cast<size_t>(h) * L.n_slot() + s] = held ? scores[h * n_slot + s] : 0.f;
          }
        }
        L.policy().observe(L.view(), probs.data());
      }
      if (max_new == 1) {
        grow->layer(0).evict(pos);
        whole->layer(0).evict(pos);
      }
    }
    if (max_new > 1) {
      grow->layer(0).evict(pos - 1);
      whole->layer(0).evict(pos - 1);
    }
    const LayerState& a = grow->layer(0);
    const LayerState& b = whole->layer(0);
    ASSERT_EQ(a.n_held(), b.n_held());
    ASSERT_EQ(a.slot_end(), b.slot_end());
    for (int g = 0; g < kGrowHeadKv; ++g) {
      for (int s = 0; s < a.slot_end(); ++s) {
        ASSERT_EQ(a.pos()[g * a.n_slot() + s], b.pos()[g * b.n_slot() + s])
            << spec.label() << " k=" << spec.budget << " C=" << max_new << " token " << pos
            << " head " << g << " slot " << s;
      }
    }
  }
  if (spec.bounded()) {
    EXPECT_LE(grow->layer(0).n_slot(), max_slots);
  }
}

TEST(PoolGrowth, EveryPolicyKeepsWhatAWholePoolKeeps) {
  for (const PolicyInfo* info : all_policies()) {
    if (!info->listed) continue;
    // Its plain form (a suffix's examples), and its examples that take these budgets (rkv:4,
    // whose buffer fills within the sequence).
    std::vector<std::string> texts;
    if (!info->suffix) {
      texts.push_back(info->arg_is_policy                              ? info->name + ":tova"
                      : info->arg_name.empty() || info->arg_optional ? info->name
                                                                      : info->name + ":1");
    }
    for (const std::string& e : info->examples) {
      if (info->suffix || (parse_policy(e, 3).ok() && e != texts.front())) texts.push_back(e);
    }
    for (const std::string& text : texts) {
      for (int budget : {3, 9}) {
        for (int max_new : {1, 4}) {
          auto spec = parse_policy(text, budget);
          ASSERT_TRUE(spec.ok()) << spec.message();
          SCOPED_TRACE(text);
          expect_growth_changes_nothing(*spec, spec->bounded() ? max_new : 1, 40);
        }
      }
    }
  }
}

TEST(PoolGrowth, AHugeBudgetAllocatesWhatTheSequenceReaches) {
  auto spec = parse_policy("tova", 3'000'000);
  ASSERT_TRUE(spec.ok());
  auto ms = make(*spec, 6, 1);
  // 6 slots x 2 KV heads x (4 keys + 4 values) x 4 bytes + positions: a few hundred bytes, not
  // the 3,000,001 slots (240 MB) the budget allows.
  EXPECT_LT(ms->bytes(), 4096u);
  EXPECT_EQ(ms->max_bytes(), 3'000'001ull * kGrowHeadKv * (2 * kGrowHeadDim * 4 + 8));
  // A reserve grows it, doubling, never past k + 1.
  ASSERT_TRUE(ms->reserve(7).ok());
  EXPECT_EQ(ms->layer(0).n_slot(), 12);
  auto small = make(*parse_policy("window", 5), 2, 1);
  ASSERT_TRUE(small->reserve(1000).ok());
  EXPECT_EQ(small->layer(0).n_slot(), 6);
}

TEST(PoolGrowth, ABudgetBeyondTheMemoryLimitIsRefused) {
  auto spec = parse_policy("h2o", 1'000'000);
  ASSERT_TRUE(spec.ok());
  MultiStateOptions o{.n_layer = 2,
                      .n_head = kGrowHead,
                      .n_head_kv = kGrowHeadKv,
                      .head_dim = kGrowHeadDim,
                      .policy = *spec,
                      .initial_slots = 8,
                      .memory_limit = 1 << 20};
  auto refused = MultiState::create(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("K/V budget 1000000 needs"), std::string::npos)
      << refused.message();
  EXPECT_NE(refused.message().find("the K/V memory limit (1.00 MiB)"), std::string::npos)
      << refused.message();
  o.memory_limit = 1ull << 30;
  EXPECT_TRUE(MultiState::create(o).ok());
  // No limit given: the machine's memory. 2^30 slots of 64 KV heads of 128 cannot fit.
  auto big = parse_policy("tova", 1 << 30);
  ASSERT_TRUE(big.ok());
  auto machine = MultiState::create(
      {.n_layer = 32, .n_head = 64, .n_head_kv = 64, .head_dim = 128, .policy = *big});
  ASSERT_FALSE(machine.ok());
  EXPECT_NE(machine.message().find("this machine's memory"), std::string::npos)
      << machine.message();
}

}  // namespace
}  // namespace tova::kv
