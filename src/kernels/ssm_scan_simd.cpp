// Mamba2's selective scan (kernels/ssm_scan.h) in Highway, compiled once per target and
// dispatched at run time: lanes across the state's d_state columns, the rows of one head's
// state updated and read against C in one pass each per token, with the run's tokens in the
// inner loop of a head so that its state stays in L1 (written on Zen 4 / AVX3_ZEN4; AVX2 and the
// ARM targets run the same loop at their width, the columns past a whole vector one at a time).
#include <cmath>
#include <cstdint>

#include "kernels/ssm_scan.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/ssm_scan_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// foreach_target re-includes this file once per target; the headers below must follow it.
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tova::kernels::ssm_hwy {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

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
}  // namespace ssm_hwy

void ssm_scan(float* state, const SsmScanRun& run, float a, int64_t head_dim, int64_t d_state) {
  HWY_DYNAMIC_DISPATCH(ssm_hwy::ScanRun)(state, run, a, head_dim, d_state);
}

}  // namespace tova::kernels
#endif
