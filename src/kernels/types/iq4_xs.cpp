// IQ4_XS: super-blocks of 256 weights, 8 sub-blocks of 32 with six-bit scales, IQ4_NL's level
// codes (detail::IQ4_XS). Activations: Q8_K. Unpacked as level + 128. Decode: GemvIQ4_XSAvx2 on
// AVX2, AVX3 and AVX3_DL; prefill: the int8 token-lane tiles.
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/iq4_xs.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

struct IQ4_XSType : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kIQ4_XS;
  static constexpr GgmlType kActType = GgmlType::kQ8_K;
  static constexpr detail::UnpackInfo kUnpack{32, 128, false, 8};
  static void Unpack(const uint8_t* row, int64_t n, uint8_t* u, float* mul, float* add) {
    UnpackIQ4_XS(row, n / 256, u, mul, add);
  }
#if TOVA_AVX2_DECODE_TARGET
  static constexpr bool kDecodeAvx2 = true;
  static GemvDecodeFn PickDecodeAvx2(int r, int t) {
    static constexpr GemvDecodeFn kTable[2][4] = TOVA_DECODE_AVX2_TABLE(GemvIQ4_XSAvx2);
    return kTable[r - 1][t - 1];
  }
#endif
};
using UnitType = IQ4_XSType;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

constexpr auto kDequantize = &dequantize_blocks<256, detail::IQ4_XS::kBytes, dequant_iq4_xs>;
constexpr auto kQuantize = &quantize_blocks<256, detail::IQ4_XS::kBytes, quant_iq4_xs>;
constexpr auto kDot = &dot_blocks<256, dot_iq4_xs>;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kIQ4_XSKernels
#include "kernels/types/unit-inl.h"
