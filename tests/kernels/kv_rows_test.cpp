// K/V rows into their storage types: the SIMD conversion gives the scalar reference's bytes on
// every target, and the q8_0 / q4_0 rows are llama.cpp's blocks (the GGUF dequantizer reads them).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/kv_type.h"
#include "hwy/targets.h"
#include "kernels/kv_rows.h"
#include "kernels/quant.h"

namespace tova::kernels {
namespace {

std::vector<float> awkward_rows(int n_rows, int hd, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n_rows) * hd);
  for (float& v : x) v = nd(rng);
  // Row 0: all zeros (scale 0). Row 1: exact ties of the rounding (x / d = k + 0.5) and equal
  // magnitudes of both signs (q4_0 takes the first). Row 2: one huge channel.
  if (n_rows > 2) {
    std::fill(x.begin(), x.begin() + hd, 0.f);
    for (int i = 0; i < hd; ++i) x[hd + i] = (i % 2 ? -1.f : 1.f) * (127.f - 0.5f * (i % 7)) / 127.f;
    x[2 * hd + 3] = 300.f;
  }
  return x;
}

TEST(KvRows, SimdEqualsReferenceOnEveryTarget) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    for (KvType t : {KvType::kF32, KvType::kF16, KvType::kBF16, KvType::kQ8_0, KvType::kQ4_0}) {
      for (int hd : {8, 16, 24, 48, 64, 128, 256}) {
        for (bool rotate : {false, true}) {
          SCOPED_TRACE(::testing::Message() << kv_type_name(t) << " head_dim " << hd
                                            << (rotate ? " rotated" : ""));
          const int n = 7;
          const std::vector<float> x = awkward_rows(n, hd, 3 + hd);
          const size_t bytes = n * kv_row_bytes(t, hd);
          std::vector<uint8_t> a(bytes, 0xAB), b(bytes, 0xCD);
          kv_store_rows(t, rotate, x.data(), a.data(), n, hd);
          kv_store_rows_ref(t, rotate, x.data(), b.data(), n, hd);
          ASSERT_EQ(0, std::memcmp(a.data(), b.data(), bytes));
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

// With blocks of 32, the rows are GGUF Q8_0 / Q4_0 rows: the weight dequantizer reads them as
// kv_dequantize_row_ref does, and the values are within half a quantization step.
TEST(KvRows, QuantizedRowsAreLlamaCppBlocks) {
  for (auto [t, g] : {std::pair{KvType::kQ8_0, GgmlType::kQ8_0}, {KvType::kQ4_0, GgmlType::kQ4_0}}) {
    const int hd = 128;
    const std::vector<float> x = awkward_rows(4, hd, 9);
    std::vector<uint8_t> row(kv_row_bytes(t, hd));
    for (int r = 0; r < 4; ++r) {
      kv_quantize_row_ref(t, &x[r * hd], row.data(), hd);
      std::vector<float> mine(hd), gguf(hd);
      kv_dequantize_row_ref(t, row.data(), mine.data(), hd);
      dequantize_row_ref(g, row.data(), gguf.data(), hd);
      ASSERT_EQ(0, std::memcmp(mine.data(), gguf.data(), hd * sizeof(float))) << r;
      for (int b = 0; b < hd / 32; ++b) {
        float amax = 0;
        for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[r * hd + b * 32 + i]));
        const float step = amax / (t == KvType::kQ8_0 ? 127.f : 8.f);
        // Half a step, plus the f16 rounding of the scale times the largest quant (127 or 8),
        // and q4_0's asymmetric range (-8..7 steps) clips the far end by up to one step.
        const float bound = t == KvType::kQ8_0 ? 0.5f + 127.f / 2048 : 1.0f + 8.f / 2048;
        for (int i = 0; i < 32; ++i) {
          EXPECT_LE(std::fabs(mine[b * 32 + i] - x[r * hd + b * 32 + i]), bound * step + 1e-6f);
        }
      }
    }
  }
}

}  // namespace
}  // namespace tova::kernels
