// IQ4_NL: blocks of 32 weights, an f16 scale d and 4-bit codes of the non-linear levels
// kIQ4NLValues (detail::IQ4_NL). Activations: Q8_0. Unpacked as level + 128 (the levels span
// -127..113: the signed tiles on AVX2 and AVX3, as Q8_0). Decode: the 256-bit blocks-of-32
// kernel on AVX2, AVX3 and AVX3_DL; prefill: the int8 token-lane tiles.
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/iq4_nl.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

struct IQ4_NLType : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kIQ4_NL;
  static constexpr GgmlType kActType = GgmlType::kQ8_0;
  static constexpr detail::UnpackInfo kUnpack{32, 128, false, 8};
  static void Unpack(const uint8_t* row, int64_t n, uint8_t* u, float* mul, float* add) {
    UnpackIQ4_NL(row, n / 32, u, mul, add);
  }
#if TOVA_AVX2_DECODE_TARGET
  static constexpr bool kDecodeAvx2 = true;
  static GemvDecodeFn PickDecodeAvx2(int r, int t) { return PickBlocksAvx2<GgmlType::kIQ4_NL>(r, t); }
#endif
};
using UnitType = IQ4_NLType;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

constexpr auto kDequantize = &dequantize_blocks<32, detail::IQ4_NL::kBytes, dequant_iq4_nl>;
constexpr auto kQuantize = &quantize_blocks<32, detail::IQ4_NL::kBytes, quant_iq4_nl>;
constexpr auto kDot = &dot_blocks<32, dot_iq4_nl>;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kIQ4_NLKernels
#include "kernels/types/unit-inl.h"
