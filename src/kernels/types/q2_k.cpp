// Q2_K: super-blocks of 256 weights, 16 sub-blocks of 16 with 4-bit scales and mins, 2-bit
// quants, f16 d and dmin (detail::Q2_K). Activations: Q8_K. Decode: GemvQ2_KAvx2 on AVX2, AVX3
// and AVX3_DL; prefill: the int8 token-lane tiles (groups of 16).
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/q2_k.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

struct Q2_KType : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kQ2_K;
  static constexpr GgmlType kActType = GgmlType::kQ8_K;
  static constexpr detail::UnpackInfo kUnpack{16, 0, true, 2};
  static void Unpack(const uint8_t* row, int64_t n, uint8_t* u, float* mul, float* add) {
    UnpackQ23_K<false>(row, n / 256, u, mul, add);
  }
#if TOVA_AVX2_DECODE_TARGET
  static constexpr bool kDecodeAvx2 = true;
  static GemvDecodeFn PickDecodeAvx2(int r, int t) {
    static constexpr GemvDecodeFn kTable[2][4] = TOVA_DECODE_AVX2_TABLE(GemvQ2_KAvx2);
    return kTable[r - 1][t - 1];
  }
#endif
};
using UnitType = Q2_KType;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

constexpr auto kDequantize = &dequantize_blocks<256, detail::Q2_K::kBytes, dequant_q2_k>;
constexpr auto kQuantize = &quantize_blocks<256, detail::Q2_K::kBytes, quant_q2_k>;
constexpr auto kDot = &dot_blocks<256, dot_q2_k>;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kQ2_KKernels
#include "kernels/types/unit-inl.h"
