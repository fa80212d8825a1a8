// Q5_1: blocks of 32 weights, f16 scale d and min m, fifth bits and nibbles (detail::Q5_1);
// value q * d + m. Activations: Q8_1. Decode: the 256-bit blocks-of-32 kernel on AVX2, AVX3 and
// AVX3_DL; prefill: the int8 token-lane tiles.
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/q5_1.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

inline void UnpackQ5_1(const uint8_t* row, int64_t nb, uint8_t* u, float* mul, float* add) {
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * detail::Q5_1::kBytes;
    UnpackQ5(blk, detail::Q5_1::kQh, detail::Q5_1::kQs, u + 32 * b);
    mul[b] = LoadF16(blk + detail::Q5_1::kD);
    add[b] = LoadF16(blk + detail::Q5_1::kM);
  }
}

struct Q5_1Type : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kQ5_1;
  static constexpr GgmlType kActType = GgmlType::kQ8_1;
  static constexpr detail::UnpackInfo kUnpack{32, 0, true, 5};
  static void Unpack(const uint8_t* row, int64_t n, uint8_t* u, float* mul, float* add) {
    UnpackQ5_1(row, n / 32, u, mul, add);
  }
#if TOVA_AVX2_DECODE_TARGET
  static constexpr bool kDecodeAvx2 = true;
  static GemvDecodeFn PickDecodeAvx2(int r, int t) { return PickBlocksAvx2<GgmlType::kQ5_1>(r, t); }
#endif
};
using UnitType = Q5_1Type;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using namespace detail;  // NOLINT(google-build-using-namespace): block layouts
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

void dequant_q5_1(const uint8_t* b, float* y) {
  const float d = load_f16(b + Q5_1::kD);
  const float m = load_f16(b + Q5_1::kM);
  int q[32];
  unpack_q5(b + Q5_1::kQh, b + Q5_1::kQs, q);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q[j]) * d + m;
}

double dot_q5_1(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += Q5_1::kBytes, a += Q8_1::kBytes) {
    int q[32];
    unpack_q5(w + Q5_1::kQh, w + Q5_1::kQs, q);
    int isum = 0;
    for (int j = 0; j < 32; ++j) isum += q[j] * act_q(a, Q8_1::kQs, j);
    sum += static_cast<double>(load_f16(w + Q5_1::kD)) * load_f16(a + Q8_1::kD) * isum +
           static_cast<double>(load_f16(w + Q5_1::kM)) * load_f16(a + Q8_1::kS);
  }
  return sum;
}

// The affine quantizer with Q5_1's fields.
void quant_q5_1(const float* x, uint8_t* b) {
  quant_affine(x, 5, b, detail::Q5_1::kD, detail::Q5_1::kM, detail::Q5_1::kQh, detail::Q5_1::kQs);
}

constexpr auto kDequantize = &dequantize_blocks<32, detail::Q5_1::kBytes, dequant_q5_1>;
constexpr auto kQuantize = &quantize_blocks<32, detail::Q5_1::kBytes, quant_q5_1>;
constexpr auto kDot = &dot_blocks<32, dot_q5_1>;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kQ5_1Kernels
#include "kernels/types/unit-inl.h"
