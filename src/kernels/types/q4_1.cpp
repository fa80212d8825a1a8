// Q4_1: blocks of 32 weights, f16 scale d and min m, 16 bytes of nibbles (detail::Q4_1); value
// q * d + m. Activations: Q8_1 (with the block sum the min multiplies). Decode: the 256-bit
// blocks-of-32 kernel on AVX2, AVX3 and AVX3_DL; prefill: the int8 token-lane tiles.
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/q4_1.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

inline void UnpackQ4_1(const uint8_t* row, int64_t nb, uint8_t* u, float* mul, float* add) {
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * detail::Q4_1::kBytes;
    SplitNibbles(blk + detail::Q4_1::kQs, u + 32 * b);
    mul[b] = LoadF16(blk + detail::Q4_1::kD);
    add[b] = LoadF16(blk + detail::Q4_1::kM);
  }
}

struct Q4_1Type : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kQ4_1;
  static constexpr GgmlType kActType = GgmlType::kQ8_1;
  static constexpr detail::UnpackInfo kUnpack{32, 0, true, 4};
  static void Unpack(const uint8_t* row, int64_t n, uint8_t* u, float* mul, float* add) {
    UnpackQ4_1(row, n / 32, u, mul, add);
  }
#if TOVA_AVX2_DECODE_TARGET
  static constexpr bool kDecodeAvx2 = true;
  static GemvDecodeFn PickDecodeAvx2(int r, int t) { return PickBlocksAvx2<GgmlType::kQ4_1>(r, t); }
#endif
};
using UnitType = Q4_1Type;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using namespace detail;  // NOLINT(google-build-using-namespace): block layouts
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

void dequant_q4_1(const uint8_t* b, float* y) {
  const float d = load_f16(b + Q4_1::kD);
  const float m = load_f16(b + Q4_1::kM);
  for (int j = 0; j < 16; ++j) {
    const uint8_t q = b[Q4_1::kQs + j];
    y[j] = static_cast<float>(q & 0xF) * d + m;
    y[j + 16] = static_cast<float>(q >> 4) * d + m;
  }
}

double dot_q4_1(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += Q4_1::kBytes, a += Q8_1::kBytes) {
    int isum = 0;
    for (int j = 0; j < 16; ++j) {
      const uint8_t q = w[Q4_1::kQs + j];
      isum += (q & 0xF) * act_q(a, Q8_1::kQs, j);
      isum += (q >> 4) * act_q(a, Q8_1::kQs, j + 16);
    }
    sum += static_cast<double>(load_f16(w + Q4_1::kD)) * load_f16(a + Q8_1::kD) * isum +
           static_cast<double>(load_f16(w + Q4_1::kM)) * load_f16(a + Q8_1::kS);
  }
  return sum;
}

// The affine quantizer with Q4_1's fields (no fifth bits).
void quant_q4_1(const float* x, uint8_t* b) {
  quant_affine(x, 4, b, detail::Q4_1::kD, detail::Q4_1::kM, -1, detail::Q4_1::kQs);
}

constexpr auto kDequantize = &dequantize_blocks<32, detail::Q4_1::kBytes, dequant_q4_1>;
constexpr auto kQuantize = &quantize_blocks<32, detail::Q4_1::kBytes, quant_q4_1>;
constexpr auto kDot = &dot_blocks<32, dot_q4_1>;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kQ4_1Kernels
#include "kernels/types/unit-inl.h"
