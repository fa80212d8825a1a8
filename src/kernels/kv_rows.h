// Keys and values into their storage type (core/kv_type.h), for a whole batch at once: the
// forward pass converts each new row once, whichever sequences take it. Highway SIMD for the
// quantized types, dispatched at run time; the reference is core's kv_quantize_row_ref (and
// hadamard_ref for rotated rows), and both give the same bytes.
#pragma once

#include <cstdint>

#include "core/kv_type.h"

namespace tova::kernels {

// n_rows rows of head_dim floats -> n_rows canonical rows of type t (kv_row_bytes(t, head_dim)
// bytes each). rotate: each row is Hadamard-rotated first (quantized types only).
void kv_store_rows(KvType t, bool rotate, const float* src, uint8_t* dst, int64_t n_rows,
                   int head_dim);
// The same with core's scalar conversions.
void kv_store_rows_ref(KvType t, bool rotate, const float* src, uint8_t* dst, int64_t n_rows,
                       int head_dim);

}  // namespace tova::kernels
