// Q5_0: blocks of 32 weights, f16 scale d, 4 bytes of fifth bits and 16 bytes of nibbles
// (detail::Q5_0); value (q - 16) * d. Activations: Q8_0. Decode: the 256-bit blocks-of-32
// kernel on AVX2, AVX3 and AVX3_DL; prefill: the int8 token-lane tiles.
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/q5_0.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

struct Q5_0Type : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kQ5_0;
  static constexpr GgmlType kActType = GgmlType::kQ8_0;
  static constexpr detail::UnpackInfo kUnpack{32, 16, false, 5};
  static void Unpack(const uint8_t* row, int64_t n, uint8_t* u, float* mul, float* add) {
    UnpackQ5_0(row, n / 32, u, mul, add);
  }
#if TOVA_AVX2_DECODE_TARGET
  static constexpr bool kDecodeAvx2 = true;
  static GemvDecodeFn PickDecodeAvx2(int r, int t) { return PickBlocksAvx2<GgmlType::kQ5_0>(r, t); }
#endif
};
using UnitType = Q5_0Type;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

constexpr auto kDequantize = &dequantize_blocks<32, detail::Q5_0::kBytes, dequant_q5_0>;
constexpr auto kQuantize = &quantize_blocks<32, detail::Q5_0::kBytes, quant_q5_0>;
constexpr auto kDot = &dot_blocks<32, dot_q5_0>;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kQ5_0Kernels
#include "kernels/types/unit-inl.h"
