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

inline void UnpackIQ4_NL(const uint8_t* row, int64_t nb, uint8_t* u, float* mul, float* add) {
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * detail::IQ4_NL::kBytes;
    UnpackCodes32(blk + detail::IQ4_NL::kQs, kIQ4Codes, u + 32 * b);
    mul[b] = LoadF16(blk + detail::IQ4_NL::kD);
    add[b] = 0.0f;
  }
}

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
using namespace detail;  // NOLINT(google-build-using-namespace): block layouts
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

void dequant_iq4_nl(const uint8_t* b, float* y) {
  dequant_table32(b + IQ4_NL::kQs, kIQ4NLValues, load_f16(b + IQ4_NL::kD), y);
}

// IQ4_NL: the element of largest magnitude maps to the level -127.
void quant_iq4_nl(const float* x, uint8_t* b) {
  store_u16(b + IQ4_NL::kD, fp32_to_fp16(signed_absmax(x, 32) / -127.0f));
  quant_table32(x, kIQ4NLValues, load_f16(b + IQ4_NL::kD), b + IQ4_NL::kQs);
}

double dot_iq4_nl(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += IQ4_NL::kBytes, a += Q8_0::kBytes) {
    const int isum = dot_table32(w + IQ4_NL::kQs, kIQ4NLValues, a + Q8_0::kQs);
    sum += static_cast<double>(load_f16(w + IQ4_NL::kD)) * load_f16(a + Q8_0::kD) * isum;
  }
  return sum;
}

constexpr auto kDequantize = &dequantize_blocks<32, detail::IQ4_NL::kBytes, dequant_iq4_nl>;
constexpr auto kQuantize = &quantize_blocks<32, detail::IQ4_NL::kBytes, quant_iq4_nl>;
constexpr auto kDot = &dot_blocks<32, dot_iq4_nl>;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kIQ4_NLKernels
#include "kernels/types/unit-inl.h"
