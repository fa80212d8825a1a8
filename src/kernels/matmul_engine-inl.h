// The per-target matmul kernels: activation preparation, matrix-vector tiles for a few tokens
// and register-tiled matrix-matrix kernels for many (batched decode, prompt processing).
//
// Few tokens (kDecodeRows / kInt8Rows / kFloatRows): weight rows are the vector lanes; a tile of
// up to 4 rows x 4 tokens reads each weight row once per 4 tokens. Decode is bound by the bytes
// of weights read, so this path only has to keep up with memory: the quantized types read their
// blocks directly (matmul_decode-inl.h, matmul_decode_avx2-inl.h); other targets unpack rows.
//
// Many tokens (kInt8Lanes / kFloatLanes): tokens are the vector lanes. A weight is broadcast
// (4 bytes = 4 int8 weights for vpdpbusd, or one float for FMA) and multiplied into 16 tokens
// at once, so one instruction does 64 int8 MACs with no horizontal sums; a 4-row x 48-token
// register tile reuses every activation load 4 times and every weight broadcast three times (it
// replaced a 32-token tile: docs/PERFORMANCE.md). Rows are
// unpacked once per chunk of kRowChunk and reused for all tokens (see the loop nest below).
// The per-target matmul engine every weight type's unit (src/kernels/types/<type>.cpp)
// instantiates for its own type: activation preparation, matrix-vector tiles for a few tokens
// and register-tiled matrix-matrix kernels for many (batched decode, prompt processing), plus
// the type's dequantize and single-row dot product. `Ty` is the type's traits struct (see
// WeightTypeBase below): its layout facts, its unpack and, on x86, its direct decode kernels.
// Dispatch is once per call (weight_types.cpp's table, then Highway's target), and every hot
// loop below sees the type as a compile-time constant, so each unit compiles only its type's
// kernels (gemma.cpp's one matmul unit per weight type).
//
// Few tokens (kDecodeRows / kInt8Rows / kFloatRows): weight rows are the vector lanes; a tile of
// up to 4 rows x 4 tokens reads each weight row once per 4 tokens. Decode is bound by the bytes
// of weights read, so this path only has to keep up with memory: the quantized types read their
// blocks directly (matmul_decode-inl.h, matmul_decode_avx2-inl.h); other targets unpack rows.
//
// Many tokens (kInt8Lanes / kFloatLanes): tokens are the vector lanes. A weight is broadcast
// (4 bytes = 4 int8 weights for vpdpbusd, or one float for FMA) and multiplied into 16 tokens
// at once, so one instruction does 64 int8 MACs with no horizontal sums; a 4-row x 48-token
// register tile reuses every activation load 4 times and every weight broadcast three times (it
// replaced a 32-token tile: docs/PERFORMANCE.md). Rows are
// unpacked once per chunk of kRowChunk and reused for all tokens (see the loop nest below).
//
// Highway "-inl.h" pattern: included by each unit inside its per-target passes.

#if defined(TOVA_KERNELS_MATMUL_ENGINE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TOVA_KERNELS_MATMUL_ENGINE_INL_H_
#undef TOVA_KERNELS_MATMUL_ENGINE_INL_H_
#else
#define TOVA_KERNELS_MATMUL_ENGINE_INL_H_
#endif

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "kernels/matmul_internal.h"
#include "kernels/quant_blocks.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/quant_kernels-inl.h"
#include "kernels/matmul_decode-inl.h"
#include "kernels/matmul_decode_avx2-inl.h"
#include "kernels/matmul_decode_quad-inl.h"
#include "kernels/matmul_gemm-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

using detail::ActBuffer;
using detail::ActLayout;
using detail::AlignedBuffer;

// What a weight type's traits struct holds; a type's unit derives from this and overrides what
// it has. Float types (F32, F16, BF16) set kFloat; quantized ones give kUnpack and Unpack()
// (see detail::UnpackInfo). Direct decode kernels (reading GGUF blocks in place, few tokens):
// kDecodeAvx2 with PickDecodeAvx2(r, t) on AVX2, AVX3 and AVX3_DL (matmul_decode_avx2-inl.h);
// kDecodeVnni with PickDecodeVnni(r, t), DecodeActBytesVnni(n) and PrepareDecodeVnni(qs, d, n,
// out) on AVX3_DL (matmul_decode-inl.h), where UseVnniDecode(n_tok) may leave some calls to the
// 256-bit kernel. kDecodeQuad with PickDecodeQuad(r) (and kActOffset, the weights' unsigned
// offset): token-quad kernels for tiles of 4 tokens on the same targets as kDecodeAvx2
// (matmul_decode_quad-inl.h).
struct WeightTypeBase {
  static constexpr bool kFloat = false;
  static constexpr bool kMatmul = true;  // false: an activation format (dequantize only)
  static constexpr bool kDecodeAvx2 = false;
  static constexpr bool kDecodeVnni = false;
  static constexpr bool kDecodeQuad = false;
  static constexpr int kDecodeRowsAvx2 = 2;  // rows a 256-bit decode tile takes (kernels to 2)
  static bool UseVnniDecode(int64_t) { return true; }
  // Interleaved layouts (a base type's rows stored in groups at load; types/q4_0_r8.cpp):
  // kInterleaved with UnpackRow(w, o, u, mul, add), which the row-at-a-time paths (Int8Rows,
  // the token-lane tiles of prompts) unpack rows through, so they compute as the base type;
  // kDecodeGroups with GroupActBytes(n), PrepareGroupActs(q8_0 blocks, n, out) and
  // DecodeGroups(w, acts, o_begin, o_end, y): the type's own few-token kernels, which take a
  // group of rows at a time.
  static constexpr bool kInterleaved = false;
  static constexpr bool kDecodeGroups = false;
};

// The targets with the 256-bit direct decode kernels (matmul_decode_avx2-inl.h).
#define TOVA_AVX2_DECODE_TARGET \
  (HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)

// Which direct decode kernels a call of n_tok tokens takes: the VNNI kernels on AVX3_DL where
// the type has them, the 256-bit ones otherwise; other targets unpack rows (Int8Rows).
template <class Ty>
bool UsesVnniDecode(int64_t n_tok) {
#if HWY_TARGET == HWY_AVX3_DL
  if constexpr (Ty::kDecodeVnni) return Ty::UseVnniDecode(n_tok);
#endif
  (void)n_tok;
  return false;
}
template <class Ty>
bool UsesAvx2Decode(int64_t n_tok) {
  return !UsesVnniDecode<Ty>(n_tok) && Ty::kDecodeAvx2;
}
template <class Ty>
constexpr bool HasGemvDecode() {
  return Ty::kDecodeVnni || Ty::kDecodeAvx2 || Ty::kDecodeGroups;
}

#if TOVA_AVX2_DECODE_TARGET
// Bytes of one token's activations for the decode kernels, and the most rows per tile.
template <class Ty>
int64_t DecodeActBytes(int64_t n, int64_t n_tok) {
#if HWY_TARGET == HWY_AVX3_DL
  if constexpr (Ty::kDecodeVnni) {
    if (Ty::UseVnniDecode(n_tok)) return Ty::DecodeActBytesVnni(n);
  }
#endif
  (void)n_tok;
  return DecodeActBytesAvx2(Ty::kType, n);
}
template <class Ty>
int DecodeMaxRows(int64_t n_tok) {
#if HWY_TARGET == HWY_AVX3_DL
  if (UsesVnniDecode<Ty>(n_tok)) return kDecodeMaxRowsVnni;
#endif
  (void)n_tok;
  return Ty::kDecodeRowsAvx2;
}
// r rows x tile_tok tokens of a call of n_tok tokens.
template <class Ty>
GemvDecodeFn PickGemvDecode(int r, int tile_tok, int64_t n_tok) {
#if HWY_TARGET == HWY_AVX3_DL
  if constexpr (Ty::kDecodeVnni) {
    if (Ty::UseVnniDecode(n_tok)) return Ty::PickDecodeVnni(r, tile_tok);
  }
#endif
  (void)n_tok;
  if constexpr (Ty::kDecodeAvx2) {
    return Ty::PickDecodeAvx2(r, tile_tok);
  } else {
    return nullptr;
  }
}
#endif

// Fewest tokens for which the token-lane kernels beat the row tiles (measured with
// bench_matmul on AVX3_DL; types with a direct decode kernel have the faster row kernel, so
// they switch later).
constexpr int64_t kInt8LanesMinTokens = 8;
constexpr int64_t kDecodeLanesMinTokens = 12;
constexpr int64_t kFloatLanesMinTokens = 20;
constexpr int kRowChunk = 32;  // rows unpacked together for the token-lane kernels
static_assert(kInt8LanesMinTokens <= kMatmulBatchInvariantTokens &&
              kDecodeLanesMinTokens <= kMatmulBatchInvariantTokens &&
              kFloatLanesMinTokens <= kMatmulBatchInvariantTokens);

inline int FloatTokenLanes() { return 2 * static_cast<int>(hn::Lanes(hn::ScalableTag<float>())); }

// Scratch shared by every weight type's kernels of this target, one set per thread (as when all
// types were one unit: a model alternating types reuses the same cache-warm buffers).
struct Scratch {
  AlignedBuffer blocks, row;                         // PrepareActs
  AlignedBuffer rows_u, rows_s;                      // Int8Rows
  AlignedBuffer lanes_u, lanes_w, lanes_s, lanes_acc;  // Int8Lanes
  AlignedBuffer float_w, float_acc;                  // FloatLanes
  AlignedBuffer dot_u, dot_qs, dot_scale;            // VecDot
};
inline Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

inline void PlanFloatActs(int64_t n_in, int64_t n_tok, ActBuffer* a) {
  if (n_tok < kFloatLanesMinTokens) {
    a->layout = ActLayout::kFloatRows;
    a->lanes = 1;
    return;
  }
  a->layout = ActLayout::kFloatLanes;
  a->lanes = FloatTokenLanes();
  a->n_tok_group = (n_tok + a->lanes - 1) / a->lanes;
  a->qs_stride = n_in * a->lanes * static_cast<int64_t>(sizeof(float));
  float* xs = a->qs.ensure<float>(static_cast<size_t>(a->n_tok_group * n_in * a->lanes));
  if (n_tok % a->lanes != 0) {  // padding tokens must be zero
    std::memset(xs + (a->n_tok_group - 1) * n_in * a->lanes, 0, a->qs_stride);
  }
}

#if TOVA_INT8_LANES_TARGET
inline void PlanInt8Lanes(int64_t n_in, int64_t n_tok, ActBuffer* a) {
  constexpr int L = kGemmLanes;
  a->layout = ActLayout::kInt8Lanes;
  a->lanes = L;
  a->n_tok_group = (n_tok + L - 1) / L;
  a->qs_stride = n_in * L;
  a->sc_stride = a->n_group_pad * L;
  int8_t* qs = a->qs.ensure<int8_t>(static_cast<size_t>(a->n_tok_group * a->qs_stride));
  float* d = a->d.ensure<float>(static_cast<size_t>(a->n_tok_group * a->sc_stride));
  float* sa = a->sa.ensure<float>(static_cast<size_t>(a->n_tok_group * a->sc_stride));
  if (n_tok % L != 0) {
    const int64_t last = a->n_tok_group - 1;
    std::memset(qs + last * a->qs_stride, 0, static_cast<size_t>(a->qs_stride));
    std::memset(d + last * a->sc_stride, 0, static_cast<size_t>(a->sc_stride) * sizeof(float));
    std::memset(sa + last * a->sc_stride, 0, static_cast<size_t>(a->sc_stride) * sizeof(float));
  }
}
#endif

template <class Ty>
void PlanActs(int64_t n_in, int64_t n_tok, const float* x, ActBuffer* a) {
  a->weight_type = Ty::kType;
  a->n_in = n_in;
  a->n_tok = n_tok;
  a->x = x;
  a->n_quad = 0;
  if constexpr (Ty::kFloat) {
    return PlanFloatActs(n_in, n_tok, a);
  } else {
    constexpr detail::UnpackInfo info = Ty::kUnpack;
    a->group = info.group;
    a->n_group_pad = PadGroups(n_in / info.group);
#if TOVA_INT8_LANES_TARGET
    constexpr bool has_decode_kernel = HasGemvDecode<Ty>();
    if (n_tok >= (has_decode_kernel ? kDecodeLanesMinTokens : kInt8LanesMinTokens)) {
      return PlanInt8Lanes(n_in, n_tok, a);
    }
    if constexpr (Ty::kDecodeGroups) {
      a->layout = ActLayout::kDecodeRows;
      a->lanes = 1;
      a->qs_stride = Ty::GroupActBytes(n_in);
      a->qs.ensure<uint8_t>(static_cast<size_t>(n_tok * a->qs_stride));
      return;
    }
    if (has_decode_kernel) {
      a->layout = ActLayout::kDecodeRows;
      a->lanes = 1;
      a->qs_stride = DecodeActBytes<Ty>(n_in, n_tok);
      if constexpr (Ty::kDecodeQuad) {
        a->n_quad = QuadCount(n_tok);
        a->quad_stride = QuadActBytes(n_in);
      }
      uint8_t* qs = a->qs.ensure<uint8_t>(static_cast<size_t>(
          a->n_quad * a->quad_stride + std::max<int64_t>(0, n_tok - 4 * a->n_quad) * a->qs_stride));
      if (4 * a->n_quad > n_tok) {  // a padded last quad: its missing tokens are zero
        std::memset(qs + (a->n_quad - 1) * a->quad_stride, 0, static_cast<size_t>(a->quad_stride));
      }
      return;
    }
#endif
    a->layout = ActLayout::kInt8Rows;
    a->lanes = 1;
    a->qs_stride = (n_in + 63) / 64 * 64;
    a->sc_stride = a->n_group_pad;
    a->qs.ensure<int8_t>(static_cast<size_t>(n_tok * a->qs_stride));
    a->d.ensure<float>(static_cast<size_t>(n_tok * a->sc_stride));
    a->sa.ensure<float>(static_cast<size_t>(n_tok * a->sc_stride));
  }
}

inline void PrepareFloatLanes(const float* x, int64_t t_begin, int64_t t_end, int64_t k_begin,
                              int64_t k_end, ActBuffer* a) {
  const int64_t n = a->n_in;
  float* xs = a->qs.get<float>();
  const int lanes = a->lanes;
  for (int64_t t = t_begin; t < t_end; ++t) {
    float* dst = xs + (t / lanes) * n * lanes + t % lanes;
    const float* src = x + t * n;
    for (int64_t k = k_begin; k < k_end; ++k) dst[k * lanes] = src[k];
  }
}

// kInt8Lanes: scatters token t's converted columns [k_begin, k_begin + kn) into its lane.
inline void ScatterToLane(const int8_t* qs, const float* d, const float* sa, int64_t t,
                          int64_t k_begin, int64_t kn, ActBuffer* a) {
  const int lanes = a->lanes;
  const int64_t tg = t / lanes, lane = t % lanes;
  int8_t* qdst = a->qs.get<int8_t>() + tg * a->qs_stride + k_begin * lanes + lane * 4;
  for (int64_t k4 = 0; k4 < kn / 4; ++k4) std::memcpy(qdst + k4 * 4 * lanes, qs + 4 * k4, 4);
  const int64_t g_begin = k_begin / a->group;
  float* ddst = a->d.get<float>() + tg * a->sc_stride + g_begin * lanes + lane;
  float* sdst = a->sa.get<float>() + tg * a->sc_stride + g_begin * lanes + lane;
  for (int64_t g = 0; g < kn / a->group; ++g) {
    ddst[g * lanes] = d[g];
    sdst[g * lanes] = sa[g];
  }
}

// kDecodeRows: token t's row (a token after the quads, matmul_internal.h).
inline uint8_t* DecodeRow(const ActBuffer& a, int64_t t) {
  return const_cast<uint8_t*>(a.qs.get<uint8_t>()) + a.n_quad * a.quad_stride +
         (t - 4 * a.n_quad) * a.qs_stride;
}

template <class Ty>
void PrepareActs(const float* x, int64_t t_begin, int64_t t_end, int64_t k_begin, int64_t k_end,
                 ActBuffer* a) {
  const int64_t n = a->n_in;
  if (a->layout == ActLayout::kFloatRows) return;
  if (a->layout == ActLayout::kFloatLanes) return PrepareFloatLanes(x, t_begin, t_end, k_begin, k_end, a);
  // Of the int8 layouts only token lanes convert part of the columns (matmul_internal.h).
  TOVA_CHECK((k_begin == 0 && k_end == n) || a->layout == ActLayout::kInt8Lanes);
  const int64_t kn = k_end - k_begin;
  constexpr GgmlType act_type = Ty::kActType;
  const TypeTraits& at = type_traits(act_type);
  const int64_t n_group = n / a->group;
  Scratch& scratch = ThreadScratch();
  uint8_t* blocks =
      scratch.blocks.ensure<uint8_t>(static_cast<size_t>(n / at.block_size * at.type_size));
  for (int64_t t = t_begin; t < t_end; ++t) {
    QuantizeActs(act_type, x + t * n + k_begin, kn, blocks);
#if TOVA_AVX2_DECODE_TARGET
    if constexpr (Ty::kDecodeGroups) {
      if (a->layout == ActLayout::kDecodeRows) {
        Ty::PrepareGroupActs(blocks, n, DecodeRow(*a, t));
        continue;
      }
    }
    if constexpr (Ty::kDecodeQuad) {
      if (a->layout == ActLayout::kDecodeRows && t < 4 * a->n_quad) {
        static_assert(Ty::kActType == GgmlType::kQ8_0);
        PrepareQuadQ8_0(blocks, n / 32, static_cast<int>(t % 4), Ty::kUnpack.offset,
                        a->qs.get<uint8_t>() + (t / 4) * a->quad_stride);
        continue;
      }
    }
    if (a->layout == ActLayout::kDecodeRows && UsesAvx2Decode<Ty>(a->n_tok)) {
      PrepareAvx2Decode(Ty::kType, blocks, n, DecodeRow(*a, t));
      continue;
    }
#endif
    if (a->layout == ActLayout::kInt8Rows) {
      int8_t* qs = a->qs.get<int8_t>() + t * a->qs_stride;
      float* d = a->d.get<float>() + t * a->sc_stride;
      float* sa = a->sa.get<float>() + t * a->sc_stride;
      ActRowFromBlocks(act_type, a->group, blocks, n, qs, d, sa);
      std::fill(d + n_group, d + a->sc_stride, 0.0f);
      std::fill(sa + n_group, sa + a->sc_stride, 0.0f);
      continue;
    }
    int8_t* qs = scratch.row.ensure<int8_t>(
        static_cast<size_t>((n + 63) / 64 * 64 + 8 * a->n_group_pad));
    float* d = reinterpret_cast<float*>(qs + (n + 63) / 64 * 64);
    float* sa = d + a->n_group_pad;
    ActRowFromBlocks(act_type, a->group, blocks, kn, qs, d, sa);
#if HWY_TARGET == HWY_AVX3_DL
    if constexpr (Ty::kDecodeVnni) {
      if (a->layout == ActLayout::kDecodeRows) {
        Ty::PrepareDecodeVnni(qs, d, n, DecodeRow(*a, t));
        continue;
      }
    }
#endif
    ScatterToLane(qs, d, sa, t, k_begin, kn, a);
  }
}

// ---- few tokens: row tiles ----

// Weight rows per tile. One token streams one row at a time: a single sequential stream per
// thread. Tiles of 2 or 4 rows (interleaved streams) moved 1.3-1.8x fewer bytes per second on
// this machine (bench_matmul 5632x2048 ntok:1, one thread: q4_0 10.7 -> 18.7 GB/s, q8_0 12.8 ->
// 20.9, f16 18 -> 25, q6_k 7.7 -> 12.3; TinyLlama Q4_0 decode 32-35 -> 49-50 tok/s). With
// several tokens each row is reused across them and 4-row tiles stay faster (ntok:8, q4_0:
// 10.1 vs 8.3 GB/s on two threads). A row's result is the same either way.
inline int RowsPerTile(int64_t n_tok) { return n_tok == 1 ? 1 : 4; }

template <class Ty>
void FloatRows(const WeightMatrix& w, const ActBuffer& a, int64_t o_begin, int64_t o_end,
               float* y) {
  float out[16];
  const int tile_rows = RowsPerTile(a.n_tok);
  for (int64_t o = o_begin; o < o_end; o += tile_rows) {
    const int nr = static_cast<int>(std::min<int64_t>(tile_rows, o_end - o));
    const uint8_t* rows[4];
    for (int r = 0; r < nr; ++r) rows[r] = w.data + (o + r) * w.row_bytes;
    for (int64_t t = 0; t < a.n_tok; t += 4) {
      const int nt = static_cast<int>(std::min<int64_t>(4, a.n_tok - t));
      const float* xs[4];
      for (int i = 0; i < nt; ++i) xs[i] = a.x + (t + i) * a.n_in;
      GemvFloatTile<Ty::kType>(rows, nr, xs, nt, a.n_in, out);
      for (int r = 0; r < nr; ++r) {
        for (int i = 0; i < nt; ++i) y[(t + i) * w.n_out + o + r] = out[r * nt + i];
      }
    }
  }
}

// Unpacks rows [o, o + nr) into scratch; mul/add are zero-padded to n_group_pad. With
// `bias`, add is replaced by add - offset * mul, the per-group term the token-lane kernel uses.
// Each row's unpack first prefetches the row `nr` rows further (if below o_end) into L2, so the
// next call finds its rows there instead of waiting for the hardware prefetcher to ramp up.
template <class Ty>
void UnpackRows(const WeightMatrix& w, int64_t o, int nr, int64_t o_end, int64_t u_stride,
                int64_t n_group_pad, bool bias, int offset, uint8_t* u, float* mul, float* add) {
  constexpr detail::UnpackInfo info = Ty::kUnpack;
  const int64_t n_group = w.n_in / info.group;
  for (int r = 0; r < nr; ++r) {
    if (o + r + nr < o_end) {
      const char* next = reinterpret_cast<const char*>(w.data + (o + r + nr) * w.row_bytes);
      for (uint64_t line = 0; line < w.row_bytes; line += 64) {
        hwy::Prefetch(next + line);
      }
    }
    float* m = mul + r * n_group_pad;
    float* ad = add + r * n_group_pad;
    if constexpr (Ty::kInterleaved) {
      Ty::UnpackRow(w, o + r, u + r * u_stride, m, ad);
    } else {
      Ty::Unpack(w.data + (o + r) * w.row_bytes, w.n_in, u + r * u_stride, m, ad);
    }
    std::fill(m + n_group, m + n_group_pad, 0.0f);
    std::fill(ad + n_group, ad + n_group_pad, 0.0f);
    if (bias) {
      const float off = static_cast<float>(offset);
      for (int64_t g = 0; g < n_group; ++g) ad[g] -= off * m[g];
    }
  }
}

template <class Ty>
void Int8Rows(const WeightMatrix& w, const ActBuffer& a, int64_t o_begin, int64_t o_end, float* y) {
  constexpr detail::UnpackInfo info = Ty::kUnpack;
  const int64_t u_stride = (w.n_in + 63) / 64 * 64;
  const int64_t ngp = a.n_group_pad;
  Scratch& scratch = ThreadScratch();
  uint8_t* u = scratch.rows_u.ensure<uint8_t>(static_cast<size_t>(4 * u_stride));
  float* mul = scratch.rows_s.ensure<float>(static_cast<size_t>(8 * ngp));
  float* add = mul + 4 * ngp;
  float out[16];
  const int tile_rows = RowsPerTile(a.n_tok);
  for (int64_t o = o_begin; o < o_end; o += tile_rows) {
    const int nr = static_cast<int>(std::min<int64_t>(tile_rows, o_end - o));
    UnpackRows<Ty>(w, o, nr, o_end, u_stride, ngp, false, 0, u, mul, add);
    WRow wr[4];
    for (int r = 0; r < nr; ++r) wr[r] = {u + r * u_stride, mul + r * ngp, add + r * ngp};
    for (int64_t t = 0; t < a.n_tok; t += 4) {
      const int nt = static_cast<int>(std::min<int64_t>(4, a.n_tok - t));
      ARow ar[4];
      for (int i = 0; i < nt; ++i) {
        ar[i] = {a.qs.get<int8_t>() + (t + i) * a.qs_stride,
                 a.d.get<float>() + (t + i) * a.sc_stride,
                 a.sa.get<float>() + (t + i) * a.sc_stride};
      }
      GemvInt8Tile<info.group>(wr, nr, ar, nt, info.offset, w.n_in, ngp, out);
      for (int r = 0; r < nr; ++r) {
        for (int i = 0; i < nt; ++i) y[(t + i) * w.n_out + o + r] = out[r * nt + i];
      }
    }
  }
}

// ---- many tokens: token lanes ----
//
// Loop nest per thread: chunks of kRowChunk rows (unpacked once), then K in slices of
// kLanesK, then pairs (float) or triples (int8) of token groups, then 4-row tiles. A K slice of
// one int8 token-group triple (12 KB of activations) stays in L1 while all the chunk's row tiles
// use it, and the chunk's weight slice stays in L1 across token groups. Partial sums live in a
// per-chunk buffer [rows][tokens], written to y (token-major) once per chunk with contiguous
// stores: scattered 4-byte stores at a stride of n_out floats halved the speed.

constexpr int64_t kLanesK = 256;       // K slice, int8 (a multiple of every group size)
constexpr int64_t kLanesKFloat = 128;  // K slice, float

// y[t][o0 + r] = buf[r][t] for r < nr, t < n_tok.
inline void StoreChunkScalar(const float* buf, int64_t ldb, int nr, int64_t n_tok, int64_t o0,
                      int64_t n_out, float* y) {
  for (int64_t t = 0; t < n_tok; ++t) {
    float* dst = y + t * n_out + o0;
    for (int r = 0; r < nr; ++r) dst[r] = buf[r * ldb + t];
  }
}

#if HWY_TARGET <= HWY_AVX3
// In place: v[i] lane j becomes v[j] lane i (a 16 x 16 float transpose).
inline void Transpose16x16(__m512 v[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
  }
  // u[4 * q + k], per 128-bit lane L: rows 4q..4q+3 of column 4L + k.
  for (int q = 0; q < 4; ++q) {
    const __m512 lo = t[4 * q], hi = t[4 * q + 1], lo2 = t[4 * q + 2], hi2 = t[4 * q + 3];
    u[4 * q + 0] = _mm512_shuffle_ps(lo, lo2, 0x44);
    u[4 * q + 1] = _mm512_shuffle_ps(lo, lo2, 0xEE);
    u[4 * q + 2] = _mm512_shuffle_ps(hi, hi2, 0x44);
    u[4 * q + 3] = _mm512_shuffle_ps(hi, hi2, 0xEE);
  }
  for (int k = 0; k < 4; ++k) {
    const __m512 a_even = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x88);
    const __m512 b_even = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x88);
    const __m512 a_odd = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xDD);
    const __m512 b_odd = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xDD);
    v[k] = _mm512_shuffle_f32x4(a_even, b_even, 0x88);
    v[8 + k] = _mm512_shuffle_f32x4(a_even, b_even, 0xDD);
    v[4 + k] = _mm512_shuffle_f32x4(a_odd, b_odd, 0x88);
    v[12 + k] = _mm512_shuffle_f32x4(a_odd, b_odd, 0xDD);
  }
}

// The same with 16 x 16 register transposes: each y row gets 16 contiguous floats per store
// (the scalar loop's strided loads took ~9 % of a B=128 decode step).
inline void StoreChunk(const float* buf, int64_t ldb, int nr, int64_t n_tok, int64_t o0, int64_t n_out,
                float* y) {
  if (ldb % 16 != 0) return StoreChunkScalar(buf, ldb, nr, n_tok, o0, n_out, y);
  for (int r0 = 0; r0 < nr; r0 += 16) {
    const int rn = std::min(16, nr - r0);
    const __mmask16 mask = static_cast<__mmask16>((1u << rn) - 1);
    for (int64_t t0 = 0; t0 < n_tok; t0 += 16) {
      __m512 v[16];
      for (int r = 0; r < 16; ++r) {
        v[r] = r < rn ? _mm512_loadu_ps(buf + (r0 + r) * ldb + t0) : _mm512_setzero_ps();
      }
      Transpose16x16(v);
      const int tn = static_cast<int>(std::min<int64_t>(16, n_tok - t0));
      for (int t = 0; t < tn; ++t) {
        _mm512_mask_storeu_ps(y + (t0 + t) * n_out + o0 + r0, mask, v[t]);
      }
    }
  }
}
#elif HWY_TARGET == HWY_AVX2
// In place: v[i] lane j becomes v[j] lane i (an 8 x 8 float transpose).
inline void Transpose8x8(__m256 v[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]);
  }
  for (int q = 0; q < 2; ++q) {
    const __m256 lo = t[4 * q], hi = t[4 * q + 1], lo2 = t[4 * q + 2], hi2 = t[4 * q + 3];
    u[4 * q + 0] = _mm256_shuffle_ps(lo, lo2, 0x44);
    u[4 * q + 1] = _mm256_shuffle_ps(lo, lo2, 0xEE);
    u[4 * q + 2] = _mm256_shuffle_ps(hi, hi2, 0x44);
    u[4 * q + 3] = _mm256_shuffle_ps(hi, hi2, 0xEE);
  }
  for (int k = 0; k < 4; ++k) {
    v[k] = _mm256_permute2f128_ps(u[k], u[4 + k], 0x20);
    v[4 + k] = _mm256_permute2f128_ps(u[k], u[4 + k], 0x31);
  }
}

// As the AVX-512 version, with 8 x 8 transposes (rows in pairs of 8, the last masked).
inline void StoreChunk(const float* buf, int64_t ldb, int nr, int64_t n_tok, int64_t o0, int64_t n_out,
                float* y) {
  if (ldb % 8 != 0) return StoreChunkScalar(buf, ldb, nr, n_tok, o0, n_out, y);
  for (int r0 = 0; r0 < nr; r0 += 8) {
    const int rn = std::min(8, nr - r0);
    alignas(32) int32_t lane_on[8];
    for (int i = 0; i < 8; ++i) lane_on[i] = i < rn ? -1 : 0;
    const __m256i mask = _mm256_load_si256(reinterpret_cast<const __m256i*>(lane_on));
    for (int64_t t0 = 0; t0 < n_tok; t0 += 8) {
      __m256 v[8];
      for (int r = 0; r < 8; ++r) {
        v[r] = r < rn ? _mm256_loadu_ps(buf + (r0 + r) * ldb + t0) : _mm256_setzero_ps();
      }
      Transpose8x8(v);
      const int tn = static_cast<int>(std::min<int64_t>(8, n_tok - t0));
      for (int t = 0; t < tn; ++t) {
        float* dst = y + (t0 + t) * n_out + o0 + r0;
        if (rn == 8) {
          _mm256_storeu_ps(dst, v[t]);
        } else {
          _mm256_maskstore_ps(dst, mask, v[t]);
        }
      }
    }
  }
}
#else
inline void StoreChunk(const float* buf, int64_t ldb, int nr, int64_t n_tok, int64_t o0, int64_t n_out,
                float* y) {
  StoreChunkScalar(buf, ldb, nr, n_tok, o0, n_out, y);
}
#endif

// R rows x 2 vectors of tokens over kn elements; acc rows at buf + r * ldb.
template <int R>
void GemmFloatTile(const float* const* wrows, const float* xp, int64_t kn, float* buf, int64_t ldb,
                   bool first) {
  const hn::ScalableTag<float> df;
  using V = hn::Vec<decltype(df)>;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  VecArray2<V, R, 2> acc;
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < 2; ++j)
      acc[r][j] = first ? hn::Zero(df) : hn::Load(df, buf + r * ldb + j * lanes);
  }
  for (int64_t k = 0; k < kn; ++k) {
    const V a0 = hn::Load(df, xp + k * 2 * lanes);
    const V a1 = hn::Load(df, xp + k * 2 * lanes + lanes);
    for (int r = 0; r < R; ++r) {
      const V wv = hn::Set(df, wrows[r][k]);
      acc[r][0] = hn::MulAdd(wv, a0, acc[r][0]);
      acc[r][1] = hn::MulAdd(wv, a1, acc[r][1]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < 2; ++j) hn::Store(acc[r][j], df, buf + r * ldb + j * lanes);
  }
}

template <class Ty>
void FloatLanes(const WeightMatrix& w, const ActBuffer& a, int64_t o_begin, int64_t o_end,
                float* y) {
  const int64_t n = w.n_in;
  const int lanes = a.lanes;
  const int64_t ldb = a.n_tok_group * lanes;
  Scratch& scratch = ThreadScratch();
  float* wf = scratch.float_w.ensure<float>(static_cast<size_t>(kRowChunk * kLanesKFloat));
  float* buf = scratch.float_acc.ensure<float>(static_cast<size_t>(kRowChunk * ldb));
  for (int64_t o0 = o_begin; o0 < o_end; o0 += kRowChunk) {
    const int nc = static_cast<int>(std::min<int64_t>(kRowChunk, o_end - o0));
    for (int64_t k0 = 0; k0 < n; k0 += kLanesKFloat) {
      const int64_t kn = std::min(kLanesKFloat, n - k0);
      const float* rows[kRowChunk];
      for (int r = 0; r < nc; ++r) {
        const TypeTraits& tt = type_traits(w.type);
        WeightsToFloat<Ty::kType>(w.data + (o0 + r) * w.row_bytes + k0 * tt.type_size, kn,
                       wf + r * kLanesKFloat);
        rows[r] = wf + r * kLanesKFloat;
      }
      for (int64_t tg = 0; tg < a.n_tok_group; ++tg) {
        const float* xp = a.qs.get<float>() + tg * n * lanes + k0 * lanes;
        // 8-row tiles: 16 accumulators hide the FMA latency (8 would just cover it). With 16
        // vector registers (AVX2 and older) 6 rows, 12 accumulators, so that the tile does not
        // spill.
        constexpr int kTileRows = HWY_TARGET <= HWY_AVX3 ? 8 : 6;
        for (int r0 = 0; r0 < nc; r0 += kTileRows) {
          const int nr = std::min(kTileRows, nc - r0);
          float* b = buf + r0 * ldb + tg * lanes;
          const bool first = k0 == 0;
          switch (nr) {
            case 1:
              GemmFloatTile<1>(rows + r0, xp, kn, b, ldb, first);
              break;
            case 2:
              GemmFloatTile<2>(rows + r0, xp, kn, b, ldb, first);
              break;
            case 3:
              GemmFloatTile<3>(rows + r0, xp, kn, b, ldb, first);
              break;
            case 4:
              GemmFloatTile<4>(rows + r0, xp, kn, b, ldb, first);
              break;
            case 5:
              GemmFloatTile<5>(rows + r0, xp, kn, b, ldb, first);
              break;
            case 6:
              GemmFloatTile<6>(rows + r0, xp, kn, b, ldb, first);
              break;
            case 7:
              GemmFloatTile<7>(rows + r0, xp, kn, b, ldb, first);
              break;
            default:
              GemmFloatTile<8>(rows + r0, xp, kn, b, ldb, first);
              break;
          }
        }
      }
    }
    StoreChunk(buf, ldb, nc, a.n_tok, o0, w.n_out, y);
  }
}

#if TOVA_INT8_LANES_TARGET

template <class Ty>
void Int8Lanes(const WeightMatrix& w, const ActBuffer& a, int64_t o_begin, int64_t o_end,
               float* y) {
  constexpr int L = kGemmLanes;
  const int64_t n = w.n_in;
  const int64_t ngp = a.n_group_pad;
  const int64_t ldb = a.n_tok_group * L;
  const int group = a.group;
  // The signed tiles multiply the weights without their offset: it stays out of the bias.
  constexpr bool is_signed = GemmSigned<Ty>();
  constexpr int offset = is_signed ? 0 : Ty::kUnpack.offset;
  Scratch& scratch = ThreadScratch();
  uint8_t* u = scratch.lanes_u.ensure<uint8_t>(static_cast<size_t>(kRowChunk * n));
  int8_t* ws =
      is_signed ? scratch.lanes_w.ensure<int8_t>(static_cast<size_t>(kRowChunk * n)) : nullptr;
  float* mul = scratch.lanes_s.ensure<float>(static_cast<size_t>(2 * kRowChunk * ngp));
  float* bias = mul + kRowChunk * ngp;
  float* buf = scratch.lanes_acc.ensure<float>(static_cast<size_t>(kRowChunk * ldb));
  for (int64_t o0 = o_begin; o0 < o_end; o0 += kRowChunk) {
    const int nc = static_cast<int>(std::min<int64_t>(kRowChunk, o_end - o0));
    UnpackRows<Ty>(w, o0, nc, o_end, n, ngp, true, offset, u, mul, bias);
    if (is_signed) {  // u = w + 128 -> w and |w|
      for (int64_t i = 0; i < nc * n; ++i) {
        const int8_t v = static_cast<int8_t>(u[i] ^ 0x80);
        ws[i] = v;
        u[i] = static_cast<uint8_t>(v < 0 ? -v : v);
      }
    }
    for (int64_t k0 = 0; k0 < n; k0 += kLanesK) {
      const int64_t kn = std::min(kLanesK, n - k0);
      const int64_t g0 = k0 / group;
      for (int64_t tg = 0; tg < a.n_tok_group; tg += kGemmMaxNT) {
        const int nt = static_cast<int>(std::min<int64_t>(kGemmMaxNT, a.n_tok_group - tg));
        const int8_t* qsp = a.qs.get<int8_t>() + tg * a.qs_stride + k0 * L;
        const float* dp = a.d.get<float>() + tg * a.sc_stride + g0 * L;
        const float* sap = a.sa.get<float>() + tg * a.sc_stride + g0 * L;
        for (int r0 = 0; r0 < nc; r0 += 4) {
          const int nr = std::min(4, nc - r0);
          const uint8_t* ur[4];
          const int8_t* wr[4] = {};
          const float* mr[4];
          const float* br[4];
          for (int r = 0; r < nr; ++r) {
            ur[r] = u + (r0 + r) * n + k0;
            if (is_signed) wr[r] = ws + (r0 + r) * n + k0;
            mr[r] = mul + (r0 + r) * ngp + g0;
            br[r] = bias + (r0 + r) * ngp + g0;
          }
          const GemmInt8Fn fn = PickGemmInt8<Ty>(nr, nt);
          fn(ur, wr, mr, br, qsp, dp, sap, a.qs_stride, a.sc_stride, kn, buf + r0 * ldb + tg * L,
             ldb, k0 == 0);
        }
      }
    }
    StoreChunk(buf, ldb, nc, a.n_tok, o0, w.n_out, y);
  }
}

#else

template <class Ty>
void Int8Lanes(const WeightMatrix&, const ActBuffer&, int64_t, int64_t, float*) {
  TOVA_CHECK(false && "token-lane int8 layout is only planned on AVX3_DL, AVX3 and AVX2");
}

#endif

#if TOVA_INT8_LANES_TARGET

template <class Ty>
void DecodeRows(const WeightMatrix& w, const ActBuffer& a, int64_t o_begin, int64_t o_end,
                float* y) {
  if constexpr (Ty::kDecodeGroups) return Ty::DecodeGroups(w, a, o_begin, o_end, y);
  const int max_rows = DecodeMaxRows<Ty>(a.n_tok);
  // Token quads take 4 rows on every target (their kernels hold one accumulator a row, so
  // AVX2's 16 registers fit them); the row kernels' tiles of the same rows are cut to max_rows.
  const int tile_rows = a.n_quad > 0 ? 4 : std::min(RowsPerTile(a.n_tok), max_rows);
  if (a.n_tok == 1 && tile_rows == 1) {
    // Decode: one kernel for every row, each result stored in place. Picking the kernel, the
    // pointers and the prefetch distance per row and copying out of a tile were ~60
    // instructions a row, a third of a 576-wide Q4_0 row's own (callgrind).
    const GemvDecodeFn fn = PickGemvDecode<Ty>(1, 1, 1);
    const uint8_t* act = a.qs.get<uint8_t>();
    // Each row prefetches the row about kDecodePrefetchBytes further on (none past the
    // matrix). One row ahead (1152 bytes for a 2048-wide Q4_0/Q4_K row) left a single thread
    // at 16-18 GB/s; 4 rows ahead 18.4-20.1 (bench_matmul 5632x2048 ntok:1, Zen 4). Past
    // o_end: a thread's next rows are usually the ones after its piece (matmul_multi).
    constexpr int64_t kDecodePrefetchBytes = 4608;
    const int64_t ahead = std::max<int64_t>(
        1, (kDecodePrefetchBytes + static_cast<int64_t>(w.row_bytes) - 1) /
               static_cast<int64_t>(w.row_bytes));
    const int64_t distance = ahead * static_cast<int64_t>(w.row_bytes);
    for (int64_t o = o_begin; o < o_end; ++o) {
      const uint8_t* row = w.data + o * w.row_bytes;
      fn(&row, &act, w.n_in, o + ahead < w.n_out ? distance : 0, y + o);
    }
    return;
  }
  float out[16];
  for (int64_t o = o_begin; o < o_end; o += tile_rows) {
    const int nr = static_cast<int>(std::min<int64_t>(tile_rows, o_end - o));
    const uint8_t* rows[4];
    for (int r = 0; r < nr; ++r) rows[r] = w.data + (o + r) * w.row_bytes;
    for (int64_t t = 0; t < a.n_tok; t += 4) {
      const int nt = static_cast<int>(std::min<int64_t>(4, a.n_tok - t));
      const uint8_t* acts[4];
      // Prefetch the next row group while this one streams (none past the thread's range).
      const int64_t prefetch =
          o + tile_rows < o_end ? static_cast<int64_t>(tile_rows * w.row_bytes) : 0;
      int out_stride = nt;  // out[r * out_stride + i]
      if (t < 4 * a.n_quad) {  // a quad (the last one maybe padded): the token-quad kernel
        acts[0] = a.qs.get<uint8_t>() + (t / 4) * a.quad_stride;
        out_stride = 4;
        if constexpr (Ty::kDecodeQuad) Ty::PickDecodeQuad(nr)(rows, acts, w.n_in, prefetch, out);
      } else {
        for (int i = 0; i < nt; ++i) acts[i] = DecodeRow(a, t + i);
        for (int r0 = 0; r0 < nr; r0 += max_rows) {
          const int nr2 = std::min(max_rows, nr - r0);
          PickGemvDecode<Ty>(nr2, nt, a.n_tok)(rows + r0, acts, w.n_in, prefetch, out + r0 * nt);
        }
      }
      for (int r = 0; r < nr; ++r) {
        for (int i = 0; i < nt; ++i) y[(t + i) * w.n_out + o + r] = out[r * out_stride + i];
      }
    }
  }
}

#else

template <class Ty>
void DecodeRows(const WeightMatrix&, const ActBuffer&, int64_t, int64_t, float*) {
  TOVA_CHECK(false && "decode layout is only planned on AVX3_DL, AVX3 and AVX2");
}

#endif

template <class Ty>
void MatmulRows(const WeightMatrix& w, const ActBuffer& a, int64_t o_begin, int64_t o_end,
                float* y) {
  if constexpr (Ty::kFloat) {
    if (a.layout == ActLayout::kFloatLanes) return FloatLanes<Ty>(w, a, o_begin, o_end, y);
    return FloatRows<Ty>(w, a, o_begin, o_end, y);
  } else {
    switch (a.layout) {
      case ActLayout::kInt8Lanes:
        return Int8Lanes<Ty>(w, a, o_begin, o_end, y);
      case ActLayout::kDecodeRows:
        return DecodeRows<Ty>(w, a, o_begin, o_end, y);
      default:
        return Int8Rows<Ty>(w, a, o_begin, o_end, y);
    }
  }
}

// ------------------------------------------------------------------------------------------
// The type's dequantize and one-row dot product (quant.h's dequantize_row and vec_dot).

// Dequantization: (u - offset) * mul (+ add), in the reference's order, so bit-exact.
template <class Ty>
void DequantizeRow(const uint8_t* src, float* dst, int64_t n) {
  if constexpr (Ty::kFloat) {
    return WeightsToFloat<Ty::kType>(src, n, dst);
  } else {
    const hn::ScalableTag<float> df;
    const hn::RebindToSigned<decltype(df)> di;
    const hn::Rebind<uint8_t, decltype(di)> d8;
    const hn::RebindToUnsigned<decltype(di)> du;
    const int lanes = static_cast<int>(hn::Lanes(df));
    constexpr detail::UnpackInfo info = Ty::kUnpack;
    const TypeTraits& traits = type_traits(Ty::kType);
    constexpr int64_t kChunk = 256;  // a multiple of every block size
    alignas(64) uint8_t u[kChunk];
    alignas(64) float mul[kChunk / 16];
    alignas(64) float add[kChunk / 16];
    const auto voff = hn::Set(di, info.offset);
    for (int64_t k0 = 0; k0 < n; k0 += kChunk) {
      const int64_t len = std::min(kChunk, n - k0);
      Ty::Unpack(src + k0 / traits.block_size * traits.type_size, len, u, mul, add);
      for (int64_t g = 0; g < len / info.group; ++g) {
        const auto vm = hn::Set(df, mul[g]);
        const auto va = hn::Set(df, add[g]);
        for (int l = 0; l < info.group; l += lanes) {
          const int64_t k = g * info.group + l;
          const auto q = hn::Sub(hn::BitCast(di, hn::PromoteTo(du, hn::LoadU(d8, u + k))), voff);
          auto v = hn::Mul(hn::ConvertTo(df, q), vm);
          if (info.has_add) v = hn::Add(v, va);
          hn::StoreU(v, df, dst + k0 + k);
        }
      }
    }
  }
}

template <class Ty>
float VecDot(int64_t n, const uint8_t* w, const uint8_t* act_row) {
  float out;
  if constexpr (Ty::kFloat) {
    const float* x = reinterpret_cast<const float*>(act_row);
    GemvFloatTile<Ty::kType>(&w, 1, &x, 1, n, &out);
  } else {
    constexpr detail::UnpackInfo info = Ty::kUnpack;
    const int64_t n_group_pad = PadGroups(n / info.group);
    Scratch& scratch = ThreadScratch();
    uint8_t* u = scratch.dot_u.ensure<uint8_t>(static_cast<size_t>(n));
    int8_t* qs = scratch.dot_qs.ensure<int8_t>(static_cast<size_t>(n));
    float* mul = scratch.dot_scale.ensure<float>(static_cast<size_t>(4 * n_group_pad));
    std::fill(mul, mul + 4 * n_group_pad, 0.0f);  // the padding groups must be zero
    float* add = mul + n_group_pad;
    float* d = add + n_group_pad;
    float* sa = d + n_group_pad;
    Ty::Unpack(w, n, u, mul, add);
    ActRowFromBlocks(Ty::kActType, info.group, act_row, n, qs, d, sa);
    const WRow wr{u, mul, add};
    const ARow ar{qs, d, sa};
    GemvInt8Tile<info.group>(&wr, 1, &ar, 1, info.offset, n, n_group_pad, &out);
  }
  return out;
}

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#endif  // include guard
