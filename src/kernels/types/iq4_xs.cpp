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

inline void UnpackIQ4_XS(const uint8_t* row, int64_t nb, uint8_t* u, float* mul, float* add) {
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * detail::IQ4_XS::kBytes;
    const float d = LoadF16(blk + detail::IQ4_XS::kD);
    for (int j = 0; j < 8; ++j) {
      UnpackCodes32(blk + detail::IQ4_XS::kQs + 16 * j, kIQ4Codes, u + 256 * b + 32 * j);
      mul[8 * b + j] = d * static_cast<float>(detail::scale_iq4_xs(j, blk) - 32);
      add[8 * b + j] = 0.0f;
    }
  }
}

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
using namespace detail;  // NOLINT(google-build-using-namespace): block layouts
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

void dequant_iq4_xs(const uint8_t* b, float* y) {
  const float d = load_f16(b + IQ4_XS::kD);
  for (int j = 0; j < 8; ++j) {
    const float dl = d * static_cast<float>(scale_iq4_xs(j, b) - 32);
    dequant_table32(b + IQ4_XS::kQs + 16 * j, kIQ4NLValues, dl, y + 32 * j);
  }
}

// IQ4_XS: IQ4_NL's per-32 scales quantized to six bits (-32..31) of one f16 d.
void quant_iq4_xs(const float* x, uint8_t* b) {
  float scale[8];
  float max_abs = 0.0f;
  for (int j = 0; j < 8; ++j) {
    scale[j] = signed_absmax(x + 32 * j, 32) / -127.0f;
    max_abs = std::max(max_abs, std::fabs(scale[j]));
  }
  store_u16(b + IQ4_XS::kD, fp32_to_fp16(max_abs / 31.0f));
  const float d = load_f16(b + IQ4_XS::kD);
  uint16_t scales_h = 0;
  std::memset(b + IQ4_XS::kScalesL, 0, 4);
  for (int j = 0; j < 8; ++j) {
    const int ls = (d > 0.0f ? std::clamp(round_even(scale[j] / d), -32, 31) : 0) + 32;
    b[IQ4_XS::kScalesL + j / 2] |= static_cast<uint8_t>((ls & 0xF) << (4 * (j % 2)));
    scales_h = static_cast<uint16_t>(scales_h | ((ls >> 4) << (2 * j)));
    const float dl = d * static_cast<float>(ls - 32);
    quant_table32(x + 32 * j, kIQ4NLValues, dl, b + IQ4_XS::kQs + 16 * j);
  }
  store_u16(b + IQ4_XS::kScalesH, scales_h);
}

double dot_iq4_xs(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += IQ4_XS::kBytes, a += Q8_K::kBytes) {
    int64_t isum = 0;
    for (int j = 0; j < 8; ++j) {
      const int dot =
          dot_table32(w + IQ4_XS::kQs + 16 * j, kIQ4NLValues, a + Q8_K::kQs + 32 * j);
      isum += static_cast<int64_t>(scale_iq4_xs(j, w) - 32) * dot;
    }
    sum += static_cast<double>(load_f16(w + IQ4_XS::kD)) * load_f32(a + Q8_K::kD) *
           static_cast<double>(isum);
  }
  return sum;
}

constexpr auto kDequantize = &dequantize_blocks<256, detail::IQ4_XS::kBytes, dequant_iq4_xs>;
constexpr auto kQuantize = &quantize_blocks<256, detail::IQ4_XS::kBytes, quant_iq4_xs>;
constexpr auto kDot = &dot_blocks<256, dot_iq4_xs>;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kIQ4_XSKernels
#include "kernels/types/unit-inl.h"
