// Q4_0: blocks of 32 weights, an f16 scale d and 16 bytes of nibbles (detail::Q4_0); value
// (q - 8) * d. Activations: Q8_0. Decode: the VNNI kernel on AVX3_DL (matmul_decode-inl.h), the
// 256-bit blocks-of-32 kernel on AVX2 and AVX3, tiles of 4 tokens in the token-quad kernels
// (matmul_decode_quad-inl.h); prefill: the int8 token-lane tiles.
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

inline void UnpackQ4_0(const uint8_t* row, int64_t nb, uint8_t* u, float* mul, float* add) {
#if HWY_TARGET == HWY_AVX3_DL
  // Two blocks per step: [lo0 | hi0 | lo1 | hi1], 16 bytes each, is element order.
  const __m512i pick = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
  const __m256i nib = _mm256_set1_epi8(0x0F);
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    const uint8_t* blk = row + b * detail::Q4_0::kBytes;
    const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
    const __m128i q1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 20));
    const __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(q0), q1, 1);
    const __m256i lo = _mm256_and_si256(q, nib);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), nib);
    const __m512i out =
        _mm512_permutex2var_epi64(_mm512_castsi256_si512(lo), pick, _mm512_castsi256_si512(hi));
    _mm512_storeu_si512(u + 32 * b, out);
    mul[b] = LoadF16(blk);
    mul[b + 1] = LoadF16(blk + 18);
    add[b] = 0.0f;
    add[b + 1] = 0.0f;
  }
#else
  int64_t b = 0;
#endif
  for (; b < nb; ++b) {
    const uint8_t* blk = row + b * detail::Q4_0::kBytes;
    SplitNibbles(blk + detail::Q4_0::kQs, u + 32 * b);
    mul[b] = LoadF16(blk + detail::Q4_0::kD);
    add[b] = 0.0f;
  }
}

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
  static constexpr bool kDecodeQuad = true;
  static GemvDecodeFn PickDecodeQuad(int r) { return tova::kernels::HWY_NAMESPACE::PickDecodeQuad<GgmlType::kQ4_0>(r); }
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
using namespace detail;  // NOLINT(google-build-using-namespace): block layouts
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

void dequant_q4_0(const uint8_t* b, float* y) {
  const float d = load_f16(b + Q4_0::kD);
  for (int j = 0; j < 16; ++j) {
    const uint8_t q = b[Q4_0::kQs + j];
    y[j] = static_cast<float>((q & 0xF) - 8) * d;
    y[j + 16] = static_cast<float>((q >> 4) - 8) * d;
  }
}

void quant_q4_0(const float* x, uint8_t* b) {
  const float d = signed_absmax(x, 32) / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_u16(b + Q4_0::kD, fp32_to_fp16(d));
  for (int j = 0; j < 16; ++j) {
    const int q0 = std::min(15, static_cast<int>(x[j] * id + 8.5f));
    const int q1 = std::min(15, static_cast<int>(x[j + 16] * id + 8.5f));
    b[Q4_0::kQs + j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

double dot_q4_0(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += Q4_0::kBytes, a += Q8_0::kBytes) {
    int isum = 0;
    for (int j = 0; j < 16; ++j) {
      const uint8_t q = w[Q4_0::kQs + j];
      isum += ((q & 0xF) - 8) * act_q(a, Q8_0::kQs, j);
      isum += ((q >> 4) - 8) * act_q(a, Q8_0::kQs, j + 16);
    }
    sum += static_cast<double>(load_f16(w + Q4_0::kD)) * load_f16(a + Q8_0::kD) * isum;
  }
  return sum;
}

constexpr auto kDequantize = &dequantize_blocks<32, detail::Q4_0::kBytes, dequant_q4_0>;
constexpr auto kQuantize = &quantize_blocks<32, detail::Q4_0::kBytes, quant_q4_0>;
constexpr auto kDot = &dot_blocks<32, dot_q4_0>;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kQ4_0Kernels
#include "kernels/types/unit-inl.h"
