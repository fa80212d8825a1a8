// Fused Highway attention (see attention.h), compiled once per target (foreach_target) and
// dispatched at run time.
//
// Grouped-query attention shares one KV head between several query heads, so the kernel works
// per KV head on a whole group of query heads: one sweep over the K rows scores every head of the
// group (a tile of K rows is read from memory once and then served from L1), a softmax per head,
// and one sweep over the V rows accumulates every head's output. Up to four heads share each
// load of a float K or V row (kMaxBlockHeads), and F16 rows are widened in
// registers as they are loaded (on x86 with F16C; elsewhere once per tile into a float buffer);
// BF16 rows are widened in registers on every target.
//
// Quantized keys (q8_0, q4_0) are stored in tiles of 16 slots (core/kv_type.h): per block, four
// bytes of each slot side by side, so one int8 dot-product instruction adds four products into
// each slot's own lane. A tile is scored for up to eight heads per pass over it: each head's
// query rounded to int8 blocks once per call (quantize_query), the int32 block sums converted
// and scaled by the key's and the query's block scales. No dequantized copy of the keys is made
// and no horizontal sum is needed. Quantized values are canonical rows, widened per vector in
// registers and scaled per block.
//
// Each query head's arithmetic (dot-product lane order, softmax sums, slot order of the output
// accumulation) does not depend on which other heads are processed with it, on the head range a
// thread was given, on the slot range of a split score pass, on the scratch size, or on whether
// `probs` is requested: all of these give bit-identical outputs. Policies rely on it (a policy
// that asks for scores must not change the output of a cache that never evicts).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/check.h"
#include "core/half.h"
#include "core/kv_type.h"
#include "kernels/attention.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/attention_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// foreach_target re-includes this file once per target; the headers below must follow it.
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernels/vec_array-inl.h"

#if HWY_TARGET == HWY_AVX3_DL && defined(__clang__)
// See quant_kernels-inl.h: clang needs avx512vnni in the pushed target attribute itself.
#pragma clang attribute push(__attribute__((target(HWY_TARGET_STR ",avx512vnni"))), \
                             apply_to = function)
#else
HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL
// Highway's AVX3_DL target string omits avx512vnni although its CPU check requires it.
#pragma GCC target("avx512vnni")
#endif
#endif
namespace tova::kernels::attn_hwy {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using ::tova::kernels::HWY_NAMESPACE::VecArray;
using ::tova::kernels::HWY_NAMESPACE::VecArray2;

using DF = hn::ScalableTag<float>;

// Slots per tile: the tile's K (or V) rows, converted to float when stored as F16, must stay in
// L1 while every head of the group uses them.
constexpr int kTileFloats = 8192;  // 32 KiB
constexpr int kMaxTile = 64;
// Query heads per run of one KV head (larger groups are processed 16 at a time).
constexpr int kMaxRunHeads = 16;

inline bool visible(int64_t pos, const AttentionArgs& a) {
  return pos >= 0 && pos >= a.min_pos && pos <= a.max_pos;
}

// One IEEE half (a block scale) to float: F16C where the target has it (exact either way).
HWY_INLINE float HalfToFloat(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
  return _cvtsh_ss(h);
#else
  return fp16_to_fp32(h);
#endif
}

// Half -> float for a whole row. The conversion is exact, so the vector and scalar paths agree
// bit for bit (and with attention_ref).
HWY_INLINE void ConvertRowF16(const uint16_t* src, float* dst, int n) {
  int i = 0;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
  const DF df;
  const hn::Rebind<hwy::float16_t, DF> dh;
  const int nl = static_cast<int>(hn::Lanes(df));
  for (; i + nl <= n; i += nl) {
    hn::StoreU(hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(src + i))),
               df, dst + i);
  }
#endif
  // Targets without F16C are fallbacks only; their emulated PromoteTo maps inf/NaN halves to
  // finite floats, so they use the exact scalar conversion.
  for (; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}

// Sums of four vectors: out[j] = scale * sum of the lanes of v_j. Each sum's lane order is fixed
// (pairs within 128-bit blocks, then blocks halving), independent of the other three vectors.
#if HWY_HAVE_SCALABLE
// SVE: the vector's length is known only at run time (MaxLanes is the 2048-bit bound), so the
// same halving runs on its lanes in memory: a vector add is lane by lane, the sums and their
// order are those of the fixed-size version below.
template <class D>
HWY_INLINE auto FoldTo128(D d, hn::Vec<D> v) {
  HWY_ALIGN float lanes[hn::MaxLanes(d)];
  hn::Store(v, d, lanes);
  for (size_t n = hn::Lanes(d); n > 4; n /= 2) {
    for (size_t i = 0; i < n / 2; ++i) lanes[i] += lanes[i + n / 2];
  }
  return hn::Load(hn::CappedTag<float, 4>(), lanes);
}
#elif HWY_TARGET != HWY_SCALAR
template <class D>
HWY_INLINE auto FoldTo128(D d, hn::Vec<D> v) {
  if constexpr (hn::MaxLanes(d) > 4) {
    const hn::Half<D> dh;
    return FoldTo128(dh, hn::Add(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v)));
  } else {
    return v;
  }
}
#endif

template <class D, class V = hn::Vec<D>>
HWY_INLINE void Reduce4(D d, V v0, V v1, V v2, V v3, float scale, float* out) {
  if constexpr (hn::MaxLanes(d) == 1) {
    out[0] = hn::GetLane(v0) * scale;
    out[1] = hn::GetLane(v1) * scale;
    out[2] = hn::GetLane(v2) * scale;
    out[3] = hn::GetLane(v3) * scale;
  } else {
#if HWY_TARGET != HWY_SCALAR  // (whose vectors all have one lane)
    static_assert(hn::MaxLanes(d) >= 4, "Reduce4 needs whole 128-bit blocks");
    const hn::Repartition<uint64_t, D> du64;
    // Per block: [x0+x2, y0+y2, x1+x3, y1+y3].
    const V s01 = hn::Add(hn::InterleaveLower(d, v0, v1), hn::InterleaveUpper(d, v0, v1));
    const V s23 = hn::Add(hn::InterleaveLower(d, v2, v3), hn::InterleaveUpper(d, v2, v3));
    const auto w01 = hn::BitCast(du64, s01);
    const auto w23 = hn::BitCast(du64, s23);
    // Per block: [sum v0, sum v1, sum v2, sum v3].
    const V s = hn::Add(hn::BitCast(d, hn::InterleaveLower(du64, w01, w23)),
                        hn::BitCast(d, hn::InterleaveUpper(du64, w01, w23)));
    const auto folded = FoldTo128(d, s);
    const hn::CappedTag<float, 4> d4;
    hn::StoreU(hn::Mul(folded, hn::Set(d4, scale)), d4, out);
#endif
  }
}

// F16 K/V rows are widened inside the score and output loops (one vcvtph2ps per vector, exact)
// on x86 targets with F16C; other targets convert each tile of rows into a float buffer first.
#undef TOVA_ATTN_F16_IN_REGISTERS  // (this file is compiled once per target)
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
#define TOVA_ATTN_F16_IN_REGISTERS 1
#else
#define TOVA_ATTN_F16_IN_REGISTERS 0
#endif

// Query heads that share one pass over a block of K rows (scores, 4 rows at a time) or V rows
// (outputs, 4 column vectors at a time): enough accumulators to reuse every row load (and
// F16/BF16 widening) across the heads without spilling registers: 4 heads with AVX-512's 32
// registers, 2 below it. (An AVX2 output pass of 4 heads x 2 column vectors was faster in cache
// but slower from memory, as it reads each V row's cache lines in two passes: not kept.)
constexpr int kMaxBlockHeads = HWY_TARGET <= HWY_AVX3 ? 4 : 2;

// Pins an accumulator to a register once per loop step on AVX2: GCC 12 otherwise keeps one of
// the 8 accumulators of a 2-head block on the stack although registers are free (seen in the
// F16 and BF16 output loops), which puts a store and a reload into that FMA chain every step
// (2x slower). The empty asm emits no instruction.
template <class V>
HWY_INLINE V InRegister(V v) {
#if HWY_TARGET == HWY_AVX2 && defined(__GNUC__)
  asm("" : "+x"(v.raw));
#endif
  return v;
}

// The element a float K or V row is read as: float, IEEE half (uint16_t) widened in registers,
// or bfloat16 widened in registers (exact: its bits are a float's upper half).
template <class D, class T>
HWY_INLINE hn::Vec<D> LoadRow(D d, const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return hn::LoadU(d, p);
  } else if constexpr (std::is_same_v<T, hwy::bfloat16_t>) {
    const hn::Rebind<uint32_t, D> du32;
    const hn::Rebind<uint16_t, D> du16;
    const auto w = hn::PromoteTo(du32, hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p)));
    return hn::BitCast(d, hn::ShiftLeft<16>(w));
  } else {
    const hn::Rebind<hwy::float16_t, D> dh;
    return hn::PromoteTo(d, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
  }
}

// Scores of kH heads against 4 K rows: out[h][j] = scale * dot(q[h], k[j]). Each head's sums
// run in the same order whatever kH is.
template <int kH, class D, class T>
HWY_INLINE void ScoreBlock(D d, const float* const* q, const T* const* k, int hd, float scale,
                           float* const* out) {
  using V = hn::Vec<D>;
  const int nl = static_cast<int>(hn::Lanes(d));
  VecArray2<V, kH, 4> acc;
  for (int h = 0; h < kH; ++h) {
    for (int j = 0; j < 4; ++j) acc[h][j] = hn::Zero(d);
  }
  for (int c = 0; c < hd; c += nl) {
    const V k0 = LoadRow(d, k[0] + c), k1 = LoadRow(d, k[1] + c);
    const V k2 = LoadRow(d, k[2] + c), k3 = LoadRow(d, k[3] + c);
    for (int h = 0; h < kH; ++h) {
      const V qh = hn::LoadU(d, q[h] + c);
      acc[h][0] = hn::MulAdd(qh, k0, acc[h][0]);
      acc[h][1] = hn::MulAdd(qh, k1, acc[h][1]);
      acc[h][2] = hn::MulAdd(qh, k2, acc[h][2]);
      acc[h][3] = hn::MulAdd(qh, k3, acc[h][3]);
    }
  }
  for (int h = 0; h < kH; ++h)
    Reduce4(d, acc[h][0], acc[h][1], acc[h][2], acc[h][3], scale, out[h]);
}

// BF16 V rows on AVX2 are read 16 columns per load and widened by interleaving with zero
// (vpunpcklwd / vpunpckhwd: one instruction per 8 floats, against zero-extend + shift), which
// yields the columns in the order [0-3, 8-11] and [4-7, 12-15]. The accumulators hold the
// columns in that order from their load to their store, so every output element sees the same
// FMAs in the same order as with the plain widening (same bits).
template <class D, class T, int kV>
constexpr bool kBf16Pairs = HWY_TARGET == HWY_AVX2 && std::is_same_v<T, hwy::bfloat16_t> &&
                            hn::MaxLanes(D()) == 8 && kV % 2 == 0;
#if HWY_TARGET == HWY_AVX2
// Columns [0-7], [8-15] <-> [0-3, 8-11], [4-7, 12-15] (its own inverse).
template <class D, class V>
HWY_INLINE void SwapPairOrder(D d, V& a, V& b) {
  const V lo = hn::ConcatLowerLower(d, b, a);
  b = hn::ConcatUpperUpper(d, b, a);
  a = lo;
}
// 16 BF16 values as floats in the pair order.
template <class D, class V>
HWY_INLINE void LoadBf16Pair(D d, const hwy::bfloat16_t* p, V& a, V& b) {
  const hn::Repartition<uint16_t, D> du16;
  const auto w = hn::LoadU(du16, reinterpret_cast<const uint16_t*>(p));
  a = hn::BitCast(d, hn::InterleaveLower(du16, hn::Zero(du16), w));
  b = hn::BitCast(d, hn::InterleaveUpper(du16, hn::Zero(du16), w));
}
#else
template <class D, class V>
HWY_INLINE void SwapPairOrder(D, V&, V&) {}
template <class D, class T, class V>
HWY_INLINE void LoadBf16Pair(D, const T*, V&, V&) {}
#endif

// out[h][c .. c + kV*lanes) += sum over the listed slots of p[h][slot] * v_row, for kH heads,
// in slot order.
template <int kH, int kV, class D, class T>
HWY_INLINE void AccumulateBlock(D d, const float* const* p, const int* slots, const T* const* vrows,
                                int n, int c, float* const* out) {
  using V = hn::Vec<D>;
  const int nl = static_cast<int>(hn::Lanes(d));
  VecArray2<V, kH, kV> acc;
  for (int h = 0; h < kH; ++h) {
    for (int x = 0; x < kV; ++x) acc[h][x] = hn::LoadU(d, out[h] + c + x * nl);
    if constexpr (kBf16Pairs<D, T, kV>) {
      for (int x = 0; x < kV; x += 2) SwapPairOrder(d, acc[h][x], acc[h][x + 1]);
    }
  }
  for (int i = 0; i < n; ++i) {
    VecArray<V, kV> v;
    if constexpr (kBf16Pairs<D, T, kV>) {
      for (int x = 0; x < kV; x += 2) LoadBf16Pair(d, vrows[i] + c + x * nl, v[x], v[x + 1]);
    } else {
      for (int x = 0; x < kV; ++x) v[x] = LoadRow(d, vrows[i] + c + x * nl);
    }
    for (int h = 0; h < kH; ++h) {
      const V ph = hn::Set(d, p[h][slots[i]]);
      for (int x = 0; x < kV; ++x) {
        acc[h][x] = hn::MulAdd(ph, v[x], acc[h][x]);
        if constexpr (kBf16Pairs<D, T, kV>) acc[h][x] = InRegister(acc[h][x]);
      }
    }
  }
  for (int h = 0; h < kH; ++h) {
    if constexpr (kBf16Pairs<D, T, kV>) {
      for (int x = 0; x < kV; x += 2) SwapPairOrder(d, acc[h][x], acc[h][x + 1]);
    }
    for (int x = 0; x < kV; ++x) hn::StoreU(acc[h][x], d, out[h] + c + x * nl);
  }
}

// Heads [j, j + kH) of a group against the 4 K rows at krows: scores in place when the slots
// are consecutive, else through sc.
template <int kH, class D, class T>
HWY_INLINE void ScoreHeads(D d, const float* const* q, const T* const* krows, const int* live,
                           int m, int hd, float scale, float* const* rows) {
  const bool direct = m == 4 && live[3] == live[0] + 3;
  float sc[4 * kH];
  float* dst[kH];
  for (int h = 0; h < kH; ++h) dst[h] = direct ? rows[h] + live[0] : sc + 4 * h;
  ScoreBlock<kH>(d, q, krows, hd, scale, dst);
  if (!direct) {
    for (int h = 0; h < kH; ++h) {
      for (int t = 0; t < m; ++t) rows[h][live[t]] = sc[4 * h + t];
    }
  }
}

// Heads [j, j + kH) of a group: outputs over the n listed slots of one tile.
template <int kH, class D, class T>
HWY_INLINE void AccumulateHeads(D d, const float* const* p, const int* live, const T* const* vrows,
                                int n, int hd, float* const* out) {
  const int nl = static_cast<int>(hn::Lanes(d));
  int c = 0;
  for (; c + 4 * nl <= hd; c += 4 * nl) AccumulateBlock<kH, 4>(d, p, live, vrows, n, c, out);
  for (; c < hd; c += nl) AccumulateBlock<kH, 1>(d, p, live, vrows, n, c, out);
}

// exp(x) for the softmax's x in [-104, 0] (scores minus their maximum, clamped).
#if HWY_TARGET == HWY_AVX2
// On AVX2 Highway's Exp (hwy/contrib/math/math-inl.h) spends ~30 instructions per vector; this is
// its algorithm step for step (same rounding of x / ln 2, same two-part reduction, same Estrin
// polynomial), with the parts the range makes unnecessary left out, so it gives the same bits:
// |q| <= 151 needs none of ConvertTo's overflow fix-ups; 2^q is applied as 2^(q + 64) (exact:
// normal for q >= -150) times 2^-64, which rounds the same exact product once, as Highway's two
// halves 2^(q >> 1) and 2^(q - (q >> 1)) do; x >= -104 makes its final range test always true.
HWY_INLINE hn::Vec<DF> SoftmaxExp(DF d, hn::Vec<DF> x) {
  using V = hn::Vec<DF>;
  const hn::RebindToSigned<DF> di;
  // Highway's q = trunc(x / ln 2 + copysign(0.5, x)); x = +0 gives q = 0 with either sign.
  const V t = hn::MulAdd(x, hn::Set(d, 1.442695040888963407359924681f), hn::Set(d, -0.5f));
  const hn::Vec<decltype(di)> q{_mm256_cvttps_epi32(t.raw)};
  const V qf = hn::ConvertTo(d, q);
  V r = hn::MulAdd(qf, hn::Set(d, -0.693145751953125f), x);
  r = hn::MulAdd(qf, hn::Set(d, -1.428606765330187045e-6f), r);
  const V r2 = hn::Mul(r, r);
  const V r4 = hn::Mul(r2, r2);
  const V poly = hn::MulAdd(
      r4, hn::MulAdd(hn::Set(d, 0.000198527617612853646278381f), r,
                     hn::Set(d, 0.00139304355252534151077271f)),
      hn::MulAdd(r2, hn::MulAdd(hn::Set(d, 0.00833336077630519866943359f), r,
                                hn::Set(d, 0.0416664853692054748535156f)),
                 hn::MulAdd(hn::Set(d, 0.166666671633720397949219f), r, hn::Set(d, 0.5f))));
  const V y = hn::Add(hn::MulAdd(poly, r2, r), hn::Set(d, 1.f));
  const V pow2 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(q, hn::Set(di, 127 + 64))));
  return hn::Mul(hn::Mul(y, pow2), hn::Set(d, 0x1p-64f));
}
#else
HWY_INLINE hn::Vec<DF> SoftmaxExp(DF d, hn::Vec<DF> x) { return hn::Exp(d, x); }
#endif

// In-place softmax of one head's row; entries equal to -inf (unseen slots) become exactly 0,
// and a row with no visible slot all zeros. `sink` (-inf: none) is a logit in the denominator
// without an entry of its own (attention sinks).
void SoftmaxRow(float* x, int n, float sink) {
  const DF d;
  using V = hn::Vec<DF>;
  const int nl = static_cast<int>(hn::Lanes(d));
  const float neg_inf = -HUGE_VALF;
  int i = 0;
  V vmax = hn::Set(d, neg_inf);
  for (; i + nl <= n; i += nl) vmax = hn::Max(vmax, hn::LoadU(d, x + i));
  float mx = hn::GetLane(hn::MaxOfLanes(d, vmax));
  for (; i < n; ++i) mx = std::fmax(mx, x[i]);
  if (mx == neg_inf) {
    std::memset(x, 0, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  mx = std::fmax(mx, sink);

  // The sum runs in double so that long rows (thousands of slots) keep float-level relative
  // accuracy in every probability; policies compare near-tied scores.
#if HWY_TARGET == HWY_SCALAR
  double sum = 0;
#else
  const hn::Repartition<double, DF> dd;
  const hn::Half<DF> dh;
  auto s_lo = hn::Zero(dd), s_hi = hn::Zero(dd);
#endif
  const V vmx = hn::Set(d, mx), vneg_inf = hn::Set(d, neg_inf), vmin = hn::Set(d, -104.0f);
  auto exp_step = [&](float* p) {
    const V v = hn::LoadU(d, p);
    // Highway's Exp is 1 ulp on [-FLT_MAX, 104] but converts its argument to int32, so clamp;
    // exp(-104) already rounds to 0 in float, and unseen slots are zeroed explicitly.
    const V e = hn::IfThenZeroElse(hn::Eq(v, vneg_inf), SoftmaxExp(d, hn::Max(hn::Sub(v, vmx), vmin)));
    hn::StoreU(e, d, p);
#if HWY_TARGET == HWY_SCALAR
    sum += hn::GetLane(e);
#else
    s_lo = hn::Add(s_lo, hn::PromoteTo(dd, hn::LowerHalf(dh, e)));
    s_hi = hn::Add(s_hi, hn::PromoteTo(dd, hn::UpperHalf(dh, e)));
#endif
  };
  for (i = 0; i + nl <= n; i += nl) exp_step(x + i);
  if (i < n) {
    // The tail goes through the same vector code, padded with unseen slots.
    HWY_ALIGN float tail[hn::MaxLanes(d)];
    for (int j = 0; j < nl; ++j) tail[j] = i + j < n ? x[i + j] : neg_inf;
    exp_step(tail);
    std::memcpy(x + i, tail, static_cast<size_t>(n - i) * sizeof(float));
  }
#if HWY_TARGET != HWY_SCALAR
  double sum = hn::GetLane(hn::SumOfLanes(dd, hn::Add(s_lo, s_hi)));
#endif
  if (sink != neg_inf) sum += static_cast<double>(std::exp(sink - mx));
  const float inv = static_cast<float>(1.0 / sum);
  const V vinv = hn::Set(d, inv);
  for (i = 0; i + nl <= n; i += nl) hn::StoreU(hn::Mul(hn::LoadU(d, x + i), vinv), d, x + i);
  for (; i < n; ++i) x[i] *= inv;
}

// Calls fn.template operator()<kH>(j) over heads [0, n) in blocks of kMaxBlockHeads, then
// smaller ones.
template <class F>
HWY_INLINE void ForHeadBlocks(int n, F&& fn) {
  int j = 0;
  if constexpr (kMaxBlockHeads >= 4) {
    for (; j + 4 <= n; j += 4) fn.template operator()<4>(j);
    if (n - j == 3) {
      fn.template operator()<3>(j);
      return;
    }
  }
  for (; j + 2 <= n; j += 2) fn.template operator()<2>(j);
  if (j < n) fn.template operator()<1>(j);
}

// As ForHeadBlocks, with blocks of up to four heads on every target: widening a quantized row
// costs more than the accumulators it saves (the column passes are narrower instead).
template <class F>
HWY_INLINE void ForQuantHeadBlocks(int n, F&& fn) {
  int j = 0;
  for (; j + 4 <= n; j += 4) fn.template operator()<4>(j);
  if (n - j == 3) return fn.template operator()<3>(j);
  if (n - j == 2) return fn.template operator()<2>(j);
  if (n - j == 1) fn.template operator()<1>(j);
}

// One KV head g and query heads [h0, h1) of its group: what every pass needs to find them.
struct Run {
  Run(const AttentionArgs& a, int g, int h0, int h1)
      : a(a),
        g(g),
        h0(h0),
        n_head(h1 - h0),
        hd(a.head_dim),
        end(a.slot_end < 0 ? a.n_slot : a.slot_end),
        pos(a.pos + static_cast<size_t>(g) * a.n_slot) {
    for (int j = 0; j < n_head; ++j) {
      q[j] = a.q + static_cast<size_t>(h0 + j) * hd;
      out[j] = a.out + static_cast<size_t>(h0 + j) * hd;
    }
  }
  const AttentionArgs& a;
  int g, h0, n_head, hd;
  int end;  // slots read: [0, end)
  const int64_t* pos;
  const float* q[kMaxRunHeads];
  float* out[kMaxRunHeads];
};

// Lists the visible slots of tile [s0, s0 + n) of a run into live; returns how many.
HWY_INLINE int ListVisible(const Run& r, int s0, int n, int* live) {
  int n_live = 0;
  for (int s = s0; s < s0 + n; ++s) {
    if (visible(r.pos[s], r.a)) live[n_live++] = s;
  }
  return n_live;
}

// Where float K or V rows are read from: the stored rows (T = their element type), or, for F16
// rows read as float (targets without F16C), a float tile buffer they are converted into.
template <class T>
class FloatRows {
 public:
  FloatRows(const Run& r, const void* base, KvType type, float* tile_buf)
      : base_(static_cast<const uint8_t*>(base) +
              static_cast<size_t>(r.g) * r.a.n_slot * kv_row_bytes(type, r.hd)),
        row_bytes_(kv_row_bytes(type, r.hd)),
        hd_(r.hd),
        convert_(std::is_same_v<T, float> && type == KvType::kF16),
        tile_buf_(tile_buf) {}
  int tile() const {
    return convert_ ? std::min(kMaxTile, std::max(4, kTileFloats / hd_) / 4 * 4) : kMaxTile;
  }
  // rows_out[i] = the row of slot live[i] (i < n).
  void Gather(const int* live, int n, const T** rows_out) const {
    for (int i = 0; i < n; ++i) {
      const uint8_t* row = base_ + static_cast<size_t>(live[i]) * row_bytes_;
      if constexpr (std::is_same_v<T, float>) {
        if (convert_) {
          float* dst = tile_buf_ + static_cast<size_t>(i) * hd_;
          ConvertRowF16(reinterpret_cast<const uint16_t*>(row), dst, hd_);
          rows_out[i] = dst;
          continue;
        }
      }
      rows_out[i] = reinterpret_cast<const T*>(row);
    }
  }

 private:
  const uint8_t* base_;
  size_t row_bytes_;
  int hd_;
  bool convert_;
  float* tile_buf_;
};

// Pass 1 with float keys over slots [s_begin, s_end) (within [0, end)): rows[j][s] = the scaled
// score of head h0 + j, -inf for unseen slots. Each score is its own dot product, so any split
// of the slots gives the same bits.
template <class T, class D>
void FloatScores(D d, const Run& r, int s_begin, int s_end, float* const* rows, float* tile_buf) {
  const float neg_inf = -HUGE_VALF;
  const FloatRows<T> keys(r, r.a.k, r.a.k_type, tile_buf);
  const int tile = keys.tile();
  const T* krows[kMaxTile + 3];
  int live[kMaxTile];
  for (int s0 = s_begin; s0 < s_end; s0 += tile) {
    const int n = std::min(tile, s_end - s0);
    for (int s = s0; s < s0 + n; ++s) {
      if (!visible(r.pos[s], r.a)) {
        for (int j = 0; j < r.n_head; ++j) rows[j][s] = neg_inf;
      }
    }
    const int n_live = ListVisible(r, s0, n, live);
    if (n_live == 0) continue;
    keys.Gather(live, n_live, krows);
    // Pad to a multiple of 4 with the last row; the padded scores are dropped.
    for (int i = n_live; i < n_live + 3; ++i) krows[i] = krows[n_live - 1];
    for (int i = 0; i < n_live; i += 4) {
      const int m = std::min(4, n_live - i);
      ForHeadBlocks(r.n_head, [&]<int kH>(int j) {
        ScoreHeads<kH>(d, r.q + j, krows + i, live + i, m, r.hd, r.a.scale, rows + j);
      });
    }
  }
}

// Pass 3 with float values: out = the sum over the visible slots, in slot order, of
// p[j][slot] * v_row.
template <class T, class D>
void FloatOutputs(D d, const Run& r, const float* const* p, float* tile_buf) {
  const FloatRows<T> values(r, r.a.v, r.a.v_type, tile_buf);
  const int tile = values.tile();
  const T* vrows[kMaxTile];
  int live[kMaxTile];
  for (int s0 = 0; s0 < r.end; s0 += tile) {
    const int n_live = ListVisible(r, s0, std::min(tile, r.end - s0), live);
    if (n_live == 0) continue;
    values.Gather(live, n_live, vrows);
    ForHeadBlocks(r.n_head, [&]<int kH>(int j) {
      AccumulateHeads<kH>(d, p + j, live, vrows, n_live, r.hd, r.out + j);
    });
  }
}

// ------------------------------------------------------------------------------------------
// Quantized keys: a tile of 16 slots scored with int8 dot products, one slot per int32 lane.

constexpr int kMaxQuantHeadDim = 512;  // kv_block_size refuses larger heads for these types
constexpr int kTileHeads = 8;          // heads sharing one pass over a tile

// One query head rounded for the int8 dot products: its int8 values, and per block the product
// of its scale with the attention scale, and the int32 start value that cancels the bias of the
// unsigned operand (keys q8_0 enter as q + 128, q4_0 nibbles as q + 8).
struct QueryBlocks {
  HWY_ALIGN int8_t q[kMaxQuantHeadDim];
  float dq[kMaxQuantHeadDim / 8];
  int32_t bias[kMaxQuantHeadDim / 8];
};

void PrepareQuery(const Run& r, int j, int block, QueryBlocks& out) {
  float x[kMaxQuantHeadDim];
  std::memcpy(x, r.q[j], static_cast<size_t>(r.hd) * sizeof(float));
  if (r.a.k_rotated) hadamard_ref(x, r.hd);
  int32_t sum[kMaxQuantHeadDim / 8];
  quantize_query(x, r.hd, block, out.q, out.dq, sum);
  const int32_t offset = r.a.k_type == KvType::kQ8_0 ? 128 : 8;
  for (int b = 0; b < r.hd / block; ++b) {
    out.dq[b] *= r.a.scale;
    out.bias[b] = -offset * sum[b];
  }
}

// The geometry of a key tile (core/kv_type.h): per block, n_chunk chunks of 64 bytes ([lane][4
// bytes]), then 16 f16 scales.
struct KeyTile {
  KeyTile(KvType t, int hd)
      : q8(t == KvType::kQ8_0),
        block(kv_block_size(t, hd).value()),
        n_block(hd / block),
        n_chunk(q8 ? block / 4 : block / 8),
        block_bytes(static_cast<size_t>(n_chunk) * 64 + 2 * kKeyTileSlots),
        tile_bytes(key_tile_bytes(t, hd)) {}
  bool q8;
  int block, n_block, n_chunk;
  size_t block_bytes, tile_bytes;
};

inline int32_t Load4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// out[j][lane] = the scaled dot product of head j (of kH) with the 16 slots of one tile.
#if HWY_TARGET == HWY_AVX3_DL
// vpdpbusd: unsigned key bytes (q8_0 + 128, or q4_0 nibbles) times the signed query bytes,
// four products per lane per instruction.
template <int kH>
HWY_INLINE void ScoreTileHeads(const KeyTile& kt, const uint8_t* tile, const QueryBlocks* qb,
                               float* const* out) {
  __m512 acc_f[kH];
  for (int j = 0; j < kH; ++j) acc_f[j] = _mm512_setzero_ps();
  const __m512i bias80 = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  for (int b = 0; b < kt.n_block; ++b) {
    const uint8_t* blk = tile + b * kt.block_bytes;
    __m512i acc[kH];
    for (int j = 0; j < kH; ++j) acc[j] = _mm512_set1_epi32(qb[j].bias[b]);
    const int8_t* qbase = nullptr;
    for (int c = 0; c < kt.n_chunk; ++c) {
      const __m512i k = _mm512_loadu_si512(blk + 64 * c);
      if (kt.q8) {
        const __m512i ku = _mm512_xor_si512(k, bias80);
        for (int j = 0; j < kH; ++j) {
          qbase = qb[j].q + b * kt.block + 4 * c;
          acc[j] = _mm512_dpbusd_epi32(acc[j], ku, _mm512_set1_epi32(Load4(qbase)));
        }
      } else {
        const __m512i lo = _mm512_and_si512(k, low4);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(k, 4), low4);
        for (int j = 0; j < kH; ++j) {
          qbase = qb[j].q + b * kt.block + 4 * c;
          acc[j] = _mm512_dpbusd_epi32(acc[j], lo, _mm512_set1_epi32(Load4(qbase)));
          acc[j] = _mm512_dpbusd_epi32(acc[j], hi,
                                       _mm512_set1_epi32(Load4(qbase + kt.block / 2)));
        }
      }
    }
    const __m512 dk = _mm512_cvtph_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * kt.n_chunk)));
    for (int j = 0; j < kH; ++j) {
      acc_f[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[j]),
                                 _mm512_mul_ps(dk, _mm512_set1_ps(qb[j].dq[b])), acc_f[j]);
    }
  }
  for (int j = 0; j < kH; ++j) _mm512_storeu_ps(out[j], acc_f[j]);
}
#elif HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3)
// vpmaddubsw, eight lanes per half tile: q8_0 keys as sign(k, q) against |q| (no pair of
// products overflows int16: |k|, |q| <= 127); q4_0 nibbles against q directly, both halves of a
// chunk summed in int16 before vpmaddwd widens them.
template <int kH>
HWY_INLINE void ScoreTileHeads(const KeyTile& kt, const uint8_t* tile, const QueryBlocks* qb,
                               float* const* out) {
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  for (int half = 0; half < 2; ++half) {
    __m256 acc_f[kH];
    for (int j = 0; j < kH; ++j) acc_f[j] = _mm256_setzero_ps();
    for (int b = 0; b < kt.n_block; ++b) {
      const uint8_t* blk = tile + b * kt.block_bytes;
      __m256i acc[kH];
      for (int j = 0; j < kH; ++j) {
        // No bias to cancel here: the q8_0 path multiplies signed keys, and the q4_0 path
        // subtracts 8 * sum(q) at the end like the VNNI path.
        acc[j] = kt.q8 ? _mm256_setzero_si256() : _mm256_set1_epi32(qb[j].bias[b]);
      }
      for (int c = 0; c < kt.n_chunk; ++c) {
        const __m256i k =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 64 * c + 32 * half));
        if (kt.q8) {
          for (int j = 0; j < kH; ++j) {
            const __m256i q = _mm256_set1_epi32(Load4(qb[j].q + b * kt.block + 4 * c));
            const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(k, q));
            acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(p, ones));
          }
        } else {
          const __m256i lo = _mm256_and_si256(k, low4);
          const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(k, 4), low4);
          for (int j = 0; j < kH; ++j) {
            const int8_t* qp = qb[j].q + b * kt.block + 4 * c;
            const __m256i p =
                _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_set1_epi32(Load4(qp))),
                                 _mm256_maddubs_epi16(hi, _mm256_set1_epi32(Load4(qp + kt.block / 2))));
            acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(p, ones));
          }
        }
      }
      const __m256 dk = _mm256_cvtph_ps(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 64 * kt.n_chunk + 16 * half)));
      for (int j = 0; j < kH; ++j) {
        acc_f[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[j]),
                                   _mm256_mul_ps(dk, _mm256_set1_ps(qb[j].dq[b])), acc_f[j]);
      }
    }
    for (int j = 0; j < kH; ++j) _mm256_storeu_ps(out[j] + 8 * half, acc_f[j]);
  }
}
#else
// Other targets: plain integer loops, in the lane order of the vector paths (signed key values
// against signed query values; the same int32 sums).
template <int kH>
HWY_INLINE void ScoreTileHeads(const KeyTile& kt, const uint8_t* tile, const QueryBlocks* qb,
                               float* const* out) {
  for (int j = 0; j < kH; ++j) {
    for (int lane = 0; lane < kKeyTileSlots; ++lane) out[j][lane] = 0.f;
  }
  for (int b = 0; b < kt.n_block; ++b) {
    const uint8_t* blk = tile + b * kt.block_bytes;
    for (int j = 0; j < kH; ++j) {
      int32_t acc[kKeyTileSlots] = {};
      const int8_t* q = qb[j].q + b * kt.block;
      for (int c = 0; c < kt.n_chunk; ++c) {
        const uint8_t* k = blk + 64 * c;
        for (int lane = 0; lane < kKeyTileSlots; ++lane) {
          int32_t s = 0;
          for (int u = 0; u < 4; ++u) {
            const uint8_t byte = k[4 * lane + u];
            if (kt.q8) {
              s += static_cast<int8_t>(byte) * q[4 * c + u];
            } else {
              s += ((byte & 15) - 8) * q[4 * c + u] + ((byte >> 4) - 8) * q[kt.block / 2 + 4 * c + u];
            }
          }
          acc[lane] += s;
        }
      }
      const uint8_t* scales = blk + 64 * kt.n_chunk;
      for (int lane = 0; lane < kKeyTileSlots; ++lane) {
        out[j][lane] += static_cast<float>(acc[lane]) * (HalfToFloat(scales + 2 * lane) * qb[j].dq[b]);
      }
    }
  }
}
#endif

// Pass 1 with quantized keys over slots [s_begin, s_end): every tile that overlaps the range is
// scored whole; a tile inside the range whose slots are all visible is written in place, the
// others through a buffer, lanes inside the range only (-inf where unseen).
void QuantScores(const Run& r, int s_begin, int s_end, float* const* rows) {
  const float neg_inf = -HUGE_VALF;
  const KeyTile kt(r.a.k_type, r.hd);
  const uint8_t* pool = static_cast<const uint8_t*>(r.a.k) +
                        static_cast<size_t>(r.g) * key_pool_bytes(r.a.k_type, r.hd, r.a.n_slot);
  thread_local std::vector<QueryBlocks> qb_buf;
  if (qb_buf.size() < kMaxRunHeads) qb_buf.resize(kMaxRunHeads);
  QueryBlocks* qb = qb_buf.data();
  for (int j = 0; j < r.n_head; ++j) PrepareQuery(r, j, kt.block, qb[j]);
  HWY_ALIGN float sc[kTileHeads * kKeyTileSlots];
  float* dst[kTileHeads];
  for (int t0 = s_begin / kKeyTileSlots * kKeyTileSlots; t0 < s_end; t0 += kKeyTileSlots) {
    const int lo = std::max(s_begin, t0), hi = std::min(s_end, t0 + kKeyTileSlots);
    uint32_t seen = 0;  // bit s - t0: slot s is visible
    for (int s = lo; s < hi; ++s) seen |= static_cast<uint32_t>(visible(r.pos[s], r.a)) << (s - t0);
    if (seen == 0) {
      for (int j = 0; j < r.n_head; ++j) std::fill(rows[j] + lo, rows[j] + hi, neg_inf);
      continue;
    }
    const bool direct = seen == 0xFFFFu;  // the whole tile, in range and visible
    const uint8_t* tile = pool + static_cast<size_t>(t0 / kKeyTileSlots) * kt.tile_bytes;
    for (int j0 = 0; j0 < r.n_head; j0 += kTileHeads) {
      const int n = std::min(kTileHeads, r.n_head - j0);
      for (int j = 0; j < n; ++j) dst[j] = direct ? rows[j0 + j] + t0 : sc + kKeyTileSlots * j;
      switch (n) {
#define TOVA_ATTN_TILE_CASE(N) \
  case N:                      \
    ScoreTileHeads<N>(kt, tile, qb + j0, dst); \
    break;
        TOVA_ATTN_TILE_CASE(1)
        TOVA_ATTN_TILE_CASE(2)
        TOVA_ATTN_TILE_CASE(3)
        TOVA_ATTN_TILE_CASE(4)
        TOVA_ATTN_TILE_CASE(5)
        TOVA_ATTN_TILE_CASE(6)
        TOVA_ATTN_TILE_CASE(7)
        TOVA_ATTN_TILE_CASE(8)
#undef TOVA_ATTN_TILE_CASE
      }
      if (direct) continue;
      for (int j = 0; j < n; ++j) {
        float* row = rows[j0 + j];
        for (int s = lo; s < hi; ++s) {
          row[s] = (seen >> (s - t0)) & 1 ? sc[kKeyTileSlots * j + (s - t0)] : neg_inf;
        }
      }
    }
  }
}

// ------------------------------------------------------------------------------------------
// Quantized values: canonical rows, widened per vector and scaled per block.

// Lanes of the vectors a quantized value row is read in: they must divide the block (q8_0) or
// half of it (q4_0, whose two halves are the low and high nibbles of the same bytes), so each
// vector lies in one block.
template <class F>
void WithValueVector(KvType t, int block, F&& fn) {
  const int span = t == KvType::kQ8_0 ? block : block / 2;
  const DF df;
  if (span % static_cast<int>(hn::Lanes(df)) == 0) return fn(df);
  if (span % 8 == 0) return fn(hn::CappedTag<float, 8>());
  fn(hn::CappedTag<float, 4>());
}

// Where vector x of a column chunk lies in a quantized value row: its block's scale, its quant
// bytes, and (q4_0) whether it is the high nibbles. The same for every row.
struct QuantColumns {
  int scale[4];
  int quant[4];
  bool high[4];
};

// Vector x of a quantized value row as floats: widened and scaled by its block's scale (exact:
// an 11-bit scale times an int8 or a nibble).
template <bool kQ8, class D>
HWY_INLINE hn::Vec<D> LoadQuant(D d, const uint8_t* row, const QuantColumns& qc, int x,
                                float scale) {
  const hn::Rebind<int32_t, D> di;
  const hn::Vec<D> dv = hn::Set(d, scale);
  if constexpr (kQ8) {
    const auto u = hn::PromoteTo(
        di, hn::LoadU(hn::Rebind<int8_t, D>(), reinterpret_cast<const int8_t*>(row + qc.quant[x])));
    return hn::Mul(hn::ConvertTo(d, u), dv);
  } else {
    auto u = hn::PromoteTo(di, hn::LoadU(hn::Rebind<uint8_t, D>(), row + qc.quant[x]));
    if (qc.high[x]) u = hn::ShiftRight<4>(u);
    u = hn::Sub(hn::And(u, hn::Set(di, 15)), hn::Set(di, 8));
    return hn::Mul(hn::ConvertTo(d, u), dv);
  }
}

// out[h][c .. c + kV*lanes) += sum over the n listed slots of p[h][slot] * (the value row), for
// kH heads, in slot order; per element the same arithmetic whatever kH is.
template <int kH, int kV, bool kQ8, class D>
HWY_INLINE void AccumulateQuantBlock(D d, int block, const float* const* p, const int* live,
                                     const uint8_t* const* vrows, int n, int c,
                                     float* const* out) {
  using V = hn::Vec<D>;
  const int nl = static_cast<int>(hn::Lanes(d));
  const int bb = kQ8 ? 2 + block : 2 + block / 2;
  QuantColumns qc;
  for (int x = 0; x < kV; ++x) {
    const int col = c + x * nl, b = col / block, e = col % block;
    qc.scale[x] = b * bb;
    qc.high[x] = !kQ8 && e >= block / 2;
    qc.quant[x] = b * bb + 2 + (kQ8 ? e : e % (block / 2));
  }
  VecArray2<V, kH, kV> acc;
  for (int h = 0; h < kH; ++h) {
    for (int x = 0; x < kV; ++x) acc[h][x] = hn::LoadU(d, out[h] + c + x * nl);
  }
  for (int i = 0; i < n; ++i) {
    VecArray<V, kV> v;
    float dv = 0.f;
    for (int x = 0; x < kV; ++x) {
      // Vectors of one block share its scale (converted once).
      if (x == 0 || qc.scale[x] != qc.scale[x - 1]) dv = HalfToFloat(vrows[i] + qc.scale[x]);
      v[x] = LoadQuant<kQ8>(d, vrows[i], qc, x, dv);
    }
    for (int h = 0; h < kH; ++h) {
      const V ph = hn::Set(d, p[h][live[i]]);
      for (int x = 0; x < kV; ++x) acc[h][x] = hn::MulAdd(ph, v[x], acc[h][x]);
    }
  }
  for (int h = 0; h < kH; ++h) {
    for (int x = 0; x < kV; ++x) hn::StoreU(acc[h][x], d, out[h] + c + x * nl);
  }
}

// Columns per pass over the value rows: as many as the accumulators of four heads leave
// registers for (32 vector registers with AVX-512, 16 below it).
constexpr int kQuantColumnVectors = HWY_TARGET <= HWY_AVX3 ? 4 : 2;

template <int kH, bool kQ8, class D>
HWY_INLINE void AccumulateQuant(D d, int block, const float* const* p, const int* live,
                                const uint8_t* const* vrows, int n, int hd, float* const* out) {
  const int nl = static_cast<int>(hn::Lanes(d));
  constexpr int kV = kQuantColumnVectors;
  int c = 0;
  for (; c + kV * nl <= hd; c += kV * nl) {
    AccumulateQuantBlock<kH, kV, kQ8>(d, block, p, live, vrows, n, c, out);
  }
  for (; c < hd; c += nl) AccumulateQuantBlock<kH, 1, kQ8>(d, block, p, live, vrows, n, c, out);
}

// Pass 3 with quantized values.
void QuantOutputs(const Run& r, const float* const* p) {
  const KvType t = r.a.v_type;
  const int block = kv_block_size(t, r.hd).value();
  const size_t row_bytes = kv_row_bytes(t, r.hd);
  const uint8_t* base = static_cast<const uint8_t*>(r.a.v) +
                        static_cast<size_t>(r.g) * r.a.n_slot * row_bytes;
  const uint8_t* vrows[kMaxTile];
  int live[kMaxTile];
  WithValueVector(t, block, [&](auto d) {
    for (int s0 = 0; s0 < r.end; s0 += kMaxTile) {
      const int n_live = ListVisible(r, s0, std::min(kMaxTile, r.end - s0), live);
      if (n_live == 0) continue;
      for (int i = 0; i < n_live; ++i) vrows[i] = base + static_cast<size_t>(live[i]) * row_bytes;
      ForQuantHeadBlocks(r.n_head, [&]<int kH>(int j) {
        if (t == KvType::kQ8_0) {
          AccumulateQuant<kH, true>(d, block, p + j, live, vrows, n_live, r.hd, r.out + j);
        } else {
          AccumulateQuant<kH, false>(d, block, p + j, live, vrows, n_live, r.hd, r.out + j);
        }
      });
    }
  });
}

// ------------------------------------------------------------------------------------------
// The passes over one run, for every storage type.

// Where a kernel keeps F16 K/V rows it reads as float (targets without F16C): a tile on the
// stack, or on the heap for huge heads.
class TileBuffer {
 public:
  explicit TileBuffer(const AttentionArgs& a) {
    const bool f16 = a.k_type == KvType::kF16 || a.v_type == KvType::kF16;
    if (!f16 || TOVA_ATTN_F16_IN_REGISTERS) return;
    if (a.head_dim <= kTileFloats / 4) {
      ptr_ = stack_;
    } else {
      heap_.resize(static_cast<size_t>(4) * a.head_dim);  // huge heads: 4-slot tiles
      ptr_ = heap_.data();
    }
  }
  float* get() { return ptr_; }

 private:
  HWY_ALIGN float stack_[kTileFloats];
  std::vector<float> heap_;
  float* ptr_ = nullptr;
};

// Calls fn.template operator()<T>() with the element type float rows of `t` are read as.
template <class F>
HWY_INLINE void WithFloatElement(KvType t, F&& fn) {
  if (t == KvType::kBF16) return fn.template operator()<hwy::bfloat16_t>();
  if (t == KvType::kF16 && TOVA_ATTN_F16_IN_REGISTERS) return fn.template operator()<uint16_t>();
  fn.template operator()<float>();
}

template <class D>
void RunScores(D d, const Run& r, int s_begin, int s_end, float* const* rows, float* tile_buf) {
  if (kv_quantized(r.a.k_type)) {
    QuantScores(r, s_begin, s_end, rows);
  } else {
    WithFloatElement(r.a.k_type,
                     [&]<class T>() { FloatScores<T>(d, r, s_begin, s_end, rows, tile_buf); });
  }
  // Soft-capping of the seen scores (unseen ones stay -inf), per element: a head's result does
  // not depend on the others.
  if (r.a.softcap > 0.f) {
    const float neg_inf = -HUGE_VALF;
    const float inv_cap = 1.f / r.a.softcap;
    for (int j = 0; j < r.n_head; ++j) {
      float* row = rows[j];
      for (int s = s_begin; s < s_end; ++s) {
        if (row[s] != neg_inf) row[s] = r.a.softcap * std::tanh(row[s] * inv_cap);
      }
    }
  }
}

template <class D>
void RunOutputs(D d, const Run& r, const float* const* p, float* tile_buf) {
  for (int j = 0; j < r.n_head; ++j) std::memset(r.out[j], 0, static_cast<size_t>(r.hd) * sizeof(float));
  if (kv_quantized(r.a.v_type)) {
    QuantOutputs(r, p);
  } else {
    WithFloatElement(r.a.v_type, [&]<class T>() { FloatOutputs<T>(d, r, p, tile_buf); });
  }
  if (r.a.v_rotated) {
    for (int j = 0; j < r.n_head; ++j) hadamard_ref(r.out[j], r.hd);
  }
}

// Pass 2 for one head's row: softmax over the slots read; when probabilities were asked for,
// the slots not read are not seen (probability 0). A row with no visible slot becomes all
// zeros, and so do the outputs pass 3 sums from it.
void NormalizeRow(const AttentionArgs& a, float* row, int head) {
  const int end = a.slot_end < 0 ? a.n_slot : a.slot_end;
  SoftmaxRow(row, end, a.sinks != nullptr ? a.sinks[head] : -HUGE_VALF);
  if (a.probs != nullptr && end < a.n_slot) std::fill(row + end, row + a.n_slot, 0.f);
}

// Calls fn(run) for each run of heads in [head_begin, head_end) that share a KV head (at most
// `most` heads per run).
template <class F>
void ForRuns(const AttentionArgs& a, int most, F&& fn) {
  const int head_end = a.head_end < 0 ? a.n_head : a.head_end;
  const int group = a.n_head / a.n_head_kv;
  for (int h0 = a.head_begin; h0 < head_end;) {
    const int g = h0 / group;
    const int h1 = std::min({head_end, (g + 1) * group, h0 + most});
    fn(Run(a, g, h0, h1));
    h0 = h1;
  }
}

template <class D>
void AttentionWith(D d, const AttentionArgs& a) {
  TOVA_DCHECK(a.head_dim > 0 && a.n_head_kv > 0 && a.n_head % a.n_head_kv == 0);
  TOVA_DCHECK(a.probs != nullptr || a.scratch != nullptr);
  TOVA_DCHECK(a.slot_end <= a.n_slot);
  const int64_t scratch_size = a.scratch_size > 0 ? a.scratch_size : a.n_slot;
  // Heads whose score rows fit in scratch (all of them when writing into probs).
  const int rows_fit =
      a.probs ? kMaxRunHeads
              : static_cast<int>(std::clamp<int64_t>(scratch_size / std::max(a.n_slot, 1), 1,
                                                     kMaxRunHeads));
  TileBuffer tile(a);
  float* rows[kMaxRunHeads];
  // One KV head and its query heads [h0, h1), all three passes; rows[j] is head h0 + j's row.
  ForRuns(a, rows_fit, [&](const Run& r) {
    for (int j = 0; j < r.n_head; ++j) {
      rows[j] = a.probs ? a.probs + static_cast<size_t>(r.h0 + j) * a.n_slot
                        : a.scratch + static_cast<size_t>(j) * a.n_slot;
    }
    RunScores(d, r, 0, r.end, rows, tile.get());
    for (int j = 0; j < r.n_head; ++j) NormalizeRow(a, rows[j], r.h0 + j);
    RunOutputs(d, r, rows, tile.get());
  });
}

// The split passes (attention.h): rows is [n_head][n_slot].
template <class D>
void ScoresWith(D d, const AttentionArgs& a, float* rows_all, int s_begin, int s_end) {
  TileBuffer tile(a);
  float* rows[kMaxRunHeads];
  ForRuns(a, kMaxRunHeads, [&](const Run& r) {
    for (int j = 0; j < r.n_head; ++j) rows[j] = rows_all + static_cast<size_t>(r.h0 + j) * a.n_slot;
    RunScores(d, r, s_begin, s_end, rows, tile.get());
  });
}

template <class D>
void OutputsWith(D d, const AttentionArgs& a, const float* rows_all) {
  TileBuffer tile(a);
  const float* rows[kMaxRunHeads];
  ForRuns(a, kMaxRunHeads, [&](const Run& r) {
    for (int j = 0; j < r.n_head; ++j) rows[j] = rows_all + static_cast<size_t>(r.h0 + j) * a.n_slot;
    RunOutputs(d, r, rows, tile.get());
  });
}

// The widest vector that divides head_dim, so float rows need no tails.
template <class F>
void WithRowVector(int hd, F&& fn) {
  const DF df;
  if (hd % static_cast<int>(hn::Lanes(df)) == 0) return fn(df);
  if (hd % 8 == 0) return fn(hn::CappedTag<float, 8>());
  if (hd % 4 == 0) return fn(hn::CappedTag<float, 4>());
  fn(hn::CappedTag<float, 1>());
}

void Attention(const AttentionArgs& a) {
  WithRowVector(a.head_dim, [&](auto d) { AttentionWith(d, a); });
}

void AttentionScores(const AttentionArgs& a, float* rows, int s_begin, int s_end) {
  WithRowVector(a.head_dim, [&](auto d) { ScoresWith(d, a, rows, s_begin, s_end); });
}

void AttentionNormalize(const AttentionArgs& a, float* rows, int h_begin, int h_end) {
  for (int h = h_begin; h < h_end; ++h) {
    NormalizeRow(a, rows + static_cast<size_t>(h) * a.n_slot, h);
  }
}

void AttentionOutputs(const AttentionArgs& a, const float* rows) {
  WithRowVector(a.head_dim, [&](auto d) { OutputsWith(d, a, rows); });
}

}  // namespace HWY_NAMESPACE
}  // namespace tova::kernels::attn_hwy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tova::kernels {
namespace attn_hwy {
HWY_EXPORT(Attention);
HWY_EXPORT(AttentionScores);
HWY_EXPORT(AttentionNormalize);
HWY_EXPORT(AttentionOutputs);
}  // namespace attn_hwy

void attention(const AttentionArgs& a) { HWY_DYNAMIC_DISPATCH(attn_hwy::Attention)(a); }

void attention_scores(const AttentionArgs& a, float* rows, int slot_begin, int slot_end) {
  HWY_DYNAMIC_DISPATCH(attn_hwy::AttentionScores)(a, rows, slot_begin, slot_end);
}

void attention_normalize(const AttentionArgs& a, float* rows, int head_begin, int head_end) {
  HWY_DYNAMIC_DISPATCH(attn_hwy::AttentionNormalize)(a, rows, head_begin, head_end);
}

void attention_outputs(const AttentionArgs& a, const float* rows) {
  HWY_DYNAMIC_DISPATCH(attn_hwy::AttentionOutputs)(a, rows);
}

}  // namespace tova::kernels
#endif  // HWY_ONCE
