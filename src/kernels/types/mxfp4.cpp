// MXFP4: blocks of 32 FP4 (E2M1) codes and a shared E8M0 exponent (detail::MXFP4). Activations:
// Q8_0. Unpacked as level + 12 (the doubled levels -12..12 fit five bits). Decode: the VNNI
// kernel on AVX3_DL (Q4_0's activation layout, offset 12), GemvMXFP4Avx2 on AVX2 and AVX3;
// prefill: the int8 token-lane tiles.
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/mxfp4.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

inline void UnpackMXFP4(const uint8_t* row, int64_t nb, uint8_t* u, float* mul, float* add) {
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * detail::MXFP4::kBytes;
    UnpackCodes32(blk + detail::MXFP4::kQs, kMXFP4Codes, u + 32 * b);
    mul[b] = detail::e8m0_half(blk[detail::MXFP4::kE]);
    add[b] = 0.0f;
  }
}

struct MXFP4Type : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kMXFP4;
  static constexpr GgmlType kActType = GgmlType::kQ8_0;
  static constexpr detail::UnpackInfo kUnpack{32, 12, false, 5};
  static void Unpack(const uint8_t* row, int64_t n, uint8_t* u, float* mul, float* add) {
    UnpackMXFP4(row, n / 32, u, mul, add);
  }
#if TOVA_AVX2_DECODE_TARGET
  static constexpr bool kDecodeAvx2 = true;
  static GemvDecodeFn PickDecodeAvx2(int r, int t) {
    static constexpr GemvDecodeFn kTable[2][4] = TOVA_DECODE_AVX2_TABLE(GemvMXFP4Avx2);
    return kTable[r - 1][t - 1];
  }
#endif
#if HWY_TARGET == HWY_AVX3_DL
  static constexpr bool kDecodeVnni = true;
  static int64_t DecodeActBytesVnni(int64_t n) { return Q4_0ActBytes(n); }
  static GemvDecodeFn PickDecodeVnni(int r, int t) {
    static constexpr GemvDecodeFn kTable[4][4] = TOVA_DECODE_VNNI_TABLE(GemvMXFP4);
    return kTable[r - 1][t - 1];
  }
  static void PrepareDecodeVnni(const int8_t* qs, const float* d, int64_t n, uint8_t* out) {
    PrepareQ4_0(qs, d, n, out, 12);
  }
#endif
};
using UnitType = MXFP4Type;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using namespace detail;  // NOLINT(google-build-using-namespace): block layouts
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

void dequant_mxfp4(const uint8_t* b, float* y) {
  dequant_table32(b + MXFP4::kQs, kMXFP4Values, e8m0_half(b[MXFP4::kE]), y);
}

// MXFP4: the smallest power-of-two scale that keeps the block's largest magnitude within the
// largest FP4 value (6), then the nearest FP4 value of each element.
void quant_mxfp4(const float* x, uint8_t* b) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  int e = 0;
  if (amax > 0.0f) {
    int exp = 0;
    const float m = std::frexp(amax / 6.0f, &exp);  // amax / 6 = m * 2^exp, m in [0.5, 1)
    const int k = m == 0.5f ? exp - 1 : exp;         // 2^k >= amax / 6
    e = std::clamp(k + 127, 1, 254);
  }
  b[MXFP4::kE] = static_cast<uint8_t>(e);
  quant_table32(x, kMXFP4Values, e8m0_half(static_cast<uint8_t>(e)), b + MXFP4::kQs);
}

double dot_mxfp4(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += MXFP4::kBytes, a += Q8_0::kBytes) {
    const int isum = dot_table32(w + MXFP4::kQs, kMXFP4Values, a + Q8_0::kQs);
    sum += static_cast<double>(e8m0_half(w[MXFP4::kE])) * load_f16(a + Q8_0::kD) * isum;
  }
  return sum;
}

constexpr auto kDequantize = &dequantize_blocks<32, detail::MXFP4::kBytes, dequant_mxfp4>;
constexpr auto kQuantize = &quantize_blocks<32, detail::MXFP4::kBytes, quant_mxfp4>;
constexpr auto kDot = &dot_blocks<32, dot_mxfp4>;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kMXFP4Kernels
#include "kernels/types/unit-inl.h"
