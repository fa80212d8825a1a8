// Q4_0_R8: Q4_0 rows interleaved in groups of 8, made at load from a file's Q4_0 matrices whose
// row count divides by 8 (model/weight_repack.cpp); never read from or written to a file.
//
// Why: the Q4_0 decode kernels read one row at a time, so each activation block is loaded and
// lined up again for every row, and each row's nibble, scale and reduction work is its own.
// Interleaving 8 rows puts word k (4 bytes: elements 4k..4k+3 in the low nibbles, 16+4k.. in
// the high ones) of one block of all 8 rows in one 256-bit vector, lane r = row r: a broadcast
// activation word multiplies all 8 rows at once (vpdpbusd on AVX3_DL, vpmaddubsw on AVX2 and
// AVX3), the 8 rows' scales convert in one vcvtph2ps, and each block ends with one conversion,
// one scale product and one FMA for 8 rows, with no horizontal sums. One group is one
// sequential stream. (ik_llama.cpp's Q4_0_R8 and llama.cpp's Q4_0 8x8 repack rest on the same
// idea; this layout and its kernels are tova's own.)
//
// Layout of a group (rows 8g .. 8g+7 of a matrix of nb blocks a row; 8 * nb * 18 bytes, as
// many as the 8 Q4_0 rows): per block b, 144 bytes at 144 b:
//   f16 d[8]      row r's scale at 2 r
//   u8 qs[4][32]  word k at 16 + 32 k: row r's Q4_0 bytes 4k .. 4k+3 at 16 + 32 k + 4 r
// A matrix of this type is a whole number of groups, so rows [o_begin, o_end) of a call may
// cut a group: its kernels compute the whole group and store the rows asked for.
//
// Kernels: few tokens (1 .. 11) on AVX3_DL, AVX3 and AVX2: the group kernels below (tuned on
// Zen 4; 256-bit on every x86 target: 8 rows x 4 bytes is one vector, and the VNNI form is
// AVX-512VL's 256-bit vpdpbusd); many tokens and the other targets (SSE4, scalar, NEON): the
// engine's row paths, each row unpacked from its group (UnpackRow) into Q4_0's unpacked form,
// so they compute exactly what Q4_0 computes. Activations: Q8_0.
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/q4_0_r8.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#ifndef TOVA_KERNELS_TYPES_Q4_0_R8_LAYOUT_
#define TOVA_KERNELS_TYPES_Q4_0_R8_LAYOUT_
namespace tova::kernels::detail {
// The group layout's facts (see the comment above).
struct Q4_0R8 {
  static constexpr int kRows = 8;
  static constexpr int kColBytes = 8 * Q4_0::kBytes;  // one block of 8 rows: 144
  static constexpr int kQs = 16;                      // the words after the 8 scales
  static constexpr int kWordBytes = 32;               // word k of the 8 rows
};
}  // namespace tova::kernels::detail
#endif

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

using detail::Q4_0R8;

// Row o of an interleaved matrix in Q4_0's unpacked form (UnpackInfo {32, 8, false, 4}).
inline void UnpackQ4_0R8Row(const WeightMatrix& w, int64_t o, uint8_t* u, float* mul, float* add) {
  const int64_t nb = w.n_in / 32;
  const uint8_t* group = w.data + (o / Q4_0R8::kRows) * Q4_0R8::kRows * w.row_bytes;
  const int r = static_cast<int>(o % Q4_0R8::kRows);
  alignas(16) uint8_t qs[16];
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* col = group + b * Q4_0R8::kColBytes;
    for (int k = 0; k < 4; ++k) {
      std::memcpy(qs + 4 * k, col + Q4_0R8::kQs + Q4_0R8::kWordBytes * k + 4 * r, 4);
    }
    SplitNibbles(qs, u + 32 * b);
    mul[b] = LoadF16(col + 2 * r);
    add[b] = 0.0f;
  }
}

#if TOVA_AVX2_DECODE_TARGET

// A token's activations for the group kernels: per block its 32 int8 values, then the blocks'
// scales (float) and their offset terms -8 * sum(a) (int32): 40 bytes a block.
inline int64_t GroupActBytesQ4_0R8(int64_t n) { return n / 32 * 40; }

inline void PrepareGroupActsQ4_0R8(const uint8_t* blocks, int64_t n, uint8_t* out) {
  const int64_t nb = n / 32;
  int8_t* qs = reinterpret_cast<int8_t*>(out);
  float* d = reinterpret_cast<float*>(out + nb * 32);
  int32_t* corr = reinterpret_cast<int32_t*>(out + nb * 36);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = blocks + b * detail::Q8_0::kBytes;
    std::memcpy(qs + 32 * b, blk + detail::Q8_0::kQs, 32);
    int32_t sum = 0;
    for (int j = 0; j < 32; ++j) sum += static_cast<int8_t>(blk[detail::Q8_0::kQs + j]);
    corr[b] = -8 * sum;
    d[b] = LoadF16(blk + detail::Q8_0::kD);
  }
}

// Tokens one call of the group kernel takes: a float and one (AVX2) or two (AVX3_DL) integer
// accumulators each, beside the weight words (AVX2's 16 vector registers fit 4 tokens,
// AVX-512's 32 fit 8).
#if HWY_TARGET == HWY_AVX2
constexpr int kGroupMaxTokens = 4;
#else
constexpr int kGroupMaxTokens = 8;
#endif

#if HWY_TARGET == HWY_AVX3_DL
// acc += the 4-byte dot products of u (unsigned) and a (signed) per int32 lane: the 256-bit
// vpdpbusd in its EVEX (AVX-512 VNNI + VL) form. Highway's AVX3_DL target string enables
// AVX-VNNI, so the compiler would pick the VEX form, which Zen 4 does not have (SIGILL).
// The activation word is broadcast from memory inside the instruction ({1to8}): one
// macro-op, where a separate vpbroadcastd was a second one per word and token.
HWY_INLINE __m256i DpbusdEvex(__m256i acc, __m256i u, const int8_t* a4) {
  __asm__("%{evex%} vpdpbusd %2%{1to8%}, %1, %0"
          : "+v"(acc)
          : "v"(u), "m"(*reinterpret_cast<const int32_t*>(a4)));
  return acc;
}
#endif

// out[t][r] = dot(row r of the group, token t) for NT tokens; nb blocks. Each block's sum is
// exact in int32 (AVX2: its int16 pair sums too, at most 8 x 2 x 15 x 127 < 2^15); then per
// block and token: (float)(sum - 8 sum(a)) * (d_w * d_a) added by one FMA, blocks in order.
template <int NT>
void GemvQ4_0R8(const uint8_t* group, const uint8_t* const* acts, int64_t nb, const uint8_t* pf_end,
                float* out) {
  const __m256i nib = _mm256_set1_epi8(0x0F);
#if HWY_TARGET != HWY_AVX3_DL
  const __m256i ones = _mm256_set1_epi16(1);
#endif
  const int8_t* qs[NT];
  const float* d[NT];
  const int32_t* corr[NT];
  for (int t = 0; t < NT; ++t) {
    qs[t] = reinterpret_cast<const int8_t*>(acts[t]);
    d[t] = reinterpret_cast<const float*>(acts[t] + nb * 32);
    corr[t] = reinterpret_cast<const int32_t*>(acts[t] + nb * 36);
  }
  __m256 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_ps();
  // Prefetch ~4.5 KB ahead (as the row kernels), each line once, none past pf_end.
  constexpr int64_t kAhead = 4608;
  const uint8_t* pf = group + kAhead;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* col = group + b * Q4_0R8::kColBytes;
    for (; pf < col + kAhead + Q4_0R8::kColBytes && pf < pf_end; pf += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(pf), _MM_HINT_T0);
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(col)));
#if HWY_TARGET == HWY_AVX3_DL
    // Two chains a token (low and high nibbles): vpdpbusd's latency is ~4-5 cycles, and 8 in
    // one chain per block left the multi-token kernels waiting on it.
    __m256i isum[NT], isum_hi[NT];
    for (int t = 0; t < NT; ++t) {
      isum[t] = _mm256_set1_epi32(corr[t][b]);
      isum_hi[t] = _mm256_setzero_si256();
    }
#else
    __m256i s16[NT];
    for (int t = 0; t < NT; ++t) s16[t] = _mm256_setzero_si256();
#endif
    for (int k = 0; k < 4; ++k) {
      const __m256i wv = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(col + Q4_0R8::kQs + Q4_0R8::kWordBytes * k));
      const __m256i lo = _mm256_and_si256(wv, nib);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(wv, 4), nib);
      for (int t = 0; t < NT; ++t) {
#if HWY_TARGET == HWY_AVX3_DL
        isum[t] = DpbusdEvex(isum[t], lo, qs[t] + 32 * b + 4 * k);
        isum_hi[t] = DpbusdEvex(isum_hi[t], hi, qs[t] + 32 * b + 16 + 4 * k);
#else
        int32_t a_lo, a_hi;
        std::memcpy(&a_lo, qs[t] + 32 * b + 4 * k, 4);
        std::memcpy(&a_hi, qs[t] + 32 * b + 16 + 4 * k, 4);
        s16[t] = _mm256_add_epi16(s16[t], _mm256_maddubs_epi16(lo, _mm256_set1_epi32(a_lo)));
        s16[t] = _mm256_add_epi16(s16[t], _mm256_maddubs_epi16(hi, _mm256_set1_epi32(a_hi)));
#endif
      }
    }
    for (int t = 0; t < NT; ++t) {
#if HWY_TARGET == HWY_AVX3_DL
      const __m256i sum = _mm256_add_epi32(isum[t], isum_hi[t]);
#else
      const __m256i sum =
          _mm256_add_epi32(_mm256_madd_epi16(s16[t], ones), _mm256_set1_epi32(corr[t][b]));
#endif
      const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(d[t][b]));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), scale, acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) _mm256_storeu_ps(out + 8 * t, acc[t]);
}

using GroupKernelFn = void (*)(const uint8_t*, const uint8_t* const*, int64_t, const uint8_t*,
                               float*);

inline GroupKernelFn PickGroupKernelQ4_0R8(int nt) {
  static constexpr GroupKernelFn kTable[8] = {&GemvQ4_0R8<1>,
                                              &GemvQ4_0R8<2>,
                                              &GemvQ4_0R8<3>,
                                              &GemvQ4_0R8<4>,
                                              &GemvQ4_0R8 < kGroupMaxTokens < 5 ? 4 : 5 >,
                                              &GemvQ4_0R8 < kGroupMaxTokens < 6 ? 4 : 6 >,
                                              &GemvQ4_0R8 < kGroupMaxTokens < 7 ? 4 : 7 >,
                                              &GemvQ4_0R8 < kGroupMaxTokens < 8 ? 4 : 8 > };
  return kTable[nt - 1];
}

// Rows [o_begin, o_end) for every token: the groups that hold them, tokens kGroupMaxTokens at a
// time (a group's 8 rows stay in L1 for the next tokens).
inline void DecodeGroupsQ4_0R8(const WeightMatrix& w, const detail::ActBuffer& a, int64_t o_begin,
                               int64_t o_end, float* y) {
  const int64_t nb = w.n_in / 32;
  const int64_t group_bytes = Q4_0R8::kRows * static_cast<int64_t>(w.row_bytes);
  const uint8_t* end = w.data + w.n_out * static_cast<int64_t>(w.row_bytes);
  alignas(32) float out[8 * kGroupMaxTokens];
  for (int64_t g = o_begin / Q4_0R8::kRows; g * Q4_0R8::kRows < o_end; ++g) {
    const uint8_t* group = w.data + g * group_bytes;
    const int64_t o0 = g * Q4_0R8::kRows;
    const int r_begin = static_cast<int>(std::max<int64_t>(o_begin - o0, 0));
    const int r_end = static_cast<int>(std::min<int64_t>(o_end - o0, Q4_0R8::kRows));
    for (int64_t t0 = 0; t0 < a.n_tok; t0 += kGroupMaxTokens) {
      const int nt = static_cast<int>(std::min<int64_t>(kGroupMaxTokens, a.n_tok - t0));
      const uint8_t* acts[kGroupMaxTokens];
      for (int i = 0; i < nt; ++i) acts[i] = DecodeRow(a, t0 + i);
      PickGroupKernelQ4_0R8(nt)(group, acts, nb, t0 == 0 ? end : group, out);
      for (int i = 0; i < nt; ++i) {
        float* dst = y + (t0 + i) * w.n_out + o0;
        for (int r = r_begin; r < r_end; ++r) dst[r] = out[8 * i + r];
      }
    }
  }
}

#endif  // TOVA_AVX2_DECODE_TARGET

struct Q4_0R8Type : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kQ4_0_R8;
  static constexpr GgmlType kActType = GgmlType::kQ8_0;
  static constexpr detail::UnpackInfo kUnpack{32, 8, false, 4};  // Q4_0's
  static constexpr bool kInterleaved = true;
  static constexpr int kGroupRows = Q4_0R8::kRows;
  static constexpr GgmlType kBaseType = GgmlType::kQ4_0;
  static void UnpackRow(const WeightMatrix& w, int64_t o, uint8_t* u, float* mul, float* add) {
    UnpackQ4_0R8Row(w, o, u, mul, add);
  }
  // Rows cannot be addressed one by one (kInterleaved): nothing calls this.
  static void Unpack(const uint8_t*, int64_t, uint8_t*, float*, float*) {}
#if TOVA_AVX2_DECODE_TARGET
  static constexpr bool kDecodeGroups = true;
  static int64_t GroupActBytes(int64_t n) { return GroupActBytesQ4_0R8(n); }
  static void PrepareGroupActs(const uint8_t* blocks, int64_t n, uint8_t* out) {
    PrepareGroupActsQ4_0R8(blocks, n, out);
  }
  static void DecodeGroups(const WeightMatrix& w, const detail::ActBuffer& a, int64_t o_begin,
                           int64_t o_end, float* y) {
    DecodeGroupsQ4_0R8(w, a, o_begin, o_end, y);
  }
#endif
};
using UnitType = Q4_0R8Type;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using detail::Q4_0;
using detail::Q4_0R8;

// Q4_0 rows [0, n_rows) -> groups of 8 (the layout above).
void repack_q4_0_r8(const uint8_t* src, int64_t n_in, int64_t n_rows, uint8_t* dst) {
  const int64_t nb = n_in / 32;
  const int64_t row_bytes = nb * Q4_0::kBytes;
  for (int64_t g = 0; g < n_rows / Q4_0R8::kRows; ++g) {
    uint8_t* group = dst + g * Q4_0R8::kRows * row_bytes;
    for (int r = 0; r < Q4_0R8::kRows; ++r) {
      const uint8_t* row = src + (g * Q4_0R8::kRows + r) * row_bytes;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = row + b * Q4_0::kBytes;
        uint8_t* col = group + b * Q4_0R8::kColBytes;
        std::memcpy(col + 2 * r, blk + Q4_0::kD, 2);
        for (int k = 0; k < 4; ++k) {
          std::memcpy(col + Q4_0R8::kQs + Q4_0R8::kWordBytes * k + 4 * r, blk + Q4_0::kQs + 4 * k,
                      4);
        }
      }
    }
  }
}

// The inverse for one row: row `row` of the groups at `data` as a Q4_0 row.
void row_of_q4_0_r8(const uint8_t* data, int64_t n_in, int64_t row, uint8_t* dst) {
  const int64_t nb = n_in / 32;
  const int64_t row_bytes = nb * Q4_0::kBytes;
  const uint8_t* group = data + (row / Q4_0R8::kRows) * Q4_0R8::kRows * row_bytes;
  const int r = static_cast<int>(row % Q4_0R8::kRows);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* col = group + b * Q4_0R8::kColBytes;
    uint8_t* blk = dst + b * Q4_0::kBytes;
    std::memcpy(blk + Q4_0::kD, col + 2 * r, 2);
    for (int k = 0; k < 4; ++k) {
      std::memcpy(blk + Q4_0::kQs + 4 * k, col + Q4_0R8::kQs + Q4_0R8::kWordBytes * k + 4 * r, 4);
    }
  }
}

// No row-pointer references: rows are reached through kRowOf and Q4_0's references.
constexpr void (*kDequantize)(const uint8_t*, float*, int64_t) = nullptr;
constexpr void (*kQuantize)(const float*, uint8_t*, int64_t) = nullptr;
constexpr double (*kDot)(int64_t, const uint8_t*, const uint8_t*) = nullptr;
constexpr auto kRepack = &repack_q4_0_r8;
constexpr auto kRowOf = &row_of_q4_0_r8;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kQ4_0_R8Kernels
#define TOVA_UNIT_INTERLEAVED
#include "kernels/types/unit-inl.h"
