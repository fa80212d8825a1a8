// The scalar reference of Mamba2's selective scan (kernels/ssm_scan.h).
#include <cmath>

#include "kernels/ssm_scan.h"

namespace tova::kernels {

void ssm_scan_ref(float* state, const SsmScanRun& run, float a, int64_t head_dim, int64_t d_state) {
  for (int64_t t = 0; t < run.n_tok; ++t) {
    const int64_t r = run.rows[t];
    const double dt = run.dt[r * run.dt_stride];
    const double decay = std::exp(dt * a);
    const float* x = run.x + r * run.x_stride;
    const float* B = run.b + r * run.bc_stride;
    const float* C = run.c + r * run.bc_stride;
    float* y = run.y + r * run.y_stride;
    for (int64_t p = 0; p < head_dim; ++p) {
      float* s = state + p * d_state;
      const double x_dt = x[p] * dt;
      double sum = 0.0;
      for (int64_t j = 0; j < d_state; ++j) {
        const double v = s[j] * decay + B[j] * x_dt;
        s[j] = static_cast<float>(v);
        sum += v * C[j];
      }
      y[p] = static_cast<float>(sum);
    }
  }
}

}  // namespace tova::kernels
