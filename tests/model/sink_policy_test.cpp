// Attention sinks and the scoring policies (docs/POLICIES-EXTRA.md, "Attention sinks"): the
// probabilities a policy scores are the attention kernel's, with the sink in each head's
// denominator. A hand-computed 4-token case where the sink changes which state TOVA evicts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "kernels/attention.h"
#include "kv/layer_step.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

// One KV head, two query heads, head_dim 2, scale 1. Token s's key is (z_s, 0) with
// exp(z) = (1, 2, 3, 4); head A's query is (1, 0) and head B's (-1, 0), for every token. At
// token 3 (four states held, budget 3) head A's weights are exp(z) = (1, 2, 3, 4) and head B's
// exp(-z) = (1, 1/2, 1/3, 1/4), of sum 25/12.
//   No sinks: p_A = (.1, .2, .3, .4), p_B = (.48, .24, .16, .12); TOVA's mean over the heads
//     (.29, .22, .23, .26): position 1 leaves.
//   Sinks (A: -100, nothing; B: ln 6.25, so B's denominator is 25/12 + 25/4 = 25/3):
//     p_B = (.12, .06, .04, .03) and the means (.11, .13, .17, .215): position 0 leaves.
class KernelAttention final : public StepAttention {
 public:
  explicit KernelAttention(const float* sinks) : sinks_(sinks) {}
  void attend(const LayerState& L, int t, float* probs) override {
    (void)t;
    const float q[4] = {1.f, 0.f, -1.f, 0.f};
    float out[4];
    std::vector<float> scratch(static_cast<size_t>(L.n_slot()) * 2);
    kernels::attention({.q = q,
                        .n_head = 2,
                        .n_head_kv = 1,
                        .head_dim = 2,
                        .n_slot = L.n_slot(),
                        .slot_end = L.slot_end(),
                        .k = L.keys(),
                        .v = L.values(),
                        .pos = L.pos(),
                        .max_pos = 3,
                        .scale = 1.f,
                        .sinks = sinks_,
                        .out = out,
                        .probs = probs,
                        .scratch = scratch.data(),
                        .scratch_size = static_cast<int64_t>(scratch.size())});
    if (probs != nullptr && L.n_held() == 4) {
      last_.assign(probs, probs + static_cast<size_t>(2) * L.n_slot());
      last_pos_.assign(L.pos(), L.pos() + L.n_slot());
    }
  }
  // Head h's probability of position p at the step where four states were held.
  double prob(int h, int64_t p) const {
    const size_t n_slot = last_pos_.size();
    for (size_t s = 0; s < n_slot; ++s) {
      if (last_pos_[s] == p) return last_[h * n_slot + s];
    }
    return -1;
  }

 private:
  const float* sinks_;
  std::vector<float> last_;
  std::vector<int64_t> last_pos_;
};

std::vector<int64_t> held_after_four_tokens(const float* sinks, KernelAttention** keep = nullptr,
                                            std::unique_ptr<KernelAttention>* owner = nullptr) {
  auto spec = parse_policy("tova", 3);
  EXPECT_TRUE(spec.ok()) << spec.message();
  auto ms = MultiState::create({.n_layer = 1, .n_head = 2, .n_head_kv = 1, .head_dim = 2,
                                .policy = *spec, .max_new = 1, .initial_slots = 4});
  EXPECT_TRUE(ms.ok()) << ms.message();
  const std::vector<int> idx = {0, 1, 2, 3};
  const std::vector<int64_t> pos = {0, 1, 2, 3};
  std::vector<float> k, v;
  for (int s = 0; s < 4; ++s) {
    k.insert(k.end(), {std::log(static_cast<float>(s + 1)), 0.f});
    v.insert(v.end(), {static_cast<float>(s), 1.f});
  }
  auto att = std::make_unique<KernelAttention>(sinks);
  StepScratch scratch;
  step_layer(**ms, {}, 0, {.idx = idx, .pos = pos.data(), .k = k.data(), .v = v.data(), .kv_dim = 2},
             2, *att, scratch);
  const LayerState& L = (*ms)->layer(0);
  std::vector<int64_t> held;
  for (int s = 0; s < L.n_slot(); ++s) {
    if (L.pos()[s] >= 0) held.push_back(L.pos()[s]);
  }
  std::sort(held.begin(), held.end());
  if (keep != nullptr) *keep = att.get();
  if (owner != nullptr) *owner = std::move(att);
  return held;
}

TEST(SinkPolicy, TovaScoresProbabilitiesWithTheSinkInTheDenominator) {
  KernelAttention* att = nullptr;
  std::unique_ptr<KernelAttention> owner;
  EXPECT_EQ(held_after_four_tokens(nullptr, &att, &owner), (std::vector<int64_t>{0, 2, 3}));
  EXPECT_NEAR(att->prob(0, 1), 0.2, 1e-6);
  EXPECT_NEAR(att->prob(1, 1), 0.24, 1e-6);

  const float sinks[2] = {-100.f, std::log(6.25f)};
  EXPECT_EQ(held_after_four_tokens(sinks, &att, &owner), (std::vector<int64_t>{1, 2, 3}));
  const double want_a[4] = {0.1, 0.2, 0.3, 0.4};
  const double want_b[4] = {0.12, 0.06, 0.04, 0.03};
  for (int p = 0; p < 4; ++p) {
    EXPECT_NEAR(att->prob(0, p), want_a[p], 1e-6) << p;
    EXPECT_NEAR(att->prob(1, p), want_b[p], 1e-6) << p;
  }
}

}  // namespace
}  // namespace tova::kv
