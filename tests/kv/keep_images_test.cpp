// Kept image states (MultiStateOptions::keep_images, --kv-keep-images), hand-computed: the
// policy chooses among the other states only, the budget counts them alone, and a window layer
// drops kept states its window no longer shows.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "kv/multi_state.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

std::unique_ptr<MultiState> make_keeping(const char* policy, int budget,
                                         std::vector<int> windows = {}) {
  auto spec = parse_policy(policy, budget);
  EXPECT_TRUE(spec.ok()) << spec.message();
  auto ms = MultiState::create({.n_layer = 1,
                                .n_head = 2,
                                .n_head_kv = 1,
                                .head_dim = 4,
                                .policy = *spec,
                                .max_image = 3,
                                .keep_images = true,
                                .max_kept_images = 2,
                                .initial_slots = 1,
                                .windows = std::move(windows)});
  EXPECT_TRUE(ms.ok()) << ms.message();
  return std::move(ms).value();
}

std::vector<int64_t> held(const LayerState& L) {
  std::vector<int64_t> p;
  for (int s = 0; s < L.n_slot(); ++s) {
    if (L.pos()[s] >= 0) p.push_back(L.pos()[s]);
  }
  std::sort(p.begin(), p.end());
  return p;
}

// Feeds positions [0, n): those in the image [2, 5) join as one whole step (marked first, then
// evicted once after), the others one at a time, each followed by the layer's eviction.
void feed(MultiState& ms, int64_t n) {
  LayerState& L = ms.layer(0);
  const std::vector<float> kv(4, 0.25f);
  int32_t slot = 0;
  for (int64_t p = 0; p < n; ++p) {
    if (p == 2) {
      ms.mark_image({.begin = 2, .end = 5});
      ASSERT_TRUE(ms.make_room(3, /*whole=*/true).ok());
      for (int64_t q = 2; q < 5; ++q) L.insert(q, kv.data(), kv.data(), &slot);
      L.evict(4);
      p = 4;
      continue;
    }
    ASSERT_TRUE(ms.make_room(1).ok());
    L.insert(p, kv.data(), kv.data(), &slot);
    L.evict(p);
  }
}

TEST(KeepImages, WindowEvictsTheOldestTextState) {
  // window k = 2 over 0 1 [2 3 4] 5 6 7: text keeps 6 7, the image stays beside them.
  auto ms = make_keeping("window", 2);
  feed(*ms, 8);
  EXPECT_EQ(held(ms->layer(0)), (std::vector<int64_t>{2, 3, 4, 6, 7}));
  EXPECT_FALSE(ms->layer(0).over_budget());
  EXPECT_EQ(ms->image_rows(0), 3);
  EXPECT_EQ(ms->n_images_held(), 1);
  // The pool's room: k + 1 + 2 images x 3 slots.
  EXPECT_EQ(ms->layer(0).max_slots_all(), 2 + 1 + 2 * 3);
}

TEST(KeepImages, SinkKeepsItsSinksAndTheImage) {
  // sink:1 k = 3 over 0 1 [2 3 4] 5 6 7: position 0 stays, then the newest two text states.
  auto ms = make_keeping("sink:1", 3);
  feed(*ms, 8);
  EXPECT_EQ(held(ms->layer(0)), (std::vector<int64_t>{0, 2, 3, 4, 6, 7}));
}

TEST(KeepImages, WithoutKeepingTheImageIsEvictedLikeText) {
  auto spec = parse_policy("window", 2);
  auto ms = MultiState::create({.n_layer = 1, .n_head = 2, .n_head_kv = 1, .head_dim = 4,
                                .policy = *spec, .max_image = 3, .initial_slots = 1});
  ASSERT_TRUE(ms.ok());
  feed(**ms, 8);
  EXPECT_EQ(held((*ms)->layer(0)), (std::vector<int64_t>{6, 7}));
  EXPECT_EQ((*ms)->image_rows(0), 0);
  EXPECT_EQ((*ms)->n_images_held(), 0);
}

TEST(KeepImages, AWindowLayerDropsKeptStatesOutsideItsWindow) {
  // A window of 5 (a query sees itself and the 4 before): after position 7 the window shows
  // 4..7 next, so kept 2 and 3 go; 4 stays; text k = 2 keeps 6 7.
  auto ms = make_keeping("window", 2, {5});
  feed(*ms, 8);
  EXPECT_EQ(held(ms->layer(0)), (std::vector<int64_t>{4, 6, 7}));
  // One more token: 4 leaves with the window, and the layer forgets the image.
  const std::vector<float> kv(4, 0.25f);
  int32_t slot = 0;
  ASSERT_TRUE(ms->make_room(1).ok());
  ms->layer(0).insert(8, kv.data(), kv.data(), &slot);
  ms->layer(0).evict(8);
  EXPECT_EQ(held(ms->layer(0)), (std::vector<int64_t>{7, 8}));
  EXPECT_TRUE(ms->layer(0).kept().empty());
  EXPECT_EQ(ms->n_images_held(), 0);
}

TEST(KeepImages, TheKeptRoomCountsAgainstTheMemoryLimit) {
  auto spec = parse_policy("window", 2);
  MultiStateOptions o{.n_layer = 1, .n_head = 2, .n_head_kv = 1, .head_dim = 4, .policy = *spec,
                      .max_image = 3, .keep_images = true, .max_kept_images = 2,
                      .initial_slots = 1};
  auto fits = MultiState::create(o);
  ASSERT_TRUE(fits.ok()) << fits.message();
  // 9 slots x (key 16 + value 16 + position 8 bytes): 360; without the kept room, 3 slots.
  EXPECT_EQ((*fits)->max_bytes(), 9u * 40u);
  o.memory_limit = 200;
  auto refused = MultiState::create(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("6 of them for 2 kept images"), std::string::npos)
      << refused.message();
  o.keep_images = false;
  EXPECT_TRUE(MultiState::create(o).ok());
}

TEST(KeepImages, ACloneKeepsTheMarks) {
  auto ms = make_keeping("window", 2);
  feed(*ms, 6);
  auto copy = ms->clone();
  EXPECT_TRUE(copy->keep_images());
  EXPECT_EQ(copy->images(), ms->images());
  EXPECT_EQ(copy->layer(0).kept(), ms->layer(0).kept());
}

}  // namespace
}  // namespace tova::kv
