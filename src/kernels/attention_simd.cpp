// Fused Highway attention (see attention.h), compiled once per target (foreach_target) and
// dispatched at run time.
//
// Grouped-query attention shares one KV head between several query heads, so the kernel works
// per KV head on a whole group of query heads: one sweep over the K rows scores every head of the
// group (a tile of K rows is read from memory once and then served from L1), a softmax per head,
// and one sweep over the V rows accumulates every head's output. F16 rows are converted once per
// tile, not once per head.
//
// Each query head's arithmetic (dot-product lane order, softmax sums, slot order of the output
// accumulation) does not depend on which other heads are processed with it, on the head range a
// thread was given, on the scratch size, or on whether `probs` is requested: all of these give
// bit-identical outputs. Policies rely on it (a policy that asks for scores must not change the
// output of a cache that never evicts).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "core/half.h"
#include "kernels/attention.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/attention_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// foreach_target re-includes this file once per target; the headers below must follow it.
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tova::kernels::attn_hwy {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

// Slots per tile: the tile's K (or V) rows, converted to float when stored as F16, must stay in
// L1 while every head of the group uses them.
constexpr int kTileFloats = 8192;  // 32 KiB
constexpr int kMaxTile = 64;

inline bool visible(int64_t pos, const AttentionArgs& a) {
  return pos >= 0 && pos >= a.min_pos && pos <= a.max_pos;
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
#if HWY_TARGET != HWY_SCALAR
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

// Scores of kH heads against 4 K rows: out[h][j] = scale * dot(q[h], k[j]).
template <int kH, class D>
HWY_INLINE void ScoreBlock(D d, const float* const* q, const float* const* k, int hd, float scale,
                           float* const* out) {
  using V = hn::Vec<D>;
  const int nl = static_cast<int>(hn::Lanes(d));
  V a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  V b0 = hn::Zero(d), b1 = hn::Zero(d), b2 = hn::Zero(d), b3 = hn::Zero(d);
  for (int c = 0; c < hd; c += nl) {
    const V k0 = hn::LoadU(d, k[0] + c), k1 = hn::LoadU(d, k[1] + c);
    const V k2 = hn::LoadU(d, k[2] + c), k3 = hn::LoadU(d, k[3] + c);
    const V qa = hn::LoadU(d, q[0] + c);
    a0 = hn::MulAdd(qa, k0, a0);
    a1 = hn::MulAdd(qa, k1, a1);
    a2 = hn::MulAdd(qa, k2, a2);
    a3 = hn::MulAdd(qa, k3, a3);
    if constexpr (kH == 2) {
      const V qb = hn::LoadU(d, q[1] + c);
      b0 = hn::MulAdd(qb, k0, b0);
      b1 = hn::MulAdd(qb, k1, b1);
      b2 = hn::MulAdd(qb, k2, b2);
      b3 = hn::MulAdd(qb, k3, b3);
    }
  }
  Reduce4(d, a0, a1, a2, a3, scale, out[0]);
  if constexpr (kH == 2) Reduce4(d, b0, b1, b2, b3, scale, out[1]);
}

// out[h][c .. c + kV*lanes) += sum over the listed slots of p[h][slot] * v_row, for kH heads,
// in slot order.
template <int kH, int kV, class D>
HWY_INLINE void AccumulateBlock(D d, const float* const* p, const int* slots,
                                const float* const* vrows, int n, int c, float* const* out) {
  using V = hn::Vec<D>;
  const int nl = static_cast<int>(hn::Lanes(d));
  V a0 = hn::LoadU(d, out[0] + c), a1 = a0, a2 = a0, a3 = a0;
  if constexpr (kV == 4) {
    a1 = hn::LoadU(d, out[0] + c + nl);
    a2 = hn::LoadU(d, out[0] + c + 2 * nl);
    a3 = hn::LoadU(d, out[0] + c + 3 * nl);
  }
  V b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  if constexpr (kH == 2) {
    b0 = hn::LoadU(d, out[1] + c);
    if constexpr (kV == 4) {
      b1 = hn::LoadU(d, out[1] + c + nl);
      b2 = hn::LoadU(d, out[1] + c + 2 * nl);
      b3 = hn::LoadU(d, out[1] + c + 3 * nl);
    }
  }
  for (int i = 0; i < n; ++i) {
    const float* v = vrows[i] + c;
    const V v0 = hn::LoadU(d, v);
    const V pa = hn::Set(d, p[0][slots[i]]);
    a0 = hn::MulAdd(pa, v0, a0);
    V v1, v2, v3;
    if constexpr (kV == 4) {
      v1 = hn::LoadU(d, v + nl);
      v2 = hn::LoadU(d, v + 2 * nl);
      v3 = hn::LoadU(d, v + 3 * nl);
      a1 = hn::MulAdd(pa, v1, a1);
      a2 = hn::MulAdd(pa, v2, a2);
      a3 = hn::MulAdd(pa, v3, a3);
    }
    if constexpr (kH == 2) {
      const V pb = hn::Set(d, p[1][slots[i]]);
      b0 = hn::MulAdd(pb, v0, b0);
      if constexpr (kV == 4) {
        b1 = hn::MulAdd(pb, v1, b1);
        b2 = hn::MulAdd(pb, v2, b2);
        b3 = hn::MulAdd(pb, v3, b3);
      }
    }
  }
  hn::StoreU(a0, d, out[0] + c);
  if constexpr (kV == 4) {
    hn::StoreU(a1, d, out[0] + c + nl);
    hn::StoreU(a2, d, out[0] + c + 2 * nl);
    hn::StoreU(a3, d, out[0] + c + 3 * nl);
  }
  if constexpr (kH == 2) {
    hn::StoreU(b0, d, out[1] + c);
    if constexpr (kV == 4) {
      hn::StoreU(b1, d, out[1] + c + nl);
      hn::StoreU(b2, d, out[1] + c + 2 * nl);
      hn::StoreU(b3, d, out[1] + c + 3 * nl);
    }
  }
}

// In-place softmax of one head's row; entries equal to -inf (unseen slots) become exactly 0.
// Returns false (row all zeros) when no slot is visible.
bool SoftmaxRow(float* x, int n) {
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
    return false;
  }

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
    const V e = hn::IfThenZeroElse(hn::Eq(v, vneg_inf), hn::Exp(d, hn::Max(hn::Sub(v, vmx), vmin)));
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
  const double sum = hn::GetLane(hn::SumOfLanes(dd, hn::Add(s_lo, s_hi)));
#endif
  const float inv = static_cast<float>(1.0 / sum);
  const V vinv = hn::Set(d, inv);
  for (i = 0; i + nl <= n; i += nl) hn::StoreU(hn::Mul(hn::LoadU(d, x + i), vinv), d, x + i);
  for (; i < n; ++i) x[i] *= inv;
  return true;
}

// One KV head and query heads [h0, h1) of its group. rows[j] is head h0 + j's [n_slot] row.
template <class D>
void AttendGroup(D d, const AttentionArgs& a, int g, int h0, int h1, float* const* rows,
                 float* tile_buf) {
  const int n_head_here = h1 - h0;
  const int hd = a.head_dim;
  const int n_slot = a.n_slot;
  const size_t row_stride = static_cast<size_t>(hd);
  const size_t kv_off = static_cast<size_t>(g) * n_slot * row_stride;
  const int64_t* pos = a.pos + static_cast<size_t>(g) * n_slot;
  const int tile = tile_buf ? std::min(kMaxTile, std::max(4, kTileFloats / hd) / 4 * 4) : kMaxTile;
  const float neg_inf = -HUGE_VALF;

  const float* q[16];
  float* out[16];
  // Groups above 16 heads are processed 16 at a time by the caller.
  for (int j = 0; j < n_head_here; ++j) {
    q[j] = a.q + static_cast<size_t>(h0 + j) * row_stride;
    out[j] = a.out + static_cast<size_t>(h0 + j) * row_stride;
  }

  int live[kMaxTile];
  const float* krows[kMaxTile + 3];
  // Lists the visible slots of tile [s0, s0 + n) and points `rows_out` at their K or V rows
  // (converted into tile_buf when stored as F16).
  auto gather = [&](int s0, int n, const void* base, const float** rows_out) {
    int n_live = 0;
    for (int s = s0; s < s0 + n; ++s) {
      if (visible(pos[s], a)) live[n_live++] = s;
    }
    for (int i = 0; i < n_live; ++i) {
      const size_t off = kv_off + static_cast<size_t>(live[i]) * row_stride;
      if (a.kv_f16) {
        float* dst = tile_buf + static_cast<size_t>(i) * row_stride;
        ConvertRowF16(static_cast<const uint16_t*>(base) + off, dst, hd);
        rows_out[i] = dst;
      } else {
        rows_out[i] = static_cast<const float*>(base) + off;
      }
    }
    return n_live;
  };

  // Pass 1: scores (unseen slots -inf).
  for (int s0 = 0; s0 < n_slot; s0 += tile) {
    const int n = std::min(tile, n_slot - s0);
    for (int s = s0; s < s0 + n; ++s) {
      if (!visible(pos[s], a)) {
        for (int j = 0; j < n_head_here; ++j) rows[j][s] = neg_inf;
      }
    }
    const int n_live = gather(s0, n, a.k, krows);
    if (n_live == 0) continue;
    // Pad to a multiple of 4 with the last row; the padded scores are dropped.
    for (int i = n_live; i < n_live + 3; ++i) krows[i] = krows[n_live - 1];
    for (int i = 0; i < n_live; i += 4) {
      const int m = std::min(4, n_live - i);
      // Four consecutive slots (the common case) take their scores in place.
      const bool direct = m == 4 && live[i + 3] == live[i] + 3;
      float sc[8];
      float* dst[2];
      int j = 0;
      for (; j + 2 <= n_head_here; j += 2) {
        dst[0] = direct ? rows[j] + live[i] : sc;
        dst[1] = direct ? rows[j + 1] + live[i] : sc + 4;
        ScoreBlock<2>(d, q + j, krows + i, hd, a.scale, dst);
        if (!direct) {
          for (int t = 0; t < m; ++t) {
            rows[j][live[i + t]] = sc[t];
            rows[j + 1][live[i + t]] = sc[4 + t];
          }
        }
      }
      if (j < n_head_here) {
        dst[0] = direct ? rows[j] + live[i] : sc;
        ScoreBlock<1>(d, q + j, krows + i, hd, a.scale, dst);
        if (!direct) {
          for (int t = 0; t < m; ++t) rows[j][live[i + t]] = sc[t];
        }
      }
    }
  }

  // Soft-capping of the seen scores (unseen ones stay -inf), per element: a head's result does
  // not depend on the others.
  if (a.softcap > 0.f) {
    const float inv_cap = 1.f / a.softcap;
    for (int j = 0; j < n_head_here; ++j) {
      float* r = rows[j];
      for (int s = 0; s < n_slot; ++s) {
        if (r[s] != neg_inf) r[s] = a.softcap * std::tanh(r[s] * inv_cap);
      }
    }
  }

  // Pass 2: softmax per head.
  bool any = false;
  for (int j = 0; j < n_head_here; ++j) any = SoftmaxRow(rows[j], n_slot) || any;
  for (int j = 0; j < n_head_here; ++j) std::memset(out[j], 0, row_stride * sizeof(float));
  if (!any) return;  // nothing visible: output 0

  // Pass 3: outputs, accumulated over the visible slots in slot order.
  const int nl = static_cast<int>(hn::Lanes(d));
  const float* vrows[kMaxTile];
  const float* const* p = rows;
  for (int s0 = 0; s0 < n_slot; s0 += tile) {
    const int n = std::min(tile, n_slot - s0);
    const int n_live = gather(s0, n, a.v, vrows);
    if (n_live == 0) continue;
    int j = 0;
    for (; j + 2 <= n_head_here; j += 2) {
      int c = 0;
      for (; c + 4 * nl <= hd; c += 4 * nl) {
        AccumulateBlock<2, 4>(d, p + j, live, vrows, n_live, c, out + j);
      }
      for (; c < hd; c += nl) AccumulateBlock<2, 1>(d, p + j, live, vrows, n_live, c, out + j);
    }
    if (j < n_head_here) {
      int c = 0;
      for (; c + 4 * nl <= hd; c += 4 * nl) {
        AccumulateBlock<1, 4>(d, p + j, live, vrows, n_live, c, out + j);
      }
      for (; c < hd; c += nl) AccumulateBlock<1, 1>(d, p + j, live, vrows, n_live, c, out + j);
    }
  }
}

template <class D>
void AttentionWith(D d, const AttentionArgs& a) {
  const int head_end = a.head_end < 0 ? a.n_head : a.head_end;
  const int group = a.n_head / a.n_head_kv;
  TOVA_DCHECK(a.head_dim > 0 && a.n_head_kv > 0 && a.n_head % a.n_head_kv == 0);
  TOVA_DCHECK(a.probs != nullptr || a.scratch != nullptr);
  const int64_t scratch_size = a.scratch_size > 0 ? a.scratch_size : a.n_slot;
  // Heads whose score rows fit in scratch (all of them when writing into probs).
  const int rows_fit =
      a.probs ? 16
              : static_cast<int>(std::clamp<int64_t>(scratch_size / std::max(a.n_slot, 1), 1, 16));

  std::vector<float> heap_buf;
  HWY_ALIGN float stack_buf[kTileFloats];
  float* tile_buf = nullptr;
  if (a.kv_f16) {
    if (a.head_dim <= kTileFloats / 4) {
      tile_buf = stack_buf;
    } else {
      heap_buf.resize(static_cast<size_t>(4) * a.head_dim);  // huge heads: 4-slot tiles
      tile_buf = heap_buf.data();
    }
  }

  float* rows[16];
  for (int h0 = a.head_begin; h0 < head_end;) {
    const int g = h0 / group;
    const int h1 = std::min({head_end, (g + 1) * group, h0 + rows_fit});
    for (int j = 0; j < h1 - h0; ++j) {
      rows[j] = a.probs ? a.probs + static_cast<size_t>(h0 + j) * a.n_slot
                        : a.scratch + static_cast<size_t>(j) * a.n_slot;
    }
    AttendGroup(d, a, g, h0, h1, rows, tile_buf);
    h0 = h1;
  }
}

void Attention(const AttentionArgs& a) {
  // The widest vector that divides head_dim, so rows need no tails.
  const DF df;
  const int hd = a.head_dim;
  if (hd % static_cast<int>(hn::Lanes(df)) == 0) return AttentionWith(df, a);
  if (hd % 8 == 0) return AttentionWith(hn::CappedTag<float, 8>(), a);
  if (hd % 4 == 0) return AttentionWith(hn::CappedTag<float, 4>(), a);
  AttentionWith(hn::CappedTag<float, 1>(), a);
}

}  // namespace HWY_NAMESPACE
}  // namespace tova::kernels::attn_hwy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tova::kernels {
namespace attn_hwy {
HWY_EXPORT(Attention);
}  // namespace attn_hwy

void attention(const AttentionArgs& a) { HWY_DYNAMIC_DISPATCH(attn_hwy::Attention)(a); }

}  // namespace tova::kernels
#endif  // HWY_ONCE
