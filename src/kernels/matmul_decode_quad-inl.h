// Token-quad decode kernels: R weight rows x 4 tokens of a small-batch call (a speculative
// verify step, a few batched sequences), for Q4_0 on AVX3_DL (512-bit, vpdpbusd) and on AVX2 /
// AVX3 (256-bit, vpmaddubsw). Tuned on Zen 4 (2 cores).
//
// Why: the per-token row kernels (matmul_decode-inl.h, matmul_decode_avx2-inl.h) keep one
// integer vector per (row, token) whose lanes each hold a part of a block, so every block group
// costs each token its own int -> float conversion, scale product and multiply-add (AVX2: per
// block and token a vpmaddwd, a correction, a broadcast, a conversion, a multiply and an FMA).
// At 4 tokens that work, not the weight stream, set the step's time: one thread in cache moved
// 23 GB/s of Q4_0 at 1 token and 10.6 at 4 (bench_matmul 2048x2048, AVX3_DL), so a 4-token
// verify step of TinyLlama cost ~1.8x a 1-token one.
//
// Here one integer vector per row holds whole-block sums of 4 tokens: lane 4b + t is block b of
// the group (G blocks: 4 on AVX3_DL, 2 on AVX2) for token t. The weights are used as loaded
// (word s of each block's low / high nibbles in lane 4b + s); the activations are laid out
// diagonally (PrepareQuadQ8_0): vector j pairs word s with token (s + j) % 4, so chain j's lane
// 4b + s holds token (s + j) % 4's part, and rotating chain j's words by j within each 128-bit
// lane (vpshufd) lines all four chains up on lane 4b + t before three adds. Per row and group
// one conversion, one scale product and one FMA then serve all 4 tokens.
// - AVX3_DL: per row and group of 4 blocks 8 vpdpbusd in 4 chains (vpdpbusd's latency),
//   3 vpshufd and 3 adds, where the row kernel took 8 vpdpbusd + 12 float ops. (Repeating each
//   weight word into the 4 token lanes by vpshufb instead, 8 a group, ran no faster than the
//   row kernel on Zen 4.)
// - AVX2 / AVX3: per row and pair of blocks 8 vpmaddubsw, their int16 pair sums added and
//   rotated as int16 (exact: at most 8 x 2 x 15 x 127 < 2^15 a word) before one vpmaddwd, where
//   the row kernel took ~7 instructions per block and token.
// The unsigned nibbles' offset of 8 comes off through the activations' -8 * sum(a) per block,
// the first value of the lo chain, as in the row kernels. Every block sum is exact in int32;
// the float sums run in another order than the row kernels' (lanes per block, not per part of
// a block), so a 4-token call may differ from 4 one-token calls in the last bits, as
// kMatmulBatchInvariantTokens allows.
//
// Highway "-inl.h" pattern: included by matmul_engine-inl.h, which each weight type's unit
// (types/<type>.cpp) instantiates per target.

#if defined(TOVA_KERNELS_MATMUL_DECODE_QUAD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TOVA_KERNELS_MATMUL_DECODE_QUAD_INL_H_
#undef TOVA_KERNELS_MATMUL_DECODE_QUAD_INL_H_
#else
#define TOVA_KERNELS_MATMUL_DECODE_QUAD_INL_H_
#endif

#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "kernels/quant_blocks.h"

#if HWY_TARGET == HWY_AVX3_DL && defined(__clang__)
// As matmul_decode-inl.h: Highway's AVX3_DL target string omits avx512vnni.
#pragma clang attribute push(__attribute__((target(HWY_TARGET_STR ",avx512vnni"))), \
                             apply_to = function)
#else
HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL
#pragma GCC target("avx512vnni")
#endif
#endif
namespace tova::kernels::HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL

// Blocks of 32 per group: one vector of 4G int32 lanes, lane 4b + t.
#if HWY_TARGET == HWY_AVX3_DL
constexpr int kQuadBlocks = 4;
#else
constexpr int kQuadBlocks = 2;
#endif
constexpr int64_t kQuadVecBytes = 16 * kQuadBlocks;
// Per group: lo[4] and hi[4] vectors, lo[j] lane 4b + s = elements 4s .. 4s + 3 of block b of
// token (s + j) % 4 (hi[j]: elements 16 + 4s ..), then d (float, lane 4b + t: token t's scale
// of block b) and corr (int32, lane 4b + t: -offset * sum(a)). See the kernels for why.
constexpr int64_t kQuadGroupBytes = 10 * kQuadVecBytes;

// Quads of a call of n_tok tokens: the whole ones, and a last one padded with zero tokens where
// at least kQuadMinTokens remain. A padded quad costs what a whole one does; the row kernels'
// cost grows with each token: on AVX2 a quad of 2 (bench_matmul q4_0 2048x2048 one thread: the
// row kernel at 2 tokens took ~0.5x its 4-token time, a quad 0.44x), on AVX3_DL of 3 (the
// row kernel at 2 tokens ~0.55x, a quad ~0.75x).
#if HWY_TARGET == HWY_AVX3_DL
constexpr int kQuadMinTokens = 3;
#else
constexpr int kQuadMinTokens = 2;
#endif
inline int64_t QuadCount(int64_t n_tok) { return n_tok / 4 + (n_tok % 4 >= kQuadMinTokens ? 1 : 0); }

// Bytes of one quad's activations (a multiple of 64: the rows after the quads stay aligned).
inline int64_t QuadActBytes(int64_t n) {
  const int64_t nb = n / 32;
  return ((nb + kQuadBlocks - 1) / kQuadBlocks * kQuadGroupBytes + 63) / 64 * 64;
}

// Token `lane` (0..3) of a quad from its Q8_0 activation blocks (nb of them); blocks past nb in
// the last group are zero. Each token writes only its own lanes, so the 4 tokens of a quad may
// be prepared by different threads.
inline void PrepareQuadQ8_0(const uint8_t* blocks, int64_t nb, int lane, int offset,
                            uint8_t* out) {
  const int64_t n_group = (nb + kQuadBlocks - 1) / kQuadBlocks;
  for (int64_t g = 0; g < n_group; ++g) {
    uint8_t* o = out + g * kQuadGroupBytes;
    for (int b = 0; b < kQuadBlocks; ++b) {
      const int64_t bi = g * kQuadBlocks + b;
      uint8_t q[32] = {};
      float d = 0.0f;
      int32_t corr = 0;
      if (bi < nb) {
        const uint8_t* blk = blocks + bi * detail::Q8_0::kBytes;
        std::memcpy(q, blk + detail::Q8_0::kQs, 32);
        d = detail::load_f16(blk + detail::Q8_0::kD);
        int sum = 0;
        for (int l = 0; l < 32; ++l) sum += static_cast<int8_t>(q[l]);
        corr = -offset * sum;
      }
      // Word s of block b's lo (hi) nibbles meets this token in vector j (4 + j), j = lane - s.
      for (int i = 0; i < 8; ++i) {
        const int s = i % 4, j = (lane - s + 4) % 4;
        std::memcpy(o + (i < 4 ? j : 4 + j) * kQuadVecBytes + 4 * (4 * b + s), q + 4 * i, 4);
      }
      const int64_t at = 4 * (4 * b + lane);
      std::memcpy(o + 8 * kQuadVecBytes + at, &d, 4);
      std::memcpy(o + 9 * kQuadVecBytes + at, &corr, 4);
    }
  }
}

// vpshufd immediates: word t of each 128-bit lane from word (t - j) % 4, j = 1, 2, 3.
constexpr int kRot1 = 0x93, kRot2 = 0x4E, kRot3 = 0x39;

#if HWY_TARGET == HWY_AVX3_DL

// Q4_0, R rows x 4 tokens, groups of 4 blocks (72 bytes a row). The weights come in as the row
// kernel's (GemvQ4_0): two overlapping loads, one vpermt2b, the f16 scales by one vpermb (lane
// h of the converted scales = block h / 4, the lanes 4b + t here).
template <int R>
void GemvQ4_0Quad(const uint8_t* const* rows, const uint8_t* const* acts, int64_t n,
                  int64_t prefetch, float* out) {
  static const Q4_0Indices kIdx = MakeQ4_0Indices();
  const Q4_0Indices idx = kIdx;
  const __m512i nib = _mm512_set1_epi8(0x0F);
  const int64_t nb = n / 32;
  const uint8_t* a = acts[0];
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t g = 0; 4 * g < nb; ++g) {
    const uint8_t* ag = a + g * kQuadGroupBytes;
    const bool tail = 4 * g + 4 > nb;
    const int64_t valid = tail ? (nb - 4 * g) * 18 : 72;
    __m512i av[8];
    for (int i = 0; i < 8; ++i) av[i] = _mm512_load_si512(ag + i * kQuadVecBytes);
    const __m512 da = _mm512_load_ps(reinterpret_cast<const float*>(ag + 8 * kQuadVecBytes));
    const __m512i corr = _mm512_load_si512(ag + 9 * kQuadVecBytes);
    for (int r = 0; r < R; ++r) {
      const uint8_t* p = rows[r] + g * 72;
      __m512i l0, l8;
      if (!tail) {
        _mm_prefetch(reinterpret_cast<const char*>(p + prefetch), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(p + prefetch + 64), _MM_HINT_T0);
        l0 = _mm512_loadu_si512(p);
        l8 = _mm512_loadu_si512(p + 8);
      } else {  // masked loads never touch bytes past the row
        l0 = _mm512_maskz_loadu_epi8((1ull << valid) - 1, p);
        l8 = _mm512_maskz_loadu_epi8((1ull << (valid - 8)) - 1, p + 8);
      }
      const __m512i q = _mm512_permutex2var_epi8(l0, idx.qs, l8);
      const __m512i lo = _mm512_and_si512(q, nib);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), nib);
      const __m512 dw =
          _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi8(idx.d, l0)));
      // Four independent chains (vpdpbusd's latency); chain j's word s is token (s + j) % 4's.
      __m512i s0 = _mm512_dpbusd_epi32(corr, lo, av[0]);
      __m512i s1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, av[1]);
      __m512i s2 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, av[2]);
      __m512i s3 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, av[3]);
      s0 = _mm512_dpbusd_epi32(s0, hi, av[4]);
      s1 = _mm512_dpbusd_epi32(s1, hi, av[5]);
      s2 = _mm512_dpbusd_epi32(s2, hi, av[6]);
      s3 = _mm512_dpbusd_epi32(s3, hi, av[7]);
      const __m512i sum = _mm512_add_epi32(
          _mm512_add_epi32(s0, _mm512_shuffle_epi32(s1, static_cast<_MM_PERM_ENUM>(kRot1))),
          _mm512_add_epi32(_mm512_shuffle_epi32(s2, static_cast<_MM_PERM_ENUM>(kRot2)),
                           _mm512_shuffle_epi32(s3, static_cast<_MM_PERM_ENUM>(kRot3))));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, da), acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) {  // lanes 4b + t summed over b
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(acc[r]), _mm512_extractf32x8_ps(acc[r], 1));
    _mm_storeu_ps(out + 4 * r, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
  }
}

template <GgmlType kType>
GemvDecodeFn PickDecodeQuad(int r) {
  static_assert(kType == GgmlType::kQ4_0);
  static constexpr GemvDecodeFn kTable[4] = {&GemvQ4_0Quad<1>, &GemvQ4_0Quad<2>, &GemvQ4_0Quad<3>,
                                             &GemvQ4_0Quad<4>};
  return kTable[r - 1];
}

#else  // AVX2, AVX3

// Q4_0, R rows x 4 tokens, pairs of blocks: block 2p's 16 quant bytes in the low 128-bit lane,
// 2p + 1's in the high one; a last odd block alone (the high lane zero, as its activations).
// The chains stay int16 until the rotation sum (at most 8 x 2 x 15 x 127 = 30480 a word).
template <int R>
void GemvQ4_0QuadAvx2(const uint8_t* const* rows, const uint8_t* const* acts, int64_t n,
                      int64_t prefetch, float* out) {
  constexpr int kBytes = detail::Q4_0::kBytes;
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i one = _mm256_set1_epi16(1);
  // f16 d of the pair's blocks (low and high 16 bits of a word) into words 0-3 and 4-7.
  const __m128i d_rep = _mm_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3);
  const int64_t nb = n / 32;
  const uint8_t* a = acts[0];
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t p = 0; 2 * p < nb; ++p) {
    const uint8_t* ag = a + p * kQuadGroupBytes;
    const bool pair = 2 * p + 2 <= nb;
    const __m256 da = _mm256_load_ps(reinterpret_cast<const float*>(ag + 8 * kQuadVecBytes));
    const __m256i corr = _mm256_load_si256(reinterpret_cast<const __m256i*>(ag + 9 * kQuadVecBytes));
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = rows[r] + 2 * p * kBytes;
      if (pair) _mm_prefetch(reinterpret_cast<const char*>(blk + prefetch), _MM_HINT_T0);
      const __m128i q0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + detail::Q4_0::kQs));
      uint32_t dd = detail::load_u16(blk + detail::Q4_0::kD);
      __m256i q;
      if (pair) {
        q = _mm256_inserti128_si256(
            _mm256_castsi128_si256(q0),
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kBytes + detail::Q4_0::kQs)), 1);
        dd |= static_cast<uint32_t>(detail::load_u16(blk + kBytes + detail::Q4_0::kD)) << 16;
      } else {
        q = _mm256_zextsi128_si256(q0);
      }
      const __m256i lo = _mm256_and_si256(q, m4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
      const __m256 dw = _mm256_cvtph_ps(
          _mm_shuffle_epi8(_mm_cvtsi32_si128(static_cast<int32_t>(dd)), d_rep));
      __m256i s[4];
      for (int j = 0; j < 4; ++j) {
        s[j] = _mm256_add_epi16(
            _mm256_maddubs_epi16(
                lo, _mm256_load_si256(reinterpret_cast<const __m256i*>(ag + j * kQuadVecBytes))),
            _mm256_maddubs_epi16(hi, _mm256_load_si256(reinterpret_cast<const __m256i*>(
                                         ag + (4 + j) * kQuadVecBytes))));
      }
      const __m256i s16 = _mm256_add_epi16(
          _mm256_add_epi16(s[0], _mm256_shuffle_epi32(s[1], kRot1)),
          _mm256_add_epi16(_mm256_shuffle_epi32(s[2], kRot2), _mm256_shuffle_epi32(s[3], kRot3)));
      const __m256i sum = _mm256_add_epi32(MaddWd(s16, one), corr);
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(dw, da), acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) {  // lanes 4b + t summed over b
    _mm_storeu_ps(out + 4 * r, _mm_add_ps(_mm256_castps256_ps128(acc[r]),
                                          _mm256_extractf128_ps(acc[r], 1)));
  }
}

template <GgmlType kType>
GemvDecodeFn PickDecodeQuad(int r) {
  static_assert(kType == GgmlType::kQ4_0);
  static constexpr GemvDecodeFn kTable[4] = {&GemvQ4_0QuadAvx2<1>, &GemvQ4_0QuadAvx2<2>,
                                             &GemvQ4_0QuadAvx2<3>, &GemvQ4_0QuadAvx2<4>};
  return kTable[r - 1];
}

#endif  // HWY_TARGET == HWY_AVX3_DL

#endif  // HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL

}  // namespace tova::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
