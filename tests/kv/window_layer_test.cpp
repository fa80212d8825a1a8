// Sliding-window layers (MultiStateOptions::windows, Gemma 2/3): hand-checked steps. A window
// layer of window W keeps min(k, W - 1) states, drops what falls out of the window before the
// policy chooses, and under an unbounded policy grows only up to its window.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <vector>

#include "kv/multi_state.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

std::unique_ptr<MultiState> make(const std::string& policy, int budget, std::vector<int> windows,
                                 int initial_slots = 2) {
  auto spec = parse_policy(policy, budget);
  EXPECT_TRUE(spec.ok()) << spec.message();
  auto ms = MultiState::create({.n_layer = static_cast<int>(windows.size()),
                                .n_head = 2,
                                .n_head_kv = 1,
                                .head_dim = 2,
                                .policy = *spec,
                                .initial_slots = initial_slots,
                                .windows = std::move(windows)});
  EXPECT_TRUE(ms.ok()) << ms.message();
  return std::move(ms).value();
}

// One exact step of every layer: the token joins, then the layer evicts (no scores: the policies
// used here need none, or see zeros).
void step(MultiState& ms) {
  const float kv[2] = {};
  int32_t slot;
  for (int il = 0; il < ms.n_layer(); ++il) {
    ms.layer(il).insert(ms.n_seen(), kv, kv, &slot);
    ms.layer(il).evict(ms.n_seen());
  }
  ms.advance(1);
}

std::vector<int64_t> held(const LayerState& L) {
  std::vector<int64_t> out;
  for (int s = 0; s < L.n_slot(); ++s) {
    if (L.pos()[s] >= 0) out.push_back(L.pos()[s]);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(WindowLayer, FullKeepsTheWindowAndGrowsOnlyUpToIt) {
  auto ms = make("full", 0, {4, 0});
  EXPECT_EQ(ms->holds_all_until(), 3);
  for (int t = 0; t < 10; ++t) step(*ms);
  // The next query (position 10) sees 7, 8, 9 and itself.
  EXPECT_EQ(held(ms->layer(0)), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(ms->layer(0).n_slot(), 4);  // 2 -> 4, capped at the window
  EXPECT_EQ(ms->layer(0).budget(), 3);
  EXPECT_EQ(ms->layer(0).n_evicted(), 7);
  // The global layer is unbounded.
  EXPECT_EQ(held(ms->layer(1)).size(), 10u);
  EXPECT_EQ(ms->layer(1).budget(), -1);
  EXPECT_GE(ms->layer(1).n_slot(), 10);
}

TEST(WindowLayer, AHugeWindowAllocatesOnlyWhatIsHeld) {
  // A hostile file's window of 2^30 under `full`: the pool grows with the tokens, it is not
  // reserved up front.
  auto ms = make("full", 0, {1 << 30});
  for (int t = 0; t < 10; ++t) step(*ms);
  EXPECT_EQ(ms->layer(0).n_slot(), 16);
  EXPECT_EQ(held(ms->layer(0)).size(), 10u);
  EXPECT_LT(ms->bytes(), 4096u);
}

TEST(WindowLayer, ABoundedPolicyChoosesInsideTheWindow) {
  // sink:1 with k = 3 on a window of 4: the sink (position 0) is out of the window from the
  // step at position 3 on (the next query, 4, sees 1..4), so it is dropped like any old state;
  // the policy then keeps k = 3 of what the window holds.
  auto ms = make("sink:1", 3, {4});
  for (int t = 0; t < 3; ++t) step(*ms);
  EXPECT_EQ(held(ms->layer(0)), (std::vector<int64_t>{0, 1, 2}));
  step(*ms);  // position 3 joins: 0 falls out of the window
  EXPECT_EQ(held(ms->layer(0)), (std::vector<int64_t>{1, 2, 3}));
  // A smaller budget than the window: the policy evicts inside it. sink:1 keeps the oldest
  // held state as its sink and the most recent others.
  auto small = make("sink:1", 2, {4});
  for (int t = 0; t < 6; ++t) step(*small);
  const std::vector<int64_t> h = held(small->layer(0));
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h.back(), 5);
  EXPECT_GE(h.front(), 6 - 4 + 1);  // nothing older than the next query's window
  EXPECT_EQ(small->layer(0).budget(), 2);
  EXPECT_EQ(small->layer(0).n_slot(), 3);
}

TEST(WindowLayer, BadWindowsAreErrors) {
  auto spec = parse_policy("full", 0);
  ASSERT_TRUE(spec.ok());
  MultiStateOptions o{.n_layer = 2, .n_head = 2, .n_head_kv = 1, .head_dim = 2, .policy = *spec};
  o.windows = {4};
  EXPECT_EQ(MultiState::create(o).message(), "1 sliding windows given for 2 layers");
  o.windows = {1, 0};
  EXPECT_EQ(MultiState::create(o).message(), "invalid sliding window 1");
  o.windows = {-3, 0};
  EXPECT_EQ(MultiState::create(o).message(), "invalid sliding window -3");
}

TEST(WindowLayer, CloneKeepsTheWindowAndTheBudget) {
  auto ms = make("full", 0, {4});
  for (int t = 0; t < 5; ++t) step(*ms);
  auto copy = ms->clone();
  step(*ms);
  step(*copy);
  EXPECT_EQ(held(copy->layer(0)), held(ms->layer(0)));
  EXPECT_EQ(copy->layer(0).window(), 4);
  EXPECT_EQ(copy->holds_all_until(), 3);
}

}  // namespace
}  // namespace tova::kv
