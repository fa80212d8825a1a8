// SessionStats by kind of layer state (tova/session.h): on the gemma3 fixture (five
// sliding-window layers of window 16, one global layer), the window kind never holds more than
// its window and the bounded kind never more than the policy's budget, after every feed of a
// 100-token stream, under every kind of policy; the kinds' bytes add up to the totals.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tova/engine.h"
#include "tova/session.h"
#include "test_data.h"

namespace tova {
namespace {

const Engine& gemma3() {
  static const std::unique_ptr<Engine> e = [] {
    auto r = Engine::load(
        {.model_path = std::string(TOVA_TEST_DATA_DIR) + "/arch/gemma3-f32.gguf", .n_threads = 2});
    EXPECT_TRUE(r.ok()) << r.message();
    return std::move(*r);
  }();
  return *e;
}

const StateKindStats* kind(const SessionStats& s, const std::string& name) {
  for (const StateKindStats& k : s.kinds) {
    if (k.kind == name) return &k;
  }
  return nullptr;
}

TEST(SessionStats, WindowLayersNeverExceedTheirWindowBoundedOnesTheBudget) {
  const Engine& e = gemma3();
  for (const auto& [policy, budget] : {std::pair<const char*, int>{"full", 0},
                                       {"tova", 8},
                                       {"tova", 40},
                                       {"h2o", 12},
                                       {"sink:4", 20},
                                       {"window", 24}}) {
    SCOPED_TRACE(std::string(policy) + " k=" + std::to_string(budget));
    auto c = parse_cache_options(policy, budget);
    ASSERT_TRUE(c.ok()) << c.message();
    auto s = e.new_session({.cache = *c, .n_batch = 5});
    ASSERT_TRUE(s.ok()) << s.message();
    int64_t fed = 0;
    int64_t n_head_kv = 0;
    for (int step = 0; step < 20; ++step) {
      std::vector<int32_t> ids;
      for (int i = 0; i < 1 + step % 7; ++i)
        ids.push_back(static_cast<int32_t>(1 + (fed + i) * 7 % 200));
      ASSERT_TRUE((*s)->feed(ids).ok());
      fed += static_cast<int64_t>(ids.size());
      const SessionStats st = (*s)->stats();
      ASSERT_EQ(st.kinds.size(), 2u);
      EXPECT_EQ(st.kinds[0].kind, "bounded");  // bounded first
      const StateKindStats* w = kind(st, "window");
      const StateKindStats* b = kind(st, "bounded");
      ASSERT_TRUE(w != nullptr && b != nullptr);
      EXPECT_EQ(w->n_layer, 5);
      EXPECT_EQ(b->n_layer, 1);
      EXPECT_EQ(w->limit, 16);
      EXPECT_EQ(b->limit, budget > 0 ? budget : -1);
      EXPECT_LE(w->max_held, 16);
      EXPECT_LE(w->max_held, fed);
      if (budget > 0) {
        EXPECT_LE(b->max_held, budget);
      } else {
        EXPECT_EQ(b->max_held, fed);  // full keeps everything
      }
      // Rows: every KV head holds as many states under these policies.
      int64_t held_w = 0;
      for (int il = 0; il < 5; ++il) held_w += st.layers[il].n_held;
      ASSERT_GT(held_w, 0);
      ASSERT_EQ(w->rows % held_w, 0);
      if (n_head_kv == 0) n_head_kv = w->rows / held_w;
      EXPECT_EQ(w->rows, held_w * n_head_kv);
      EXPECT_EQ(b->rows, int64_t{st.layers[5].n_held} * n_head_kv);
      // The kinds add up to the totals; per layer, the kind is named.
      EXPECT_EQ(w->bytes + b->bytes, st.kv_capacity);
      EXPECT_EQ(w->held_bytes + b->held_bytes, st.kv_held);
      ASSERT_EQ(st.layers.size(), 6u);
      for (int il = 0; il < 6; ++il) {
        EXPECT_EQ(st.layers[il].kind, il < 5 ? "window" : "bounded") << il;
        EXPECT_LE(st.layers[il].n_held, il < 5 ? 16 : (budget > 0 ? budget : fed));
      }
    }
    EXPECT_GT(fed, 60);
  }
}

// The stats of a session of the hybrid fixture `name` under tova k=8 after 30 tokens.
SessionStats hybrid_stats(const std::string& name) {
  auto e = Engine::load({.model_path = std::string(TOVA_TEST_DATA_DIR) + "/arch/" + name +
                                       "-f32.gguf",
                         .n_threads = 1});
  EXPECT_TRUE(e.ok()) << e.message();
  if (!e.ok()) return {};
  auto c = parse_cache_options("tova", 8);
  auto s = (*e)->new_session({.cache = *c});
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return {};
  std::vector<int32_t> ids;
  for (int i = 0; i < 30; ++i) ids.push_back(1 + (i * 7) % 200);
  EXPECT_TRUE((*s)->feed(ids).ok());
  return (*s)->stats();
}

// On the qwen35 and qwen3next fixtures (three Gated DeltaNet layers before each attention
// layer, twice; the same state sizes) and
// the lfm2 fixture (gated short convolutions, attention at layers 2 and 5), through the same
// code: the layers are listed in the model's order, every one of them, a recurrent one as
// "recurrent" with nothing held or evicted; the recurrent kind is fixed bytes (qwen35: a conv
// window of 128 channels x 3 and a 16 x 16 matrix per value head; lfm2: 64 channels x 2;
// granitehybrid, Mamba2 around attention at 2 and 5: x|B|C's 128 + 2 x 2 x 16 channels x 3 and
// a 32 x 16 state per head of 4), the bounded kind the budget.
TEST(SessionStats, AHybridModelListsEveryLayerItsRecurrentOnesAsSuch) {
  struct Case {
    std::string name;
    std::vector<int> attention;
    int n_layer;
    uint64_t recurrent_bytes;
  };
  for (const Case& k : {Case{"qwen35", {3, 7}, 8, 6u * (128 * 3 + 4 * 16 * 16) * 4},
                        Case{"qwen3next", {3, 7}, 8, 6u * (128 * 3 + 4 * 16 * 16) * 4},
                        Case{"lfm2", {2, 5}, 6, 4u * 64 * 2 * 4},
                        Case{"granitehybrid", {2, 5}, 6, 4u * (192 * 3 + 4 * 32 * 16) * 4}}) {
    SCOPED_TRACE(k.name);
    const SessionStats st = hybrid_stats(k.name);
    ASSERT_EQ(st.layers.size(), static_cast<size_t>(k.n_layer));
    for (int il = 0; il < k.n_layer; ++il) {
      SCOPED_TRACE(il);
      const bool recurrent =
          std::find(k.attention.begin(), k.attention.end(), il) == k.attention.end();
      EXPECT_EQ(st.layers[il].kind, recurrent ? "recurrent" : "bounded");
      EXPECT_EQ(st.layers[il].n_held, recurrent ? 0 : 8);
      EXPECT_EQ(st.layers[il].n_evicted, recurrent ? 0 : 30 - 8);
    }
    const StateKindStats* r = kind(st, "recurrent");
    const StateKindStats* b = kind(st, "bounded");
    ASSERT_NE(r, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(r->n_layer, k.n_layer - 2);
    EXPECT_EQ(r->rows, 0);
    EXPECT_EQ(r->bytes, k.recurrent_bytes);
    EXPECT_EQ(b->n_layer, 2);
    EXPECT_EQ(r->bytes + b->bytes, st.kv_capacity);
  }
}

// nemotron_h ("M-M*-M*-"): every layer in the model's order, the feed-forward-only ones as
// "none" (no state, nothing held or evicted, no kind of memory of their own), the Mamba2 ones as
// "recurrent" (x|B|C's 128 + 2 x 2 x 16 channels x 3 and a 32 x 16 state per head of 4), the
// two attention layers bounded by the budget.
TEST(SessionStats, NemotronHListsItsFeedForwardLayersAsHoldingNothing) {
  const std::string pattern = "M-M*-M*-";
  const SessionStats st = hybrid_stats("nemotron_h");
  ASSERT_EQ(st.layers.size(), pattern.size());
  for (size_t il = 0; il < pattern.size(); ++il) {
    SCOPED_TRACE(il);
    const char b = pattern[il];
    EXPECT_EQ(st.layers[il].kind, b == 'M' ? "recurrent" : b == '-' ? "none" : "bounded");
    EXPECT_EQ(st.layers[il].n_held, b == '*' ? 8 : 0);
    EXPECT_EQ(st.layers[il].n_evicted, b == '*' ? 30 - 8 : 0);
  }
  EXPECT_EQ(kind(st, "none"), nullptr);
  const StateKindStats* r = kind(st, "recurrent");
  const StateKindStats* b = kind(st, "bounded");
  ASSERT_NE(r, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(r->n_layer, 3);
  EXPECT_EQ(r->bytes, 3u * (192 * 3 + 4 * 32 * 16) * 4);
  EXPECT_EQ(b->n_layer, 2);
  EXPECT_EQ(r->bytes + b->bytes, st.kv_capacity);
}

// falcon-h1 (attention beside Mamba2 in each of its 4 layers): every layer listed with its K/V,
// bounded by the budget, and every layer counted in the recurrent kind too (x|B|C's 96 + 2 x 2
// x 16 channels x 3 and a 16 x 16 state per head of 6): both kinds hold 4 layers.
TEST(SessionStats, FalconH1CountsEveryLayerInBothKinds) {
  const SessionStats st = hybrid_stats("falcon-h1");
  ASSERT_EQ(st.layers.size(), 4u);
  for (int il = 0; il < 4; ++il) {
    SCOPED_TRACE(il);
    EXPECT_EQ(st.layers[il].kind, "bounded");
    EXPECT_EQ(st.layers[il].n_held, 8);
    EXPECT_EQ(st.layers[il].n_evicted, 30 - 8);
  }
  const StateKindStats* r = kind(st, "recurrent");
  const StateKindStats* b = kind(st, "bounded");
  ASSERT_NE(r, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(r->n_layer, 4);
  EXPECT_EQ(r->bytes, 4u * (160 * 3 + 6 * 16 * 16) * 4);
  EXPECT_EQ(r->held_bytes, r->bytes);
  EXPECT_EQ(b->n_layer, 4);
  EXPECT_EQ(b->max_held, 8);
  EXPECT_EQ(r->bytes + b->bytes, st.kv_capacity);
}

}  // namespace
}  // namespace tova
