// Scalar references: plain loops over ggml's block layouts. Every SIMD path is tested against
// these, so they favour obviousness over speed. Each type's own block functions live in its unit
// (types/<type>.cpp); here are the ones several types share (types/ref_blocks.h) and the
// row-level API of quant.h, which asks the weight-type table.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "kernels/quant.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

namespace tova::kernels {

using namespace detail;  // NOLINT(google-build-using-namespace): block layouts of this layer

namespace detail::ref {

// Round half to even, as llama.cpp's nearest_int (Q8_K): the default FP rounding mode.
int round_even(float v) { return static_cast<int>(std::nearbyintf(v)); }

// ---- dequantization ----

// The five-bit values of a Q5_0 / Q5_1 block (0..31), in element order.
void unpack_q5(const uint8_t* qh_bytes, const uint8_t* qs, int* q) {
  const uint32_t qh = load_u32(qh_bytes);
  for (int j = 0; j < 16; ++j) {
    q[j] = (qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1u) << 4);
    q[j + 16] = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
  }
}

// The 4- or 5-bit values (0..15 / 0..31) of a Q4_K / Q5_K super-block, in element order.
void unpack_qk(const uint8_t* qs, const uint8_t* qh, int* q) {
  for (int i = 0; i < 4; ++i) {
    for (int l = 0; l < 32; ++l) {
      int lo = qs[32 * i + l] & 0xF;
      int hi = qs[32 * i + l] >> 4;
      if (qh != nullptr) {
        lo |= ((qh[l] >> (2 * i)) & 1) << 4;
        hi |= ((qh[l] >> (2 * i + 1)) & 1) << 4;
      }
      q[64 * i + l] = lo;
      q[64 * i + 32 + l] = hi;
    }
  }
}

void dequant_qk(const uint8_t* b, const uint8_t* qs, const uint8_t* qh, float* y) {
  const float d = load_f16(b + Q4_K::kD);
  const float dmin = load_f16(b + Q4_K::kDmin);
  int q[kQK_K];
  unpack_qk(qs, qh, q);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    scale_min_k4(j, b + Q4_K::kScales, &sc, &m);
    const float d1 = d * static_cast<float>(sc);
    const float m1 = dmin * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) y[32 * j + l] = d1 * static_cast<float>(q[32 * j + l]) - m1;
  }
}

// The two low bits (0..3) of element e of a Q2_K / Q3_K super-block: bits 2j..2j+1 of
// qs[32h + l] for e = 128h + 32j + l.
int low2_k(const uint8_t* qs, int e) {
  const int h = e / 128, j = (e % 128) / 32, l = e % 32;
  return (qs[32 * h + l] >> (2 * j)) & 3;
}

// 32 elements of 4-bit codes in Q4_0's nibble order through a 16-entry table, times dl.
void dequant_table32(const uint8_t* qs, const int8_t* table, float dl, float* y) {
  for (int j = 0; j < 16; ++j) {
    y[j] = dl * static_cast<float>(table[qs[j] & 0xF]);
    y[j + 16] = dl * static_cast<float>(table[qs[j] >> 4]);
  }
}

// ---- weight quantizers (simple and valid; they write test and benchmark models) ----

// The value of largest magnitude (keeping its sign), so that the scale maps it to the end of the
// signed range that has one more level (-8 of -8..7).
float signed_absmax(const float* x, int n) {
  float amax = 0.0f, mx = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      mx = x[j];
    }
  }
  return mx;
}

// Q4_1 / Q5_1: min/max affine quantization with 2^bits levels.
void quant_affine(const float* x, int bits, uint8_t* b, int off_d, int off_m, int off_qh,
                  int off_qs) {
  float lo = x[0], hi = x[0];
  for (int j = 1; j < 32; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  const int top = (1 << bits) - 1;
  const float d = (hi - lo) / static_cast<float>(top);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_u16(b + off_d, fp32_to_fp16(d));
  store_u16(b + off_m, fp32_to_fp16(lo));
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const int q0 = std::min(top, static_cast<int>((x[j] - lo) * id + 0.5f));
    const int q1 = std::min(top, static_cast<int>((x[j + 16] - lo) * id + 0.5f));
    b[off_qs + j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
    qh |= static_cast<uint32_t>(q0 >> 4) << j;
    qh |= static_cast<uint32_t>(q1 >> 4) << (j + 16);
  }
  if (off_qh >= 0) std::memcpy(b + off_qh, &qh, 4);
}

// Packs eight six-bit scales and mins the way scale_min_k4 reads them.
void pack_scales_k4(const int* sc, const int* m, uint8_t* q) {
  std::memset(q, 0, 12);
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      q[j] |= static_cast<uint8_t>(sc[j]);
      q[j + 4] |= static_cast<uint8_t>(m[j]);
    } else {
      q[j + 4] = static_cast<uint8_t>((sc[j] & 0xF) | ((m[j] & 0xF) << 4));
      q[j - 4] |= static_cast<uint8_t>((sc[j] >> 4) << 6);
      q[j] |= static_cast<uint8_t>((m[j] >> 4) << 6);
    }
  }
}

// Q4_K / Q5_K: per 32-element sub-block min/max, scales and mins quantized to six bits.
void quant_qk(const float* x, int bits, uint8_t* b, uint8_t* qs, uint8_t* qh) {
  const int top = (1 << bits) - 1;
  float scale[8], minv[8];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    float lo = 0.0f, hi = x[32 * j];  // the min is subtracted, so it is kept <= 0
    for (int l = 0; l < 32; ++l) {
      lo = std::min(lo, x[32 * j + l]);
      hi = std::max(hi, x[32 * j + l]);
    }
    scale[j] = (hi - lo) / static_cast<float>(top);
    minv[j] = -lo;
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, minv[j]);
  }
  store_u16(b + Q4_K::kD, fp32_to_fp16(max_scale / 63.0f));
  store_u16(b + Q4_K::kDmin, fp32_to_fp16(max_min / 63.0f));
  const float d = load_f16(b + Q4_K::kD);
  const float dmin = load_f16(b + Q4_K::kDmin);
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = d > 0.0f ? std::clamp(round_even(scale[j] / d), 0, 63) : 0;
    m[j] = dmin > 0.0f ? std::clamp(round_even(minv[j] / dmin), 0, 63) : 0;
  }
  pack_scales_k4(sc, m, b + Q4_K::kScales);
  int q[kQK_K];
  for (int j = 0; j < 8; ++j) {
    const float d1 = d * static_cast<float>(sc[j]);
    const float m1 = dmin * static_cast<float>(m[j]);
    for (int l = 0; l < 32; ++l) {
      q[32 * j + l] = d1 > 0.0f ? std::clamp(round_even((x[32 * j + l] + m1) / d1), 0, top) : 0;
    }
  }
  if (qh != nullptr) std::memset(qh, 0, 32);
  for (int i = 0; i < 4; ++i) {
    for (int l = 0; l < 32; ++l) {
      const int lo = q[64 * i + l], hi = q[64 * i + 32 + l];
      qs[32 * i + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      if (qh != nullptr) {
        qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * i)) | ((hi >> 4) << (2 * i + 1)));
      }
    }
  }
}

// The index of the table entry nearest v (the first of two equally near).
int nearest_level(const int8_t* table, float v) {
  int best = 0;
  float best_err = std::fabs(v - static_cast<float>(table[0]));
  for (int i = 1; i < 16; ++i) {
    const float err = std::fabs(v - static_cast<float>(table[i]));
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

// 32 values to 4-bit codes of `table` at scale dl, in Q4_0's nibble order.
void quant_table32(const float* x, const int8_t* table, float dl, uint8_t* qs) {
  const float id = dl != 0.0f ? 1.0f / dl : 0.0f;
  for (int j = 0; j < 16; ++j) {
    const int q0 = nearest_level(table, x[j] * id);
    const int q1 = nearest_level(table, x[j + 16] * id);
    qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

// ---- dot products: exact integer sums per block, scaled and accumulated in double ----

int8_t act_q(const uint8_t* act_block, int off, int j) {
  return static_cast<int8_t>(act_block[off + j]);
}

// Q4_K / Q5_K: d * sum_j sc_j * <q, a>_j - dmin * sum_j m_j * (sum of a over sub-block j).
double dot_qk(int64_t nb, const uint8_t* w, const uint8_t* a, bool five_bit) {
  const int bytes = five_bit ? Q5_K::kBytes : Q4_K::kBytes;
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += bytes, a += Q8_K::kBytes) {
    int q[kQK_K];
    if (five_bit) {
      unpack_qk(w + Q5_K::kQs, w + Q5_K::kQh, q);
    } else {
      unpack_qk(w + Q4_K::kQs, nullptr, q);
    }
    int64_t isum = 0, msum = 0;
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      scale_min_k4(j, w + Q4_K::kScales, &sc, &m);
      int dot = 0;
      for (int l = 0; l < 32; ++l) dot += q[32 * j + l] * act_q(a, Q8_K::kQs, 32 * j + l);
      int16_t bs0, bs1;
      std::memcpy(&bs0, a + Q8_K::kBsums + 4 * j, 2);
      std::memcpy(&bs1, a + Q8_K::kBsums + 4 * j + 2, 2);
      isum += static_cast<int64_t>(sc) * dot;
      msum += static_cast<int64_t>(m) * (bs0 + bs1);
    }
    const double da = load_f32(a + Q8_K::kD);
    sum += static_cast<double>(load_f16(w + Q4_K::kD)) * da * static_cast<double>(isum) -
           static_cast<double>(load_f16(w + Q4_K::kDmin)) * da * static_cast<double>(msum);
  }
  return sum;
}

int16_t bsum_k(const uint8_t* a, int g) {
  int16_t v;
  std::memcpy(&v, a + Q8_K::kBsums + 2 * g, 2);
  return v;
}

// <table[q], a> over 32 elements in Q4_0's nibble order.
int dot_table32(const uint8_t* qs, const int8_t* table, const uint8_t* aq) {
  int s = 0;
  for (int j = 0; j < 16; ++j) {
    s += table[qs[j] & 0xF] * static_cast<int8_t>(aq[j]);
    s += table[qs[j] >> 4] * static_cast<int8_t>(aq[j + 16]);
  }
  return s;
}

}  // namespace detail::ref

// The row-level references go through the table (each type's unit composes them from the
// block functions above).

GgmlType vec_dot_type(GgmlType weight_type) {
  const WeightTypeKernels* k = find_weight_type(weight_type);
  return k != nullptr ? k->vec_dot_type : GgmlType::kF32;
}

void dequantize_row_ref(GgmlType type, const void* src, float* dst, int64_t n) {
  TOVA_CHECK(n % type_traits(type).block_size == 0);
  weight_type(type).dequantize_ref(static_cast<const uint8_t*>(src), dst, n);
}

void quantize_row_ref(GgmlType type, const float* src, void* dst, int64_t n) {
  TOVA_CHECK(n % type_traits(type).block_size == 0);
  weight_type(type).quantize_ref(src, static_cast<uint8_t*>(dst), n);
}

float vec_dot_ref(GgmlType weight_type_id, int64_t n, const void* w_row, const void* act_row) {
  const WeightTypeKernels& k = weight_type(weight_type_id);
  TOVA_CHECK(k.vec_dot_ref != nullptr && "vec_dot_ref: not a weight type");
  TOVA_CHECK(n % type_traits(weight_type_id).block_size == 0);
  return static_cast<float>(k.vec_dot_ref(n, static_cast<const uint8_t*>(w_row),
                                          static_cast<const uint8_t*>(act_row)));
}

}  // namespace tova::kernels
