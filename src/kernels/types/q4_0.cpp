// Q4_0: blocks of 32 weights, an f16 scale d and 16 bytes of nibbles (detail::Q4_0); value
// (q - 8) * d. Activations: Q8_0. Decode: the VNNI kernel on AVX3_DL (matmul_decode-inl.h), the
// 256-bit blocks-of-32 kernel on AVX2 and AVX3; prefill: the int8 token-lane tiles.
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/q4_0.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

struct Q4_0Type : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kQ4_0;
  static constexpr GgmlType kActType = GgmlType::kQ8_0;
  static constexpr detail::UnpackInfo kUnpack{32, 8, false, 4};
  static void Unpack(const uint8_t* row, int64_t n, uint8_t* u, float* mul, float* add) {
    UnpackQ4_0(row, n / 32, u, mul, add);
  }
#if TOVA_AVX2_DECODE_TARGET
  static constexpr bool kDecodeAvx2 = true;
  static GemvDecodeFn PickDecodeAvx2(int r, int t) { return PickBlocksAvx2<GgmlType::kQ4_0>(r, t); }
#endif
#if HWY_TARGET == HWY_AVX3_DL
  static constexpr bool kDecodeVnni = true;
  static int64_t DecodeActBytesVnni(int64_t n) { return Q4_0ActBytes(n); }
  static GemvDecodeFn PickDecodeVnni(int r, int t) {
    static constexpr GemvDecodeFn kTable[4][4] = TOVA_DECODE_VNNI_TABLE(GemvQ4_0);
    return kTable[r - 1][t - 1];
  }
  static void PrepareDecodeVnni(const int8_t* qs, const float* d, int64_t n, uint8_t* out) {
    PrepareQ4_0(qs, d, n, out);
  }
#endif
};
using UnitType = Q4_0Type;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

constexpr auto kDequantize = &dequantize_blocks<32, detail::Q4_0::kBytes, dequant_q4_0>;
constexpr auto kQuantize = &quantize_blocks<32, detail::Q4_0::kBytes, quant_q4_0>;
constexpr auto kDot = &dot_blocks<32, dot_q4_0>;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kQ4_0Kernels
#include "kernels/types/unit-inl.h"
