// Matrix multiplication that keeps activations in float32 for every weight type: each weight
// row is dequantized exactly and dotted with unrounded activations. Slower than matmul() for
// quantized weights (no int8 dot products), but it computes what the weights mean, with no
// activation rounding: the choice for evaluations that compare against a float64 reference.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/matmul.h"

namespace tova::kernels {

// y[t][o] = dot(dequantize(W[o]), x[t]); shapes as matmul().
void matmul_f32_activations(const WeightMatrix& w, const float* x, int64_t n_tok, float* y,
                            ThreadPool& pool);

}  // namespace tova::kernels
