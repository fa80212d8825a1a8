// The scalar references' block functions (defined in quant_ref.cpp): one ggml block
// (de)quantized, or nb blocks of a weight row dotted with activation blocks of its vec-dot type,
// accumulated in float64. A weight type's unit (types/<type>.cpp) composes its row-level
// references from them with the templates below.
#pragma once

#include <cstdint>

namespace tova::kernels::detail::ref {

int round_even(float v);
void unpack_q5(const uint8_t* qh_bytes, const uint8_t* qs, int* q);
void unpack_qk(const uint8_t* qs, const uint8_t* qh, int* q);
void dequant_qk(const uint8_t* b, const uint8_t* qs, const uint8_t* qh, float* y);
int low2_k(const uint8_t* qs, int e);
void dequant_table32(const uint8_t* qs, const int8_t* table, float dl, float* y);
float signed_absmax(const float* x, int n);
void quant_affine(const float* x, int bits, uint8_t* b, int off_d, int off_m, int off_qh, int off_qs);
void pack_scales_k4(const int* sc, const int* m, uint8_t* q);
void quant_qk(const float* x, int bits, uint8_t* b, uint8_t* qs, uint8_t* qh);
int nearest_level(const int8_t* table, float v);
void quant_table32(const float* x, const int8_t* table, float dl, uint8_t* qs);
int8_t act_q(const uint8_t* act_block, int off, int j);
double dot_qk(int64_t nb, const uint8_t* w, const uint8_t* a, bool five_bit);
int16_t bsum_k(const uint8_t* a, int g);
int dot_table32(const uint8_t* qs, const int8_t* table, const uint8_t* aq);

// Rows of n elements (n a multiple of kBlock), block by block.
template <int kBlock, int kBytes, void (*kFn)(const uint8_t*, float*)>
void dequantize_blocks(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kBlock; ++i) kFn(src + i * kBytes, dst + i * kBlock);
}
template <int kBlock, int kBytes, void (*kFn)(const float*, uint8_t*)>
void quantize_blocks(const float* src, uint8_t* dst, int64_t n) {
  for (int64_t i = 0; i < n / kBlock; ++i) kFn(src + i * kBlock, dst + i * kBytes);
}
template <int kBlock, double (*kFn)(int64_t, const uint8_t*, const uint8_t*)>
double dot_blocks(int64_t n, const uint8_t* w, const uint8_t* a) {
  return kFn(n / kBlock, w, a);
}

}  // namespace tova::kernels::detail::ref
