// Policies on architecture fixtures: qwen3 (per-head q/k norms, head_dim * n_head != n_embd,
// NEOX rope) and gemma3 (five sliding-window layers of 16 positions and one global layer).
// `window` and `sink:4` at k = 32 against llama.cpp's own cache made to drop the same positions
// after every token (scripts/llama_dump.cpp --evict): the spec's absolute positions, keys cached
// after RoPE; on gemma3 llama.cpp's window layers also mask everything older than their window.
// Every policy with k >= length equals `full` bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "model_test_util.h"

namespace tova::testing {
namespace {

std::string policy_arch_path(const std::string& file) {
  return std::string(TOVA_TEST_DATA_DIR) + "/arch/" + file;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b, size_t from = 0) {
  double d = 0;
  for (size_t i = from; i < a.size(); ++i) {
    d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  return d;
}

class ArchPolicy : public ::testing::TestWithParam<std::string> {};

TEST_P(ArchPolicy, WindowAndSinkMatchLlamaCppDroppingTheSamePositions) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(policy_arch_path(GetParam() + "-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  const int n_vocab = (*m)->config().n_vocab;
  const auto ids = read_ids(shared_path("golden/tokens-128.json"));
  const auto full_cpp = read_f32(policy_arch_path(GetParam() + "-f32.logits.f32"));
  ThreadPool pool(2);
  const std::pair<const char*, const char*> cases[] = {{"window", "window-32"},
                                                       {"sink:4", "sink4-32"}};
  for (const auto& [policy, file] : cases) {
    const auto cpp = read_f32(policy_arch_path(GetParam() + "-f32." + file + ".logits.f32"));
    ASSERT_EQ(cpp.size(), ids.size() * n_vocab);
    // The golden is not `full` in disguise: past k + 1 tokens it differs.
    EXPECT_GT(max_abs_diff(cpp, full_cpp, 40 * n_vocab), 0.05) << policy;
    for (int n_batch : {1, 16}) {
      const auto mine = all_logits(**m, ids, cache_options(policy, 32), n_batch, pool);
      // Gemma: llama.cpp's F16 GELU table (arch_golden_test.cpp says why 5e-3).
      const double tol = GetParam().starts_with("gemma") ? 5e-3 : 1e-3;
      EXPECT_LT(max_abs_diff(mine, cpp), tol) << policy << " n_batch " << n_batch;
      for (size_t p = 0; p < ids.size(); ++p) {
        EXPECT_EQ(argmax_row(&mine[p * n_vocab], n_vocab), argmax_row(&cpp[p * n_vocab], n_vocab))
            << policy << " position " << p;
      }
    }
  }
}

TEST_P(ArchPolicy, BudgetAtLeastLengthIsBitIdenticalToFull) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(policy_arch_path(GetParam() + "-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  const auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ThreadPool pool(2);
  const auto full = all_logits(**m, ids, cache_options("full", 0), 16, pool);
  for (const std::string& p : every_bounded_policy()) {
    const auto got = all_logits(**m, ids, cache_options(p, 128), 16, pool);
    EXPECT_EQ(0, std::memcmp(got.data(), full.data(), full.size() * sizeof(float))) << p;
    // One state short of the length: the global layer keeps exactly its budget (a per-layer
    // budget may be smaller; a buffering policy, rkv, holds up to budget + buffer), in all over
    // its KV heads.
    std::unique_ptr<kv::MultiState> st;
    all_logits(**m, ids, cache_options(p, 127), 16, pool, &st);
    const kv::LayerState& L = st->layer(st->n_layer() - 1);  // global in both fixtures
    EXPECT_EQ(L.n_held_total(),
              int64_t{std::min(L.budget() + L.buffer(), 128)} * L.n_head_kv()) << p;
  }
}

// A window layer is bounded by its window whatever the policy: under `full` it keeps window - 1
// states in window slots (the next token makes the window), the global layer keeps everything.
TEST(ArchPolicyWindows, Gemma3WindowLayersAreBoundedEvenUnderFull) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(policy_arch_path("gemma3-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  const model::ModelConfig& c = (*m)->config();
  ASSERT_EQ(c.layer_window, (std::vector<int>{16, 16, 16, 16, 16, 0}));
  const auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ThreadPool pool(2);
  for (const auto& [policy, k] : {std::pair<const char*, int>{"full", 0}, {"tova", 64},
                                  {"tova", 8}, {"h2o", 8}, {"sink:4", 12}}) {
    std::unique_ptr<kv::MultiState> st;
    all_logits(**m, ids, cache_options(policy, k), 16, pool, &st);
    const int want_window = k > 0 ? std::min(k, 15) : 15;
    for (int il = 0; il < 5; ++il) {
      const kv::LayerState& L = st->layer(il);
      EXPECT_EQ(L.n_held(), want_window) << policy << " k " << k << " layer " << il;
      EXPECT_EQ(L.n_slot(), want_window + 1) << policy << " k " << k << " layer " << il;
      // Nothing older than the window of the next query (position 128) is held.
      for (int s = 0; s < L.n_slot(); ++s) {
        if (L.pos()[s] >= 0) {
          EXPECT_GE(L.pos()[s], 128 - 16 + 1) << policy << " layer " << il;
        }
      }
    }
    EXPECT_EQ(st->layer(5).n_held(), k > 0 ? std::min(k, 128) : 128) << policy;
  }
}

// Head-wise policies keep different positions per KV head (gemma2's window layer has two): the
// window still bounds the layer, and budgets hold.
TEST(ArchPolicyWindows, Gemma2HeadWisePoliciesStayWithinBudgetOnTheWindowLayer) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(policy_arch_path("gemma2-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  ASSERT_EQ((*m)->config().layer_window, (std::vector<int>{16, 0}));
  const auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ThreadPool pool(2);
  for (const char* p : {"tova-head", "h2o-head"}) {
    for (int k : {8, 32}) {
      std::unique_ptr<kv::MultiState> st;
      const auto logits = all_logits(**m, ids, cache_options(p, k), 1, pool, &st);
      for (float x : logits) ASSERT_TRUE(std::isfinite(x)) << p;
      EXPECT_EQ(st->layer(0).n_held(), std::min(k, 15)) << p << " k " << k;
      EXPECT_EQ(st->layer(1).n_held(), k) << p << " k " << k;
    }
  }
}

// adakv's heads share a budget with a floor per head of a fifth of it; on a window layer the
// budget is the window's, and so must the floor be: with k's floor (25 at k = 128) the pool of
// a 16-token window layer was sized 30 - 25 + 1 slots and the 7th token aborted. Every k on
// both window fixtures runs, and at k >= length equals full bit for bit.
TEST(ArchPolicyWindows, AdaKvOnWindowLayersAtAnyBudget) {
  TOVA_REQUIRE_SHARED();
  const auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ThreadPool pool(2);
  for (const std::string arch : {"gemma2", "gpt-oss"}) {
    auto m = model::Model::load(policy_arch_path(arch + "-f32.gguf"));
    ASSERT_TRUE(m.ok()) << m.message();
    const auto full = all_logits(**m, ids, cache_options("full", 0), 16, pool);
    for (int k : {8, 14, 15, 16, 24, 128}) {
      const auto got = all_logits(**m, ids, cache_options("adakv:tova", k), 16, pool);
      for (float x : got) ASSERT_TRUE(std::isfinite(x)) << arch << " k " << k;
      if (k >= 128) {
        EXPECT_EQ(0, std::memcmp(got.data(), full.data(), full.size() * sizeof(float))) << arch;
      }
    }
  }
}

// gpt-oss alternates window (even) and global (odd) layers, and its attention has sinks: every
// bounded policy keeps at most min(k, window - 1) states per KV head in a window layer (plus a
// buffering policy's buffer), inside the window for `full` and the layer-wise policies, and at
// most its budget (+ buffer) in a global layer; under `full` only the global layers grow.
TEST(ArchPolicyWindows, GptOssWindowLayersBoundedGlobalLayersByTheBudget) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(policy_arch_path("gpt-oss-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  ASSERT_EQ((*m)->config().layer_window, (std::vector<int>{16, 0, 16, 0}));
  auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ids.resize(48);
  ThreadPool pool(2);
  std::vector<std::pair<std::string, int>> cases = {{"full", 0}};
  for (const std::string& p : every_bounded_policy()) {
    cases.emplace_back(p, 8);
    cases.emplace_back(p, 24);
  }
  for (const auto& [policy, k] : cases) {
    std::unique_ptr<kv::MultiState> st;
    const auto logits = all_logits(**m, ids, cache_options(policy, k), 16, pool, &st);
    for (float x : logits) ASSERT_TRUE(std::isfinite(x)) << policy;
    for (int il : {0, 2}) {
      const kv::LayerState& L = st->layer(il);
      // A buffering policy (rkv) may hold its buffer beyond that. A policy that shares the
      // layer's budget between its heads (adakv) bounds their total by it; one head may hold
      // more than k, never more than the window.
      const int buf = std::max(L.buffer(), 0);
      const int most = (k > 0 ? std::min(k, 15) : 15) + buf;
      if (L.shared_heads()) {
        EXPECT_LE(L.n_held(), 15 + buf) << policy << " k " << k << " layer " << il;
        EXPECT_LE(L.n_held_total(), int64_t{most} * L.n_head_kv())
            << policy << " k " << k << " layer " << il;
      } else {
        EXPECT_LE(L.n_held(), most) << policy << " k " << k << " layer " << il;
      }
      // Layer-wise policies hold nothing older than the next query's window; head-wise ones may
      // keep out-of-window states, masked, until they evict them (docs/ARCHITECTURES.md).
      if (k > 0 && policy != "tova" && policy != "h2o" && policy != "window") continue;
      for (int s = 0; s < L.n_slot() * L.n_head_kv(); ++s) {
        if (L.pos()[s] >= 0) {
          EXPECT_GE(L.pos()[s], 48 - 16 + 1) << policy << " k " << k << " layer " << il;
        }
      }
    }
    for (int il : {1, 3}) {
      const kv::LayerState& L = st->layer(il);
      const int64_t want = k > 0 ? std::min(L.budget() + L.buffer(), 48) : 48;
      EXPECT_LE(L.n_held_total(), want * L.n_head_kv()) << policy << " k " << k;
      if (k == 0) {
        EXPECT_EQ(L.n_held(), 48);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, ArchPolicy,
                         ::testing::Values("qwen3", "gemma3", "gpt-oss", "smollm3"));

}  // namespace
}  // namespace tova::testing
