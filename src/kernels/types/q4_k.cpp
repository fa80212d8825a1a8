// Q4_K: super-blocks of 256 weights, 8 sub-blocks of 32 with six-bit scales and mins, f16 d
// and dmin, 4-bit quants (detail::Q4_K). Activations: Q8_K. Unpack: 512-bit on AVX3 and
// AVX3_DL; decode: GemvQ4_KAvx2 on AVX2, AVX3 and AVX3_DL; prefill: the int8 token-lane tiles.
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/q4_k.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

struct Q4_KType : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kQ4_K;
  static constexpr GgmlType kActType = GgmlType::kQ8_K;
  static constexpr detail::UnpackInfo kUnpack{32, 0, true, 4};
  static void Unpack(const uint8_t* row, int64_t n, uint8_t* u, float* mul, float* add) {
    #if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    UnpackQKAvx512(row, n / 256, detail::Q4_K::kBytes, detail::Q4_K::kQs, -1, u, mul, add);
    #else
    UnpackQK(row, n / 256, false, u, mul, add);
    #endif
  }
#if TOVA_AVX2_DECODE_TARGET
  static constexpr bool kDecodeAvx2 = true;
#if HWY_TARGET == HWY_AVX2
  static GemvDecodeFn PickDecodeAvx2(int r, int t) {
    static constexpr GemvDecodeFn kTable[2][4] = TOVA_DECODE_AVX2_TABLE(GemvQ4_KAvx2);
    return kTable[r - 1][t - 1];
  }
#else
  static constexpr int kDecodeRowsAvx2 = 4;
  static GemvDecodeFn PickDecodeAvx2(int r, int t) {
    static constexpr GemvDecodeFn kTable[4][4] = {
        TOVA_DECODE_AVX2_ROW(GemvQ4_KAvx2, 1), TOVA_DECODE_AVX2_ROW(GemvQ4_KAvx2, 2),
        TOVA_DECODE_AVX2_ROW(GemvQ4_KAvx2, 3), TOVA_DECODE_AVX2_ROW(GemvQ4_KAvx2, 4)};
    return kTable[r - 1][t - 1];
  }
#endif
#endif
};
using UnitType = Q4_KType;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

void dequant_q4_k(const uint8_t* b, float* y) { dequant_qk(b, b + detail::Q4_K::kQs, nullptr, y); }
void quant_q4_k(const float* x, uint8_t* b) { quant_qk(x, 4, b, b + detail::Q4_K::kQs, nullptr); }
double dot_q4_k(int64_t n, const uint8_t* w, const uint8_t* a) { return dot_qk(n / 256, w, a, false); }

constexpr auto kDequantize = &dequantize_blocks<256, detail::Q4_K::kBytes, dequant_q4_k>;
constexpr auto kQuantize = &quantize_blocks<256, detail::Q4_K::kBytes, quant_q4_k>;
constexpr auto kDot = &dot_q4_k;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kQ4_KKernels
#include "kernels/types/unit-inl.h"
