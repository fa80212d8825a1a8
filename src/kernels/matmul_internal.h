// Internals shared by matmul.cpp (planning, threading) and matmul_engine-inl.h (the per-target
// kernels): the activation buffer and the dispatching entry points.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "core/dtype.h"
#include "kernels/matmul.h"

namespace tova::kernels::detail {

// A growable, 64-byte aligned scratch buffer (contents are not kept when it grows).
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  ~AlignedBuffer() { std::free(ptr_); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  template <typename T>
  T* ensure(size_t count) {
    const size_t bytes = count * sizeof(T);
    if (bytes > cap_) {
      std::free(ptr_);
      cap_ = (bytes + 63) / 64 * 64;
      ptr_ = std::aligned_alloc(64, cap_);
      if (ptr_ == nullptr) throw std::bad_alloc();
    }
    return static_cast<T*>(ptr_);
  }
  template <typename T>
  T* get() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
  size_t cap_ = 0;
};

// How the activations of one matmul call are laid out for the kernels.
enum class ActLayout {
  kFloatRows,   // float weights, few tokens: x itself, row by row
  kFloatLanes,  // float weights, many tokens: [token group][n_in][lanes] floats
  kInt8Rows,    // quantized weights, few tokens: per token qs[n_in], d[n_group], sa[n_group]
  kInt8Lanes,   // quantized weights, many tokens: qs [token group][n_in/4][lanes][4],
                // d and sa [token group][n_group][lanes]
  kDecodeRows,  // types with direct decode kernels, few tokens: per token the activation rows
                // of matmul_decode-inl.h / matmul_decode_avx2-inl.h, qs_stride bytes each, or
                // token quads (n_quad below)
};

// Activations converted once per call. For the int8 layouts, group g of token t holds the
// int8 values a, their scale d and sa = d * sum(a) (for Q8_1 the block's stored s), so that
// dot(W row, x) = sum_g mul_g * d_g * <u, a>_g + (add_g - offset * mul_g) * sa_g.
struct ActBuffer {
  ActLayout layout = ActLayout::kFloatRows;
  GgmlType weight_type = GgmlType::kF32;
  int64_t n_in = 0;
  int64_t n_tok = 0;
  int group = 32;           // elements per scale group (int8 layouts)
  int64_t n_group_pad = 0;  // n_in / group rounded up to 16, zero-padded
  int lanes = 1;            // tokens per token group (lanes layouts)
  int64_t n_tok_group = 0;
  const float* x = nullptr;  // kFloatRows
  AlignedBuffer qs;          // int8 values, or floats for kFloatLanes
  AlignedBuffer d;
  AlignedBuffer sa;
  int64_t qs_stride = 0;  // bytes per token (rows) or per token group (lanes)
  int64_t sc_stride = 0;  // floats per token (rows) or per token group (lanes)
  // kDecodeRows of a type with token-quad kernels (matmul_decode_quad-inl.h): tokens
  // [0, 4 * n_quad) are laid out four at a time, quad_stride bytes per quad, and the rows of
  // the tokens after them (qs_stride bytes each) follow the quads.
  int64_t n_quad = 0;
  int64_t quad_stride = 0;
};

// Chooses the layout for this call (it depends on the SIMD target) and sizes `acts`.
void plan_acts(GgmlType weight_type, int64_t n_in, int64_t n_tok, const float* x, ActBuffer* acts);
// Converts tokens [t_begin, t_end) of x; token ranges must start at multiples of acts->lanes.
void prepare_acts(const float* x, int64_t t_begin, int64_t t_end, ActBuffer* acts);
// Converts columns [k_begin, k_end) of every token, for layouts with token lanes (fewer tokens
// than two groups cannot be split by token): the bounds are multiples of kActColumnGrain or n_in.
// Each block of an activation row is converted on its own, so any split gives the same bytes.
void prepare_act_columns(const float* x, int64_t k_begin, int64_t k_end, ActBuffer* acts);
// A multiple of every weight type's block size and scale group (a K-quant super-block).
inline constexpr int64_t kActColumnGrain = 256;
// y[t][o] for o in [o_begin, o_end) and every token.
void matmul_rows(const WeightMatrix& w, const ActBuffer& acts, int64_t o_begin, int64_t o_end,
                 float* y);

}  // namespace tova::kernels::detail
