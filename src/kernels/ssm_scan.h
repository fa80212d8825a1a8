// The selective scan of the Mamba2 layer kind (model/layer_mamba2.cpp), as llama.cpp's CPU
// backend computes it (ggml_ssm_scan with one decay per head, Mamba-2's case).
//
// One head, one token, with P = head_dim, N = d_state, the head's state s [P][N] (row p for
// element p of the head's x), dt > 0 the token's step (softplus(dt_raw + dt_bias), computed by
// the layer), a < 0 the head's A (ssm_a = -exp(A_log) as converted), and the token's B, C [N]
// of the head's group:
//   dA       = exp(dt * a)                                   (in (0, 1): the decay)
//   s[p][j] <- s[p][j] * dA + B[j] * (x[p] * dt)
//   y[p]     = sum_j s[p][j] * C[j]
// The state is stored as llama.cpp stores it ({d_state, head_dim, n_head}: row p of head h is
// N contiguous floats), so every token is one pass over contiguous rows; for a run of tokens the
// head's state (P x N floats, 32 KiB at Granite 4.0-H's 64 x 128) stays in L1 from one token to
// the next.
#pragma once

#include <cstdint>

namespace tova::kernels {

// One head of one sequence's run of tokens, in order: token t's inputs are at row rows[t] of
// x (P floats at x + rows[t] * x_stride), of B and C (N floats, stride bc_stride), of dt (one
// float, stride dt_stride), and its output at row rows[t] of y (P floats, stride y_stride).
struct SsmScanRun {
  const int* rows = nullptr;
  int64_t n_tok = 0;
  const float* x = nullptr;
  int64_t x_stride = 0;
  const float* b = nullptr;
  const float* c = nullptr;
  int64_t bc_stride = 0;
  const float* dt = nullptr;
  int64_t dt_stride = 0;
  float* y = nullptr;
  int64_t y_stride = 0;
};

// The run through the recurrent form (Highway: lanes across the state's N columns; one
// dispatch per run and head); state [head_dim][d_state], updated in place. No allocation.
void ssm_scan(float* state, const SsmScanRun& run, float a, int64_t head_dim, int64_t d_state);
// The scalar reference: the formulas above written plainly, each product and sum in double,
// the state rounded to float after each token (as it is stored).
void ssm_scan_ref(float* state, const SsmScanRun& run, float a, int64_t head_dim, int64_t d_state);

}  // namespace tova::kernels
