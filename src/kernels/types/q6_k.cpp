// Q6_K: super-blocks of 256 weights, 16 int8 scales of 16 elements, 6-bit quants split into
// low nibbles and high bit pairs, f16 d (detail::Q6_K); value d * sc * (q - 32). Activations:
// Q8_K. Unpack: 512-bit on AVX3 and AVX3_DL; decode: GemvQ6_KAvx2 on AVX2, AVX3 and AVX3_DL
// (a 512-bit kernel was slower, see matmul_decode-inl.h); prefill: the int8 token-lane tiles.
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/q6_k.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

struct Q6_KType : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kQ6_K;
  static constexpr GgmlType kActType = GgmlType::kQ8_K;
  static constexpr detail::UnpackInfo kUnpack{16, 32, false, 6};
  static void Unpack(const uint8_t* row, int64_t n, uint8_t* u, float* mul, float* add) {
    #if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    UnpackQ6_KAvx512(row, n / 256, u, mul, add);
    #else
    UnpackQ6_K(row, n / 256, u, mul, add);
    #endif
  }
#if TOVA_AVX2_DECODE_TARGET
  static constexpr bool kDecodeAvx2 = true;
  static GemvDecodeFn PickDecodeAvx2(int r, int t) {
    static constexpr GemvDecodeFn kTable[2][4] = TOVA_DECODE_AVX2_TABLE(GemvQ6_KAvx2);
    return kTable[r - 1][t - 1];
  }
#endif
};
using UnitType = Q6_KType;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

constexpr auto kDequantize = &dequantize_blocks<256, detail::Q6_K::kBytes, dequant_q6_k>;
constexpr auto kQuantize = &quantize_blocks<256, detail::Q6_K::kBytes, quant_q6_k>;
constexpr auto kDot = &dot_blocks<256, dot_q6_k>;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kQ6_KKernels
#include "kernels/types/unit-inl.h"
