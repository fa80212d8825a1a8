// Mamba2's selective scan (kernels/ssm_scan.h) in Highway, compiled once per target and
// dispatched at run time: lanes across the state's d_state columns, the rows of one head's
// state updated and read against C in one pass each per token, with the run's tokens in the
// inner loop of a head so that its state stays in L1 (written on Zen 4 / AVX3_ZEN4; AVX2 and the
// ARM targets run the same loop at their width, the columns past a whole vector one at a time).
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/ssm_scan.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/ssm_scan_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// foreach_target re-includes this file once per target; the headers below must follow it.
#include "hwy/highway.h"
#include "kernels/vec_array-inl.h"

#ifndef TOVA_SSM_SCAN_LAYOUT
#define TOVA_SSM_SCAN_LAYOUT
namespace tova::kernels::ssm_hwy {

// Row padding: a multiple of every target's float lanes (ARM SVE's up to 64 floats).
#if HWY_ARCH_ARM_A64
inline constexpr int64_t kPad = 64;
#else
inline constexpr int64_t kPad = 16;
#endif
inline int64_t padded(int64_t n) { return (n + kPad - 1) / kPad * kPad; }

// The chunked form's workspace, in floats (kSsmChunk is a multiple of kPad). P = head_dim,
// N = d_state, L = kSsmChunk; padding columns are kept zero so they never feed a real one.
struct ChunkLayout {
  int64_t pp = 0, lp = 0;
  int64_t st = 0, x = 0, c = 0, bt = 0, m = 0, bw = 0, y = 0, g = 0, total = 0;
  ChunkLayout(int64_t P, int64_t N) {
    pp = padded(P);
    lp = padded(kSsmChunk);
    int64_t at = 0;
    auto take = [&](int64_t floats) {
      const int64_t here = at;
      at += padded(floats);
      return here;
    };
    st = take(N * pp);  // S^T [N][pp]
    x = take(lp * pp);  // x rows [L][pp]
    c = take(lp * N);   // C rows [L][N], then exp(G_t) C_t
    bt = take(N * lp);  // B^T [N][lp]
    m = take(lp * lp);  // C B^T, then M
    bw = take(N * lp);  // B^T diag(exp(G_L - G_s) dt_s) [N][lp]
    y = take(lp * pp);  // outputs [L][pp]
    g = take(2 * lp);   // G_t in double
    total = at;
  }
};

}  // namespace tova::kernels::ssm_hwy
#endif

HWY_BEFORE_NAMESPACE();
namespace tova::kernels::ssm_hwy {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
using ::tova::kernels::HWY_NAMESPACE::VecArray2;

// C[r][c] = (accumulate ? C[r][c] : 0) + sum_{k < depth} A[r][k] B[k][c] for one tile of R rows x
// NV vectors at column 0 of B and C: the tile stays in registers while the depth runs.
template <int R, int NV>
HWY_INLINE void Tile(DF d, const float* HWY_RESTRICT A, int64_t lda, const float* HWY_RESTRICT B,
                     int64_t ldb, float* HWY_RESTRICT C, int64_t ldc, int64_t depth,
                     bool accumulate) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  VecArray2<VF, R, NV> acc;
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < NV; ++j) {
      acc[r][j] = accumulate ? hn::LoadU(d, C + r * ldc + j * L) : hn::Zero(d);
    }
  }
  for (int64_t k = 0; k < depth; ++k) {
    for (int j = 0; j < NV; ++j) {
      const VF b = hn::LoadU(d, B + k * ldb + j * L);
      for (int r = 0; r < R; ++r) acc[r][j] = hn::MulAdd(hn::Set(d, A[r * lda + k]), b, acc[r][j]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < NV; ++j) hn::StoreU(acc[r][j], d, C + r * ldc + j * L);
  }
}

template <int R>
HWY_INLINE void RowBlock(DF d, const float* A, int64_t lda, const float* B, int64_t ldb, float* C,
                         int64_t ldc, int64_t cols, int64_t depth, bool accumulate) {
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t c0 = 0;
  for (; c0 + 2 * L <= cols; c0 += 2 * L) {
    Tile<R, 2>(d, A, lda, B + c0, ldb, C + c0, ldc, depth, accumulate);
  }
  for (; c0 < cols; c0 += L) Tile<R, 1>(d, A, lda, B + c0, ldb, C + c0, ldc, depth, accumulate);
}

// C (rows x cols, cols a multiple of the lanes) (+)= A B.
void Gemm(const float* A, int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc,
          int64_t rows, int64_t cols, int64_t depth, bool accumulate) {
  const DF d;
  int64_t r0 = 0;
  for (; r0 + 4 <= rows; r0 += 4) {
    RowBlock<4>(d, A + r0 * lda, lda, B, ldb, C + r0 * ldc, ldc, cols, depth, accumulate);
  }
  for (; r0 < rows; ++r0) {
    RowBlock<1>(d, A + r0 * lda, lda, B, ldb, C + r0 * ldc, ldc, cols, depth, accumulate);
  }
}

// One chunk of L tokens (t0 .. t0 + L of the run) through the state held (as S^T) in ws.
void Chunk(const SsmScanRun& run, int64_t t0, int64_t L, float a, int64_t P, int64_t N,
           const ChunkLayout& lo, float* ws) {
  const int64_t pp = lo.pp, lp = lo.lp;
  float *st = ws + lo.st, *x = ws + lo.x, *c = ws + lo.c, *bt = ws + lo.bt, *m = ws + lo.m,
        *bw = ws + lo.bw, *y = ws + lo.y;
  double* G = reinterpret_cast<double*>(ws + lo.g);
  double acc = 0.0;
  for (int64_t t = 0; t < L; ++t) {
    const int64_t r = run.rows[t0 + t];
    G[t] = acc += static_cast<double>(run.dt[r * run.dt_stride]) * a;
    std::copy_n(run.x + r * run.x_stride, P, x + t * pp);
    std::fill(x + t * pp + P, x + (t + 1) * pp, 0.f);
    std::copy_n(run.c + r * run.bc_stride, N, c + t * N);
    const float* B = run.b + r * run.bc_stride;
    for (int64_t j = 0; j < N; ++j) bt[j * lp + t] = B[j];
  }
  for (int64_t j = 0; j < N; ++j) std::fill(bt + j * lp + L, bt + (j + 1) * lp, 0.f);
  auto dt = [&](int64_t t) { return run.dt[run.rows[t0 + t] * run.dt_stride]; };
  // M = (C B^T) o the decays and steps, lower triangle with the diagonal.
  Gemm(c, N, bt, lp, m, lp, L, lp, N, /*accumulate=*/false);
  for (int64_t t = 0; t < L; ++t) {
    float* row = m + t * lp;
    for (int64_t s = 0; s <= t; ++s) row[s] *= static_cast<float>(std::exp(G[t] - G[s])) * dt(s);
    std::fill(row + t + 1, row + lp, 0.f);
  }
  // Y = M X + diag(exp(G)) C S0^T.
  Gemm(m, lp, x, pp, y, pp, L, pp, L, /*accumulate=*/false);
  for (int64_t t = 0; t < L; ++t) {
    const float e = static_cast<float>(std::exp(G[t]));
    for (int64_t j = 0; j < N; ++j) c[t * N + j] *= e;
  }
  Gemm(c, N, st, pp, y, pp, L, pp, N, /*accumulate=*/true);
  for (int64_t t = 0; t < L; ++t) {
    std::copy_n(y + t * pp, P, run.y + run.rows[t0 + t] * run.y_stride);
  }
  // S_L^T = exp(G_L) S0^T + (B^T diag(exp(G_L - G_s) dt_s)) X.
  const double gl = G[L - 1];
  for (int64_t j = 0; j < N; ++j) {
    for (int64_t s = 0; s < L; ++s) {
      bw[j * lp + s] = bt[j * lp + s] * static_cast<float>(std::exp(gl - G[s])) * dt(s);
    }
  }
  const DF d;
  const int64_t NL = static_cast<int64_t>(hn::Lanes(d));
  const VF el = hn::Set(d, static_cast<float>(std::exp(gl)));
  for (int64_t e = 0; e < N * pp; e += NL) hn::StoreU(hn::Mul(el, hn::LoadU(d, st + e)), d, st + e);
  Gemm(bw, lp, x, pp, st, pp, N, pp, L, /*accumulate=*/true);
}

void ChunkedRun(float* state, const SsmScanRun& run, float a, int64_t P, int64_t N, float* ws) {
  const ChunkLayout lo(P, N);
  float* st = ws + lo.st;
  for (int64_t j = 0; j < N; ++j) {
    for (int64_t p = 0; p < P; ++p) st[j * lo.pp + p] = state[p * N + j];
    std::fill(st + j * lo.pp + P, st + (j + 1) * lo.pp, 0.f);
  }
  for (int64_t t0 = 0; t0 < run.n_tok; t0 += kSsmChunk) {
    Chunk(run, t0, std::min(kSsmChunk, run.n_tok - t0), a, P, N, lo, ws);
  }
  for (int64_t j = 0; j < N; ++j) {
    for (int64_t p = 0; p < P; ++p) state[p * N + j] = st[j * lo.pp + p];
  }
}

void ScanRun(float* HWY_RESTRICT state, const SsmScanRun& run, float a, int64_t P, int64_t N) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t t = 0; t < run.n_tok; ++t) {
    const int64_t r = run.rows[t];
    const float dt = run.dt[r * run.dt_stride];
    const float decay = std::exp(dt * a);
    const float* HWY_RESTRICT x = run.x + r * run.x_stride;
    const float* HWY_RESTRICT B = run.b + r * run.bc_stride;
    const float* HWY_RESTRICT C = run.c + r * run.bc_stride;
    float* HWY_RESTRICT y = run.y + r * run.y_stride;
    const VF vdecay = hn::Set(d, decay);
    for (int64_t p = 0; p < P; ++p) {
      float* HWY_RESTRICT s = state + p * N;
      const float x_dt = x[p] * dt;
      const VF vx = hn::Set(d, x_dt);
      VF acc0 = hn::Zero(d), acc1 = hn::Zero(d);
      int64_t j = 0;
      // Two vectors a step: two independent sums hide the multiply-add's latency.
      for (; j + 2 * L <= N; j += 2 * L) {
        const VF s0 = hn::MulAdd(hn::LoadU(d, s + j), vdecay, hn::Mul(hn::LoadU(d, B + j), vx));
        const VF s1 =
            hn::MulAdd(hn::LoadU(d, s + j + L), vdecay, hn::Mul(hn::LoadU(d, B + j + L), vx));
        hn::StoreU(s0, d, s + j);
        hn::StoreU(s1, d, s + j + L);
        acc0 = hn::MulAdd(s0, hn::LoadU(d, C + j), acc0);
        acc1 = hn::MulAdd(s1, hn::LoadU(d, C + j + L), acc1);
      }
      for (; j + L <= N; j += L) {
        const VF s0 = hn::MulAdd(hn::LoadU(d, s + j), vdecay, hn::Mul(hn::LoadU(d, B + j), vx));
        hn::StoreU(s0, d, s + j);
        acc0 = hn::MulAdd(s0, hn::LoadU(d, C + j), acc0);
      }
      float sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(acc0, acc1)));
      for (; j < N; ++j) {
        const float v = s[j] * decay + B[j] * x_dt;
        s[j] = v;
        sum += v * C[j];
      }
      y[p] = sum;
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tova::kernels::ssm_hwy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tova::kernels {
namespace ssm_hwy {
HWY_EXPORT(ScanRun);
HWY_EXPORT(ChunkedRun);
}  // namespace ssm_hwy

int64_t ssm_chunk_workspace_floats(int64_t head_dim, int64_t d_state) {
  return ssm_hwy::ChunkLayout(head_dim, d_state).total;
}

void ssm_scan_chunked(float* state, const SsmScanRun& run, float a, int64_t head_dim,
                      int64_t d_state, float* work) {
  HWY_DYNAMIC_DISPATCH(ssm_hwy::ChunkedRun)(state, run, a, head_dim, d_state, work);
}

void ssm_scan(float* state, const SsmScanRun& run, float a, int64_t head_dim, int64_t d_state) {
  HWY_DYNAMIC_DISPATCH(ssm_hwy::ScanRun)(state, run, a, head_dim, d_state);
}

}  // namespace tova::kernels
#endif
