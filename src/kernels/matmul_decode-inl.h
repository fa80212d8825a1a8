// Decode (few-token) matrix-vector kernels for Q4_0, Q8_0 and MXFP4 on AVX3_DL, reading the GGUF
// blocks directly instead of unpacking rows into scratch first: decode streams every weight
// once per token, so the work per byte decides whether it keeps up with memory.
//
// Q4_0 and Q8_0 read a group of blocks with two overlapping 64-byte loads and gather the quant
// bytes and the f16 scales with one byte permute each (vpermt2b / vpermb); the scales come out
// already repeated once per dpbusd lane, so vcvtph2ps yields the per-lane scale vector directly.
// The activations are laid out per group to match (see PrepareQ4_0 / PrepareQ8_0), including an
// int32 vector that starts each dot product at -offset * sum(a), which removes the weights'
// unsigned offset for free.
//
// A 512-bit Q6_K kernel of the same kind was dropped in session 5: AVX3_DL now takes the 256-bit
// one of matmul_decode_avx2-inl.h, which streamed Q6_K faster on Zen 4 (bench_matmul q6_k
// 5632x2048 ntok:1, quiet, alternating, 3 rounds: 1 thread 13.4-16.8 -> 16.1-24.4 GB/s,
// 2 threads 20.1-25.2 -> 23.5-31.2; ntok:8 level; TinyLlama Q6_K decode at 1 thread had been
// 0.87x llama.cpp natively against 1.25x with --simd avx2).
//
// Highway "-inl.h" pattern: included by matmul_engine-inl.h, which each weight type's unit
// (types/<type>.cpp) instantiates per target.

#if defined(TOVA_KERNELS_MATMUL_DECODE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TOVA_KERNELS_MATMUL_DECODE_INL_H_
#undef TOVA_KERNELS_MATMUL_DECODE_INL_H_
#else
#define TOVA_KERNELS_MATMUL_DECODE_INL_H_
#endif

#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/quant_blocks.h"

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

#if HWY_TARGET == HWY_AVX3_DL

// ---- Q4_0: groups of 4 blocks (72 bytes of weights, 128 elements) ----
// Activation group (256 bytes): a_lo[64] = elements 0..15 of blocks 0..3, a_hi[64] = elements
// 16..31, d[16] float (each block's scale x4), corr[16] int32 (-8 * sum(a) of block b in lane 4b).
// MXFP4 (below) shares the layout with -12 * sum(a).
constexpr int64_t kQ4_0GroupBytes = 256;

inline int64_t Q4_0ActBytes(int64_t n) { return (n + 127) / 128 * kQ4_0GroupBytes; }

// One token: qs/d are the activation row in element order (n / 32 blocks). offset: the weights'
// unsigned offset (Q4_0's 8; MXFP4's levels -12..12 enter as 0..24, offset 12).
inline void PrepareQ4_0(const int8_t* qs, const float* d, int64_t n, uint8_t* out,
                        int offset = 8) {
  const int64_t nb = n / 32;
  std::memset(out, 0, static_cast<size_t>(Q4_0ActBytes(n)));
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* g = out + (b / 4) * kQ4_0GroupBytes;
    const int j = static_cast<int>(b % 4);
    std::memcpy(g + 16 * j, qs + 32 * b, 16);
    std::memcpy(g + 64 + 16 * j, qs + 32 * b + 16, 16);
    int sum = 0;
    for (int l = 0; l < 32; ++l) sum += qs[32 * b + l];
    float* dv = reinterpret_cast<float*>(g + 128);
    int32_t* corr = reinterpret_cast<int32_t*>(g + 192);
    for (int l = 0; l < 4; ++l) dv[4 * j + l] = d[b];
    corr[4 * j] = -offset * sum;
  }
}

struct Q4_0Indices {
  __m512i qs;  // bytes of blocks 0..3's qs from (L0, L8)
  __m512i d;   // f16 d of block h / 4 into half h, from L0
};

inline Q4_0Indices MakeQ4_0Indices() {
  alignas(64) uint8_t qs[64], d[64];
  for (int b = 0; b < 4; ++b) {
    for (int i = 0; i < 16; ++i) {
      const int pos = 18 * b + 2 + i;
      qs[16 * b + i] = static_cast<uint8_t>(pos < 64 ? pos : 64 + pos - 8);
    }
  }
  for (int h = 0; h < 32; ++h) {
    const int b = (h / 4) % 4;
    d[2 * h] = static_cast<uint8_t>(18 * b);
    d[2 * h + 1] = static_cast<uint8_t>(18 * b + 1);
  }
  return {_mm512_load_si512(qs), _mm512_load_si512(d)};
}

template <int R, int T, bool kTail>
HWY_INLINE void Q4_0Step(const uint8_t* const* rows, const uint8_t* const* acts, int64_t g,
                         int64_t valid, int64_t prefetch, const Q4_0Indices& idx,
                         __m512 (&acc)[R][T]) {
  const __m512i nib = _mm512_set1_epi8(0x0F);
  __m512i alo[T], ahi[T], corr[T];
  __m512 da[T];
  for (int t = 0; t < T; ++t) {
    const uint8_t* a = acts[t] + g * kQ4_0GroupBytes;
    alo[t] = _mm512_load_si512(a);
    ahi[t] = _mm512_load_si512(a + 64);
    da[t] = _mm512_load_ps(a + 128);
    corr[t] = _mm512_load_si512(a + 192);
  }
  for (int r = 0; r < R; ++r) {
    const uint8_t* p = rows[r] + g * 72;
    if constexpr (!kTail) {
      _mm_prefetch(reinterpret_cast<const char*>(p + prefetch), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(p + prefetch + 64), _MM_HINT_T0);
    }
    __m512i l0, l8;
    if constexpr (kTail) {  // masked loads never touch bytes past the row
      l0 = _mm512_maskz_loadu_epi8((1ull << valid) - 1, p);
      l8 = _mm512_maskz_loadu_epi8((1ull << (valid - 8)) - 1, p + 8);
    } else {
      l0 = _mm512_loadu_si512(p);
      l8 = _mm512_loadu_si512(p + 8);
    }
    const __m512i q = _mm512_permutex2var_epi8(l0, idx.qs, l8);
    const __m512i lo = _mm512_and_si512(q, nib);
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), nib);
    const __m512 dw = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi8(idx.d, l0)));
    for (int t = 0; t < T; ++t) {
      __m512i s = _mm512_dpbusd_epi32(corr[t], lo, alo[t]);
      s = _mm512_dpbusd_epi32(s, hi, ahi[t]);
      acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, da[t]), acc[r][t]);
    }
  }
}

// `prefetch`: byte distance to the data the next call will read (the next rows), so the
// hardware prefetcher's ramp-up at each new row group does not stall the stream.
template <int R, int T>
void GemvQ4_0(const uint8_t* const* rows, const uint8_t* const* acts, int64_t n, int64_t prefetch,
              float* out) {
  static const Q4_0Indices kIdx = MakeQ4_0Indices();
  const Q4_0Indices idx = kIdx;
  const int64_t nb = n / 32;
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  int64_t g = 0;
  for (; 4 * g + 4 <= nb; ++g) Q4_0Step<R, T, false>(rows, acts, g, 72, prefetch, idx, acc);
  if (4 * g < nb) Q4_0Step<R, T, true>(rows, acts, g, (nb - 4 * g) * 18, 0, idx, acc);
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) out[r * T + t] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

// ---- Q8_0: pairs of blocks (68 bytes of weights, 64 elements) ----
// Activation pair (192 bytes): qs[64] in element order, d[16] float (x8 each), corr[16] int32
// (-128 * sum(a) of the two blocks in lanes 0 and 8): the weights enter vpdpbusd as q + 128.
constexpr int64_t kQ8_0PairBytes = 192;

inline int64_t Q8_0ActBytes(int64_t n) { return (n + 63) / 64 * kQ8_0PairBytes; }

inline void PrepareQ8_0(const int8_t* qs, const float* d, int64_t n, uint8_t* out) {
  const int64_t nb = n / 32;
  std::memset(out, 0, static_cast<size_t>(Q8_0ActBytes(n)));
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t* g = out + (b / 2) * kQ8_0PairBytes;
    const int j = static_cast<int>(b % 2);
    std::memcpy(g + 32 * j, qs + 32 * b, 32);
    int sum = 0;
    for (int l = 0; l < 32; ++l) sum += qs[32 * b + l];
    float* dv = reinterpret_cast<float*>(g + 64);
    int32_t* corr = reinterpret_cast<int32_t*>(g + 128);
    for (int l = 0; l < 8; ++l) dv[8 * j + l] = d[b];
    corr[8 * j] = -128 * sum;
  }
}

struct Q8_0Indices {
  __m512i qs;  // bytes of both blocks' qs from (L0, L4)
  __m512i d;   // f16 d of block h / 8 into half h, from L0
};

inline Q8_0Indices MakeQ8_0Indices() {
  alignas(64) uint8_t qs[64], d[64];
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < 32; ++i) {
      const int pos = 34 * b + 2 + i;
      qs[32 * b + i] = static_cast<uint8_t>(pos < 64 ? pos : 64 + pos - 4);
    }
  }
  for (int h = 0; h < 32; ++h) {
    const int b = (h / 8) % 2;
    d[2 * h] = static_cast<uint8_t>(34 * b);
    d[2 * h + 1] = static_cast<uint8_t>(34 * b + 1);
  }
  return {_mm512_load_si512(qs), _mm512_load_si512(d)};
}

template <int R, int T, bool kTail>
HWY_INLINE void Q8_0Step(const uint8_t* const* rows, const uint8_t* const* acts, int64_t g,
                         int64_t prefetch, const Q8_0Indices& idx, __m512 (&acc)[R][T]) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512i a[T], corr[T];
  __m512 da[T];
  for (int t = 0; t < T; ++t) {
    const uint8_t* ap = acts[t] + g * kQ8_0PairBytes;
    a[t] = _mm512_load_si512(ap);
    da[t] = _mm512_load_ps(ap + 64);
    corr[t] = _mm512_load_si512(ap + 128);
  }
  for (int r = 0; r < R; ++r) {
    const uint8_t* p = rows[r] + g * 68;
    if constexpr (!kTail) {
      _mm_prefetch(reinterpret_cast<const char*>(p + prefetch), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(p + prefetch + 64), _MM_HINT_T0);
    }
    __m512i l0, l4;
    if constexpr (kTail) {  // a single last block of 34 bytes
      l0 = _mm512_maskz_loadu_epi8((1ull << 34) - 1, p);
      l4 = _mm512_setzero_si512();
    } else {
      l0 = _mm512_loadu_si512(p);
      l4 = _mm512_loadu_si512(p + 4);
    }
    // A missing second block's bytes come out as 0 ^ 0x80 = 128, but its activation bytes and
    // scales are zero, so they add nothing.
    const __m512i q = _mm512_xor_si512(_mm512_permutex2var_epi8(l0, idx.qs, l4), flip);
    const __m512 dw = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi8(idx.d, l0)));
    for (int t = 0; t < T; ++t) {
      const __m512i s = _mm512_dpbusd_epi32(corr[t], q, a[t]);
      acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, da[t]), acc[r][t]);
    }
  }
}

template <int R, int T>
void GemvQ8_0(const uint8_t* const* rows, const uint8_t* const* acts, int64_t n, int64_t prefetch,
              float* out) {
  static const Q8_0Indices kIdx = MakeQ8_0Indices();
  const Q8_0Indices idx = kIdx;
  const int64_t nb = n / 32;
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  int64_t g = 0;
  for (; 2 * g + 2 <= nb; ++g) Q8_0Step<R, T, false>(rows, acts, g, prefetch, idx, acc);
  if (2 * g < nb) Q8_0Step<R, T, true>(rows, acts, g, 0, idx, acc);
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) out[r * T + t] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

// ---- MXFP4: groups of 4 blocks (68 bytes of weights, 128 elements) ----
// A block is one E8M0 exponent byte e and 16 bytes of 4-bit codes (element i in the low nibble
// of byte i, element i + 16 in its high nibble, as Q4_0). Two overlapping 64-byte loads (p and
// p + 4) cover the group; one vpermt2b gathers the 64 code bytes, a vpshufb per nibble half
// looks the codes up as levels + 12 (0..24, unsigned for vpdpbusd; the activations' group
// carries -12 * sum(a), as Q4_0's carries -8 * sum(a): PrepareQ4_0 with offset 12), and a
// zero-masked vpermb puts each block's exponent in the low byte of its 4 dword lanes. The
// block's scale 2^(e - 128) (e8m0_half, the halved E8M0 value that pairs with the doubled
// levels) times the activations' d is one vscalefps: d * 2^(e - 128), the same float as the
// product of the two (a power of two scales exactly; underflow rounds the same way).
// The 256-bit kernel of matmul_decode_avx2-inl.h, which AVX3_DL ran before, spent 2.4x the
// time of Q8_0 per weight byte on gpt-oss-20b's experts (nibble unpack, lookup, a madd pair
// per 32 weights, a scale gather per 8 blocks).
struct MXFP4Indices {
  __m512i qs;     // code bytes of blocks 0..3 from (L0, L4)
  __m512i e;      // exponent of block h / 4 into byte 0 of dword h, from L0 (mask kELow)
  __m512i codes;  // level + 12 of each code, in every 128-bit lane
};
constexpr __mmask64 kMXFP4ELow = 0x1111111111111111ull;

inline MXFP4Indices MakeMXFP4Indices() {
  alignas(64) uint8_t qs[64], e[64], codes[64];
  for (int b = 0; b < 4; ++b) {
    for (int i = 0; i < 16; ++i) {
      const int pos = 17 * b + 1 + i;
      qs[16 * b + i] = static_cast<uint8_t>(pos < 64 ? pos : 64 + pos - 4);
    }
  }
  for (int h = 0; h < 64; ++h) e[h] = static_cast<uint8_t>(17 * (h / 16));
  for (int h = 0; h < 64; ++h) codes[h] = kMXFP4Codes.v[h % 16];
  return {_mm512_load_si512(qs), _mm512_load_si512(e), _mm512_load_si512(codes)};
}

template <int R, int T, bool kTail>
HWY_INLINE void MXFP4Step(const uint8_t* const* rows, const uint8_t* const* acts, int64_t g,
                          int64_t valid, int64_t prefetch, const MXFP4Indices& idx,
                          __m512 (&acc)[R][T]) {
  const __m512i nib = _mm512_set1_epi8(0x0F);
  const __m512i bias = _mm512_set1_epi32(128);
  __m512i alo[T], ahi[T], corr[T];
  __m512 da[T];
  for (int t = 0; t < T; ++t) {
    const uint8_t* a = acts[t] + g * kQ4_0GroupBytes;
    alo[t] = _mm512_load_si512(a);
    ahi[t] = _mm512_load_si512(a + 64);
    da[t] = _mm512_load_ps(a + 128);
    corr[t] = _mm512_load_si512(a + 192);
  }
  for (int r = 0; r < R; ++r) {
    const uint8_t* p = rows[r] + g * 68;
    if constexpr (!kTail) {
      _mm_prefetch(reinterpret_cast<const char*>(p + prefetch), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(p + prefetch + 64), _MM_HINT_T0);
    }
    __m512i l0, l4;
    if constexpr (kTail) {  // masked loads never touch bytes past the row (valid <= 51)
      l0 = _mm512_maskz_loadu_epi8((1ull << valid) - 1, p);
      l4 = _mm512_maskz_loadu_epi8((1ull << (valid - 4)) - 1, p + 4);
    } else {
      l0 = _mm512_loadu_si512(p);
      l4 = _mm512_loadu_si512(p + 4);
    }
    // A missing block's codes read as 0 (level + 12 = 12), but its activations, correction and
    // d are zero, so it adds nothing.
    const __m512i q = _mm512_permutex2var_epi8(l0, idx.qs, l4);
    const __m512i lo = _mm512_shuffle_epi8(idx.codes, _mm512_and_si512(q, nib));
    const __m512i hi = _mm512_shuffle_epi8(idx.codes, _mm512_and_si512(_mm512_srli_epi16(q, 4), nib));
    const __m512i e = _mm512_maskz_permutexvar_epi8(kMXFP4ELow, idx.e, l0);
    const __m512 exp = _mm512_cvtepi32_ps(_mm512_sub_epi32(e, bias));
    for (int t = 0; t < T; ++t) {
      __m512i s = _mm512_dpbusd_epi32(corr[t], lo, alo[t]);
      s = _mm512_dpbusd_epi32(s, hi, ahi[t]);
      acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_scalef_ps(da[t], exp), acc[r][t]);
    }
  }
}

template <int R, int T>
void GemvMXFP4(const uint8_t* const* rows, const uint8_t* const* acts, int64_t n, int64_t prefetch,
               float* out) {
  static const MXFP4Indices kIdx = MakeMXFP4Indices();
  const MXFP4Indices idx = kIdx;
  const int64_t nb = n / 32;
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  int64_t g = 0;
  for (; 4 * g + 4 <= nb; ++g) MXFP4Step<R, T, false>(rows, acts, g, 68, prefetch, idx, acc);
  if (4 * g < nb) MXFP4Step<R, T, true>(rows, acts, g, (nb - 4 * g) * 17, 0, idx, acc);
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) out[r * T + t] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

// ---- dispatch ----

using GemvDecodeFn = void (*)(const uint8_t* const*, const uint8_t* const*, int64_t, int64_t,
                              float*);

constexpr int kDecodeMaxRowsVnni = 4;  // rows per tile with several tokens

// A type's table of R weight rows x T tokens, 1 <= R, T <= 4, of a kernel template F<R, T>, for
// its PickDecodeVnni (types/<type>.cpp).
#ifndef TOVA_DECODE_VNNI_TABLE
#define TOVA_DECODE_VNNI_ROW(F, R) {&F<R, 1>, &F<R, 2>, &F<R, 3>, &F<R, 4>}
#define TOVA_DECODE_VNNI_TABLE(F) \
  {TOVA_DECODE_VNNI_ROW(F, 1), TOVA_DECODE_VNNI_ROW(F, 2), TOVA_DECODE_VNNI_ROW(F, 3), \
   TOVA_DECODE_VNNI_ROW(F, 4)}
#endif

#endif  // HWY_TARGET == HWY_AVX3_DL

}  // namespace tova::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
