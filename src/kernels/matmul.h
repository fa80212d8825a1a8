// Matrix multiplication of a block of activations with a weight matrix stored in any
// compute-supported GGUF weight type: the hot loop of every forward pass.
#pragma once

#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "core/thread_pool.h"

namespace tova::kernels {

// A weight matrix as stored in GGUF: n_out rows of n_in elements each (ggml dims {n_in, n_out}).
struct WeightMatrix {
  GgmlType type = GgmlType::kF32;
  const uint8_t* data = nullptr;
  int64_t n_in = 0;
  int64_t n_out = 0;
  uint64_t row_bytes = 0;
};

// y[t][o] = dot(W[o], x[t]) for t < n_tok, o < n_out.
// x: [n_tok][n_in] float32; y: [n_tok][n_out] float32. Threads split the output rows; one pass
// over the weights serves all n_tok rows of x (batched decode, chunked prompts).
void matmul(const WeightMatrix& w, const float* x, int64_t n_tok, float* y, ThreadPool& pool);

// ys[i][t][o] = dot(ws[i][o], x[t]) for matrices that read the same activations (q/k/v,
// gate/up; equal n_in). When they share a type, x is converted once and the rows of all of
// them are split over the threads in one pass, with the same results as one call per matrix.
void matmul_multi(std::span<const WeightMatrix* const> ws, const float* x, int64_t n_tok,
                  std::span<float* const> ys, ThreadPool& pool);

// One product of a grouped call: y[t][o] = dot(w[o], x[t]) for t < n_tok, o < w->n_out.
struct MatmulJob {
  const WeightMatrix* w = nullptr;
  const float* x = nullptr;  // [n_tok][w->n_in]
  int64_t n_tok = 0;
  float* y = nullptr;  // [n_tok][w->n_out]
};

// Several products with their own activations (a mixture of experts: each chosen expert's
// matrices over its own tokens) as one task list: each job's activations are converted (once
// for consecutive jobs with the same x and n_tok, e.g. an expert's gate and up), then the rows
// of all jobs are split over the threads in one pass, so the threads stay busy however unevenly
// the tokens fall on the jobs, and a decode step pays one dispatch, not one per expert. Every
// job gives the same bits as matmul() alone. The jobs share one weight type and n_in (else they
// run as separate calls).
void matmul_grouped(std::span<const MatmulJob> jobs, ThreadPool& pool);

// Calls with at least this many tokens compute each token's row with the same arithmetic,
// whatever the other rows hold and however many there are; smaller calls may take row kernels
// that sum in another order. Callers that want results independent of batching (the perplexity
// sweep) keep every call at this size or above.
inline constexpr int64_t kMatmulBatchInvariantTokens = 20;

// Scalar reference with the same activation rounding (quantize_row_ref + vec_dot_ref).
void matmul_ref(const WeightMatrix& w, const float* x, int64_t n_tok, float* y);

}  // namespace tova::kernels
