// Fused Highway attention (see attention.h), compiled once per target (foreach_target) and
// dispatched at run time.
//
// Grouped-query attention shares one KV head between several query heads, so the kernel works
// per KV head on a whole group of query heads: one sweep over the K rows scores every head of the
// group (a tile of K rows is read from memory once and then served from L1), a softmax per head,
// and one sweep over the V rows accumulates every head's output. Up to four heads share each
// load of a K or V row (kMaxBlockHeads), and F16 rows are widened in registers as they are
// loaded (on x86 with F16C; elsewhere once per tile into a float buffer).
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
#include <type_traits>
#include <vector>

#include "core/check.h"
#include "core/half.h"
#include "kernels/attention.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/attention_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// foreach_target re-includes this file once per target; the headers below must follow it.
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

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

// F16 K/V rows are widened inside the score and output loops (one vcvtph2ps per vector, exact)
// on x86 targets with F16C; other targets convert each tile of rows into a float buffer first.
#undef TOVA_ATTN_F16_IN_REGISTERS  // (this file is compiled once per target)
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
#define TOVA_ATTN_F16_IN_REGISTERS 1
#else
#define TOVA_ATTN_F16_IN_REGISTERS 0
#endif

// Query heads that share one pass over a block of K or V rows: enough accumulators to reuse
// every row load (and F16 widening) across the heads, without spilling registers.
constexpr int kMaxBlockHeads = HWY_TARGET <= HWY_AVX3 ? 4 : 2;

// One vector of a K or V row: float, or IEEE half widened to float.
template <class D, class T>
HWY_INLINE hn::Vec<D> LoadRow(D d, const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return hn::LoadU(d, p);
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
  V acc[kH][4];
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

// out[h][c .. c + kV*lanes) += sum over the listed slots of p[h][slot] * v_row, for kH heads,
// in slot order.
template <int kH, int kV, class D, class T>
HWY_INLINE void AccumulateBlock(D d, const float* const* p, const int* slots, const T* const* vrows,
                                int n, int c, float* const* out) {
  using V = hn::Vec<D>;
  const int nl = static_cast<int>(hn::Lanes(d));
  V acc[kH][kV];
  for (int h = 0; h < kH; ++h) {
    for (int x = 0; x < kV; ++x) acc[h][x] = hn::LoadU(d, out[h] + c + x * nl);
  }
  for (int i = 0; i < n; ++i) {
    V v[kV];
    for (int x = 0; x < kV; ++x) v[x] = LoadRow(d, vrows[i] + c + x * nl);
    for (int h = 0; h < kH; ++h) {
      const V ph = hn::Set(d, p[h][slots[i]]);
      for (int x = 0; x < kV; ++x) acc[h][x] = hn::MulAdd(ph, v[x], acc[h][x]);
    }
  }
  for (int h = 0; h < kH; ++h) {
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

// In-place softmax of one head's row; entries equal to -inf (unseen slots) become exactly 0,
// and a row with no visible slot all zeros.
void SoftmaxRow(float* x, int n) {
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

// One KV head g and query heads [h0, h1) of its group: the pointers and sizes the passes share.
// T: the element type the score and output loops read, float or (F16 in registers) uint16_t.
template <class T>
class GroupPass {
 public:
  GroupPass(const AttentionArgs& a, int g, int h0, int h1, float* tile_buf)
      : a_(a),
        n_head_here_(h1 - h0),
        hd_(a.head_dim),
        end_(a.slot_end < 0 ? a.n_slot : a.slot_end),
        row_stride_(static_cast<size_t>(a.head_dim)),
        kv_off_(static_cast<size_t>(g) * a.n_slot * row_stride_),
        pos_(a.pos + static_cast<size_t>(g) * a.n_slot),
        tile_(tile_buf ? std::min(kMaxTile, std::max(4, kTileFloats / hd_) / 4 * 4) : kMaxTile),
        tile_buf_(tile_buf) {
    // Groups above 16 heads are processed 16 at a time by the callers.
    for (int j = 0; j < n_head_here_; ++j) {
      q_[j] = a.q + static_cast<size_t>(h0 + j) * row_stride_;
      out_[j] = a.out + static_cast<size_t>(h0 + j) * row_stride_;
    }
  }

  int end() const { return end_; }

  // Pass 1 over slots [s_begin, s_end) (within [0, end)): rows[j][s] = the scaled (and
  // soft-capped) score of head h0 + j, -inf for unseen slots. Each score is its own dot
  // product, so any split of the slots gives the same bits.
  template <class D>
  void Scores(D d, int s_begin, int s_end, float* const* rows) {
    const float neg_inf = -HUGE_VALF;
    const T* krows[kMaxTile + 3];
    for (int s0 = s_begin; s0 < s_end; s0 += tile_) {
      const int n = std::min(tile_, s_end - s0);
      for (int s = s0; s < s0 + n; ++s) {
        if (!visible(pos_[s], a_)) {
          for (int j = 0; j < n_head_here_; ++j) rows[j][s] = neg_inf;
        }
      }
      const int n_live = Gather(s0, n, a_.k, krows);
      if (n_live == 0) continue;
      // Pad to a multiple of 4 with the last row; the padded scores are dropped.
      for (int i = n_live; i < n_live + 3; ++i) krows[i] = krows[n_live - 1];
      for (int i = 0; i < n_live; i += 4) {
        const int m = std::min(4, n_live - i);
        ForHeadBlocks(n_head_here_, [&]<int kH>(int j) {
          ScoreHeads<kH>(d, q_ + j, krows + i, live_ + i, m, hd_, a_.scale, rows + j);
        });
      }
    }
    // Soft-capping of the seen scores (unseen ones stay -inf), per element: a head's result
    // does not depend on the others.
    if (a_.softcap > 0.f) {
      const float inv_cap = 1.f / a_.softcap;
      for (int j = 0; j < n_head_here_; ++j) {
        float* r = rows[j];
        for (int s = s_begin; s < s_end; ++s) {
          if (r[s] != neg_inf) r[s] = a_.softcap * std::tanh(r[s] * inv_cap);
        }
      }
    }
  }

  // Pass 3: out = the sum over the visible slots, in slot order, of p[j][slot] * v_row.
  template <class D>
  void Outputs(D d, const float* const* p) {
    for (int j = 0; j < n_head_here_; ++j) std::memset(out_[j], 0, row_stride_ * sizeof(float));
    const T* vrows[kMaxTile];
    for (int s0 = 0; s0 < end_; s0 += tile_) {
      const int n = std::min(tile_, end_ - s0);
      const int n_live = Gather(s0, n, a_.v, vrows);
      if (n_live == 0) continue;
      ForHeadBlocks(n_head_here_, [&]<int kH>(int j) {
        AccumulateHeads<kH>(d, p + j, live_, vrows, n_live, hd_, out_ + j);
      });
    }
  }

 private:
  // Lists the visible slots of tile [s0, s0 + n) and points `rows_out` at their K or V rows
  // (converted into tile_buf when stored as F16 and read as float).
  int Gather(int s0, int n, const void* base, const T** rows_out) {
    int n_live = 0;
    for (int s = s0; s < s0 + n; ++s) {
      if (visible(pos_[s], a_)) live_[n_live++] = s;
    }
    for (int i = 0; i < n_live; ++i) {
      const size_t off = kv_off_ + static_cast<size_t>(live_[i]) * row_stride_;
      if constexpr (std::is_same_v<T, float>) {
        if (a_.kv_f16) {
          float* dst = tile_buf_ + static_cast<size_t>(i) * row_stride_;
          ConvertRowF16(static_cast<const uint16_t*>(base) + off, dst, hd_);
          rows_out[i] = dst;
        } else {
          rows_out[i] = static_cast<const float*>(base) + off;
        }
      } else {
        rows_out[i] = static_cast<const T*>(base) + off;
      }
    }
    return n_live;
  }

  const AttentionArgs& a_;
  int n_head_here_;
  int hd_;
  int end_;  // slots read: [0, end)
  size_t row_stride_;
  size_t kv_off_;
  const int64_t* pos_;
  int tile_;
  float* tile_buf_;
  const float* q_[16];
  float* out_[16];
  int live_[kMaxTile];
};

// Pass 2 for one head's row: softmax over the slots read; when probabilities were asked for,
// the slots not read are not seen (probability 0). A row with no visible slot becomes all
// zeros, and so do the outputs pass 3 sums from it.
void NormalizeRow(const AttentionArgs& a, float* row) {
  const int end = a.slot_end < 0 ? a.n_slot : a.slot_end;
  SoftmaxRow(row, end);
  if (a.probs != nullptr && end < a.n_slot) std::fill(row + end, row + a.n_slot, 0.f);
}

// Where a kernel keeps F16 K/V rows it reads as float (targets without F16C): a tile on the
// stack, or on the heap for huge heads.
class TileBuffer {
 public:
  explicit TileBuffer(const AttentionArgs& a) {
    if (!a.kv_f16 || TOVA_ATTN_F16_IN_REGISTERS) return;
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

// Calls fn(pass, h0, h1) for each run of heads in [head_begin, head_end) that share a KV head
// (at most `most` heads per run), with a GroupPass that reads F16 K/V in registers where the
// target can.
template <class F>
void ForGroupPasses(const AttentionArgs& a, int most, F&& fn) {
  TileBuffer tile(a);
  const int head_end = a.head_end < 0 ? a.n_head : a.head_end;
  const int group = a.n_head / a.n_head_kv;
  for (int h0 = a.head_begin; h0 < head_end;) {
    const int g = h0 / group;
    const int h1 = std::min({head_end, (g + 1) * group, h0 + most});
    if (a.kv_f16 && TOVA_ATTN_F16_IN_REGISTERS) {
      GroupPass<uint16_t> pass(a, g, h0, h1, tile.get());
      fn(pass, h0, h1);
    } else {
      GroupPass<float> pass(a, g, h0, h1, tile.get());
      fn(pass, h0, h1);
    }
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
      a.probs ? 16
              : static_cast<int>(std::clamp<int64_t>(scratch_size / std::max(a.n_slot, 1), 1, 16));
  float* rows[16];
  // One KV head and its query heads [h0, h1), all three passes; rows[j] is head h0 + j's row.
  ForGroupPasses(a, rows_fit, [&](auto& pass, int h0, int h1) {
    for (int j = 0; j < h1 - h0; ++j) {
      rows[j] = a.probs ? a.probs + static_cast<size_t>(h0 + j) * a.n_slot
                        : a.scratch + static_cast<size_t>(j) * a.n_slot;
    }
    pass.Scores(d, 0, pass.end(), rows);
    for (int j = 0; j < h1 - h0; ++j) NormalizeRow(a, rows[j]);
    pass.Outputs(d, rows);
  });
}

// The split passes (attention.h): rows is [n_head][n_slot].
template <class D>
void ScoresWith(D d, const AttentionArgs& a, float* rows_all, int s_begin, int s_end) {
  float* rows[16];
  ForGroupPasses(a, 16, [&](auto& pass, int h0, int h1) {
    for (int j = 0; j < h1 - h0; ++j) rows[j] = rows_all + static_cast<size_t>(h0 + j) * a.n_slot;
    pass.Scores(d, s_begin, s_end, rows);
  });
}

template <class D>
void OutputsWith(D d, const AttentionArgs& a, const float* rows_all) {
  const float* rows[16];
  ForGroupPasses(a, 16, [&](auto& pass, int h0, int h1) {
    for (int j = 0; j < h1 - h0; ++j) rows[j] = rows_all + static_cast<size_t>(h0 + j) * a.n_slot;
    pass.Outputs(d, rows);
  });
}

// The widest vector that divides head_dim, so rows need no tails.
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
  for (int h = h_begin; h < h_end; ++h) NormalizeRow(a, rows + static_cast<size_t>(h) * a.n_slot);
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
