// The register tiles of the int8 token-lane GEMM (batched decode, prompt processing), one per
// x86 target. Tokens are the vector lanes: 4 weight bytes of one row are broadcast and
// multiplied into 4 activation bytes of every token of a vector at once, so there are no
// horizontal sums. A tile is R weight rows x NT vectors of tokens over a K slice; per group of
// G elements (one scale) it forms isum = <u, a> exactly in int32 and then
//   acc += isum * (mul_g * d_g) + bias_g * sa_g      (bias_g = add_g - offset * mul_g)
// with acc at buf + r * ldb + lanes * j (see ActBuffer for the activation layout).
//
// - AVX3_DL (tuned on Zen 4): vpdpbusd, 16 tokens per zmm, 4 x 3 tiles, acc in registers.
// - AVX3 (AVX-512 without VNNI: Skylake-X, and Cascade Lake, whose VNNI Highway's AVX3 target
//   does not assume) and AVX2: vpmaddubsw + vpmaddwd, 16 or 8 tokens per vector. vpmaddubsw's
//   int16 pair sums (u * a + u' * a') are summed over several 4-element steps before one
//   vpmaddwd widens them, as many as cannot overflow int16 for the type's weight range
//   (kSteps: 8 for 4-bit weights, 4 for 5-bit, 2 for 6-bit): 2.25 instructions per vector of
//   4-byte dot products for Q4 instead of 3. Q8_0 weights (0..255 with the offset) would
//   saturate the pair sums, so they go signed: |w| times a with w's sign, each step widened
//   (|w| and w are made once per chunk of rows, so a step costs one sign op per vector).
//   Acc stays in buf (a load and a store per group) so that the int16 and int32 sums fit the
//   16 (AVX2) or 32 (AVX3) vector registers. AVX2 tiles are 4 x 2 (16 tokens), AVX3 4 x 3.
// - Other targets have no token-lane layout (matmul_engine-inl.h plans row tiles there): SSE4 and
//   older machines are not a target this project tunes for, and their row tiles are generic.
//
// Highway "-inl.h" pattern: included by matmul_engine-inl.h, which each weight type's unit
// (types/<type>.cpp) instantiates per target.

// Whether the target being compiled has the token-lane int8 layout (evaluated per target).
#ifndef TOVA_INT8_LANES_TARGET
#define TOVA_INT8_LANES_TARGET \
  (HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2)
#endif

#if defined(TOVA_KERNELS_MATMUL_GEMM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TOVA_KERNELS_MATMUL_GEMM_INL_H_
#undef TOVA_KERNELS_MATMUL_GEMM_INL_H_
#else
#define TOVA_KERNELS_MATMUL_GEMM_INL_H_
#endif

#include <cstdint>
#include <cstring>

#include "hwy/highway.h"

#if HWY_TARGET == HWY_AVX3_DL && defined(__clang__)
// See quant_kernels-inl.h: clang needs avx512vnni in the pushed target attribute itself.
#pragma clang attribute push(__attribute__((target(HWY_TARGET_STR ",avx512vnni"))), \
                             apply_to = function)
#else
HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL
#pragma GCC target("avx512vnni")
#endif
#endif
namespace tova::kernels::HWY_NAMESPACE {

#if TOVA_INT8_LANES_TARGET

// (u, w, mul, bias, activations, d, sa, strides, kn, buf, ldb, first): u the unsigned bytes of
// R rows, w their signed weights (the signed tiles only; see GemmSigned).
using GemmInt8Fn = void (*)(const uint8_t* const*, const int8_t* const*, const float* const*,
                            const float* const*, const int8_t*, const float*, const float*,
                            int64_t, int64_t, int64_t, float*, int64_t, bool);

HWY_INLINE int32_t Load4(const uint8_t* p) {
  int32_t w;
  std::memcpy(&w, p, 4);
  return w;
}

#if HWY_TARGET == HWY_AVX3_DL

constexpr int kGemmLanes = 16;  // tokens per vector
constexpr int kGemmMaxNT = 3;   // vectors of tokens per tile

template <int G, int R, int NT>
void GemmInt8Tile(const uint8_t* const* u, const int8_t* const*, const float* const* mul,
                  const float* const* bias, const int8_t* qsp, const float* dp, const float* sap,
                  int64_t qs_stride, int64_t sc_stride, int64_t kn, float* buf, int64_t ldb,
                  bool first) {
  __m512 acc[R][NT];
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < NT; ++j) {
      acc[r][j] = first ? _mm512_setzero_ps() : _mm512_load_ps(buf + r * ldb + 16 * j);
    }
  }
  for (int64_t g = 0; g < kn / G; ++g) {
    __m512i isum[R][NT];
    for (int r = 0; r < R; ++r) {
      for (int j = 0; j < NT; ++j) isum[r][j] = _mm512_setzero_si512();
    }
    for (int q = 0; q < G / 4; ++q) {
      const int64_t k = g * G + 4 * q;
      __m512i av[NT];
      for (int j = 0; j < NT; ++j) av[j] = _mm512_load_si512(qsp + j * qs_stride + k * 16);
      for (int r = 0; r < R; ++r) {
        const __m512i wb = _mm512_set1_epi32(Load4(u[r] + k));
        for (int j = 0; j < NT; ++j) isum[r][j] = _mm512_dpbusd_epi32(isum[r][j], wb, av[j]);
      }
    }
    __m512 dv[NT], sv[NT];
    for (int j = 0; j < NT; ++j) {
      dv[j] = _mm512_load_ps(dp + j * sc_stride + g * 16);
      sv[j] = _mm512_load_ps(sap + j * sc_stride + g * 16);
    }
    for (int r = 0; r < R; ++r) {
      const __m512 m = _mm512_set1_ps(mul[r][g]);
      const __m512 b = _mm512_set1_ps(bias[r][g]);
      for (int j = 0; j < NT; ++j) {
        acc[r][j] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[r][j]), _mm512_mul_ps(m, dv[j]), acc[r][j]);
        acc[r][j] = _mm512_fmadd_ps(b, sv[j], acc[r][j]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < NT; ++j) _mm512_store_ps(buf + r * ldb + 16 * j, acc[r][j]);
  }
}

// The weights' offset stays in u (vpdpbusd sums u * a in int32 without saturation).
template <class Ty>
constexpr bool GemmSigned() {
  return false;
}

template <int G>
GemmInt8Fn PickGemmFor(int r, int nt) {
  static constexpr GemmInt8Fn kTable[4][kGemmMaxNT] = {
      {&GemmInt8Tile<G, 1, 1>, &GemmInt8Tile<G, 1, 2>, &GemmInt8Tile<G, 1, 3>},
      {&GemmInt8Tile<G, 2, 1>, &GemmInt8Tile<G, 2, 2>, &GemmInt8Tile<G, 2, 3>},
      {&GemmInt8Tile<G, 3, 1>, &GemmInt8Tile<G, 3, 2>, &GemmInt8Tile<G, 3, 3>},
      {&GemmInt8Tile<G, 4, 1>, &GemmInt8Tile<G, 4, 2>, &GemmInt8Tile<G, 4, 3>},
  };
  return kTable[r - 1][nt - 1];
}

template <class Ty>
GemmInt8Fn PickGemmInt8(int r, int nt) {
  return PickGemmFor<Ty::kUnpack.group>(r, nt);
}

#else  // AVX3 or AVX2: vpmaddubsw

#if HWY_TARGET == HWY_AVX3
struct MaddubsVec {
  using I = __m512i;
  using F = __m512;
  using Sign = __mmask64;  // lanes whose weight is negative
  static constexpr int kLanes = 16;
  static I Load(const void* p) { return _mm512_load_si512(p); }
  static I Bcast(int32_t v) { return _mm512_set1_epi32(v); }
  static I Zero() { return _mm512_setzero_si512(); }
  static I Maddubs(I u, I s) { return _mm512_maddubs_epi16(u, s); }
  static I Add16(I a, I b) { return _mm512_add_epi16(a, b); }
  static I Add32(I a, I b) { return _mm512_add_epi32(a, b); }
  static I Widen(I a) { return _mm512_madd_epi16(a, _mm512_set1_epi16(1)); }
  static Sign SignOf(I w) { return _mm512_movepi8_mask(w); }
  // a with w's sign where w < 0 (where w == 0 the product with |w| is 0 either way).
  static I ApplySign(I a, Sign s) { return _mm512_mask_sub_epi8(a, s, _mm512_setzero_si512(), a); }
  static F LoadF(const float* p) { return _mm512_load_ps(p); }
  static void StoreF(float* p, F v) { _mm512_store_ps(p, v); }
  static F ZeroF() { return _mm512_setzero_ps(); }
  static F SetF(float v) { return _mm512_set1_ps(v); }
  static F Cvt(I v) { return _mm512_cvtepi32_ps(v); }
  static F Mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F MulAdd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
};
constexpr int kGemmMaxNT = 3;
#else
struct MaddubsVec {
  using I = __m256i;
  using F = __m256;
  using Sign = __m256i;  // the signed weights themselves (vpsignb)
  static constexpr int kLanes = 8;
  static I Load(const void* p) { return _mm256_load_si256(static_cast<const __m256i*>(p)); }
  static I Bcast(int32_t v) { return _mm256_set1_epi32(v); }
  static I Zero() { return _mm256_setzero_si256(); }
  static I Maddubs(I u, I s) { return _mm256_maddubs_epi16(u, s); }
  static I Add16(I a, I b) { return _mm256_add_epi16(a, b); }
  static I Add32(I a, I b) { return _mm256_add_epi32(a, b); }
  static I Widen(I a) { return _mm256_madd_epi16(a, _mm256_set1_epi16(1)); }
  static Sign SignOf(I w) { return w; }
  static I ApplySign(I a, Sign w) { return _mm256_sign_epi8(a, w); }
  static F LoadF(const float* p) { return _mm256_load_ps(p); }
  static void StoreF(float* p, F v) { _mm256_store_ps(p, v); }
  static F ZeroF() { return _mm256_setzero_ps(); }
  static F SetF(float v) { return _mm256_set1_ps(v); }
  static F Cvt(I v) { return _mm256_cvtepi32_ps(v); }
  static F Mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F MulAdd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
};
constexpr int kGemmMaxNT = 2;
#endif

constexpr int kGemmLanes = MaddubsVec::kLanes;

// kSteps 4-element steps are summed in int16 before widening; kSigned (Q8_0 / Q8_1): u holds
// |w| and w the signed weights, multiplied as |w| times a with w's sign, kSteps == 1.
template <int G, int R, int NT, int kSteps, bool kSigned>
void GemmInt8Tile(const uint8_t* const* u, const int8_t* const* w, const float* const* mul,
                  const float* const* bias, const int8_t* qsp, const float* dp, const float* sap,
                  int64_t qs_stride, int64_t sc_stride, int64_t kn, float* buf, int64_t ldb,
                  bool first) {
  using V = MaddubsVec;
  constexpr int L = V::kLanes;
  static_assert((G / 4) % kSteps == 0 && (!kSigned || kSteps == 1));
  for (int64_t g = 0; g < kn / G; ++g) {
    typename V::I isum[R][NT];
    for (int s0 = 0; s0 < G / 4; s0 += kSteps) {
      typename V::I s16[R][NT];
      for (int q = s0; q < s0 + kSteps; ++q) {
        const int64_t k = g * G + 4 * q;
        typename V::I av[NT];
        for (int j = 0; j < NT; ++j) av[j] = V::Load(qsp + j * qs_stride + k * L);
        for (int r = 0; r < R; ++r) {
          const typename V::I wb = V::Bcast(Load4(u[r] + k));
          typename V::Sign sign{};
          if constexpr (kSigned) {
            sign = V::SignOf(V::Bcast(Load4(reinterpret_cast<const uint8_t*>(w[r]) + k)));
          }
          for (int j = 0; j < NT; ++j) {
            const typename V::I p = V::Maddubs(wb, kSigned ? V::ApplySign(av[j], sign) : av[j]);
            s16[r][j] = q == s0 ? p : V::Add16(s16[r][j], p);
          }
        }
      }
      for (int r = 0; r < R; ++r) {
        for (int j = 0; j < NT; ++j) {
          const typename V::I w32 = V::Widen(s16[r][j]);
          isum[r][j] = s0 == 0 ? w32 : V::Add32(isum[r][j], w32);
        }
      }
    }
    typename V::F dv[NT], sv[NT];
    for (int j = 0; j < NT; ++j) {
      dv[j] = V::LoadF(dp + j * sc_stride + g * L);
      sv[j] = V::LoadF(sap + j * sc_stride + g * L);
    }
    for (int r = 0; r < R; ++r) {
      const typename V::F m = V::SetF(mul[r][g]);
      const typename V::F b = V::SetF(bias[r][g]);
      for (int j = 0; j < NT; ++j) {
        float* out = buf + r * ldb + L * j;
        typename V::F acc = first && g == 0 ? V::ZeroF() : V::LoadF(out);
        acc = V::MulAdd(V::Cvt(isum[r][j]), V::Mul(m, dv[j]), acc);
        V::StoreF(out, V::MulAdd(b, sv[j], acc));
      }
    }
  }
}

// The 8-bit weights (Q8_0 / Q8_1, and the IQ4 levels -127..113 with their offset of 128) take
// the signed tile.
template <class Ty>
constexpr bool GemmSigned() {
  return Ty::kUnpack.offset == 128;
}

template <int G, int kSteps, bool kSigned>
GemmInt8Fn PickGemmFor(int r, int nt) {
#if HWY_TARGET == HWY_AVX3
#define TOVA_ROW(R)                                                        \
  {&GemmInt8Tile<G, R, 1, kSteps, kSigned>, &GemmInt8Tile<G, R, 2, kSteps, kSigned>, \
   &GemmInt8Tile<G, R, 3, kSteps, kSigned>}
#else
#define TOVA_ROW(R) \
  {&GemmInt8Tile<G, R, 1, kSteps, kSigned>, &GemmInt8Tile<G, R, 2, kSteps, kSigned>}
#endif
  static constexpr GemmInt8Fn kTable[4][kGemmMaxNT] = {TOVA_ROW(1), TOVA_ROW(2), TOVA_ROW(3),
                                                       TOVA_ROW(4)};
#undef TOVA_ROW
  return kTable[r - 1][nt - 1];
}

// An int16 lane sums kSteps pairs u * a + u' * a': at most kSteps * 2 * (2^bits - 1) * 128,
// which stays below 32767 for 8 steps of 4 bits, 4 of 5 and 2 of 6 (activations in [-128, 127]);
// 4 steps of 3 bits (Q3_K, Q2_K: 7168) fill their 16-element groups.
template <class Ty>
GemmInt8Fn PickGemmInt8(int r, int nt) {
  constexpr int bits = Ty::kUnpack.bits;
  if constexpr (GemmSigned<Ty>()) {
    return PickGemmFor<32, 1, true>(r, nt);
  } else if constexpr (Ty::kUnpack.group == 16) {
    // Q6_K: 2 steps; Q3_K, Q2_K (<= 3 bits): the group's 4 steps in one
    return PickGemmFor<16, bits <= 3 ? 4 : 2, false>(r, nt);
  } else {
    return PickGemmFor<32, bits <= 4 ? 8 : (bits == 5 ? 4 : 2), false>(r, nt);
  }
}

#endif  // AVX3 / AVX2

#endif  // x86 targets with token lanes

}  // namespace tova::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
