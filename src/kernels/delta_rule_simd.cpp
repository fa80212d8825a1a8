// The chunked gated delta rule (kernels/delta_rule.h) in Highway, compiled once per target and
// dispatched at run time. Every product of the chunked form is written as C += A B with B's rows
// contiguous (a "broadcast A, stream B" product): a tile of 4 rows x 2 vectors of C stays in
// registers while the depth runs, so the state is read once per 4 tokens of the chunk, where the
// recurrent form reads it (and reduces dot products across lanes) once per token. Tuned on Zen 4
// (AVX3_ZEN4: 8 accumulators of 16 lanes); AVX2 runs the same tile with 8 lanes (8 of its 16
// registers), which leaves room for the B vectors and the broadcast.
//
// The state is worked on untransposed, S[i][j] with rows padded to a whole number of vectors
// (kPad floats), copied in once per run and back once at the end: the products then stream
// rows of S, U and K^T. Padding columns are kept zero, so they never feed a real column.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/delta_rule.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/delta_rule_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// foreach_target re-includes this file once per target; the headers below must follow it.
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
#include "kernels/vec_array-inl.h"

#ifndef TOVA_DELTA_RULE_LAYOUT
#define TOVA_DELTA_RULE_LAYOUT
namespace tova::kernels::delta_hwy {

// Row padding: a multiple of every target's float lanes: x86's (AVX-512: 16), and on ARM SVE's,
// whose vectors may be up to 2048 bits (64 floats; a row of S may then carry more zero padding).
#if HWY_ARCH_ARM_A64
inline constexpr int64_t kPad = 64;
#else
inline constexpr int64_t kPad = 16;
#endif
inline int64_t padded(int64_t n) { return (n + kPad - 1) / kPad * kPad; }

// The workspace of one run, in floats (kDeltaChunk is a multiple of kPad):
struct ChunkLayout {
  int64_t np = 0;                    // padded head size
  int64_t s = 0, q = 0, k = 0, kt = 0, wu = 0, u = 0, o = 0, a = 0, p = 0, kgt = 0, gexp = 0,
          gd = 0, total = 0;
  explicit ChunkLayout(int64_t n) {
    np = padded(n);
    const int64_t L = kDeltaChunk;
    int64_t at = 0;
    auto take = [&](int64_t floats) {
      const int64_t here = at;
      at += padded(floats);
      return here;
    };
    s = take(n * np);      // S[i][j], i < n
    q = take(L * np);      // scale q_t, then exp(G_t) scale q_t
    k = take(L * np);      // k_t
    kt = take(np * L);     // K^T
    wu = take(L * 2 * np);  // [W | Ut] rows
    u = take(L * np);      // U
    o = take(L * np);      // outputs
    a = take(L * L);       // K K^T, then A
    p = take(L * L);       // scale Q K^T, then P
    kgt = take(np * L);    // (D[L][.] o K)^T
    gexp = take(L);        // exp(G_t)
    gd = take(2 * L);      // G_t in double
    total = at;
  }
};

}  // namespace tova::kernels::delta_hwy
#endif

HWY_BEFORE_NAMESPACE();
namespace tova::kernels::delta_hwy {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using ::tova::kernels::HWY_NAMESPACE::VecArray;
using ::tova::kernels::HWY_NAMESPACE::VecArray2;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// C[r][c] = (accumulate ? C[r][c] : 0) + alpha sum_{p < depth} A[r][p] B[p][c] for one tile of
// R rows x NV vectors at column c0.
template <int R, int NV>
HWY_INLINE void Tile(DF d, const float* HWY_RESTRICT A, int64_t lda, const float* HWY_RESTRICT B,
                     int64_t ldb, float* HWY_RESTRICT C, int64_t ldc, int64_t depth, float alpha,
                     bool accumulate) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  VecArray2<VF, R, NV> c;
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < NV; ++j) c[r][j] = hn::Zero(d);
  }
  for (int64_t p = 0; p < depth; ++p) {
    VecArray<VF, NV> b;
    for (int j = 0; j < NV; ++j) b[j] = hn::LoadU(d, B + p * ldb + j * N);
    for (int r = 0; r < R; ++r) {
      const VF a = hn::Set(d, A[r * lda + p]);
      for (int j = 0; j < NV; ++j) c[r][j] = hn::MulAdd(a, b[j], c[r][j]);
    }
  }
  const VF va = hn::Set(d, alpha);
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < NV; ++j) {
      float* dst = C + r * ldc + j * N;
      hn::StoreU(accumulate ? hn::MulAdd(va, c[r][j], hn::LoadU(d, dst)) : hn::Mul(va, c[r][j]),
                 d, dst);
    }
  }
}

template <int R>
HWY_INLINE void RowBlock(DF d, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
                         int64_t ldc, int64_t cols, int64_t depth, float alpha, bool accumulate) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t c0 = 0;
  for (; c0 + 2 * N <= cols; c0 += 2 * N) {
    Tile<R, 2>(d, A, lda, B + c0, ldb, C + c0, ldc, depth, alpha, accumulate);
  }
  for (; c0 < cols; c0 += N) Tile<R, 1>(d, A, lda, B + c0, ldb, C + c0, ldc, depth, alpha, accumulate);
}

// C (rows x cols, cols a multiple of the lanes) as Tile says. lower: A is lower triangular
// (A[r][p] = 0 for p > r), so row block r0.. stops its depth at its last row.
void Gemm(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc,
          int64_t rows, int64_t cols, int64_t depth, float alpha, bool accumulate, bool lower) {
  const DF d;
  int64_t r0 = 0;
  for (; r0 + 4 <= rows; r0 += 4) {
    const int64_t dep = lower ? std::min(depth, r0 + 4) : depth;
    RowBlock<4>(d, A + r0 * lda, lda, B, ldb, C + r0 * ldc, ldc, cols, dep, alpha, accumulate);
  }
  for (; r0 < rows; ++r0) {
    const int64_t dep = lower ? std::min(depth, r0 + 1) : depth;
    RowBlock<1>(d, A + r0 * lda, lda, B, ldb, C + r0 * ldc, ldc, cols, dep, alpha, accumulate);
  }
}

// y[0, cols) += a x[0, cols), cols a multiple of the lanes.
HWY_INLINE void AxpyRow(DF d, float a, const float* HWY_RESTRICT x, float* HWY_RESTRICT y,
                        int64_t cols) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const VF va = hn::Set(d, a);
  for (int64_t c = 0; c < cols; c += N) {
    hn::StoreU(hn::MulAdd(va, hn::LoadU(d, x + c), hn::LoadU(d, y + c)), d, y + c);
  }
}

HWY_INLINE void ScaleRow(DF d, float a, float* HWY_RESTRICT y, int64_t cols) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const VF va = hn::Set(d, a);
  for (int64_t c = 0; c < cols; c += N) hn::StoreU(hn::Mul(va, hn::LoadU(d, y + c)), d, y + c);
}

// exp(x) for x <= 0 (decays): Highway's Exp, kept away from its int32 conversion below -104.
HWY_INLINE VF ExpNonPositive(DF d, VF x) { return hn::Exp(d, hn::Max(x, hn::Set(d, -104.0f))); }

// One chunk of L tokens (t0 .. t0 + L of the run) through the state in the workspace.
void Chunk(const DeltaRuleRun& run, int64_t t0, int64_t L, float scale, int64_t n,
           const ChunkLayout& ly, float* ws) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t np = ly.np, CL = kDeltaChunk;
  float* S = ws + ly.s;
  float* Q = ws + ly.q;
  float* K = ws + ly.k;
  float* Kt = ws + ly.kt;
  float* WU = ws + ly.wu;
  float* U = ws + ly.u;
  float* O = ws + ly.o;
  float* A = ws + ly.a;
  float* P = ws + ly.p;
  float* KgT = ws + ly.kgt;
  float* gexp = ws + ly.gexp;
  double* G = reinterpret_cast<double*>(ws + ly.gd);
  // Columns of the L x L products rounded up to whole vectors.
  const int64_t Lv = (L + N - 1) / N * N;

  // Gather: Q = scale q, K, [W | Ut] = [beta exp(G) k | beta v] (padding zero), K^T.
  double acc = 0;
  for (int64_t t = 0; t < L; ++t) {
    const int64_t r = run.rows[t0 + t];
    acc += run.g[r * run.gate_stride];
    G[t] = acc;
    gexp[t] = static_cast<float>(std::exp(acc));
    const float beta = run.beta[r * run.gate_stride];
    const float* q = run.q + r * run.qkv_stride;
    const float* k = run.k + r * run.qkv_stride;
    const float* v = run.v + r * run.qkv_stride;
    float* qt = Q + t * np;
    float* kt = K + t * np;
    float* w = WU + t * 2 * np;
    float* ut = w + np;
    const float bg = beta * gexp[t];
    for (int64_t i = 0; i < n; ++i) {
      qt[i] = scale * q[i];
      kt[i] = k[i];
      w[i] = bg * k[i];
      ut[i] = beta * v[i];
    }
    for (int64_t i = n; i < np; ++i) qt[i] = kt[i] = w[i] = ut[i] = 0.f;
    for (int64_t i = 0; i < n; ++i) Kt[i * CL + t] = k[i];
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t t = L; t < Lv; ++t) Kt[i * CL + t] = 0.f;
  }

  // A = K K^T and P = scale Q K^T over the chunk (columns up to Lv), then the decays:
  // A[t][s] = beta_t D[t][s] (k_t.k_s) for s < t, P[t][s] = D[t][s] scale (q_t.k_s) for s <= t.
  Gemm(K, np, Kt, CL, A, CL, L, Lv, n, 1.f, false, false);
  Gemm(Q, np, Kt, CL, P, CL, L, Lv, n, 1.f, false, false);
  HWY_ALIGN float diff[kDeltaChunk];
  for (int64_t t = 0; t < L; ++t) {
    const float beta = run.beta[run.rows[t0 + t] * run.gate_stride];
    for (int64_t s = 0; s < Lv; ++s) diff[s] = s <= t ? static_cast<float>(G[t] - G[s]) : -1e30f;
    float* a = A + t * CL;
    float* p = P + t * CL;
    for (int64_t s = 0; s < Lv; s += N) {
      const VF dec = ExpNonPositive(d, hn::Load(d, diff + s));
      hn::StoreU(hn::Mul(dec, hn::LoadU(d, p + s)), d, p + s);
      hn::StoreU(hn::Mul(hn::Mul(dec, hn::Set(d, beta)), hn::LoadU(d, a + s)), d, a + s);
    }
    for (int64_t s = t + 1; s < Lv; ++s) p[s] = 0.f;  // lower with diagonal: the tiles read it
  }

  // Forward substitution: row t of [W | Ut] -= A[t][s] row s, s < t.
  for (int64_t t = 1; t < L; ++t) {
    float* row = WU + t * 2 * np;
    for (int64_t s = 0; s < t; ++s) AxpyRow(d, -A[t * CL + s], WU + s * 2 * np, row, 2 * np);
  }

  // U = Ut - W S.
  for (int64_t t = 0; t < L; ++t) std::memcpy(U + t * np, WU + t * 2 * np + np, np * sizeof(float));
  Gemm(WU, 2 * np, S, np, U, np, L, np, n, -1.f, true, false);

  // O = diag(exp(G)) (scale Q) S + P U.
  for (int64_t t = 0; t < L; ++t) ScaleRow(d, gexp[t], Q + t * np, np);
  Gemm(Q, np, S, np, O, np, L, np, n, 1.f, false, false);
  Gemm(P, CL, U, np, O, np, L, np, L, 1.f, true, true);
  for (int64_t t = 0; t < L; ++t) {
    std::memcpy(run.out + run.rows[t0 + t] * run.out_stride, O + t * np, n * sizeof(float));
  }

  // S = exp(G_L) S + (D[L][.] o K)^T U.
  for (int64_t t = 0; t < L; ++t) diff[t] = static_cast<float>(G[L - 1] - G[t]);
  for (int64_t t = L; t < Lv; ++t) diff[t] = -1e30f;
  for (int64_t s = 0; s < Lv; s += N) hn::Store(ExpNonPositive(d, hn::Load(d, diff + s)), d, diff + s);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t t = 0; t < L; ++t) KgT[i * CL + t] = diff[t] * Kt[i * CL + t];
  }
  const float last = gexp[L - 1];
  for (int64_t i = 0; i < n; ++i) ScaleRow(d, last, S + i * np, np);
  Gemm(KgT, CL, U, np, S, np, n, np, L, 1.f, true, false);
}

// One token of the recurrent form (gated_delta_rule): per row of the transposed state, one
// pass that decays it and takes its dot with k, one that adds delta k and takes its dot with
// q; the row stays in L1 between them. One dispatch per token and head (not per row).
void RecurrentStep(float* HWY_RESTRICT m, const float* HWY_RESTRICT q, const float* HWY_RESTRICT k,
                   const float* HWY_RESTRICT v, float decay, float beta, float scale, int64_t n,
                   float* HWY_RESTRICT out) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const VF vdecay = hn::Set(d, decay);
  for (int64_t j = 0; j < n; ++j) {
    float* row = m + j * n;
    VF acc = hn::Zero(d);
    int64_t c = 0;
    for (; c + N <= n; c += N) {
      const VF r = hn::Mul(hn::LoadU(d, row + c), vdecay);
      hn::StoreU(r, d, row + c);
      acc = hn::MulAdd(r, hn::LoadU(d, k + c), acc);
    }
    float sk = hn::GetLane(hn::SumOfLanes(d, acc));
    for (; c < n; ++c) {
      row[c] *= decay;
      sk += row[c] * k[c];
    }
    const float delta = (v[j] - sk) * beta;
    const VF vdelta = hn::Set(d, delta);
    acc = hn::Zero(d);
    for (c = 0; c + N <= n; c += N) {
      const VF r = hn::MulAdd(vdelta, hn::LoadU(d, k + c), hn::LoadU(d, row + c));
      hn::StoreU(r, d, row + c);
      acc = hn::MulAdd(r, hn::LoadU(d, q + c), acc);
    }
    float sq = hn::GetLane(hn::SumOfLanes(d, acc));
    for (; c < n; ++c) {
      row[c] += delta * k[c];
      sq += row[c] * q[c];
    }
    out[j] = sq * scale;
  }
}

// silu(y) = y / (1 + exp(-y)), exp's argument kept below float's overflow (y < -88 gives -0,
// silu's true value there is below 1e-36 in magnitude).
HWY_INLINE VF Silu(DF d, VF y) {
  const VF e = hn::Exp(d, hn::Min(hn::Neg(y), hn::Set(d, 88.f)));
  return hn::Div(y, hn::Add(hn::Set(d, 1.f), e));
}

constexpr int kMaxTaps = 7;

// The conv1d over a run, then silu where kSilu (the DeltaNet kind; the short-convolution kind
// takes the conv's output as it is).
template <bool kSilu>
void ConvRun(float* state, const float* w, float* x, int64_t x_stride, const int* rows,
             int64_t n_tok, int taps, int64_t c0, int64_t c1) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t c = c0;
  if (taps <= kMaxTaps) {
    HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)];
    for (; c + N <= c1; c += N) {
      // This block's state (tap t of its N channels in h[t]) and weights, gathered once.
      VecArray<VF, kMaxTaps> h;
      VecArray<VF, kMaxTaps + 1> wt;
      for (int t = 0; t < taps; ++t) {
        for (int64_t l = 0; l < N; ++l) buf[l] = state[(c + l) * taps + t];
        h[t] = hn::Load(d, buf);
      }
      for (int t = 0; t <= taps; ++t) {
        for (int64_t l = 0; l < N; ++l) buf[l] = w[(c + l) * (taps + 1) + t];
        wt[t] = hn::Load(d, buf);
      }
      for (int64_t i = 0; i < n_tok; ++i) {
        float* px = x + rows[i] * x_stride + c;
        const VF xin = hn::LoadU(d, px);
        // Tap by tap in order, as ggml_ssm_conv sums (here fused multiply-adds).
        VF y = taps > 0 ? hn::Mul(h[0], wt[0]) : hn::Zero(d);
        for (int t = 1; t < taps; ++t) y = hn::MulAdd(h[t], wt[t], y);
        y = hn::MulAdd(xin, wt[taps], y);
        for (int t = 0; t + 1 < taps; ++t) h[t] = h[t + 1];
        if (taps > 0) h[taps - 1] = xin;
        hn::StoreU(kSilu ? Silu(d, y) : y, d, px);
      }
      for (int t = 0; t < taps; ++t) {
        hn::Store(h[t], d, buf);
        for (int64_t l = 0; l < N; ++l) state[(c + l) * taps + t] = buf[l];
      }
    }
  }
  // Channels left over (and kernels past kMaxTaps + 1 taps), one at a time.
  for (; c < c1; ++c) {
    float* st = state + c * taps;
    const float* wc = w + c * (taps + 1);
    for (int64_t i = 0; i < n_tok; ++i) {
      float* px = x + rows[i] * x_stride + c;
      float sum = 0.f;
      for (int t = 0; t < taps; ++t) sum += st[t] * wc[t];
      sum += *px * wc[taps];
      if (taps > 0) {
        std::copy(st + 1, st + taps, st);
        st[taps - 1] = *px;
      }
      *px = kSilu ? sum / (1.f + std::exp(-sum)) : sum;
    }
  }
}

void ConvSilu(float* state, const float* w, float* x, int64_t x_stride, const int* rows,
              int64_t n_tok, int taps, int64_t c0, int64_t c1) {
  ConvRun<true>(state, w, x, x_stride, rows, n_tok, taps, c0, c1);
}

void ConvPlain(float* state, const float* w, float* x, int64_t x_stride, const int* rows,
               int64_t n_tok, int taps, int64_t c0, int64_t c1) {
  ConvRun<false>(state, w, x, x_stride, rows, n_tok, taps, c0, c1);
}

void ChunkedRun(float* m, const DeltaRuleRun& run, float scale, int64_t n, float* ws) {
  const ChunkLayout ly(n);
  float* S = ws + ly.s;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) S[i * ly.np + j] = m[j * n + i];
    for (int64_t j = n; j < ly.np; ++j) S[i * ly.np + j] = 0.f;
  }
  for (int64_t t0 = 0; t0 < run.n_tok; t0 += kDeltaChunk) {
    Chunk(run, t0, std::min(kDeltaChunk, run.n_tok - t0), scale, n, ly, ws);
  }
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < n; ++i) m[j * n + i] = S[i * ly.np + j];
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tova::kernels::delta_hwy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tova::kernels {
namespace delta_hwy {
HWY_EXPORT(ChunkedRun);
HWY_EXPORT(ConvSilu);
HWY_EXPORT(ConvPlain);
HWY_EXPORT(RecurrentStep);
}  // namespace delta_hwy

void gated_delta_rule(float* m, const float* q, const float* k, const float* v, float decay,
                      float beta, float scale, int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(delta_hwy::RecurrentStep)(m, q, k, v, decay, beta, scale, n, out);
}

void causal_conv1d_silu(float* state, const float* w, float* x, int64_t x_stride, const int* rows,
                        int64_t n_tok, int taps, int64_t c0, int64_t c1) {
  HWY_DYNAMIC_DISPATCH(delta_hwy::ConvSilu)(state, w, x, x_stride, rows, n_tok, taps, c0, c1);
}

void causal_conv1d(float* state, const float* w, float* x, int64_t x_stride, const int* rows,
                   int64_t n_tok, int taps, int64_t c0, int64_t c1) {
  HWY_DYNAMIC_DISPATCH(delta_hwy::ConvPlain)(state, w, x, x_stride, rows, n_tok, taps, c0, c1);
}

int64_t delta_chunk_workspace_floats(int64_t n) { return delta_hwy::ChunkLayout(n).total; }

void gated_delta_rule_chunked(float* m, const DeltaRuleRun& run, float scale, int64_t n,
                              float* work) {
  HWY_DYNAMIC_DISPATCH(delta_hwy::ChunkedRun)(m, run, scale, n, work);
}

}  // namespace tova::kernels
#endif
