// LayerState::insert (float rows) and insert_stored (rows already in the storage type) write the
// same bytes into the same slots, through pool growth and evictions, for f32 and f16 caches.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "kv/multi_state.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

constexpr int kHeadKv = 2;
constexpr int kHeadDim = 8;
constexpr int kRow = kHeadKv * kHeadDim;

std::unique_ptr<MultiState> make_state(const char* policy, KvType type) {
  auto spec = parse_policy(policy, 5);
  EXPECT_TRUE(spec.ok()) << spec.message();
  auto ms = MultiState::create({.n_layer = 1,
                                .n_head = 4,
                                .n_head_kv = kHeadKv,
                                .head_dim = kHeadDim,
                                .policy = *spec,
                                .kv_type = type,
                                .initial_slots = 2});
  EXPECT_TRUE(ms.ok()) << ms.message();
  return std::move(ms).value();
}

TEST(LayerStateInsert, StoredRowsEqualConvertedFloatRows) {
  // `full` grows its pool 2 -> 4 -> 8 -> 16 slots; `window` k=5 evicts from token 6 on.
  for (const char* policy : {"full", "window"}) {
    for (KvType type : {KvType::kF32, KvType::kF16}) {
      SCOPED_TRACE(policy);
      auto a = make_state(policy, type), b = make_state(policy, type);
      std::mt19937 rng(3);
      std::normal_distribution<float> dist(0.f, 2.f);
      for (int t = 0; t < 12; ++t) {
        std::vector<float> k(kRow), v(kRow);
        for (float& x : k) x = dist(rng);
        for (float& x : v) x = dist(rng);
        std::vector<uint16_t> k16(kRow), v16(kRow);
        for (int i = 0; i < kRow; ++i) {
          k16[i] = fp32_to_fp16(k[i]);
          v16[i] = fp32_to_fp16(v[i]);
        }
        int32_t sa[kHeadKv], sb[kHeadKv];
        a->layer(0).insert(t, k.data(), v.data(), sa);
        if (type == KvType::kF16) {
          b->layer(0).insert_stored(t, k16.data(), v16.data(), sb);
        } else {
          b->layer(0).insert_stored(t, k.data(), v.data(), sb);
        }
        ASSERT_EQ(sa[0], sb[0]);
        ASSERT_EQ(sa[1], sb[1]);
        a->advance(1);
        b->advance(1);
        a->layer(0).evict_to(a->budget());
        b->layer(0).evict_to(b->budget());
        const LayerState& la = a->layer(0);
        const LayerState& lb = b->layer(0);
        ASSERT_EQ(la.n_slot(), lb.n_slot());
        const size_t bytes =
            static_cast<size_t>(kHeadKv) * la.n_slot() * kHeadDim * (type == KvType::kF16 ? 2 : 4);
        EXPECT_EQ(0, std::memcmp(la.keys(), lb.keys(), bytes)) << "token " << t;
        EXPECT_EQ(0, std::memcmp(la.values(), lb.values(), bytes)) << "token " << t;
        EXPECT_EQ(0, std::memcmp(la.pos(), lb.pos(), sizeof(int64_t) * kHeadKv * la.n_slot()));
      }
      EXPECT_EQ(a->layer(0).n_held(), std::string(policy) == "full" ? 12 : 5);
    }
  }
}

}  // namespace
}  // namespace tova::kv
