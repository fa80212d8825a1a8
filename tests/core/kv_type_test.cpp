// K/V storage types: names, blocks, bytes, the key tile layout and the Hadamard rotation.
#include "core/kv_type.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace tova {
namespace {

TEST(KvType, NamesTagsAndRowBytes) {
  for (int i = 0; i < kKvTypeCount; ++i) {
    const KvType t = static_cast<KvType>(i);
    EXPECT_EQ(kv_type_from_name(kv_type_name(t)), t);
    EXPECT_EQ(kv_type_from_tag(static_cast<uint8_t>(i)), t);
  }
  EXPECT_FALSE(kv_type_from_name("q5_0").has_value());
  EXPECT_FALSE(kv_type_from_tag(kKvTypeCount).has_value());
  EXPECT_EQ(kv_row_bytes(KvType::kF32, 64), 256u);
  EXPECT_EQ(kv_row_bytes(KvType::kF16, 64), 128u);
  EXPECT_EQ(kv_row_bytes(KvType::kBF16, 64), 128u);
  EXPECT_EQ(kv_row_bytes(KvType::kQ8_0, 64), 68u);   // 2 x (2 + 32), as llama.cpp
  EXPECT_EQ(kv_row_bytes(KvType::kQ4_0, 64), 36u);   // 2 x (2 + 16)
  EXPECT_EQ(kv_row_bytes(KvType::kQ8_0, 48), 54u);   // blocks of 16: 3 x (2 + 16)
  EXPECT_EQ(kv_row_bytes(KvType::kQ4_0, 8), 6u);     // one block of 8: 2 + 4
  EXPECT_EQ(kv_block_size(KvType::kQ8_0, 96).value(), 32);
  EXPECT_EQ(kv_block_size(KvType::kQ8_0, 48).value(), 16);
  EXPECT_EQ(kv_block_size(KvType::kQ4_0, 8).value(), 8);
  EXPECT_EQ(kv_block_size(KvType::kF16, 6).value(), 1);
  auto odd = kv_block_size(KvType::kQ4_0, 20);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.message().find("head_dim"), std::string::npos) << odd.message();
  EXPECT_FALSE(kv_block_size(KvType::kQ8_0, 1024).ok());
  EXPECT_FALSE(check_kv_format(KvFormat(KvType::kF16, KvType::kQ8_0), 12).ok());
  EXPECT_EQ(KvFormat(KvType::kQ4_0, KvType::kQ4_0, true).label(), "q4_0+rot");
  EXPECT_EQ(KvFormat(KvType::kQ8_0, KvType::kF16).label(), "k=q8_0,v=f16");
  EXPECT_EQ(KvFormat(KvType::kQ8_0).slot_bytes(64), 136u);
}

// Every slot of a pool of key tiles holds its own row: put 40 rows (three tiles, the last one
// partial) and read each back; the pool is whole tiles.
TEST(KvType, KeyTilesHoldEveryRow) {
  for (KvType t : {KvType::kF32, KvType::kQ8_0, KvType::kQ4_0}) {
    for (int hd : {8, 48, 64}) {
      const size_t row = kv_row_bytes(t, hd);
      const int n_slot = 40;
      EXPECT_EQ(key_pool_bytes(t, hd, n_slot),
                kv_quantized(t) ? 48 * row : n_slot * row);
      std::vector<uint8_t> pool(key_pool_bytes(t, hd, n_slot), 0);
      std::vector<std::vector<uint8_t>> rows(n_slot, std::vector<uint8_t>(row));
      std::mt19937 rng(hd);
      for (int s = 0; s < n_slot; ++s) {
        for (uint8_t& b : rows[s]) b = static_cast<uint8_t>(rng());
        key_put_row(t, hd, &pool[key_tile_offset(t, hd, s)], s % key_tile_slots(t), rows[s].data());
      }
      std::vector<uint8_t> back(row);
      for (int s = 0; s < n_slot; ++s) {
        key_get_row(t, hd, &pool[key_tile_offset(t, hd, s)], s % key_tile_slots(t), back.data());
        EXPECT_EQ(back, rows[s]) << kv_type_name(t) << " head_dim " << hd << " slot " << s;
      }
    }
  }
}

// A q8_0 key tile by hand: slot 1's element 5 is byte 1 of chunk 1 in lane 1; its scale is the
// second f16 after the block's quants.
TEST(KvType, KeyTileLayoutByHand) {
  const int hd = 32;
  std::vector<uint8_t> row(kv_row_bytes(KvType::kQ8_0, hd));
  for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<uint8_t>(i);
  std::vector<uint8_t> tile(key_tile_bytes(KvType::kQ8_0, hd), 0);
  key_put_row(KvType::kQ8_0, hd, tile.data(), 1, row.data());
  EXPECT_EQ(tile[(1 * 16 + 1) * 4 + 1], row[2 + 5]);
  EXPECT_EQ(tile[8 * 64 + 2], row[0]);
  EXPECT_EQ(tile[8 * 64 + 3], row[1]);
}

TEST(KvType, HadamardIsOrthogonalAndItsOwnInverse) {
  for (int hd : {8, 48, 64, 96, 128}) {
    std::mt19937 rng(hd);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<float> a(hd), b(hd);
    for (int i = 0; i < hd; ++i) {
      a[i] = nd(rng);
      b[i] = nd(rng);
    }
    double dot = 0;
    for (int i = 0; i < hd; ++i) dot += double(a[i]) * b[i];
    std::vector<float> ha = a, hb = b;
    hadamard_ref(ha.data(), hd);
    hadamard_ref(hb.data(), hd);
    double hdot = 0;
    for (int i = 0; i < hd; ++i) hdot += double(ha[i]) * hb[i];
    EXPECT_NEAR(hdot, dot, 1e-4 * hd);
    hadamard_ref(ha.data(), hd);
    for (int i = 0; i < hd; ++i) EXPECT_NEAR(ha[i], a[i], 1e-5) << hd << " " << i;
  }
  EXPECT_EQ(hadamard_size(64), 64);
  EXPECT_EQ(hadamard_size(48), 16);
  EXPECT_EQ(hadamard_size(96), 32);
  // One large channel spreads over the whole run.
  std::vector<float> x(64, 0.f);
  x[3] = 8.f;
  hadamard_ref(x.data(), 64);
  for (float v : x) EXPECT_FLOAT_EQ(std::fabs(v), 1.f);
}

}  // namespace
}  // namespace tova
