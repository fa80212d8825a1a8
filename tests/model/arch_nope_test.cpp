// NoPE layers (smollm3: every fourth layer applies no RoPE) under the position modes. A mode that
// moves positions (gap, rank) keeps keys before RoPE and rotates them at every step; on a NoPE
// layer nothing is rotated in any mode, so its held keys are the same bits in `absolute` (which
// keeps keys after RoPE) and in `rank`, while a RoPE layer's differ. The bounded policies against
// llama.cpp's own cache are in arch_policy_test.cpp (smollm3 is one of its fixtures).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "model_test_util.h"

namespace tova::testing {
namespace {

std::string nope_arch_path(const std::string& file) {
  return std::string(TOVA_TEST_DATA_DIR) + "/arch/" + file;
}

CacheOptions with_positions(CacheOptions o, kv::PositionMode mode) {
  o.positions = mode;
  return o;
}

// Whether every held key of layer il is the same in a and b (same slots: nothing evicted).
bool same_keys(const kv::MultiState& a, const kv::MultiState& b, int il) {
  const kv::LayerState& la = a.layer(il);
  const kv::LayerState& lb = b.layer(il);
  EXPECT_EQ(la.n_held(), lb.n_held());
  std::vector<uint8_t> ra(la.head_dim() * sizeof(float)), rb(ra.size());
  for (int g = 0; g < la.n_head_kv(); ++g) {
    for (int s = 0; s < la.n_held(); ++s) {
      la.key_row(g, s, ra.data());
      lb.key_row(g, s, rb.data());
      if (std::memcmp(ra.data(), rb.data(), ra.size()) != 0) return false;
    }
  }
  return true;
}

TEST(ArchNope, SmolLM3SkipsRopeOnEveryFourthLayer) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(nope_arch_path("smollm3-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ((*m)->config().layer_nope, (std::vector<uint8_t>{0, 0, 0, 1}));
}

// Under `full` nothing moves: rank maps every position to itself, so the logits agree with
// absolute; the stored keys differ on the RoPE layers (after RoPE vs before) and are identical
// on the NoPE layer (never rotated).
TEST(ArchNope, NopeLayerKeysAreNeverRotatedInAnyMode) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(nope_arch_path("smollm3-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ids.resize(48);
  ThreadPool pool(2);
  std::unique_ptr<kv::MultiState> abs_st, rank_st;
  const auto abs = all_logits(**m, ids, cache_options("full", 0), 16, pool, &abs_st);
  const auto rank = all_logits(
      **m, ids, with_positions(cache_options("full", 0), kv::PositionMode::kRank), 16, pool,
      &rank_st);
  double d = 0;
  for (size_t i = 0; i < abs.size(); ++i) d = std::max(d, std::fabs(double(abs[i]) - rank[i]));
  EXPECT_LT(d, 1e-4);
  for (int il = 0; il < 3; ++il) EXPECT_FALSE(same_keys(*abs_st, *rank_st, il)) << il;
  EXPECT_TRUE(same_keys(*abs_st, *rank_st, 3));
}

// Bounded policies under gap and rank on a model with NoPE layers: finite; moving positions
// changes the RoPE layers where the held positions have gaps (tova, sink:4: the logits differ
// from absolute past the budget) and nothing where they are contiguous (window); at a budget of
// the whole length nothing is evicted, so every mode gives absolute's logits.
TEST(ArchNope, BoundedPoliciesUnderGapAndRank) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(nope_arch_path("smollm3-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  const int n_vocab = (*m)->config().n_vocab;
  const auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ThreadPool pool(2);
  for (const char* policy : {"window", "tova", "sink:4"}) {
    const auto abs = all_logits(**m, ids, cache_options(policy, 32), 16, pool);
    const auto whole = all_logits(**m, ids, cache_options(policy, 128), 16, pool);
    for (const kv::PositionMode mode : {kv::PositionMode::kGap, kv::PositionMode::kRank}) {
      std::unique_ptr<kv::MultiState> st;
      const auto got =
          all_logits(**m, ids, with_positions(cache_options(policy, 32), mode), 16, pool, &st);
      for (float x : got) ASSERT_TRUE(std::isfinite(x)) << policy;
      for (int il = 0; il < 4; ++il) EXPECT_EQ(st->layer(il).n_held(), 32) << policy << il;
      double d = 0;
      for (size_t i = 40 * n_vocab; i < got.size(); ++i) {
        d = std::max(d, std::fabs(double(got[i]) - abs[i]));
      }
      if (std::string(policy) == "window") {
        // A contiguous window keeps its distances under gap and rank: RoPE scores depend on
        // distances only, so the logits are absolute's (up to rounding).
        EXPECT_LT(d, 1e-4) << policy;
      } else {
        EXPECT_GT(d, 1e-3) << policy;
      }
      const auto all =
          all_logits(**m, ids, with_positions(cache_options(policy, 128), mode), 16, pool);
      double e = 0;
      for (size_t i = 0; i < all.size(); ++i) e = std::max(e, std::fabs(double(all[i]) - whole[i]));
      EXPECT_LT(e, 1e-4) << policy;
    }
  }
}

}  // namespace
}  // namespace tova::testing
