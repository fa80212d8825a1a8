// The kernels of the Gated DeltaNet layer kind (model/layer_deltanet.cpp), as llama.cpp's CPU
// backend computes them (ggml ops ssm_conv, l2_norm and gated_delta_net); the causal conv1d
// also serves the gated short-convolution kind (model/layer_shortconv.cpp).
//
// The gated delta rule, one token, one value head, with S the head's [n][n] state matrix,
// q and k l2-normalized [n], v [n], decay = exp(g) (g <= 0) and beta in (0, 1):
//   S     <- decay * S
//   delta  = beta * (v - S^T k)                       (delta[j] = beta (v[j] - sum_i S[i][j] k[i]))
//   S     <- S + k delta^T                            (S[i][j] += k[i] delta[j])
//   out    = scale * S^T q                            (out[j] = scale sum_i S[i][j] q[i])
// The state is stored transposed, as llama.cpp stores it (row j holds column j of S), so each
// of these is a pass over contiguous rows; the fast form (Highway, delta_rule_simd.cpp) does all
// four for one row before the next, in two passes over the row while it sits in L1, which
// computes every element as the four passes do (up to the order of the dot products' sums).
#pragma once

#include <cmath>
#include <cstdint>

namespace tova::kernels {

// One token of the gated delta rule for one head; m: [n][n] the transposed state, updated in
// place; out: [n].
void gated_delta_rule(float* m, const float* q, const float* k, const float* v, float decay,
                      float beta, float scale, int64_t n, float* out);
// The scalar reference (four separate passes, sums in double).
void gated_delta_rule_ref(float* m, const float* q, const float* k, const float* v, float decay,
                          float beta, float scale, int64_t n, float* out);

// The chunked (WY / UT-transform) form of the same rule, for a run of tokens at once: the same
// states and outputs as gated_delta_rule token by token, up to rounding. Within a chunk of L
// tokens (kDeltaChunk), with G_t = g_1 + ... + g_t the cumulative log decay of the chunk,
// D[t][s] = exp(G_t - G_s), S0 the state entering the chunk and u_t the rows the rule adds,
//   S_t = exp(g_t) S_{t-1} + k_t u_t^T,  u_t = beta_t (v_t - exp(g_t) S_{t-1}^T k_t)
// unrolls to a unit lower-triangular system (I + A) U = beta V - diag(beta exp(G)) K S0 with
// A[t][s] = beta_t D[t][s] (k_t . k_s) for s < t, so that
//   W  = (I + A)^-1 diag(beta exp(G)) K,  U = (I + A)^-1 beta V - W S0      (forward substitution)
//   O  = scale (diag(exp(G)) Q S0 + (D o Q K^T, lower with diagonal) U)
//   S_L = exp(G_L) S0 + (D[L][.] o K)^T U
// Each of these is a matrix product over the chunk (the fast form blocks them in registers),
// where the recurrent form does matrix-vector passes per token. Decays enter only as
// exp(G_t - G_s) <= 1 with the differences taken in double, so strong decay cannot overflow.
inline constexpr int64_t kDeltaChunk = 64;

// One head of one sequence's run of tokens, in order: token t's rows are at row rows[t] of
// q, k, v (row stride qkv_stride), of g (the log decay, <= 0) and beta (stride gate_stride),
// and of out (stride out_stride). q and k are l2-normalized.
struct DeltaRuleRun {
  const int* rows = nullptr;
  int64_t n_tok = 0;
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t qkv_stride = 0;
  const float* g = nullptr;
  const float* beta = nullptr;
  int64_t gate_stride = 0;
  float* out = nullptr;
  int64_t out_stride = 0;
};

// Floats of workspace gated_delta_rule_chunked needs for heads of size n (one per thread).
int64_t delta_chunk_workspace_floats(int64_t n);
// The run through the chunked form (Highway, blocked products); m: [n][n] the transposed
// state, updated in place; work: delta_chunk_workspace_floats(n) floats. No allocation.
void gated_delta_rule_chunked(float* m, const DeltaRuleRun& run, float scale, int64_t n,
                              float* work);
// The scalar reference of the chunked form: the formulas above written plainly, in double,
// chunk by chunk (chunk tokens per chunk, 1 .. any).
void gated_delta_rule_chunked_ref(float* m, const DeltaRuleRun& run, float scale, int64_t n,
                                  int64_t chunk = kDeltaChunk);
// The run token by token through gated_delta_rule_ref (exp(g) as the decay): the recurrent
// reference the chunked forms are checked against.
void gated_delta_rule_run_ref(float* m, const DeltaRuleRun& run, float scale, int64_t n);

// x /= max(||x||_2, eps) over n floats (ggml_l2_norm; the sum of squares in double).
void l2_norm(float* x, int64_t n, float eps);

// One token of a causal depthwise conv1d over `channels` channels of kernel size taps + 1:
//   y[c] = sum_{t < taps} state[c][t] * w[c][t] + x[c] * w[c][taps]
// then state[c] shifts left by one and takes x[c] (state: [channels][taps], oldest first;
// w: [channels][taps + 1]). Sums in float, tap by tap in order, as ggml_ssm_conv. Scalar only:
// a handful of taps per channel reading a row of state, no gain from lanes across taps, and the
// layer's matrices cost a hundred times more.
void causal_conv1d_step(float* state, const float* w, const float* x, int64_t channels, int taps,
                        float* y);

// The conv1d then silu (y / (1 + exp(-y))) over a run of tokens, in place: row rows[t] of x
// (row stride x_stride) is token t's input, each of whose channels goes through
// causal_conv1d_step in token order; only channels [c0, c1) are touched (their state included),
// so disjoint ranges can run on separate threads. Highway, lanes across channels (the state and
// weights of a block of channels are held in registers through the run); no allocation.
void causal_conv1d_silu(float* state, const float* w, float* x, int64_t x_stride, const int* rows,
                        int64_t n_tok, int taps, int64_t c0, int64_t c1);
// The scalar reference: causal_conv1d_step per token (all channels), then silu in float.
void causal_conv1d_silu_ref(float* state, const float* w, float* x, int64_t x_stride,
                            const int* rows, int64_t n_tok, int64_t channels, int taps);

// The conv1d alone over a run, in place, as causal_conv1d_silu without the silu: the gated
// short-convolution kind's (model/layer_shortconv.cpp) depthwise conv. Highway, as above.
void causal_conv1d(float* state, const float* w, float* x, int64_t x_stride, const int* rows,
                   int64_t n_tok, int taps, int64_t c0, int64_t c1);
// Its scalar reference: causal_conv1d_step per token (all channels).
void causal_conv1d_ref(float* state, const float* w, float* x, int64_t x_stride, const int* rows,
                       int64_t n_tok, int64_t channels, int taps);

// softplus as ggml computes it: x above 20, else log(1 + exp(x)) in float.
inline float softplus(float x) { return x > 20.f ? x : std::log(1.f + std::exp(x)); }

}  // namespace tova::kernels
