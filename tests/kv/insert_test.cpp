// LayerState::insert (float rows) and insert_stored (rows already in the storage type) write the
// same bytes into the same slots, through pool growth and evictions, for f32 and f16 caches; a
// reserved pool holds them where a growing one would.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/half.h"
#include "core/kv_type.h"
#include "kv/multi_state.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

constexpr int kHeadKv = 2;
constexpr int kHeadDim = 8;
constexpr int kRow = kHeadKv * kHeadDim;

std::unique_ptr<MultiState> make_state(const char* policy, const KvFormat& type, int budget = 5,
                                       int head_dim = kHeadDim, int max_new = 1) {
  auto spec = parse_policy(policy, budget);
  EXPECT_TRUE(spec.ok()) << spec.message();
  MultiStateOptions o{.n_layer = 1,
                      .n_head = 4,
                      .n_head_kv = kHeadKv,
                      .head_dim = head_dim,
                      .policy = *spec,
                      .kv_type = type,
                      .max_new = max_new,
                      .initial_slots = 2};
  auto ms = MultiState::create(o);
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

// MultiState::reserve grows a `full` pool once, keeps every state in its slot, and the tokens
// after it take the same slots (lowest free first) as in a pool that grew by doubling: same
// keys, values and positions slot by slot, and no growth until the reserve is used up. A small
// reserve doubles the pool, within at_most. A bounded pool grows to k + 1 and no further; more
// than the unbounded limit is an error.
TEST(LayerStateInsert, ReserveKeepsEverySlotWhereGrowingWouldPutIt) {
  for (KvType type : {KvType::kF32, KvType::kF16}) {
    auto grown = make_state("full", type), reserved = make_state("full", type);
    const size_t elem = type == KvType::kF16 ? 2 : 4;
    std::mt19937 rng(5);
    std::normal_distribution<float> dist(0.f, 1.f);
    for (int t = 0; t < 40; ++t) {
      if (t == 3) {  // 3 of 4 slots used, one free below the new ones
        ASSERT_TRUE(reserved->reserve(30).ok());
        EXPECT_EQ(reserved->layer(0).n_slot(), 30);
      }
      std::vector<float> k(kRow), v(kRow);
      for (float& x : k) x = dist(rng);
      for (float& x : v) x = dist(rng);
      int32_t sg[kHeadKv], sr[kHeadKv];
      grown->layer(0).insert(t, k.data(), v.data(), sg);
      reserved->layer(0).insert(t, k.data(), v.data(), sr);
      ASSERT_EQ(sg[0], t);
      ASSERT_EQ(sr[0], t) << "token " << t << " did not take the lowest free slot";
      ASSERT_EQ(sr[1], t);
      if (t >= 3 && t < 30) {
        EXPECT_EQ(reserved->layer(0).n_slot(), 30) << "grew before the reserve was used";
      }
      const LayerState& lg = grown->layer(0);
      const LayerState& lr = reserved->layer(0);
      EXPECT_EQ(lr.slot_end(), lg.slot_end());
      for (int g = 0; g < kHeadKv; ++g) {
        for (int slot = 0; slot <= t; ++slot) {
          const size_t rg = (static_cast<size_t>(g) * lg.n_slot() + slot) * kHeadDim * elem;
          const size_t rr = (static_cast<size_t>(g) * lr.n_slot() + slot) * kHeadDim * elem;
          ASSERT_EQ(0, std::memcmp(static_cast<const uint8_t*>(lg.keys()) + rg,
                                   static_cast<const uint8_t*>(lr.keys()) + rr, kHeadDim * elem));
          ASSERT_EQ(0, std::memcmp(static_cast<const uint8_t*>(lg.values()) + rg,
                                   static_cast<const uint8_t*>(lr.values()) + rr, kHeadDim * elem));
          ASSERT_EQ(lg.pos()[g * lg.n_slot() + slot], lr.pos()[g * lr.n_slot() + slot]);
        }
      }
    }
    EXPECT_EQ(reserved->layer(0).n_slot(), 60);  // past the reserve it doubles as before
  }
  // A small reserve still doubles (a conversation reserving a little more before every turn
  // copies O(log n) times), not past at_most; a reserve already held changes nothing.
  for (const auto& [n_states, at_most, n_slot] :
       {std::tuple<int64_t, int64_t, int>{2, kMaxUnboundedReserve, 2},
        {3, kMaxUnboundedReserve, 4},
        {3, 3, 3},
        {9, 4, 9}}) {
    auto small = make_state("full", KvType::kF32);  // 2 slots
    ASSERT_TRUE(small->reserve(n_states, at_most).ok());
    EXPECT_EQ(small->layer(0).n_slot(), n_slot) << n_states << " at most " << at_most;
  }
  auto bounded = make_state("window", KvType::kF32);  // k = 5
  EXPECT_EQ(bounded->layer(0).n_slot(), 2);
  ASSERT_TRUE(bounded->reserve(1000).ok());
  EXPECT_EQ(bounded->layer(0).n_slot(), 6);
  auto full = make_state("full", KvType::kF32);
  EXPECT_FALSE(full->reserve(kMaxUnboundedReserve + 1).ok());
}

}  // namespace
}  // namespace tova::kv

namespace tova::kv {
namespace {

// Quantized and bf16 pools (keys in 16-slot tiles): every held slot's key and value rows are
// the rows its token gave, converted once (core's scalar conversion), through growth, chunked
// evictions that move states down (LayerState::settle) and a conversion to another format and
// back to f32.
TEST(LayerStateInsert, StoredTypesKeepEveryRowThroughGrowthAndMoves) {
  constexpr int kHd = 16;
  for (const KvFormat& f : {KvFormat(KvType::kQ8_0), KvFormat(KvType::kQ4_0, KvType::kQ8_0, true),
                            KvFormat(KvType::kBF16, KvType::kQ4_0)}) {
    SCOPED_TRACE(f.label());
    auto ms = make_state("window", f, 20, kHd, /*max_new=*/8);
    ASSERT_NE(ms, nullptr);
    LayerState& L = ms->layer(0);
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<std::vector<float>> ks, vs;  // per position, [kHeadKv][kHd]
    auto expect_rows = [&](const LayerState& l, const KvFormat& fmt) {
      std::vector<uint8_t> got(kv_row_bytes(fmt.k, kHd)), want(got.size()), wv(kv_row_bytes(fmt.v, kHd));
      std::vector<float> x(kHd);
      for (int g = 0; g < kHeadKv; ++g) {
        for (int s = 0; s < l.n_slot(); ++s) {
          const int64_t p = l.pos()[g * l.n_slot() + s];
          if (p < 0) continue;
          std::copy_n(&ks[p][g * kHd], kHd, x.data());
          if (fmt.rotate && kv_quantized(fmt.k)) hadamard_ref(x.data(), kHd);
          kv_quantize_row_ref(fmt.k, x.data(), want.data(), kHd);
          l.key_row(g, s, got.data());
          ASSERT_EQ(got, want) << "key of position " << p << " in slot " << s;
          std::copy_n(&vs[p][g * kHd], kHd, x.data());
          if (fmt.rotate && kv_quantized(fmt.v)) hadamard_ref(x.data(), kHd);
          kv_quantize_row_ref(fmt.v, x.data(), wv.data(), kHd);
          const auto* v = static_cast<const uint8_t*>(l.values()) + (g * l.n_slot() + s) * wv.size();
          ASSERT_EQ(0, std::memcmp(v, wv.data(), wv.size())) << "value of position " << p;
        }
      }
    };
    int64_t pos = 0;
    for (int chunk = 0; chunk < 8; ++chunk) {
      ASSERT_TRUE(ms->make_room(8).ok());
      for (int t = 0; t < 8; ++t, ++pos) {
        ks.emplace_back(kHeadKv * kHd);
        vs.emplace_back(kHeadKv * kHd);
        for (float& x : ks.back()) x = nd(rng);
        for (float& x : vs.back()) x = nd(rng);
        int32_t slots[kHeadKv];
        L.insert(pos, ks.back().data(), vs.back().data(), slots);
      }
      L.evict(pos - 1);
      expect_rows(L, f);
    }
    EXPECT_EQ(L.n_held(), 20);
    EXPECT_LE(L.slot_end(), 21);
    // Another format and back: f32 rows are the dequantized ones.
    auto f32 = ms->with_kv_type(KvFormat(KvType::kF32));
    ASSERT_TRUE(f32.ok()) << f32.message();
    const LayerState& F = (*f32)->layer(0);
    std::vector<uint8_t> stored(kv_row_bytes(f.k, kHd));
    std::vector<float> want(kHd), got(kHd);
    for (int s = 0; s < L.n_slot(); ++s) {
      if (L.pos()[s] < 0) continue;
      L.key_row(0, s, stored.data());
      kv_dequantize_row_ref(f.k, stored.data(), want.data(), kHd);
      if (L.k_rotated()) hadamard_ref(want.data(), kHd);
      F.key_row(0, s, reinterpret_cast<uint8_t*>(got.data()));
      ASSERT_EQ(want, got) << "slot " << s;
    }
    EXPECT_TRUE(ms->with_kv_type(KvFormat(KvType::kQ8_0)).ok());
  }
}

}  // namespace
}  // namespace tova::kv
