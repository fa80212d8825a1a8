// Q3_K: super-blocks of 256 weights, 16 six-bit scales, 2-bit quants plus a high-bit mask, f16
// d (detail::Q3_K); value d * (sc - 32) * (q - 4). Activations: Q8_K. Decode: GemvQ3_KAvx2 on
// AVX2, AVX3 and AVX3_DL; prefill: the int8 token-lane tiles (groups of 16).
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/q3_k.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

struct Q3_KType : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kQ3_K;
  static constexpr GgmlType kActType = GgmlType::kQ8_K;
  static constexpr detail::UnpackInfo kUnpack{16, 4, false, 3};
  static void Unpack(const uint8_t* row, int64_t n, uint8_t* u, float* mul, float* add) {
    UnpackQ23_K<true>(row, n / 256, u, mul, add);
  }
#if TOVA_AVX2_DECODE_TARGET
  static constexpr bool kDecodeAvx2 = true;
  static GemvDecodeFn PickDecodeAvx2(int r, int t) {
    static constexpr GemvDecodeFn kTable[2][4] = TOVA_DECODE_AVX2_TABLE(GemvQ3_KAvx2);
    return kTable[r - 1][t - 1];
  }
#endif
};
using UnitType = Q3_KType;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

constexpr auto kDequantize = &dequantize_blocks<256, detail::Q3_K::kBytes, dequant_q3_k>;
constexpr auto kQuantize = &quantize_blocks<256, detail::Q3_K::kBytes, quant_q3_k>;
constexpr auto kDot = &dot_blocks<256, dot_q3_k>;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kQ3_KKernels
#include "kernels/types/unit-inl.h"
