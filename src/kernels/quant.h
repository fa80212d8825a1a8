// Weight formats: scalar references (dequantize, quantize, dot) and their SIMD versions.
//
// A dot product between a weight row and activations first converts the activations to the
// weight type's "vec-dot type", as llama.cpp does: float32 for F32/F16/BF16 weights, Q8_0 blocks
// for Q4_0/Q5_0/Q8_0, Q8_1 blocks (with the block sum) for Q4_1/Q5_1, and Q8_K super-blocks for
// the k-quants. Integer dot products then run on int8 data (VNNI where the CPU has it).
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace tova::kernels {

// The format activations are converted to before a dot product with `weight_type`.
GgmlType vec_dot_type(GgmlType weight_type);

// ---- scalar references: plain loops, the ground truth every SIMD path is tested against ----
// Defined for every compute-supported type plus Q8_1 and Q8_K.
void dequantize_row_ref(GgmlType type, const void* src, float* dst, int64_t n);
// Quantizes n floats (n a multiple of the block size) into `type` blocks. For the weight types
// this is a simple, valid quantizer (used to write test and benchmark models); for the
// activation types (Q8_0, Q8_1, Q8_K) it rounds exactly as llama.cpp does.
void quantize_row_ref(GgmlType type, const float* src, void* dst, int64_t n);
// Dot product of one weight row of `weight_type` with an activation row already in
// vec_dot_type(weight_type) format, accumulated in float64 where the format allows.
float vec_dot_ref(GgmlType weight_type, int64_t n, const void* w_row, const void* act_row);

// ---- SIMD versions (Highway, dispatched at run time to the best target of this CPU) ----
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);
// Activation conversion for the vec-dot types (F32 is a copy).
void quantize_activations(GgmlType vec_dot_type, const float* src, void* dst, int64_t n);
float vec_dot(GgmlType weight_type, int64_t n, const void* w_row, const void* act_row);

}  // namespace tova::kernels
