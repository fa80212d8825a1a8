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

// The chunked (SSD, matrix) form of the same scan, for a run of tokens at once: the same states
// and outputs as ssm_scan token by token, up to rounding. Within a chunk of L tokens
// (kSsmChunk), with g_t = dt_t a, G_t = g_1 + ... + g_t, S0 the state entering the chunk (as
// S^T, [N][P]) and X [L][P] the chunk's x rows:
//   M[t][s] = (C_t . B_s) exp(G_t - G_s) dt_s   for s <= t, else 0
//   Y       = M X + diag(exp(G)) C S0^T                            (y_t, [L][P])
//   S_L^T   = exp(G_L) S0^T + (B^T diag(exp(G_L - G_s) dt_s)) X
// Each is a matrix product over the chunk (the fast form blocks them in registers: a tile of
// rows stays in registers while the depth runs), where the recurrent form does a pass over the
// state per token. Decays enter only as exp(G_t - G_s) <= 1 with the differences taken in
// double, so strong decay cannot overflow.
inline constexpr int64_t kSsmChunk = 64;

// Floats of workspace ssm_scan_chunked needs for heads of head_dim x d_state (one per thread).
int64_t ssm_chunk_workspace_floats(int64_t head_dim, int64_t d_state);
// The run through the chunked form (Highway); state [head_dim][d_state], updated in place;
// work: ssm_chunk_workspace_floats floats. No allocation.
void ssm_scan_chunked(float* state, const SsmScanRun& run, float a, int64_t head_dim,
                      int64_t d_state, float* work);
// The scalar reference of the chunked form: the formulas above written plainly, in double,
// chunk by chunk (chunk tokens per chunk, 1 .. any).
void ssm_scan_chunked_ref(float* state, const SsmScanRun& run, float a, int64_t head_dim,
                          int64_t d_state, int64_t chunk = kSsmChunk);

}  // namespace tova::kernels
