// Decode (few-token) matrix-vector kernels for AVX2 machines, also run by the AVX3 target
// (AVX-512 without Highway's VNNI guarantee): they read the GGUF blocks in place, as the AVX3_DL
// kernels of matmul_decode-inl.h do, instead of unpacking rows into scratch first. Decode
// streams every weight byte once per token; with 256-bit vectors and no vpdpbusd the work per
// byte is what decides whether a core keeps up with memory, so each kernel keeps it small
// (tuned on Zen 4 with --simd avx2):
//
// - int8 products with vpmaddubsw (unsigned weights 0..2^bits-1 times signed activations) and
//   vpmaddwd to int32. The weights' offset (8 for Q4_0, 16 for Q5_0, 32 for Q6_K) is not
//   subtracted per element: the activation row carries -offset * sum(a) per block, added once.
// - Q8_0's weights are signed bytes: |w| times a with w's sign (vpsignb), no offset.
// - k-quants (Q4_K, Q5_K, Q6_K) multiply the int16 pair sums by their sub-block scales inside
//   vpmaddwd, so a whole 256-element super-block is summed exactly in int32 and scaled by one
//   float multiply-add, as the reference does; Q4_K / Q5_K mins come from the activations'
//   block sums (Q8_K bsums), one vpmaddwd per super-block.
//
// AVX3 shares these 256-bit kernels: decode is bound by memory there too, and AVX-512 without
// VNNI has no wider int8 dot product to gain from. AVX3_DL takes them for the types its VNNI
// kernels (matmul_decode-inl.h) do not cover: Q4_K, Q5_K, Q6_K, Q5_0, Q4_1, Q5_1 (bench_matmul
// q4_k 5632x2048 ntok:1, one thread, in cache: 45.9 GFLOP/s unpacking rows, 62.9 with this
// kernel).
//
// Highway "-inl.h" pattern: included by matmul_engine-inl.h, which each weight type's unit
// (types/<type>.cpp) instantiates per target.

#if defined(TOVA_KERNELS_MATMUL_DECODE_AVX2_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TOVA_KERNELS_MATMUL_DECODE_AVX2_INL_H_
#undef TOVA_KERNELS_MATMUL_DECODE_AVX2_INL_H_
#else
#define TOVA_KERNELS_MATMUL_DECODE_AVX2_INL_H_
#endif

#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "kernels/quant_blocks.h"

#if HWY_TARGET == HWY_AVX3_DL && defined(__clang__)
// The same target attributes as quant_kernels-inl.h (whose helpers these kernels inline): a
// function cannot inline one compiled for more features.
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

// ---- activation rows (one token) ----
//
// Q8_0 activations (Q4_0, Q5_0, Q8_0 weights), nb blocks of 32:
//   qs[nb][32] int8 | d[nb] float | corr[nb] int32
// where corr = -offset * sum(a) (offset 8 Q4_0, 16 Q5_0, 0 Q8_0) completes a block's sum.
// Q8_1 activations (Q4_1, Q5_1 weights): the same with corr[nb] the float s = d * sum(a) that
// the weights' min m multiplies (the reference's m * s term).
// IQ4_NL and MXFP4 take the Q8_0 layout (corr: MXFP4's offset 12, IQ4_NL's signed levels none);
// MXFP4's qs, d and corr are permuted within whole groups of 8 blocks (PrepareMXFP4Avx2Decode).
// Q8_K activations (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS), nb super-blocks of 256:
//   qs[nb][256] int8 | d[nb] float | bsums[nb][16] int16
// with bsums the negated Q8_K bsums (Q6_K, Q3_K, Q2_K: of 16 elements each), or (Q4_K, Q5_K) 8 zeros and
// the negated sums of the 8 sub-blocks of 32; Q4_K's qs in the lane order of its kernel.

// vpmaddwd kept apart from the add that follows it where clang would fuse them. Highway 1.0's
// AVX3_DL target string lists avxvnni, so clang fuses madd + add into AVX-VNNI's VEX vpdpwssd,
// which AVX-512 CPUs without AVX-VNNI (Zen 4, Ice Lake) do not have: SIGILL in clang builds.
// The empty asm hides the madd from clang there. g++ 12 does not fuse intrinsics (objdump: no
// vpdpwssd without it) and the asm cost it nothing measurable, but it is kept out of g++ builds
// and of the AVX2/AVX3 targets, where no VNNI instruction can be chosen anyway.
HWY_INLINE __m256i MaddWd(__m256i a, __m256i b) {
  __m256i r = _mm256_madd_epi16(a, b);
#if HWY_TARGET == HWY_AVX3_DL && defined(__clang__)
  asm("" : "+v"(r));
#endif
  return r;
}

// acc + MaddWd(a, b). AVX3_DL: one vpdpwssd (AVX512_VNNI), in asm so that the assembler's
// default, the EVEX encoding, is what runs: compilers given Highway 1.0's AVX3_DL target
// string (it lists avxvnni) may emit the VEX form of AVX-VNNI, which Zen 4 and Ice Lake lack.
HWY_INLINE __m256i MaddWdAdd(__m256i acc, __m256i a, __m256i b) {
#if HWY_TARGET == HWY_AVX3_DL
  asm("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
#else
  return _mm256_add_epi32(acc, MaddWd(a, b));
#endif
}

// Q4_1 / Q5_1: weights d * q + m, activations with their Q8_1 sum.
constexpr bool HasMin(GgmlType type) {
  return type == GgmlType::kQ4_1 || type == GgmlType::kQ5_1;
}

// The types whose activations are Q8_K super-blocks.
constexpr bool IsSuperBlock(GgmlType type) {
  return type == GgmlType::kQ4_K || type == GgmlType::kQ5_K || type == GgmlType::kQ6_K ||
         type == GgmlType::kQ2_K || type == GgmlType::kQ3_K || type == GgmlType::kIQ4_XS;
}

inline int64_t DecodeActBytesAvx2(GgmlType type, int64_t n) {
  if (IsSuperBlock(type)) {
    const int64_t nb = n / 256;
    return (nb * (256 + 4 + 32) + 63) / 64 * 64;
  }
  const int64_t nb = n / 32;
  return (nb * (32 + 4 + 4) + 63) / 64 * 64;
}

inline int Avx2DecodeOffset(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0:
      return 8;
    case GgmlType::kQ5_0:
      return 16;
    case GgmlType::kMXFP4:  // levels -12..12 as 0..24
      return 12;
    default:
      return 0;
  }
}

// MXFP4's order of blocks within a group of 8, lane i of GemvMXFP4Avx2's per-group sums holds
// block kMXFP4Lane[i] (the vphaddw / vphaddd tree's order, see there).
inline constexpr int kMXFP4Lane[8] = {0, 2, 4, 6, 1, 3, 5, 7};

// MXFP4's activations (the Q8_0 layout's sizes): per whole group of 8 blocks, per pair of blocks
// (2p, 2p + 1) the 64 bytes [a_2p 0-15 | a_2p+1 0-15 | a_2p 16-31 | a_2p+1 16-31], the lanes of
// one 256-bit load of both blocks' nibbles (low nibbles: elements 0-15, high: 16-31); d and corr
// in kMXFP4Lane's order. The blocks after the last whole group (nb % 8) stay in block order.
inline void PrepareMXFP4Avx2Decode(const uint8_t* blocks, int64_t nb, uint8_t* out, float* d,
                                   int32_t* corr) {
  constexpr int kOffset = 12;  // levels -12..12 as 0..24
  const int64_t whole = nb / 8 * 8;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = blocks + b * detail::Q8_0::kBytes;
    const int8_t* qs = reinterpret_cast<const int8_t*>(blk + detail::Q8_0::kQs);
    int64_t slot = b;  // where block b's scale and correction go
    if (b < whole) {
      const int64_t g = b / 8, i = b % 8;
      uint8_t* pair = out + 256 * g + 64 * (i / 2) + 16 * (i % 2);
      std::memcpy(pair, qs, 16);
      std::memcpy(pair + 32, qs + 16, 16);
      slot = 8 * g + (i % 2 == 0 ? i / 2 : 4 + i / 2);  // kMXFP4Lane's inverse
    } else {
      std::memcpy(out + 32 * b, qs, 32);
    }
    d[slot] = detail::load_f16(blk);
    int sum = 0;
    for (int l = 0; l < 32; ++l) sum += qs[l];
    corr[slot] = -kOffset * sum;
  }
}

// From the ggml activation blocks (Q8_0 or Q8_K) of one token.
inline void PrepareAvx2Decode(GgmlType type, const uint8_t* blocks, int64_t n, uint8_t* out) {
  if (IsSuperBlock(type)) {
    const int64_t nb = n / 256;
    float* d = reinterpret_cast<float*>(out + nb * 256);
    uint8_t* bsums = out + nb * 260;
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = blocks + b * detail::Q8_K::kBytes;
      if (type == GgmlType::kQ4_K) {
        // Per 128 elements (sub-blocks s = 4J .. 4J + 3 of 32): [s0 0-15 | s2 0-15], [s0 16-31 |
        // s2 16-31], [s1 0-15 | s3 0-15], [s1 16-31 | s3 16-31], the lanes GemvQKAvx2's Q4_K
        // path pairs (sub-blocks 2j and 2j + 2 in one vector).
        for (int J = 0; J < 2; ++J) {
          const uint8_t* src = blk + detail::Q8_K::kQs + 128 * J;
          uint8_t* dst = out + b * 256 + 128 * J;
          for (int k = 0; k < 8; ++k) {
            const int sub = (k / 4) + 2 * (k % 2), half = (k / 2) % 2;
            std::memcpy(dst + 16 * k, src + 32 * sub + 16 * half, 16);
          }
        }
      } else {
        std::memcpy(out + b * 256, blk + detail::Q8_K::kQs, 256);
      }
      d[b] = detail::load_f32(blk + detail::Q8_K::kD);
      // Negated, so that the mins' (offset's) term is a plain sum. Q6_K, Q3_K, Q2_K (and
      // IQ4_XS, which does not read them): the 16 sums of 16.
      // Q4_K / Q5_K: 8 zero words, then the 8 sums of 32 (one per sub-block), the lanes of
      // the scales and mins vector of GemvQKAvx2.
      int16_t s16[16];
      std::memcpy(s16, blk + detail::Q8_K::kBsums, 32);
      int16_t v[16] = {};
      for (int g = 0; g < 16; ++g) {
        if (type != GgmlType::kQ4_K && type != GgmlType::kQ5_K) {
          v[g] = static_cast<int16_t>(-s16[g]);
        } else if (g < 8) {
          v[8 + g] = static_cast<int16_t>(-(s16[2 * g] + s16[2 * g + 1]));
        }
      }
      std::memcpy(bsums + b * 32, v, 32);
    }
    return;
  }
  const int64_t nb = n / 32;
  float* d = reinterpret_cast<float*>(out + nb * 32);
  if (HasMin(type)) {
    float* s = reinterpret_cast<float*>(out + nb * 36);
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = blocks + b * detail::Q8_1::kBytes;
      std::memcpy(out + b * 32, blk + detail::Q8_1::kQs, 32);
      d[b] = detail::load_f16(blk + detail::Q8_1::kD);
      s[b] = detail::load_f16(blk + detail::Q8_1::kS);
    }
    return;
  }
  const int offset = Avx2DecodeOffset(type);
  int32_t* corr = reinterpret_cast<int32_t*>(out + nb * 36);
  if (type == GgmlType::kMXFP4) {
    PrepareMXFP4Avx2Decode(blocks, nb, out, d, corr);
    return;
  }
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = blocks + b * detail::Q8_0::kBytes;
    const int8_t* qs = reinterpret_cast<const int8_t*>(blk + detail::Q8_0::kQs);
    std::memcpy(out + b * 32, qs, 32);
    d[b] = detail::load_f16(blk);
    int sum = 0;
    for (int l = 0; l < 32; ++l) sum += qs[l];
    corr[b] = -offset * sum;
  }
}

struct Q8_0Row {
  const uint8_t* qs;
  const float* d;
  const int32_t* corr;
};
inline Q8_0Row Q8_0RowOf(const uint8_t* p, int64_t nb) {
  return {p, reinterpret_cast<const float*>(p + nb * 32),
          reinterpret_cast<const int32_t*>(p + nb * 36)};
}

struct Q8_KRow {
  const uint8_t* qs;
  const float* d;
  const uint8_t* bsums;  // int16 [nb][16], negated (see above)
};
inline Q8_KRow Q8_KRowOf(const uint8_t* p, int64_t nb) {
  return {p, reinterpret_cast<const float*>(p + nb * 256), p + nb * 260};
}

HWY_INLINE float HSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

HWY_INLINE __m256 F16Bcast(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _mm256_cvtph_ps(_mm_set1_epi16(static_cast<int16_t>(h)));
}

HWY_INLINE __m256i Load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// 0x10 in byte j where bit j of the 32 bits at p is set (Q5_0's fifth bits).
HWY_INLINE __m256i FifthBits32(const uint8_t* p) {
  uint32_t bits;
  std::memcpy(&bits, p, 4);
  const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                         0x0101010101010101, 0x0000000000000000);
  const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(bits)), shuf);
  const __m256i bit = _mm256_set1_epi64x(0x8040201008040201);
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit),
                          _mm256_set1_epi8(0x10));
}

// ---- Q4_0, Q4_1, Q5_0, Q5_1, Q8_0: blocks of 32, one float multiply-add per block ----

// The block layout (quant_blocks.h) of each type, and its size.
template <GgmlType kType>
constexpr auto BlockOf() {
  if constexpr (kType == GgmlType::kQ4_0) return detail::Q4_0{};
  else if constexpr (kType == GgmlType::kQ4_1) return detail::Q4_1{};
  else if constexpr (kType == GgmlType::kQ5_0) return detail::Q5_0{};
  else if constexpr (kType == GgmlType::kQ5_1) return detail::Q5_1{};
  else if constexpr (kType == GgmlType::kIQ4_NL) return detail::IQ4_NL{};
  else if constexpr (kType == GgmlType::kMXFP4) return detail::MXFP4{};
  else return detail::Q8_0{};
}
template <GgmlType kType>
using Block = decltype(BlockOf<kType>());
template <GgmlType kType>
constexpr int BlockBytes() {
  return Block<kType>::kBytes;
}

// Weights multiplied as signed bytes (|w| times a with w's sign): Q8_0 and IQ4_NL's levels
// -127..113. Their pair sums can reach 2 * 127 * 128: SumLanes8, not SumLanes8Small.
template <GgmlType kType>
constexpr bool SignedBlocks() {
  return kType == GgmlType::kQ8_0 || kType == GgmlType::kIQ4_NL;
}

// A 16-entry byte table in both 128-bit lanes, for vpshufb.
HWY_INLINE __m256i CodeTable256(const CodeTable& t) {
  return _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i*>(t.v)));
}

template <GgmlType kType>
HWY_INLINE __m256i LoadBlockWeights(const uint8_t* blk) {
  if constexpr (kType == GgmlType::kQ8_0) {
    return Load256(blk + detail::Q8_0::kQs);
  } else {
    constexpr int kQs = Block<kType>::kQs;
    // The 16 quant bytes in both lanes, the upper lane shifted by 4: [low nibbles | high
    // nibbles] = elements 0..15 | 16..31 (a broadcast load and one shift, no lane insert).
    const __m256i q =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQs)));
    __m256i w = _mm256_and_si256(_mm256_srlv_epi32(q, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)),
                                 _mm256_set1_epi8(0x0F));
    if constexpr (kType == GgmlType::kQ5_0 || kType == GgmlType::kQ5_1) {
      w = _mm256_or_si256(w, FifthBits32(blk + Block<kType>::kQh));
    }
    if constexpr (kType == GgmlType::kIQ4_NL) {  // the levels as signed bytes
      alignas(16) static constexpr CodeTable kLevels = [] {
        CodeTable t{};
        for (int i = 0; i < 16; ++i) t.v[i] = static_cast<uint8_t>(detail::kIQ4NLValues[i]);
        return t;
      }();
      w = _mm256_shuffle_epi8(CodeTable256(kLevels), w);
    } else if constexpr (kType == GgmlType::kMXFP4) {  // level + 12
      w = _mm256_shuffle_epi8(CodeTable256(kMXFP4Codes), w);
    }
    return w;
  }
}

// The block's int32 dot products in 8 lanes (their sum is <u, a>, or <w, a> for Q8_0).
template <GgmlType kType>
HWY_INLINE __m256i BlockDot(__m256i w, const uint8_t* a) {
  __m256i av = _mm256_load_si256(reinterpret_cast<const __m256i*>(a));
  __m256i wu = w;
  if constexpr (SignedBlocks<kType>()) {  // |w| times a with w's sign
    av = _mm256_sign_epi8(av, w);
    wu = _mm256_sign_epi8(w, w);
  }
  return MaddWd(_mm256_maddubs_epi16(wu, av), _mm256_set1_epi16(1));
}

// Lane b of the result = the sum of the 8 lanes of s[b].
HWY_INLINE __m256i SumLanes8(const __m256i (&s)[8]) {
  const __m256i h0 = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
  const __m256i h1 = _mm256_hadd_epi32(_mm256_hadd_epi32(s[4], s[5]), _mm256_hadd_epi32(s[6], s[7]));
  // h0 = [s0..s3 over lanes 0-3 | s0..s3 over lanes 4-7], h1 likewise for s4..s7.
  return _mm256_add_epi32(_mm256_permute2x128_si256(h0, h1, 0x20),
                          _mm256_permute2x128_si256(h0, h1, 0x31));
}

// The same for blocks whose lanes are small: any two lanes of one s[b] sum to at most 2^15 - 1
// in magnitude (Q4_0 / Q4_1: 4 * 15 * 127 = 7620 per lane, Q5_0 / Q5_1: 15748; MXFP4 has its
// own kernel, GemvMXFP4Avx2). The lanes
// then fit int16, so two blocks are packed into one vector (vpackssdw, exact) and summed
// pairwise by vpmaddwd: 6 packs and 6 madds instead of 6 vphaddd, which take more of the
// shuffle ports that the nibble unpacking needs too. The same exact int32 sums, lane b = block b.
HWY_INLINE __m256i SumLanes8Small(const __m256i (&s)[8]) {
  const __m256i one = _mm256_set1_epi16(1);
  // Lane halves: [s_a lanes 0-1 summed, 2-3, s_b 0-1, 2-3 | the same of lanes 4-7].
  const __m256i p01 = MaddWd(_mm256_packs_epi32(s[0], s[1]), one);
  const __m256i p23 = MaddWd(_mm256_packs_epi32(s[2], s[3]), one);
  const __m256i p45 = MaddWd(_mm256_packs_epi32(s[4], s[5]), one);
  const __m256i p67 = MaddWd(_mm256_packs_epi32(s[6], s[7]), one);
  // [s0 s1 s2 s3 over lanes 0-3 | over lanes 4-7], and the same for s4..s7.
  const __m256i q0 = MaddWd(_mm256_packs_epi32(p01, p23), one);
  const __m256i q1 = MaddWd(_mm256_packs_epi32(p45, p67), one);
  return _mm256_add_epi32(_mm256_permute2x128_si256(q0, q1, 0x20),
                          _mm256_permute2x128_si256(q0, q1, 0x31));
}

// MXFP4's E8M0 exponents of 8 consecutive blocks as the floats 2^(e - 128) (e8m0_half): the
// exponent field e - 1, or for e < 2 the denormals 2^21 << e.
HWY_INLINE __m256 E8M0Half8(const uint8_t* blk) {
  constexpr int B = detail::MXFP4::kBytes;
  uint64_t e8 = 0;
  for (int i = 0; i < 8; ++i) e8 |= static_cast<uint64_t>(blk[i * B]) << (8 * i);
  const __m256i e = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(e8)));
  const __m256i norm = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
  const __m256i denorm = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
  const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
  return _mm256_castsi256_ps(_mm256_blendv_epi8(norm, denorm, small));
}

// A block's scale broadcast: f16 d, or MXFP4's E8M0 exponent.
template <GgmlType kType>
HWY_INLINE __m256 BlockScale(const uint8_t* blk) {
  if constexpr (kType == GgmlType::kMXFP4) {
    return _mm256_set1_ps(detail::e8m0_half(blk[detail::MXFP4::kE]));
  } else {
    return F16Bcast(blk);
  }
}

// The f16 scales of 8 consecutive blocks as floats. Eight scalar 16-bit loads packed with
// shifts and ors run on the integer ALUs, beside the vector work of the blocks; the gather of
// the same words (vpgatherdd, microcoded on Zen 4) was where the 8-block loop stalled.
template <GgmlType kType>
HWY_INLINE __m256 Scales8(const uint8_t* blk) {
  if constexpr (kType == GgmlType::kMXFP4) return E8M0Half8(blk);
  constexpr int B = BlockBytes<kType>();
  uint64_t half[2];
  for (int h = 0; h < 2; ++h) {
    uint64_t v = 0;
    for (int i = 0; i < 4; ++i) {
      uint16_t d;
      std::memcpy(&d, blk + (4 * h + i) * B, 2);
      v |= static_cast<uint64_t>(d) << (16 * i);
    }
    half[h] = v;
  }
  return _mm256_cvtph_ps(_mm_set_epi64x(static_cast<int64_t>(half[1]), static_cast<int64_t>(half[0])));
}

template <GgmlType kType, int R, int T>
void GemvBlocksAvx2(const uint8_t* const* rows, const uint8_t* const* acts, int64_t n,
                    int64_t prefetch, float* out) {
  constexpr int kBytes = BlockBytes<kType>();
  const int64_t nb = n / 32;
  Q8_0Row a[T];
  for (int t = 0; t < T; ++t) a[t] = Q8_0RowOf(acts[t], nb);
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  int64_t b = 0;
  if constexpr (R == 1 && T == 1) {
    // One token (decode): per block only the integer work; then per 8 blocks one gather of
    // the scales, one reduction of the 8 blocks' lanes into one vector (a lane per block),
    // one conversion and one multiply-add. The per-block scale broadcast, conversion and FMA
    // were most of the instructions.
    for (; b + 8 <= nb; b += 8) {
      const uint8_t* blk = rows[0] + b * kBytes;
      if (prefetch != 0) {
        for (int line = 0; line < 8 * kBytes; line += 64) {
          _mm_prefetch(reinterpret_cast<const char*>(blk + prefetch + line), _MM_HINT_T0);
        }
      }
      __m256i s[8];
      for (int i = 0; i < 8; ++i) {
        s[i] = BlockDot<kType>(LoadBlockWeights<kType>(blk + i * kBytes), a[0].qs + 32 * (b + i));
      }
      __m256i sum = SignedBlocks<kType>() ? SumLanes8(s) : SumLanes8Small(s);
      if constexpr (!SignedBlocks<kType>() && !HasMin(kType)) {
        sum = _mm256_add_epi32(sum, _mm256_loadu_si256(
                                        reinterpret_cast<const __m256i*>(a[0].corr + b)));
      }
      const __m256 scale = _mm256_mul_ps(Scales8<kType>(blk), _mm256_loadu_ps(a[0].d + b));
      acc[0][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), scale, acc[0][0]);
      if constexpr (HasMin(kType)) {  // + m * s per block (m 2 bytes after d)
        acc[0][0] = _mm256_fmadd_ps(
            Scales8<kType>(blk + 2),
            _mm256_loadu_ps(reinterpret_cast<const float*>(a[0].corr + b)), acc[0][0]);
      }
    }
  }
  for (; b < nb; ++b) {
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = rows[r] + b * kBytes;
      if (prefetch != 0 && b % (64 / kBytes) == 0) {  // about one per cache line
        _mm_prefetch(reinterpret_cast<const char*>(blk + prefetch), _MM_HINT_T0);
      }
      const __m256i w = LoadBlockWeights<kType>(blk);
      const __m256 dw = BlockScale<kType>(blk);
      for (int t = 0; t < T; ++t) {
        if constexpr (HasMin(kType)) {
          // m * s joins lane 0 (the lanes are summed at the end).
          float s_a;
          std::memcpy(&s_a, a[t].corr + b, 4);
          const __m256 ms = _mm256_setr_ps(LoadF16(blk + 2) * s_a, 0, 0, 0, 0, 0, 0, 0);
          acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(BlockDot<kType>(w, a[t].qs + 32 * b)),
                                      _mm256_mul_ps(dw, _mm256_broadcast_ss(a[t].d + b)),
                                      _mm256_add_ps(acc[r][t], ms));
          continue;
        }
        // The block's correction joins lane 0 (the lanes are summed at the end).
        const __m256i s = _mm256_add_epi32(BlockDot<kType>(w, a[t].qs + 32 * b),
                                           _mm256_setr_epi32(a[t].corr[b], 0, 0, 0, 0, 0, 0, 0));
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s),
                                    _mm256_mul_ps(dw, _mm256_broadcast_ss(a[t].d + b)), acc[r][t]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) out[r * T + t] = HSum(acc[r][t]);
  }
}

// MXFP4, R rows x T tokens. Per whole group of 8 blocks (136 bytes) and row:
// - one 256-bit load of two blocks' 16 nibble bytes each (block 2p in the low 128-bit lane,
//   2p + 1 in the high one); its low nibbles are elements 0-15 of both blocks, its high nibbles
//   16-31; each through one vpshufb to its level + 12 (0..24) and one vpmaddubsw with the
//   activations laid out to match (PrepareMXFP4Avx2Decode), the two int16 results added: per
//   pair of blocks 2 lookups and 2 vpmaddubsw, where one block at a time took a lookup, a
//   vpmaddubsw and a vpmaddwd each. Words stay below 2^15: 4 products of at most 24 * 128.
// - the 4 pairs' words summed per block by vphaddw (adjacent words: at most 2 * 12288), vpmaddwd
//   by 1 and vphaddd: lane i of the int32 result is block kMXFP4Lane[i]'s whole sum, exact;
//   the activations' d and corr are stored in that order, the E8M0 scales are read in it.
// - corr (-12 * sum(a)) added, one int32 -> float conversion, one multiply-add with
//   2^(e - 128) * d per block: the scaling of the one-block path below.
// The blocks after the last whole group take that one-block path (natural order).
template <int R, int T>
void GemvMXFP4Avx2(const uint8_t* const* rows, const uint8_t* const* acts, int64_t n,
                   int64_t prefetch, float* out) {
  constexpr int kBytes = detail::MXFP4::kBytes;
  const int64_t nb = n / 32;
  const int64_t whole = nb / 8 * 8;
  Q8_0Row a[T];
  for (int t = 0; t < T; ++t) a[t] = Q8_0RowOf(acts[t], nb);
  const __m256i levels = CodeTable256(kMXFP4Codes);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i one = _mm256_set1_epi16(1);
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < whole; b += 8) {
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = rows[r] + b * kBytes;
      if (prefetch != 0) {
        for (int line = 0; line < 8 * kBytes; line += 64) {
          _mm_prefetch(reinterpret_cast<const char*>(blk + prefetch + line), _MM_HINT_T0);
        }
      }
      __m256i lo[4], hi[4];
      for (int p = 0; p < 4; ++p) {
        const uint8_t* q = blk + 2 * p * kBytes + detail::MXFP4::kQs;
        const __m256i v = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q))),
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + kBytes)), 1);
        lo[p] = _mm256_shuffle_epi8(levels, _mm256_and_si256(v, m4));
        hi[p] = _mm256_shuffle_epi8(levels, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
      }
      // The 8 scales 2^(e - 128) in kMXFP4Lane's order.
      uint64_t e8 = 0;
      for (int i = 0; i < 8; ++i) {
        e8 |= static_cast<uint64_t>(blk[kMXFP4Lane[i] * kBytes + detail::MXFP4::kE]) << (8 * i);
      }
      const __m256i e = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(e8)));
      const __m256 ew = _mm256_castsi256_ps(_mm256_blendv_epi8(
          _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23),
          _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e),
          _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e)));
      for (int t = 0; t < T; ++t) {
        const uint8_t* av = a[t].qs + 32 * b;
        __m256i u[4];
        for (int p = 0; p < 4; ++p) {
          u[p] = _mm256_add_epi16(_mm256_maddubs_epi16(lo[p], Load256(av + 64 * p)),
                                  _mm256_maddubs_epi16(hi[p], Load256(av + 64 * p + 32)));
        }
        // [b0 x4, b2 x4 | b1 x4, b3 x4] and [b4, b6 | b5, b7] words, then int32 pairs, then
        // [b0 b2 b4 b6 | b1 b3 b5 b7].
        const __m256i h01 = MaddWd(_mm256_hadd_epi16(u[0], u[1]), one);
        const __m256i h23 = MaddWd(_mm256_hadd_epi16(u[2], u[3]), one);
        const __m256i sum = _mm256_add_epi32(
            _mm256_hadd_epi32(h01, h23),
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[t].corr + b)));
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum),
                                    _mm256_mul_ps(ew, _mm256_loadu_ps(a[t].d + b)), acc[r][t]);
      }
    }
  }
  for (int64_t b = whole; b < nb; ++b) {
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = rows[r] + b * kBytes;
      if (prefetch != 0 && b % 4 == 0) {  // about one per cache line
        _mm_prefetch(reinterpret_cast<const char*>(blk + prefetch), _MM_HINT_T0);
      }
      const __m256i w = LoadBlockWeights<GgmlType::kMXFP4>(blk);
      const __m256 dw = BlockScale<GgmlType::kMXFP4>(blk);
      for (int t = 0; t < T; ++t) {
        // The block's correction joins lane 0 (the lanes are summed at the end).
        const __m256i s = _mm256_add_epi32(BlockDot<GgmlType::kMXFP4>(w, a[t].qs + 32 * b),
                                           _mm256_setr_epi32(a[t].corr[b], 0, 0, 0, 0, 0, 0, 0));
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s),
                                    _mm256_mul_ps(dw, _mm256_broadcast_ss(a[t].d + b)), acc[r][t]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) out[r * T + t] = HSum(acc[r][t]);
  }
}

// ---- k-quants: super-blocks of 256 ----

// vpshufb patterns that put 16-bit word i of each 128-bit lane in all 8 words of that lane,
// from a table: built with set1/set_m128i in the unrolled loops, each pattern cost g++ three
// instructions (vmovd, vpshufd, vinserti128) per use instead of a load folded into vpshufb.
struct alignas(32) WordBcastMask {
  uint8_t b[32];
};
HWY_INLINE __m256i WordBcast(int lo, int hi) {
  static constexpr auto kTable = [] {
    std::array<WordBcastMask, 64> t{};
    for (int l = 0; l < 8; ++l) {
      for (int h = 0; h < 8; ++h) {
        for (int i = 0; i < 16; i += 2) {
          t[8 * l + h].b[i] = static_cast<uint8_t>(2 * l);
          t[8 * l + h].b[i + 1] = static_cast<uint8_t>(2 * l + 1);
          t[8 * l + h].b[16 + i] = static_cast<uint8_t>(2 * h);
          t[8 * l + h].b[17 + i] = static_cast<uint8_t>(2 * h + 1);
        }
      }
    }
    return t;
  }();
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(kTable[8 * lo + hi].b));
}

// Bit `bit` of every byte moved to bit 4 (other bits: don't care; the caller masks 0x10) by one
// 16-bit shift: a shift of at most 4 keeps bit 4 of each byte coming from the same byte. Two
// instructions per 32 fifth bits, not three (and, compare, and); `bit` folds to a constant in
// the unrolled loop, so each case keeps an immediate shift count.
HWY_INLINE __m256i BitTo4(__m256i h, int bit) {
  switch (bit) {
    case 0:
      return _mm256_slli_epi16(h, 4);
    case 1:
      return _mm256_slli_epi16(h, 3);
    case 2:
      return _mm256_slli_epi16(h, 2);
    case 3:
      return _mm256_slli_epi16(h, 1);
    case 4:
      return h;
    case 5:
      return _mm256_srli_epi16(h, 1);
    case 6:
      return _mm256_srli_epi16(h, 2);
    default:
      return _mm256_srli_epi16(h, 3);
  }
}

// The first 16 bytes of a Q4_K / Q5_K super-block (f16 d, f16 dmin, 12 bytes of 6-bit scales
// and mins, in both 128-bit lanes of x) as int16 [sc0 .. sc7 | m0 .. m7]: two vpshufb gather
// each value's bytes into the low byte of its word, a shift and masks keep its bits. Eight
// vector instructions; the same on the integer ALUs (ScalesMinsK4 and a move to a vector) took
// some twenty, and instructions are what a one-thread Q4_K decode is bound by on Zen 4.
HWY_INLINE __m256i ScalesMinsK4Words(__m256i x) {
  const int8_t z = -128;  // vpshufb: a zero byte
  // Scale bytes q[i] = x[4 + i]. Low bits: sc_k = q[k] (k < 4), q[k + 4] (k >= 4, low nibble);
  // m_k = q[k + 4] (k < 4), q[k + 4] (k >= 4, high nibble).
  const __m256i low = _mm256_shuffle_epi8(
      x, _mm256_setr_epi8(4, z, 5, z, 6, z, 7, z, 12, z, 13, z, 14, z, 15, z,  //
                          8, z, 9, z, 10, z, 11, z, 12, z, 13, z, 14, z, 15, z));
  // Top 2 bits of sc_k / m_k (k >= 4): bits 6-7 of q[k - 4] / q[k].
  const __m256i top = _mm256_shuffle_epi8(
      x, _mm256_setr_epi8(z, z, z, z, z, z, z, z, 4, z, 5, z, 6, z, 7, z,  //
                          z, z, z, z, z, z, z, z, 8, z, 9, z, 10, z, 11, z));
  const __m256i low_bits =
      _mm256_and_si256(_mm256_srlv_epi32(low, _mm256_setr_epi32(0, 0, 0, 0, 0, 0, 4, 4)),
                       _mm256_setr_epi16(63, 63, 63, 63, 15, 15, 15, 15,  //
                                         63, 63, 63, 63, 15, 15, 15, 15));
  return _mm256_or_si256(low_bits,
                         _mm256_and_si256(_mm256_srli_epi16(top, 2), _mm256_set1_epi16(0x30)));
}

// Q4_K / Q5_K (kFive): per 64 elements one 32-byte load of quants; sub-block j (32 elements)
// has scale sc[j] and min m[j]: sum = d * sum_j sc_j <q_j, a_j> - dmin * sum_j m_j bsum32_j
// (the activations' bsums are stored negated, so the min term is a plain sum).
template <bool kFive, int R, int T>
void GemvQKAvx2(const uint8_t* const* rows, const uint8_t* const* acts, int64_t n,
                int64_t prefetch, float* out) {
  constexpr int kBytes = kFive ? detail::Q5_K::kBytes : detail::Q4_K::kBytes;
  constexpr int kQs = kFive ? detail::Q5_K::kQs : detail::Q4_K::kQs;
  // ScalesMinsK4Words and the [d, dmin] conversion read the first 16 bytes of a block.
  static_assert(detail::Q4_K::kD == 0 && detail::Q4_K::kDmin == 2 && detail::Q4_K::kScales == 4 &&
                detail::Q5_K::kD == 0 && detail::Q5_K::kDmin == 2 && detail::Q5_K::kScales == 4);
  const int64_t nb = n / 256;
  Q8_KRow a[T];
  for (int t = 0; t < T; ++t) a[t] = Q8_KRowOf(acts[t], nb);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i x10 = _mm256_set1_epi8(0x10);
  // [d, dmin] of the pair converted below, to [d d dmin dmin | d d dmin dmin] (the lanes of
  // the vphaddd of the scaled sums and the min sums).
  const __m256i dd_idx = _mm256_setr_epi32(0, 0, 1, 1, 0, 0, 1, 1);
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = rows[r] + b * kBytes;
      {  // no test of prefetch == 0: the block itself then, already on its way
        const char* next = reinterpret_cast<const char*>(blk + prefetch);
        _mm_prefetch(next, _MM_HINT_T0);
        _mm_prefetch(next + 64, _MM_HINT_T0);
        _mm_prefetch(next + 128, _MM_HINT_T0);
      }
      const __m256i x =
          _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk)));
      const __m256i sm16 = ScalesMinsK4Words(x);
      // The scales in both lanes, for the per-sub-block broadcasts below.
      const __m256i sc16 = _mm256_permute4x64_epi64(sm16, 0x44);
      __m256i hbits = _mm256_setzero_si256();
      if constexpr (kFive) hbits = Load256(blk + detail::Q5_K::kQh);
      // Two chains of sums (sub-blocks 2j and 2j + 1): vpdpwssd's latency per super-block.
      __m256i isum[T], isum2[T], msum[T];
      for (int t = 0; t < T; ++t) {
        isum[t] = _mm256_setzero_si256();
        isum2[t] = _mm256_setzero_si256();
        // [0 | -m_j * bsum32_j]: the activations' bsums are [0 x 8 | -bsum32].
        msum[t] = MaddWd(sm16, Load256(a[t].bsums + 32 * b));
      }
      if constexpr (!kFive) {
        // Q4_K: sub-blocks 2j and 2j + 2 (of the quant bytes of j = 2J and 2J + 1) share a
        // vector, one per 128-bit lane, first and second 16 elements apart: their int16 pair
        // sums add exactly (|sum| <= 4 * 15 * 128) before one vpmaddwd by [sc_2j | sc_2j+2],
        // one scale shuffle and one vpmaddwd per 64 elements instead of two each.
        for (int J = 0; J < 2; ++J) {
          const uint8_t* q = blk + kQs + 64 * J;
          const __m256i w1 = _mm256_inserti128_si256(
              _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q))),
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 32)), 1);
          const __m256i w2 = _mm256_inserti128_si256(
              _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16))),
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 48)), 1);
          const __m256i lo1 = _mm256_and_si256(w1, m4);
          const __m256i lo2 = _mm256_and_si256(w2, m4);
          const __m256i hi1 = _mm256_and_si256(_mm256_srli_epi16(w1, 4), m4);
          const __m256i hi2 = _mm256_and_si256(_mm256_srli_epi16(w2, 4), m4);
          const __m256i s_lo = _mm256_shuffle_epi8(sc16, WordBcast(4 * J, 4 * J + 2));
          const __m256i s_hi = _mm256_shuffle_epi8(sc16, WordBcast(4 * J + 1, 4 * J + 3));
          for (int t = 0; t < T; ++t) {
            const uint8_t* aq = a[t].qs + 256 * b + 128 * J;
            const __m256i p_lo = _mm256_add_epi16(_mm256_maddubs_epi16(lo1, Load256(aq)),
                                                  _mm256_maddubs_epi16(lo2, Load256(aq + 32)));
            const __m256i p_hi = _mm256_add_epi16(_mm256_maddubs_epi16(hi1, Load256(aq + 64)),
                                                  _mm256_maddubs_epi16(hi2, Load256(aq + 96)));
            isum[t] = MaddWdAdd(isum[t], p_lo, s_lo);
            isum2[t] = MaddWdAdd(isum2[t], p_hi, s_hi);
          }
        }
      }
      for (int j = 0; j < (kFive ? 4 : 0); ++j) {
        const __m256i q = Load256(blk + kQs + 32 * j);
        __m256i lo = _mm256_and_si256(q, m4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        if constexpr (kFive) {
          lo = _mm256_or_si256(lo, _mm256_and_si256(BitTo4(hbits, 2 * j), x10));
          hi = _mm256_or_si256(hi, _mm256_and_si256(BitTo4(hbits, 2 * j + 1), x10));
        }
        const __m256i s_lo = _mm256_shuffle_epi8(sc16, WordBcast(2 * j, 2 * j));
        const __m256i s_hi = _mm256_shuffle_epi8(sc16, WordBcast(2 * j + 1, 2 * j + 1));
        for (int t = 0; t < T; ++t) {
          const uint8_t* aq = a[t].qs + 256 * b + 64 * j;
          const __m256i p_lo = _mm256_maddubs_epi16(lo, Load256(aq));
          const __m256i p_hi = _mm256_maddubs_epi16(hi, Load256(aq + 32));
          isum[t] = MaddWdAdd(isum[t], p_lo, s_lo);
          isum2[t] = MaddWdAdd(isum2[t], p_hi, s_hi);
        }
      }
      // [d, dmin] (bytes 0-3 of x) in one conversion, for [d d dmin dmin | d d dmin dmin].
      const __m256 dd =
          _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_cvtph_ps(_mm256_castsi256_si128(x))),
                                   dd_idx);
      for (int t = 0; t < T; ++t) {
        const __m256 sums =
            _mm256_cvtepi32_ps(_mm256_hadd_epi32(_mm256_add_epi32(isum[t], isum2[t]), msum[t]));
        acc[r][t] = _mm256_fmadd_ps(sums, _mm256_mul_ps(dd, _mm256_set1_ps(a[t].d[b])),
                                    acc[r][t]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) out[r * T + t] = HSum(acc[r][t]);
  }
}

template <int R, int T>
void GemvQ4_KAvx2(const uint8_t* const* rows, const uint8_t* const* acts, int64_t n,
                  int64_t prefetch, float* out) {
  GemvQKAvx2<false, R, T>(rows, acts, n, prefetch, out);
}
template <int R, int T>
void GemvQ5_KAvx2(const uint8_t* const* rows, const uint8_t* const* acts, int64_t n,
                  int64_t prefetch, float* out) {
  GemvQKAvx2<true, R, T>(rows, acts, n, prefetch, out);
}

// Q6_K: per 128-element half, 64 bytes of low nibbles and 32 of high bit pairs make four
// vectors of 32 six-bit values; chunk c of half h covers sub-blocks 8h + 2c and 8h + 2c + 1
// (one per 128-bit lane). The offset of 32 comes off once: -32 * sum_j sc_j * bsum_j.
template <int R, int T>
void GemvQ6_KAvx2(const uint8_t* const* rows, const uint8_t* const* acts, int64_t n,
                  int64_t prefetch, float* out) {
  const int64_t nb = n / 256;
  Q8_KRow a[T];
  for (int t = 0; t < T; ++t) a[t] = Q8_KRowOf(acts[t], nb);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = rows[r] + b * detail::Q6_K::kBytes;
      {  // no test of prefetch == 0: the block itself then, already on its way
        const char* next = reinterpret_cast<const char*>(blk + prefetch);
        for (int line = 0; line < 256; line += 64) _mm_prefetch(next + line, _MM_HINT_T0);
      }
      const __m256i sc16 = _mm256_cvtepi8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + detail::Q6_K::kScales)));
      // Two chains of sums (even and odd chunks), for vpdpwssd's latency on AVX3_DL.
      __m256i isum[T], isum2[T];
      for (int t = 0; t < T; ++t) {
        // -32 * sum_j sc_j * bsum_j (bsums stored negated), over 8 int32 lanes (all summed in
        // the end).
        isum[t] = _mm256_slli_epi32(MaddWd(sc16, Load256(a[t].bsums + 32 * b)), 5);
        isum2[t] = _mm256_setzero_si256();
      }
      for (int h = 0; h < 2; ++h) {
        const __m256i ql0 = Load256(blk + detail::Q6_K::kQl + 64 * h);
        const __m256i ql1 = Load256(blk + detail::Q6_K::kQl + 64 * h + 32);
        const __m256i qh = Load256(blk + detail::Q6_K::kQh + 32 * h);
        // Bits 2c, 2c + 1 of qh to bits 4, 5 by one 16-bit shift each (the bits a shift brings
        // across from the other byte are masked off), or none for c = 2.
        const __m256i x30 = _mm256_set1_epi8(0x30);
        __m256i q[4];
        q[0] = _mm256_or_si256(_mm256_and_si256(ql0, m4),
                               _mm256_and_si256(_mm256_slli_epi16(qh, 4), x30));
        q[1] = _mm256_or_si256(_mm256_and_si256(ql1, m4),
                               _mm256_and_si256(_mm256_slli_epi16(qh, 2), x30));
        q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                               _mm256_and_si256(qh, x30));
        q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                               _mm256_and_si256(_mm256_srli_epi16(qh, 2), x30));
        // The 8 scales of this half in both lanes.
        const __m256i sch = h == 0 ? _mm256_permute4x64_epi64(sc16, 0x44)
                                   : _mm256_permute4x64_epi64(sc16, 0xEE);
        for (int c = 0; c < 4; ++c) {
          const __m256i s = _mm256_shuffle_epi8(sch, WordBcast(2 * c, 2 * c + 1));
          for (int t = 0; t < T; ++t) {
            const __m256i p =
                _mm256_maddubs_epi16(q[c], Load256(a[t].qs + 256 * b + 128 * h + 32 * c));
            if (c % 2 == 0) {
              isum[t] = MaddWdAdd(isum[t], p, s);
            } else {
              isum2[t] = MaddWdAdd(isum2[t], p, s);
            }
          }
        }
      }
      const float d = LoadF16(blk + detail::Q6_K::kD);
      for (int t = 0; t < T; ++t) {
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(isum[t], isum2[t])),
                                    _mm256_set1_ps(d * a[t].d[b]), acc[r][t]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) out[r * T + t] = HSum(acc[r][t]);
  }
}

// Q2_K (kQ3 false) and Q3_K: per 128-element half, 32 bytes of two-bit fields make four vectors
// of 32 values (shifts 0, 2, 4, 6); vector j of half h covers sub-blocks 8h + 2j and 8h + 2j + 1
// (one per 128-bit lane), as Q6_K's chunks. Q3_K's third bit, bit 4h + j of hmask[l], is moved
// to bit 2 by one 16-bit shift (within each byte for shifts of at most 5). Q3_K's offset of 4
// comes off once, -4 * sum_j sc_j * bsum_j; Q2_K's mins are -dmin * sum_j m_j * bsum_j.
template <bool kQ3, int R, int T>
void GemvQ23_KAvx2(const uint8_t* const* rows, const uint8_t* const* acts, int64_t n,
                   int64_t prefetch, float* out) {
  using Blk = std::conditional_t<kQ3, detail::Q3_K, detail::Q2_K>;
  const int64_t nb = n / 256;
  Q8_KRow a[T];
  for (int t = 0; t < T; ++t) a[t] = Q8_KRowOf(acts[t], nb);
  const __m256i m3 = _mm256_set1_epi8(3);
  const __m256i x04 = _mm256_set1_epi8(4);
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = rows[r] + b * Blk::kBytes;
      {  // no test of prefetch == 0: the block itself then, already on its way
        const char* next = reinterpret_cast<const char*>(blk + prefetch);
        _mm_prefetch(next, _MM_HINT_T0);
        _mm_prefetch(next + 64, _MM_HINT_T0);
      }
      // The 16 sub-block scales as int16 (Q3_K: sc - 32), and Q2_K's mins.
      __m256i sc16, m16 = _mm256_setzero_si256();
      if constexpr (kQ3) {
        // Four scales per 32-bit word (scale_q3_k's layout): low nibbles from bytes 0-7, the
        // top bit pairs from bytes 8-11, two bits further per group of four.
        const uint8_t* q = blk + detail::Q3_K::kScales;
        const uint32_t w0 = detail::load_u32(q), w1 = detail::load_u32(q + 4);
        const uint32_t top = detail::load_u32(q + 8);
        const uint32_t lo4 = 0x0F0F0F0Fu, lo2 = 0x03030303u;
        const __m128i s8 = _mm_setr_epi32(
            static_cast<int>((w0 & lo4) | ((top & lo2) << 4)),
            static_cast<int>((w1 & lo4) | (((top >> 2) & lo2) << 4)),
            static_cast<int>(((w0 >> 4) & lo4) | (((top >> 4) & lo2) << 4)),
            static_cast<int>(((w1 >> 4) & lo4) | (((top >> 6) & lo2) << 4)));
        sc16 = _mm256_sub_epi16(_mm256_cvtepu8_epi16(s8), _mm256_set1_epi16(32));
      } else {
        const __m256i raw = _mm256_cvtepu8_epi16(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + detail::Q2_K::kScales)));
        sc16 = _mm256_and_si256(raw, _mm256_set1_epi16(0x0F));
        m16 = _mm256_srli_epi16(raw, 4);
      }
      __m256i hm = _mm256_setzero_si256();
      if constexpr (kQ3) hm = Load256(blk + detail::Q3_K::kHmask);
      // Two chains of sums (even and odd vectors), for vpdpwssd's latency on AVX3_DL.
      __m256i isum[T], isum2[T], msum[T];
      for (int t = 0; t < T; ++t) {
        const __m256i sb = MaddWd(kQ3 ? sc16 : m16, Load256(a[t].bsums + 32 * b));
        // bsums are stored negated: Q3_K -4 * sum sc_j bsum_j; Q2_K -sum m_j bsum_j.
        isum[t] = kQ3 ? _mm256_slli_epi32(sb, 2) : _mm256_setzero_si256();
        msum[t] = sb;
        isum2[t] = _mm256_setzero_si256();
      }
      for (int h = 0; h < 2; ++h) {
        const __m256i q = Load256(blk + Blk::kQs + 32 * h);
        const __m256i sch = h == 0 ? _mm256_permute4x64_epi64(sc16, 0x44)
                                   : _mm256_permute4x64_epi64(sc16, 0xEE);
        for (int j = 0; j < 4; ++j) {
          __m256i v = _mm256_and_si256(j == 0   ? q
                                       : j == 1 ? _mm256_srli_epi16(q, 2)
                                       : j == 2 ? _mm256_srli_epi16(q, 4)
                                                : _mm256_srli_epi16(q, 6),
                                       m3);
          if constexpr (kQ3) {
            const int bit = 4 * h + j;  // to bit 2
            const __m256i hb = bit == 0   ? _mm256_slli_epi16(hm, 2)
                               : bit == 1 ? _mm256_slli_epi16(hm, 1)
                               : bit == 2 ? hm
                               : bit == 3 ? _mm256_srli_epi16(hm, 1)
                               : bit == 4 ? _mm256_srli_epi16(hm, 2)
                               : bit == 5 ? _mm256_srli_epi16(hm, 3)
                               : bit == 6 ? _mm256_srli_epi16(hm, 4)
                                          : _mm256_srli_epi16(hm, 5);
            v = _mm256_or_si256(v, _mm256_and_si256(hb, x04));
          }
          const __m256i sw = _mm256_shuffle_epi8(sch, WordBcast(2 * j, 2 * j + 1));
          for (int t = 0; t < T; ++t) {
            const __m256i p =
                _mm256_maddubs_epi16(v, Load256(a[t].qs + 256 * b + 128 * h + 32 * j));
            if (j % 2 == 0) {
              isum[t] = MaddWdAdd(isum[t], p, sw);
            } else {
              isum2[t] = MaddWdAdd(isum2[t], p, sw);
            }
          }
        }
      }
      const float d = LoadF16(blk + Blk::kD);
      for (int t = 0; t < T; ++t) {
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(isum[t], isum2[t])),
                                    _mm256_set1_ps(d * a[t].d[b]), acc[r][t]);
        if constexpr (!kQ3) {
          const float dmin = LoadF16(blk + detail::Q2_K::kDmin);
          acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum[t]),
                                      _mm256_set1_ps(dmin * a[t].d[b]), acc[r][t]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) out[r * T + t] = HSum(acc[r][t]);
  }
}

template <int R, int T>
void GemvQ2_KAvx2(const uint8_t* const* rows, const uint8_t* const* acts, int64_t n,
                  int64_t prefetch, float* out) {
  GemvQ23_KAvx2<false, R, T>(rows, acts, n, prefetch, out);
}
template <int R, int T>
void GemvQ3_KAvx2(const uint8_t* const* rows, const uint8_t* const* acts, int64_t n,
                  int64_t prefetch, float* out) {
  GemvQ23_KAvx2<true, R, T>(rows, acts, n, prefetch, out);
}

// IQ4_XS: per sub-block of 32 one 16-byte load, its nibbles [low | high] = elements in order,
// looked up as signed levels (vpshufb) and multiplied as |w| times a with w's sign; the int16
// pair sums (at most 2 * 127 * 127) times the sub-block's scale ls - 32 by vpmaddwd, so the
// super-block sums exactly in int32 (at most 8 * 2 * 32258 * 32 per lane) before one float
// multiply-add, as the reference.
template <int R, int T>
void GemvIQ4_XSAvx2(const uint8_t* const* rows, const uint8_t* const* acts, int64_t n,
                    int64_t prefetch, float* out) {
  const int64_t nb = n / 256;
  Q8_KRow a[T];
  for (int t = 0; t < T; ++t) a[t] = Q8_KRowOf(acts[t], nb);
  alignas(16) static constexpr CodeTable kLevels = [] {
    CodeTable t{};
    for (int i = 0; i < 16; ++i) t.v[i] = static_cast<uint8_t>(detail::kIQ4NLValues[i]);
    return t;
  }();
  const __m256i levels = CodeTable256(kLevels);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i shift = _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4);
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = rows[r] + b * detail::IQ4_XS::kBytes;
      {  // no test of prefetch == 0: the block itself then, already on its way
        const char* next = reinterpret_cast<const char*>(blk + prefetch);
        _mm_prefetch(next, _MM_HINT_T0);
        _mm_prefetch(next + 64, _MM_HINT_T0);
        _mm_prefetch(next + 128, _MM_HINT_T0);
      }
      // The eight scales ls - 32: nibble j of scales_l | bits 2j..2j+1 of scales_h << 4.
      const uint32_t sl = detail::load_u32(blk + detail::IQ4_XS::kScalesL);
      const uint32_t sh = detail::load_u16(blk + detail::IQ4_XS::kScalesH);
      __m256i isum[T], isum2[T];
      for (int t = 0; t < T; ++t) {
        isum[t] = _mm256_setzero_si256();
        isum2[t] = _mm256_setzero_si256();
      }
      for (int j = 0; j < 8; ++j) {
        const int ls = static_cast<int>(((sl >> (4 * j)) & 0xF) | (((sh >> (2 * j)) & 3) << 4));
        const __m256i sw = _mm256_set1_epi16(static_cast<int16_t>(ls - 32));
        const __m256i q = _mm256_broadcastsi128_si256(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + detail::IQ4_XS::kQs + 16 * j)));
        const __m256i w =
            _mm256_shuffle_epi8(levels, _mm256_and_si256(_mm256_srlv_epi32(q, shift), m4));
        const __m256i wabs = _mm256_sign_epi8(w, w);
        for (int t = 0; t < T; ++t) {
          const __m256i av = _mm256_sign_epi8(Load256(a[t].qs + 256 * b + 32 * j), w);
          const __m256i p = _mm256_maddubs_epi16(wabs, av);
          if (j % 2 == 0) {
            isum[t] = MaddWdAdd(isum[t], p, sw);
          } else {
            isum2[t] = MaddWdAdd(isum2[t], p, sw);
          }
        }
      }
      const float d = LoadF16(blk + detail::IQ4_XS::kD);
      for (int t = 0; t < T; ++t) {
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(isum[t], isum2[t])),
                                    _mm256_set1_ps(d * a[t].d[b]), acc[r][t]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) out[r * T + t] = HSum(acc[r][t]);
  }
}

// ---- dispatch (the same interface as the AVX3_DL kernels) ----

using GemvDecodeFn = void (*)(const uint8_t* const*, const uint8_t* const*, int64_t, int64_t,
                              float*);

constexpr int kDecodeMaxRowsAvx2 = 2;  // rows per tile with several tokens

// A type's table of R weight rows x T tokens, 1 <= R <= 2 (16 vector registers), 1 <= T <= 4,
// for its PickDecodeAvx2 (types/<type>.cpp): of a kernel template F<R, T>, or of the blocks-of-32
// kernel GemvBlocksAvx2<K, R, T>.
#ifndef TOVA_DECODE_AVX2_TABLE
#define TOVA_DECODE_AVX2_ROW(F, R) {&F<R, 1>, &F<R, 2>, &F<R, 3>, &F<R, 4>}
#define TOVA_DECODE_AVX2_TABLE(F) {TOVA_DECODE_AVX2_ROW(F, 1), TOVA_DECODE_AVX2_ROW(F, 2)}
#define TOVA_BLOCKS_AVX2_ROW(K, R)                                                  \
  {&GemvBlocksAvx2<K, R, 1>, &GemvBlocksAvx2<K, R, 2>, &GemvBlocksAvx2<K, R, 3>, \
   &GemvBlocksAvx2<K, R, 4>}
#define TOVA_BLOCKS_AVX2_TABLE(K) {TOVA_BLOCKS_AVX2_ROW(K, 1), TOVA_BLOCKS_AVX2_ROW(K, 2)}
#endif

// The blocks-of-32 kernel's table for type K (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL).
template <GgmlType K>
GemvDecodeFn PickBlocksAvx2(int r, int t) {
  static constexpr GemvDecodeFn kTable[2][4] = TOVA_BLOCKS_AVX2_TABLE(K);
  return kTable[r - 1][t - 1];
}

#endif  // HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL

}  // namespace tova::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
