// Per-target SIMD building blocks shared by quant_simd.cpp and matmul_engine-inl.h (Highway's
// "-inl.h" pattern: this file is compiled once per target into namespace HWY_NAMESPACE).
//
// Quantized weights go through one representation (see detail::UnpackInfo): each row is unpacked
// into unsigned bytes u plus a float mul/add per group of 16 or 32 elements. Dequantization,
// the matrix-vector kernels and the matrix-matrix kernels all start from it, so one unpack per
// type serves all of them and the int8 kernels are written once for every type.
//
// The int8 kernels use raw intrinsics where they pay: AVX-512 VNNI (vpdpbusd) on AVX3_DL, AVX2's
// vpmaddubsw on AVX2/AVX3; every other target gets plain loops the compiler vectorizes.

#if defined(TOVA_KERNELS_QUANT_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TOVA_KERNELS_QUANT_KERNELS_INL_H_
#undef TOVA_KERNELS_QUANT_KERNELS_INL_H_
#else
#define TOVA_KERNELS_QUANT_KERNELS_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/half.h"
#include "hwy/highway.h"
#include "kernels/quant_blocks.h"
#include "kernels/vec_array-inl.h"

#if HWY_TARGET == HWY_AVX3_DL && defined(__clang__)
// Highway's AVX3_DL target string omits avx512vnni although its CPU check requires it. clang
// ignores #pragma GCC target, and of two pushed target attributes the outer one wins, so push
// Highway's string with avx512vnni added in place of HWY_BEFORE_NAMESPACE (popped by
// HWY_AFTER_NAMESPACE as usual).
#pragma clang attribute push(__attribute__((target(HWY_TARGET_STR ",avx512vnni"))), \
                             apply_to = function)
#else
HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL
// Highway's AVX3_DL target string omits avx512vnni although its CPU check requires it.
#pragma GCC target("avx512vnni")
#endif
#endif
namespace tova::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
inline float F16ToF32(uint16_t h) { return _cvtsh_ss(h); }
inline uint16_t F32ToF16(float f) { return static_cast<uint16_t>(_cvtss_sh(f, 0)); }
#else
inline float F16ToF32(uint16_t h) { return fp16_to_fp32(h); }
inline uint16_t F32ToF16(float f) { return fp32_to_fp16(f); }
#endif
inline float LoadF16(const uint8_t* p) { return F16ToF32(detail::load_u16(p)); }

inline int64_t PadGroups(int64_t n_group) { return (n_group + 15) / 16 * 16; }

// ------------------------------------------------------------------------------------------
// Unpacking weight rows: u[k] in 0..255, mul[g], add[g] (see detail::UnpackInfo).

#if HWY_TARGET != HWY_SCALAR
// 16-byte vectors: every SIMD target has them, and unpacking is a few ops per 16 bytes.
using D8 = hn::Full128<uint8_t>;

// Low and high nibbles of 16 bytes to o[0..15] and o[16..31].
HWY_INLINE void SplitNibbles(const uint8_t* qs, uint8_t* o) {
  const D8 d8;
  const auto q = hn::LoadU(d8, qs);
  hn::StoreU(hn::And(q, hn::Set(d8, 0x0F)), d8, o);
  hn::StoreU(hn::ShiftRight<4>(q), d8, o + 16);
}

// 0x10 in byte j where bit j of the 16 bits at `bits` is set.
HWY_INLINE hn::Vec<D8> FifthBits(const uint8_t* bits) {
  const D8 d8;
  alignas(16) static constexpr uint8_t kSpread[16] = {0, 0, 0, 0, 0, 0, 0, 0,
                                                      1, 1, 1, 1, 1, 1, 1, 1};
  alignas(16) static constexpr uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128,
                                                   1, 2, 4, 8, 16, 32, 64, 128};
  uint16_t b16;
  std::memcpy(&b16, bits, 2);
  const auto v = hn::TableLookupBytes(hn::BitCast(d8, hn::Set(hn::Full128<uint16_t>(), b16)),
                                      hn::Load(d8, kSpread));
  return hn::IfThenElseZero(hn::TestBit(v, hn::Load(d8, kBit)), hn::Set(d8, 0x10));
}

// Q5_0 / Q5_1 block quants to o[0..31].
HWY_INLINE void UnpackQ5(const uint8_t* blk, int off_qh, int off_qs, uint8_t* o) {
  const D8 d8;
  const auto q = hn::LoadU(d8, blk + off_qs);
  hn::StoreU(hn::Or(hn::And(q, hn::Set(d8, 0x0F)), FifthBits(blk + off_qh)), d8, o);
  hn::StoreU(hn::Or(hn::ShiftRight<4>(q), FifthBits(blk + off_qh + 2)), d8, o + 16);
}
#else
HWY_INLINE void SplitNibbles(const uint8_t* qs, uint8_t* o) {
  for (int j = 0; j < 16; ++j) {
    o[j] = qs[j] & 0xF;
    o[j + 16] = qs[j] >> 4;
  }
}

HWY_INLINE void UnpackQ5(const uint8_t* blk, int off_qh, int off_qs, uint8_t* o) {
  const uint32_t qh = detail::load_u32(blk + off_qh);
  const uint8_t* qs = blk + off_qs;
  for (int j = 0; j < 16; ++j) {
    o[j] = static_cast<uint8_t>((qs[j] & 0xF) | (((qh >> j) & 1u) << 4));
    o[j + 16] = static_cast<uint8_t>((qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4));
  }
}
#endif

// Q8_0 / Q8_1: the signed bytes with their sign bit flipped (q + 128).
inline void UnpackQ8(const uint8_t* row, int64_t nb, int block_bytes, int off_qs, uint8_t* u,
                     float* mul, float* add) {
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * block_bytes;
    const uint8_t* qs = blk + off_qs;
    uint8_t* o = u + 32 * b;
    for (int j = 0; j < 32; ++j) o[j] = qs[j] ^ 0x80;
    mul[b] = LoadF16(blk);
    add[b] = 0.0f;
  }
}

// The eight 6-bit scales and mins of a Q4_K / Q5_K super-block, four at a time from 32-bit
// words of the 12 packed bytes (the layout scale_min_k4 reads one at a time).
inline void ScalesMinsK4(const uint8_t* q, uint8_t* sc, uint8_t* m) {
  const uint32_t w0 = detail::load_u32(q), w1 = detail::load_u32(q + 4);
  const uint32_t w2 = detail::load_u32(q + 8);
  const uint32_t lo6 = 0x3F3F3F3Fu, lo4 = 0x0F0F0F0Fu, lo2 = 0x03030303u;
  const uint32_t s[2] = {w0 & lo6, (w2 & lo4) | (((w0 >> 6) & lo2) << 4)};
  const uint32_t n[2] = {w1 & lo6, ((w2 >> 4) & lo4) | (((w1 >> 6) & lo2) << 4)};
  std::memcpy(sc, s, 8);
  std::memcpy(m, n, 8);
}

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// AVX-512 versions of the k-quant unpacks: decode is bound by them (one pass per token), so
// they work on 64 bytes at a time and convert the sub-block scales 16 at a time.

// Q4_K / Q5_K super-blocks (qh_off < 0 for Q4_K).
inline void UnpackQKAvx512(const uint8_t* row, int64_t nb, int bytes, int qs_off, int qh_off,
                           uint8_t* u, float* mul, float* add) {
  const __m512i nib = _mm512_set1_epi8(0x0F);
  const __m512i x10 = _mm512_set1_epi8(0x10);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * bytes;
    uint8_t sm[16];  // 8 scales then 8 mins
    ScalesMinsK4(blk + detail::Q4_K::kScales, sm, sm + 8);
    // [d x8, -dmin x8] * [scales, mins]: -(dmin * m) == (-dmin) * m exactly.
    const __m512 dd = _mm512_insertf32x8(_mm512_set1_ps(LoadF16(blk + detail::Q4_K::kD)),
                                         _mm256_set1_ps(-LoadF16(blk + detail::Q4_K::kDmin)), 1);
    const __m128i sm8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(sm));
    const __m512 v = _mm512_mul_ps(dd, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(sm8)));
    _mm256_storeu_ps(mul + 8 * b, _mm512_castps512_ps256(v));
    _mm256_storeu_ps(add + 8 * b, _mm512_extractf32x8_ps(v, 1));
    const uint8_t* qs = blk + qs_off;
    uint8_t* o = u + detail::kQK_K * b;
    for (int i = 0; i < 4; ++i) {
      // [low nibbles | high nibbles] of 32 bytes = elements 64i .. 64i+63 in order.
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * i));
      __m512i x = _mm512_and_si512(
          _mm512_inserti64x4(_mm512_castsi256_si512(q), _mm256_srli_epi16(q, 4), 1), nib);
      if (qh_off >= 0) {
        const __m512i h = _mm512_broadcast_i64x4(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + qh_off)));
        const __m512i bit =
            _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << (2 * i))),
                               _mm256_set1_epi8(static_cast<char>(2 << (2 * i))), 1);
        x = _mm512_or_si512(x, _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(h, bit), x10));
      }
      _mm512_storeu_si512(o + 64 * i, x);
    }
  }
}

#endif

// Q4_K / Q5_K: add = -(dmin * m) so that u * mul + add is bit-identical to the reference's
// d1 * q - m1.
inline void UnpackQK(const uint8_t* row, int64_t nb, bool five_bit, uint8_t* u, float* mul,
                     float* add) {
  const int bytes = five_bit ? detail::Q5_K::kBytes : detail::Q4_K::kBytes;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * bytes;
    const uint8_t* qs = blk + (five_bit ? detail::Q5_K::kQs : detail::Q4_K::kQs);
    const float d = LoadF16(blk + detail::Q4_K::kD);
    const float dmin = LoadF16(blk + detail::Q4_K::kDmin);
    uint8_t sc[8], m[8];
    ScalesMinsK4(blk + detail::Q4_K::kScales, sc, m);
    for (int j = 0; j < 8; ++j) {
      mul[8 * b + j] = d * static_cast<float>(sc[j]);
      add[8 * b + j] = -(dmin * static_cast<float>(m[j]));
    }
    uint8_t* o = u + detail::kQK_K * b;
#if HWY_TARGET != HWY_SCALAR
    const D8 d8;
    const auto nib = hn::Set(d8, 0x0F);
    for (int i = 0; i < 4; ++i) {
      for (int l = 0; l < 32; l += 16) {
        const auto q = hn::LoadU(d8, qs + 32 * i + l);
        auto lo = hn::And(q, nib);
        auto hi = hn::ShiftRight<4>(q);
        if (five_bit) {
          const auto h = hn::LoadU(d8, blk + detail::Q5_K::kQh + l);
          const auto x10 = hn::Set(d8, 0x10);
          lo = hn::Or(lo, hn::IfThenElseZero(hn::TestBit(h, hn::Set(d8, 1 << (2 * i))), x10));
          hi = hn::Or(hi, hn::IfThenElseZero(hn::TestBit(h, hn::Set(d8, 2 << (2 * i))), x10));
        }
        hn::StoreU(lo, d8, o + 64 * i + l);
        hn::StoreU(hi, d8, o + 64 * i + 32 + l);
      }
    }
#else
    const uint8_t* qh = five_bit ? blk + detail::Q5_K::kQh : nullptr;
    for (int i = 0; i < 4; ++i) {
      for (int l = 0; l < 32; ++l) {
        uint8_t lo = qs[32 * i + l] & 0xF;
        uint8_t hi = qs[32 * i + l] >> 4;
        if (qh != nullptr) {
          lo |= static_cast<uint8_t>(((qh[l] >> (2 * i)) & 1) << 4);
          hi |= static_cast<uint8_t>(((qh[l] >> (2 * i + 1)) & 1) << 4);
        }
        o[64 * i + l] = lo;
        o[64 * i + 32 + l] = hi;
      }
    }
#endif
  }
}

// ---- Q2_K, Q3_K: sub-blocks of 16; IQ4_NL, IQ4_XS, MXFP4: 4-bit codes through a table ----

// Q2_K: u = the two-bit q, mul = d * sc, add = -(dmin * m) (as Q4_K, bit-exact with the
// reference's dl * q - ml). Q3_K: u = the three-bit q (offset 4), mul = d * (sc - 32).
template <bool kQ3>
inline void UnpackQ23_K(const uint8_t* row, int64_t nb, uint8_t* u, float* mul, float* add) {
  using Blk = std::conditional_t<kQ3, detail::Q3_K, detail::Q2_K>;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * Blk::kBytes;
    const float d = LoadF16(blk + Blk::kD);
    for (int j = 0; j < 16; ++j) {
      if constexpr (kQ3) {
        mul[16 * b + j] =
            d * static_cast<float>(detail::scale_q3_k(j, blk + detail::Q3_K::kScales) - 32);
        add[16 * b + j] = 0.0f;
      } else {
        const int sc = blk[detail::Q2_K::kScales + j];
        mul[16 * b + j] = d * static_cast<float>(sc & 0xF);
        add[16 * b + j] = -(LoadF16(blk + detail::Q2_K::kDmin) * static_cast<float>(sc >> 4));
      }
    }
    uint8_t* o = u + detail::kQK_K * b;
#if HWY_TARGET != HWY_SCALAR
    const D8 d8;
    const auto three = hn::Set(d8, 3);
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < 32; l += 16) {
        const auto q = hn::LoadU(d8, blk + Blk::kQs + 32 * h + l);
        VecArray<hn::Vec<D8>, 4> v = {hn::And(q, three), hn::And(hn::ShiftRight<2>(q), three),
                                      hn::And(hn::ShiftRight<4>(q), three), hn::ShiftRight<6>(q)};
        if constexpr (kQ3) {
          const auto hm = hn::LoadU(d8, blk + detail::Q3_K::kHmask + l);
          for (int j = 0; j < 4; ++j) {
            const auto bit = hn::Set(d8, static_cast<uint8_t>(1u << (4 * h + j)));
            v[j] = hn::Or(v[j], hn::IfThenElseZero(hn::TestBit(hm, bit), hn::Set(d8, 4)));
          }
        }
        for (int j = 0; j < 4; ++j) hn::StoreU(v[j], d8, o + 128 * h + 32 * j + l);
      }
    }
#else
    for (int e = 0; e < detail::kQK_K; ++e) {
      const int h = e / 128, j = (e % 128) / 32, l = e % 32;
      int q = (blk[Blk::kQs + 32 * h + l] >> (2 * j)) & 3;
      if constexpr (kQ3) q |= ((blk[detail::Q3_K::kHmask + l] >> (4 * h + j)) & 1) << 2;
      o[e] = static_cast<uint8_t>(q);
    }
#endif
  }
}

// The unsigned bytes (level + offset) of the 4-bit codes of the table types.
struct alignas(16) CodeTable {
  uint8_t v[16];
};
inline constexpr CodeTable kIQ4Codes = [] {
  CodeTable t{};
  for (int i = 0; i < 16; ++i) t.v[i] = static_cast<uint8_t>(detail::kIQ4NLValues[i] + 128);
  return t;
}();
inline constexpr CodeTable kMXFP4Codes = [] {
  CodeTable t{};
  for (int i = 0; i < 16; ++i) t.v[i] = static_cast<uint8_t>(detail::kMXFP4Values[i] + 12);
  return t;
}();

// 32 elements of 4-bit codes (Q4_0's nibble order) through `table` to o[0..31].
HWY_INLINE void UnpackCodes32(const uint8_t* qs, const CodeTable& table, uint8_t* o) {
#if HWY_TARGET != HWY_SCALAR
  const D8 d8;
  const auto t = hn::Load(d8, table.v);
  const auto q = hn::LoadU(d8, qs);
  hn::StoreU(hn::TableLookupBytes(t, hn::And(q, hn::Set(d8, 0x0F))), d8, o);
  hn::StoreU(hn::TableLookupBytes(t, hn::ShiftRight<4>(q)), d8, o + 16);
#else
  for (int j = 0; j < 16; ++j) {
    o[j] = table.v[qs[j] & 0xF];
    o[j + 16] = table.v[qs[j] >> 4];
  }
#endif
}

// ------------------------------------------------------------------------------------------
// Activation quantization, rounding exactly as llama.cpp does on x86: its SIMD
// quantize_row_q8_0/q8_1 (inverse scale 127/amax, round half to even; the golden logits were made
// with those) and its reference quantize_row_q8_K.

template <class DF>
HWY_INLINE float AbsMax(DF df, const float* x, int n) {
  auto m = hn::Zero(df);
  for (int i = 0; i < n; i += static_cast<int>(hn::Lanes(df))) {
    m = hn::Max(m, hn::Abs(hn::LoadU(df, x + i)));
  }
  return hn::GetLane(hn::MaxOfLanes(df, m));
}

// Q8_0 (with_sum = false) or Q8_1 blocks of 32.
inline void QuantizeQ8Blocks(const float* x, int64_t nb, bool with_sum, uint8_t* out) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(di)> d8;
  const int lanes = static_cast<int>(hn::Lanes(df));
  const int bytes = with_sum ? detail::Q8_1::kBytes : detail::Q8_0::kBytes;
  const int off_qs = with_sum ? detail::Q8_1::kQs : detail::Q8_0::kQs;
  for (int64_t b = 0; b < nb; ++b) {
    const float* xb = x + 32 * b;
    uint8_t* blk = out + b * bytes;
    const float amax = AbsMax(df, xb, 32);
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    const auto vid = hn::Set(df, id);
    auto vsum = hn::Zero(di);
    for (int i = 0; i < 32; i += lanes) {
      const auto q = hn::ConvertTo(di, hn::Round(hn::Mul(hn::LoadU(df, xb + i), vid)));
      vsum = hn::Add(vsum, q);
      hn::StoreU(hn::DemoteTo(d8, q), d8, reinterpret_cast<int8_t*>(blk + off_qs + i));
    }
    detail::store_u16(blk, F32ToF16(d));
    if (with_sum) {
      const int sum = hn::GetLane(hn::SumOfLanes(di, vsum));
      detail::store_u16(blk + detail::Q8_1::kS, F32ToF16(static_cast<float>(sum) * d));
    }
  }
}

inline void QuantizeQ8_K(const float* x, int64_t nb, uint8_t* out) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(di)> d8;
  const int lanes = static_cast<int>(hn::Lanes(df));
  for (int64_t b = 0; b < nb; ++b) {
    const float* xb = x + detail::kQK_K * b;
    uint8_t* blk = out + b * detail::Q8_K::kBytes;
    const float amax = AbsMax(df, xb, detail::kQK_K);
    if (amax == 0.0f) {
      std::memset(blk, 0, detail::Q8_K::kBytes);
      continue;
    }
    // The first element of largest magnitude, with its sign (the reference's scan order).
    float mx = 0.0f;
    for (int i = 0; i < detail::kQK_K; i += lanes) {
      const auto v = hn::LoadU(df, xb + i);
      const intptr_t pos = hn::FindFirstTrue(df, hn::Eq(hn::Abs(v), hn::Set(df, amax)));
      if (pos >= 0) {
        mx = xb[i + pos];
        break;
      }
    }
    const float iscale = -127.0f / mx;
    const auto vis = hn::Set(df, iscale);
    int8_t* qs = reinterpret_cast<int8_t*>(blk + detail::Q8_K::kQs);
    for (int i = 0; i < detail::kQK_K; i += lanes) {
      auto q = hn::ConvertTo(di, hn::Round(hn::Mul(vis, hn::LoadU(df, xb + i))));
      q = hn::Min(q, hn::Set(di, 127));
      hn::StoreU(hn::DemoteTo(d8, q), d8, qs + i);
    }
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += qs[16 * g + l];
      detail::store_i16(blk + detail::Q8_K::kBsums + 2 * g, static_cast<int16_t>(sum));
    }
    detail::store_f32(blk + detail::Q8_K::kD, 1.0f / iscale);
  }
}

// Converts n floats into the activation format `act_type` (ggml block layout).
inline void QuantizeActs(GgmlType act_type, const float* x, int64_t n, uint8_t* out) {
  switch (act_type) {
    case GgmlType::kQ8_0:
      return QuantizeQ8Blocks(x, n / 32, false, out);
    case GgmlType::kQ8_1:
      return QuantizeQ8Blocks(x, n / 32, true, out);
    case GgmlType::kQ8_K:
      return QuantizeQ8_K(x, n / 256, out);
    case GgmlType::kF16: {
      int64_t i = 0;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
      // With F16C; Highway's emulation on older targets truncates instead of rounding.
      const hn::ScalableTag<float> df;
      const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
      const hn::Rebind<hwy::float16_t, decltype(df)> dh;
      auto* o = reinterpret_cast<hwy::float16_t*>(out);
      for (; i + lanes <= n; i += lanes) {
        hn::StoreU(hn::DemoteTo(dh, hn::LoadU(df, x + i)), dh, o + i);
      }
#endif
      for (; i < n; ++i) detail::store_u16(out + 2 * i, F32ToF16(x[i]));
      return;
    }
    case GgmlType::kBF16:
      for (int64_t i = 0; i < n; ++i) detail::store_u16(out + 2 * i, fp32_to_bf16(x[i]));
      return;
    default:
      std::memcpy(out, x, static_cast<size_t>(n) * sizeof(float));
      return;
  }
}

// ------------------------------------------------------------------------------------------
// Activation rows for the int8 kernels, from ggml activation blocks (see detail::ActBuffer).
// d and sa get n / group entries; the caller zero-pads them to PadGroups.
inline void ActRowFromBlocks(GgmlType act_type, int group, const uint8_t* blocks, int64_t n,
                             int8_t* qs, float* d, float* sa) {
  if (act_type == GgmlType::kQ8_K) {
    for (int64_t b = 0; b < n / detail::kQK_K; ++b) {
      const uint8_t* blk = blocks + b * detail::Q8_K::kBytes;
      std::memcpy(qs + detail::kQK_K * b, blk + detail::Q8_K::kQs, detail::kQK_K);
      const float db = detail::load_f32(blk + detail::Q8_K::kD);
      int16_t bsums[16];
      std::memcpy(bsums, blk + detail::Q8_K::kBsums, sizeof(bsums));
      const int per = detail::kQK_K / group;
      for (int g = 0; g < per; ++g) {
        const int sum = group == 16 ? bsums[g] : bsums[2 * g] + bsums[2 * g + 1];
        d[per * b + g] = db;
        sa[per * b + g] = db * static_cast<float>(sum);
      }
    }
    return;
  }
  const bool q8_1 = act_type == GgmlType::kQ8_1;
  const int bytes = q8_1 ? detail::Q8_1::kBytes : detail::Q8_0::kBytes;
  const int off_qs = q8_1 ? detail::Q8_1::kQs : detail::Q8_0::kQs;
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* blk = blocks + b * bytes;
    std::memcpy(qs + 32 * b, blk + off_qs, 32);
    const float db = LoadF16(blk);
    d[b] = db;
    if (q8_1) {
      sa[b] = LoadF16(blk + detail::Q8_1::kS);
    } else {
      int sum = 0;
      for (int j = 0; j < 32; ++j) sum += static_cast<int8_t>(blk[off_qs + j]);
      sa[b] = db * static_cast<float>(sum);
    }
  }
}

// ------------------------------------------------------------------------------------------
// Int8 matrix-vector kernels: R weight rows x T activation rows.

struct WRow {
  const uint8_t* u;
  const float* mul;
  const float* add;
};
struct ARow {
  const int8_t* qs;
  const float* d;
  const float* sa;
};

// sum_g (add_g - offset * mul_g) * sa_g over zero-padded groups (a multiple of 16).
inline float BiasDot(const WRow& w, const ARow& a, float offset, int64_t n_group_pad) {
  const hn::ScalableTag<float> df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  auto acc = hn::Zero(df);
  const auto voff = hn::Set(df, offset);
  for (int64_t g = 0; g < n_group_pad; g += lanes) {
    const auto bias = hn::NegMulAdd(voff, hn::LoadU(df, w.mul + g), hn::LoadU(df, w.add + g));
    acc = hn::MulAdd(bias, hn::LoadU(df, a.sa + g), acc);
  }
  return hn::GetLane(hn::SumOfLanes(df, acc));
}

#if HWY_TARGET == HWY_AVX3_DL

// Per-lane group scales for 64 elements: G=32 -> [s0 x8, s1 x8], G=16 -> [s0 x4 .. s3 x4].
template <int G>
HWY_INLINE __m512 ExpandScales(const float* p) {
  if constexpr (G == 32) {
    const __m512i idx = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m128 v = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(p)));
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(v));
  } else {
    const __m512i idx = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
    return _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(_mm_loadu_ps(p)));
  }
}

template <int G, int R, int T, bool kTail>
HWY_INLINE void GemvStep(const WRow* w, const ARow* a, int64_t k, __m512 (&acc)[R][T]) {
  const __mmask64 mask = kTail ? 0xFFFFFFFFull : ~0ull;
  __m512i av[T];
  __m512 dv[T];
  for (int t = 0; t < T; ++t) {
    av[t] = kTail ? _mm512_maskz_loadu_epi8(mask, a[t].qs + k) : _mm512_loadu_si512(a[t].qs + k);
    dv[t] = ExpandScales<G>(a[t].d + k / G);
  }
  for (int r = 0; r < R; ++r) {
    const __m512i wv =
        kTail ? _mm512_maskz_loadu_epi8(mask, w[r].u + k) : _mm512_loadu_si512(w[r].u + k);
    const __m512 mv = ExpandScales<G>(w[r].mul + k / G);
    for (int t = 0; t < T; ++t) {
      const __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv, av[t]);
      acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(mv, dv[t]), acc[r][t]);
    }
  }
}

template <int G, int R, int T>
void GemvInt8(const WRow* w, const ARow* a, int offset, int64_t n, int64_t n_group_pad,
              float* out) {
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  int64_t k = 0;
  for (; k + 64 <= n; k += 64) GemvStep<G, R, T, false>(w, a, k, acc);
  if (k < n) GemvStep<G, R, T, true>(w, a, k, acc);  // n - k == 32
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      out[r * T + t] = _mm512_reduce_add_ps(acc[r][t]) +
                       BiasDot(w[r], a[t], static_cast<float>(offset), n_group_pad);
    }
  }
}

#elif HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3

// Group scales for 32 elements: G=32 -> broadcast, G=16 -> [s0 x4, s1 x4].
template <int G>
HWY_INLINE __m256 ExpandScales(const float* p) {
  if constexpr (G == 32) {
    return _mm256_broadcast_ss(p);
  } else {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_broadcast_ss(p)),
                                _mm_broadcast_ss(p + 1), 1);
  }
}

// vpmaddubsw saturates at 2 * 255 * 127, so the offset-128 bytes of Q8_0 use the sign trick on
// the signed values instead (|w| <= 128 keeps the pair sums in range).
template <int G, int R, int T, bool kSigned>
void GemvInt8Avx2(const WRow* w, const ARow* a, int offset, int64_t n, int64_t n_group_pad,
                  float* out) {
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int64_t k = 0; k < n; k += 32) {
    __m256i av[T];
    __m256 dv[T];
    for (int t = 0; t < T; ++t) {
      av[t] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[t].qs + k));
      dv[t] = ExpandScales<G>(a[t].d + k / G);
    }
    for (int r = 0; r < R; ++r) {
      __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[r].u + k));
      const __m256 mv = ExpandScales<G>(w[r].mul + k / G);
      __m256i wabs = wv;
      if constexpr (kSigned) {
        wv = _mm256_xor_si256(wv, flip);
        wabs = _mm256_sign_epi8(wv, wv);
      }
      for (int t = 0; t < T; ++t) {
        const __m256i at = kSigned ? _mm256_sign_epi8(av[t], wv) : av[t];
        const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(wabs, at), ones);
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(mv, dv[t]), acc[r][t]);
      }
    }
  }
  // With the sign trick the dot is already of the signed values: no offset correction.
  const float bias_offset = kSigned ? 0.0f : static_cast<float>(offset);
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc[r][t]), _mm256_extractf128_ps(acc[r][t], 1));
      s = _mm_add_ps(s, _mm_movehl_ps(s, s));
      s = _mm_add_ss(s, _mm_movehdup_ps(s));
      out[r * T + t] = _mm_cvtss_f32(s) + BiasDot(w[r], a[t], bias_offset, n_group_pad);
    }
  }
}

template <int G, int R, int T>
void GemvInt8(const WRow* w, const ARow* a, int offset, int64_t n, int64_t n_group_pad,
              float* out) {
  if (offset == 128) {
    GemvInt8Avx2<G, R, T, true>(w, a, offset, n, n_group_pad, out);
  } else {
    GemvInt8Avx2<G, R, T, false>(w, a, offset, n, n_group_pad, out);
  }
}

#else  // portable: integer dot per group, the compiler vectorizes the inner loop

template <int G, int R, int T>
void GemvInt8(const WRow* w, const ARow* a, int offset, int64_t n, int64_t n_group_pad,
              float* out) {
  float acc[R][T] = {};
  for (int64_t g = 0; g < n / G; ++g) {
    for (int r = 0; r < R; ++r) {
      const uint8_t* wu = w[r].u + g * G;
      for (int t = 0; t < T; ++t) {
        const int8_t* aq = a[t].qs + g * G;
        int32_t s = 0;
        for (int l = 0; l < G; ++l) s += static_cast<int32_t>(wu[l]) * aq[l];
        acc[r][t] += w[r].mul[g] * a[t].d[g] * static_cast<float>(s);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      out[r * T + t] = acc[r][t] + BiasDot(w[r], a[t], static_cast<float>(offset), n_group_pad);
    }
  }
}

#endif

using GemvInt8Fn = void (*)(const WRow*, const ARow*, int, int64_t, int64_t, float*);

template <int G>
GemvInt8Fn PickGemvInt8(int r, int t) {
  static constexpr GemvInt8Fn kTable[4][4] = {
      {&GemvInt8<G, 1, 1>, &GemvInt8<G, 1, 2>, &GemvInt8<G, 1, 3>, &GemvInt8<G, 1, 4>},
      {&GemvInt8<G, 2, 1>, &GemvInt8<G, 2, 2>, &GemvInt8<G, 2, 3>, &GemvInt8<G, 2, 4>},
      {&GemvInt8<G, 3, 1>, &GemvInt8<G, 3, 2>, &GemvInt8<G, 3, 3>, &GemvInt8<G, 3, 4>},
      {&GemvInt8<G, 4, 1>, &GemvInt8<G, 4, 2>, &GemvInt8<G, 4, 3>, &GemvInt8<G, 4, 4>},
  };
  return kTable[r - 1][t - 1];
}

// out[r * n_act + t] = dot(w[r], a[t]) for r < n_w <= 4, t < n_act <= 4; groups of G.
template <int G>
void GemvInt8Tile(const WRow* w, int n_w, const ARow* a, int n_act, int offset, int64_t n,
                  int64_t n_group_pad, float* out) {
  PickGemvInt8<G>(n_w, n_act)(w, a, offset, n, n_group_pad, out);
}

// ------------------------------------------------------------------------------------------
// Float weights (F32, F16, BF16) times float activations.

template <GgmlType W, class DF>
HWY_INLINE hn::Vec<DF> LoadWeights(DF df, const uint8_t* row, int64_t k) {
  if constexpr (W == GgmlType::kF32) {
    return hn::LoadU(df, reinterpret_cast<const float*>(row) + k);
  } else if constexpr (W == GgmlType::kF16) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(row) + k));
  } else {
    const hn::Rebind<hwy::bfloat16_t, DF> db;
    return hn::PromoteTo(df, hn::LoadU(db, reinterpret_cast<const hwy::bfloat16_t*>(row) + k));
  }
}

template <GgmlType W>
HWY_INLINE float LoadWeight(const uint8_t* row, int64_t k) {
  if constexpr (W == GgmlType::kF32) {
    return detail::load_f32(row + 4 * k);
  } else if constexpr (W == GgmlType::kF16) {
    return F16ToF32(detail::load_u16(row + 2 * k));
  } else {
    return bf16_to_fp32(detail::load_u16(row + 2 * k));
  }
}

template <GgmlType W, int R, int T>
void GemvFloat(const uint8_t* const* rows, const float* const* x, int64_t n, float* out) {
  const hn::ScalableTag<float> df;
  using V = hn::Vec<decltype(df)>;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  VecArray2<V, R, T> acc;
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = hn::Zero(df);
  }
  int64_t k = 0;
  if constexpr (R == 1 && T == 1 && W != GgmlType::kF32) {
    // One row, one token (decode): a single accumulator chains every FMA on the one before
    // (4 cycles each on Zen 4), which held 8-lane AVX2 to 14.5 GB/s of F16 weights. Four
    // accumulators over interleaved vectors keep up with memory; the row sums in another
    // order than in a tile of several rows or tokens, as the quantized types' decode kernels
    // do (matmul.h allows it below kMatmulBatchInvariantTokens). F32 weights keep one order
    // for any tile: tests pin a sequence decoded alone to its bits in a batch on them (F32 is
    // the reference format, not one decode speed matters for).
    VecArray<V, 3> part = {hn::Zero(df), hn::Zero(df), hn::Zero(df)};
    for (; k + 4 * lanes <= n; k += 4 * lanes) {
      acc[0][0] = hn::MulAdd(LoadWeights<W>(df, rows[0], k), hn::LoadU(df, x[0] + k), acc[0][0]);
      for (int i = 0; i < 3; ++i) {
        const int64_t ki = k + (i + 1) * lanes;
        part[i] = hn::MulAdd(LoadWeights<W>(df, rows[0], ki), hn::LoadU(df, x[0] + ki), part[i]);
      }
    }
    acc[0][0] = hn::Add(hn::Add(acc[0][0], part[0]), hn::Add(part[1], part[2]));
  }
  for (; k + lanes <= n; k += lanes) {
    VecArray<V, T> xv;
    for (int t = 0; t < T; ++t) xv[t] = hn::LoadU(df, x[t] + k);
    for (int r = 0; r < R; ++r) {
      const V wv = LoadWeights<W>(df, rows[r], k);
      for (int t = 0; t < T; ++t) acc[r][t] = hn::MulAdd(wv, xv[t], acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      float s = hn::GetLane(hn::SumOfLanes(df, acc[r][t]));
      for (int64_t j = k; j < n; ++j) s += LoadWeight<W>(rows[r], j) * x[t][j];
      out[r * T + t] = s;
    }
  }
}

using GemvFloatFn = void (*)(const uint8_t* const*, const float* const*, int64_t, float*);

template <GgmlType W>
GemvFloatFn PickGemvFloatFor(int r, int t) {
  static constexpr GemvFloatFn kTable[4][4] = {
      {&GemvFloat<W, 1, 1>, &GemvFloat<W, 1, 2>, &GemvFloat<W, 1, 3>, &GemvFloat<W, 1, 4>},
      {&GemvFloat<W, 2, 1>, &GemvFloat<W, 2, 2>, &GemvFloat<W, 2, 3>, &GemvFloat<W, 2, 4>},
      {&GemvFloat<W, 3, 1>, &GemvFloat<W, 3, 2>, &GemvFloat<W, 3, 3>, &GemvFloat<W, 3, 4>},
      {&GemvFloat<W, 4, 1>, &GemvFloat<W, 4, 2>, &GemvFloat<W, 4, 3>, &GemvFloat<W, 4, 4>},
  };
  return kTable[r - 1][t - 1];
}

// out[r * n_x + t] = dot(rows[r], x[t]) for r < n_rows <= 4, t < n_x <= 4.
template <GgmlType W>
void GemvFloatTile(const uint8_t* const* rows, int n_rows, const float* const* x, int n_x,
                   int64_t n, float* out) {
  PickGemvFloatFor<W>(n_rows, n_x)(rows, x, n, out);
}

// Converts n elements of a float-type row to float32.
template <GgmlType W>
void WeightsToFloat(const uint8_t* row, int64_t n, float* out) {
  if constexpr (W == GgmlType::kF32) {
    std::memcpy(out, row, static_cast<size_t>(n) * sizeof(float));
  } else {
    const hn::ScalableTag<float> df;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
    int64_t k = 0;
    for (; k + lanes <= n; k += lanes) hn::StoreU(LoadWeights<W>(df, row, k), df, out + k);
    for (; k < n; ++k) out[k] = LoadWeight<W>(row, k);
  }
}

}  // namespace tova::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
