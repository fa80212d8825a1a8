// The weight types tova computes with, as one table: each type is one unit
// (src/kernels/types/<type>.cpp: block layout, scalar reference, unpack, its decode and prefill
// kernels per SIMD target) and one line of registry.cpp. Code that needs something of a type
// (its activation format, a matmul, a dequantize, a reference dot product) asks this table; no
// `switch` over types elsewhere.
#pragma once

#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "kernels/matmul_internal.h"

namespace tova::kernels {

struct WeightTypeKernels {
  GgmlType type = GgmlType::kF32;
  // The format activations are converted to before a dot product (quant.h's vec_dot_type).
  GgmlType vec_dot_type = GgmlType::kF32;
  // False for the activation formats Q8_1 and Q8_K: they have a reference and a dequantize but
  // no matmul (the entries below are null).
  bool is_weight_type = true;

  // ---- scalar references (quant.h's *_ref) ----
  void (*dequantize_ref)(const uint8_t* src, float* dst, int64_t n) = nullptr;
  // A simple, valid quantizer for weights; the exact llama.cpp rounding for activation formats.
  void (*quantize_ref)(const float* src, uint8_t* dst, int64_t n) = nullptr;
  // Against an activation row in vec_dot_type format, accumulated in float64 where possible.
  double (*vec_dot_ref)(int64_t n, const uint8_t* w_row, const uint8_t* act_row) = nullptr;

  // ---- SIMD, each dispatched to the best Highway target of this CPU ----
  void (*dequantize)(const uint8_t* src, float* dst, int64_t n) = nullptr;
  float (*vec_dot)(int64_t n, const uint8_t* w_row, const uint8_t* act_row) = nullptr;
  // The matmul of matmul_internal.h for this type: plan, convert activations, rows.
  void (*plan_acts)(int64_t n_in, int64_t n_tok, const float* x, detail::ActBuffer* acts) = nullptr;
  void (*prepare_acts)(const float* x, int64_t t_begin, int64_t t_end, int64_t k_begin,
                       int64_t k_end, detail::ActBuffer* acts) = nullptr;
  void (*matmul_rows)(const WeightMatrix& w, const detail::ActBuffer& acts, int64_t o_begin,
                      int64_t o_end, float* y) = nullptr;

  // ---- interleaved layouts (tova's own, made at load; e.g. q4_0_r8) ----
  // A base type's rows stored group_rows at a time, so that one activation load serves a
  // group; 0 for a type whose rows are stored one after the other. Such a matrix is a whole
  // number of groups and its rows cannot be addressed one by one: dequantize, vec_dot and the
  // row references above are null (matmul and matmul_ref work through row_of).
  int group_rows = 0;
  GgmlType base_type = GgmlType::kF32;  // the type a group's rows are made from
  // Rows [0, n_rows) of a matrix of base_type (n_rows a multiple of group_rows) into dst, the
  // same number of bytes, src and dst apart.
  void (*repack)(const uint8_t* src, int64_t n_in, int64_t n_rows, uint8_t* dst) = nullptr;
  // Row `row` of the interleaved matrix at `data`, in base_type's layout (row_bytes to dst).
  void (*row_of)(const uint8_t* data, int64_t n_in, int64_t row, uint8_t* dst) = nullptr;
};

// The entry of `type`, or nullptr for a type tova has no kernels for.
const WeightTypeKernels* find_weight_type(GgmlType type);
// The entry of a type that has one (checked).
const WeightTypeKernels& weight_type(GgmlType type);
// Every entry: weight types in compute_types() order, then the activation formats, then the
// interleaved layouts (group_rows > 0).
std::span<const WeightTypeKernels* const> weight_types();
// The interleaved layout made from `base` at load (q4_0_r8 from q4_0), or nullptr.
const WeightTypeKernels* find_interleaved_type(GgmlType base);

}  // namespace tova::kernels
