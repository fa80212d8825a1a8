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

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
inline void UnpackQ6_KAvx512(const uint8_t* row, int64_t nb, uint8_t* u, float* mul, float* add) {
  const __m512i nib = _mm512_set1_epi8(0x0F);
  const __m512i b45 = _mm512_set1_epi8(0x30);
  // Per 256-bit half: elements l (qh bits 0-1) and l+32 (bits 2-3) for the low nibbles,
  // l+64 (bits 4-5) and l+96 (bits 6-7) for the high nibbles.
  const __m512i shl_lo = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
  const __m512i shr_hi = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * detail::Q6_K::kBytes;
    const __m512 d = _mm512_set1_ps(LoadF16(blk + detail::Q6_K::kD));
    const __m512i sc = _mm512_cvtepi8_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + detail::Q6_K::kScales)));
    _mm512_storeu_ps(mul + 16 * b, _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc)));
    _mm512_storeu_ps(add + 16 * b, _mm512_setzero_ps());
    uint8_t* o = u + detail::kQK_K * b;
    for (int half = 0; half < 2; ++half) {
      const __m512i ql = _mm512_loadu_si512(blk + detail::Q6_K::kQl + 64 * half);
      const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(blk + detail::Q6_K::kQh + 32 * half)));
      const __m512i h0 = _mm512_and_si512(_mm512_sllv_epi16(qh, shl_lo), b45);
      const __m512i h1 = _mm512_and_si512(_mm512_srlv_epi16(qh, shr_hi), b45);
      _mm512_storeu_si512(o + 128 * half, _mm512_or_si512(_mm512_and_si512(ql, nib), h0));
      _mm512_storeu_si512(o + 128 * half + 64,
                          _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), nib), h1));
    }
  }
}
#endif

inline void UnpackQ6_K(const uint8_t* row, int64_t nb, uint8_t* u, float* mul, float* add) {
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * detail::Q6_K::kBytes;
    const float d = LoadF16(blk + detail::Q6_K::kD);
    for (int j = 0; j < 16; ++j) {
      mul[16 * b + j] = d * static_cast<float>(static_cast<int8_t>(blk[detail::Q6_K::kScales + j]));
      add[16 * b + j] = 0.0f;
    }
    uint8_t* o = u + detail::kQK_K * b;
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = blk + detail::Q6_K::kQl + 64 * half;
      const uint8_t* qh = blk + detail::Q6_K::kQh + 32 * half;
      uint8_t* out = o + 128 * half;
#if HWY_TARGET != HWY_SCALAR
      const D8 d8;
      const auto nib = hn::Set(d8, 0x0F), bits45 = hn::Set(d8, 0x30);
      for (int l = 0; l < 32; l += 16) {
        const auto l0 = hn::LoadU(d8, ql + l), l1 = hn::LoadU(d8, ql + 32 + l);
        const auto h = hn::LoadU(d8, qh + l);
        hn::StoreU(hn::Or(hn::And(l0, nib), hn::ShiftLeft<4>(hn::And(h, hn::Set(d8, 3)))), d8,
                   out + l);
        hn::StoreU(hn::Or(hn::And(l1, nib), hn::And(hn::ShiftLeft<2>(h), bits45)), d8,
                   out + 32 + l);
        hn::StoreU(hn::Or(hn::ShiftRight<4>(l0), hn::And(h, bits45)), d8, out + 64 + l);
        hn::StoreU(hn::Or(hn::ShiftRight<4>(l1), hn::And(hn::ShiftRight<2>(h), bits45)), d8,
                   out + 96 + l);
      }
#else
      for (int l = 0; l < 32; ++l) {
        out[l] = static_cast<uint8_t>((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4));
        out[l + 32] = static_cast<uint8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4));
        out[l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
        out[l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
      }
#endif
    }
  }
}

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
using namespace detail;  // NOLINT(google-build-using-namespace): block layouts
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

// The six-bit values (0..63) of a Q6_K super-block, in element order. Each 128-element half
// uses 64 bytes of ql and 32 of qh: element l (< 32) is the low nibble of ql[l] with bits 0-1
// of qh[l], l+32 the low nibble of ql[l+32] with bits 2-3, l+64 the high nibble of ql[l] with
// bits 4-5, l+96 the high nibble of ql[l+32] with bits 6-7.
void unpack_q6(const uint8_t* b, int* q) {
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = b + Q6_K::kQl + 64 * half;
    const uint8_t* qh = b + Q6_K::kQh + 32 * half;
    int* out = q + 128 * half;
    for (int l = 0; l < 32; ++l) {
      out[l] = (ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4);
      out[l + 32] = (ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4);
      out[l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
      out[l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
    }
  }
}

void dequant_q6_k(const uint8_t* b, float* y) {
  const float d = load_f16(b + Q6_K::kD);
  int q[kQK_K];
  unpack_q6(b, q);
  for (int e = 0; e < kQK_K; ++e) {
    const int sc = static_cast<int8_t>(b[Q6_K::kScales + e / 16]);
    y[e] = d * static_cast<float>(sc) * static_cast<float>(q[e] - 32);
  }
}

void quant_q6_k(const float* x, uint8_t* b) {
  float scale[16];
  float max_abs = 0.0f;
  for (int j = 0; j < 16; ++j) {
    scale[j] = signed_absmax(x + 16 * j, 16) / -32.0f;
    max_abs = std::max(max_abs, std::fabs(scale[j]));
  }
  store_u16(b + Q6_K::kD, fp32_to_fp16(max_abs / 127.0f));
  const float d = load_f16(b + Q6_K::kD);
  int q[kQK_K];
  for (int j = 0; j < 16; ++j) {
    const int sc = d > 0.0f ? std::clamp(round_even(scale[j] / d), -127, 127) : 0;
    b[Q6_K::kScales + j] = static_cast<uint8_t>(static_cast<int8_t>(sc));
    const float eff = d * static_cast<float>(sc);
    for (int l = 0; l < 16; ++l) {
      q[16 * j + l] = eff != 0.0f ? std::clamp(round_even(x[16 * j + l] / eff) + 32, 0, 63) : 32;
    }
  }
  for (int half = 0; half < 2; ++half) {
    uint8_t* ql = b + Q6_K::kQl + 64 * half;
    uint8_t* qh = b + Q6_K::kQh + 32 * half;
    const int* in = q + 128 * half;
    for (int l = 0; l < 32; ++l) {
      const int q1 = in[l], q2 = in[l + 32], q3 = in[l + 64], q4 = in[l + 96];
      ql[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
      ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
      qh[l] =
          static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
    }
  }
}

double dot_q6_k(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += Q6_K::kBytes, a += Q8_K::kBytes) {
    int q[kQK_K];
    unpack_q6(w, q);
    int64_t isum = 0;
    for (int j = 0; j < 16; ++j) {
      int dot = 0;
      for (int l = 0; l < 16; ++l) dot += (q[16 * j + l] - 32) * act_q(a, Q8_K::kQs, 16 * j + l);
      isum += static_cast<int64_t>(static_cast<int8_t>(w[Q6_K::kScales + j])) * dot;
    }
    sum += static_cast<double>(load_f16(w + Q6_K::kD)) * load_f32(a + Q8_K::kD) *
           static_cast<double>(isum);
  }
  return sum;
}

constexpr auto kDequantize = &dequantize_blocks<256, detail::Q6_K::kBytes, dequant_q6_k>;
constexpr auto kQuantize = &quantize_blocks<256, detail::Q6_K::kBytes, quant_q6_k>;
constexpr auto kDot = &dot_blocks<256, dot_q6_k>;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kQ6_KKernels
#include "kernels/types/unit-inl.h"
