// Scalar references: plain loops over ggml's block layouts. Every SIMD path is tested against
// these, so they favour obviousness over speed.
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

void dequant_q4_0(const uint8_t* b, float* y) {
  const float d = load_f16(b + Q4_0::kD);
  for (int j = 0; j < 16; ++j) {
    const uint8_t q = b[Q4_0::kQs + j];
    y[j] = static_cast<float>((q & 0xF) - 8) * d;
    y[j + 16] = static_cast<float>((q >> 4) - 8) * d;
  }
}

void dequant_q4_1(const uint8_t* b, float* y) {
  const float d = load_f16(b + Q4_1::kD);
  const float m = load_f16(b + Q4_1::kM);
  for (int j = 0; j < 16; ++j) {
    const uint8_t q = b[Q4_1::kQs + j];
    y[j] = static_cast<float>(q & 0xF) * d + m;
    y[j + 16] = static_cast<float>(q >> 4) * d + m;
  }
}

// The five-bit values of a Q5_0 / Q5_1 block (0..31), in element order.
void unpack_q5(const uint8_t* qh_bytes, const uint8_t* qs, int* q) {
  const uint32_t qh = load_u32(qh_bytes);
  for (int j = 0; j < 16; ++j) {
    q[j] = (qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1u) << 4);
    q[j + 16] = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
  }
}

void dequant_q5_0(const uint8_t* b, float* y) {
  const float d = load_f16(b + Q5_0::kD);
  int q[32];
  unpack_q5(b + Q5_0::kQh, b + Q5_0::kQs, q);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q[j] - 16) * d;
}

void dequant_q5_1(const uint8_t* b, float* y) {
  const float d = load_f16(b + Q5_1::kD);
  const float m = load_f16(b + Q5_1::kM);
  int q[32];
  unpack_q5(b + Q5_1::kQh, b + Q5_1::kQs, q);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q[j]) * d + m;
}

void dequant_q8_0(const uint8_t* b, float* y) {
  const float d = load_f16(b + Q8_0::kD);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[Q8_0::kQs + j])) * d;
}

void dequant_q8_1(const uint8_t* b, float* y) {
  const float d = load_f16(b + Q8_1::kD);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[Q8_1::kQs + j])) * d;
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

// The six-bit values (0..63) of a Q6_K super-block, in element order. Each 128-element half
// uses 64 bytes of ql and 32 of qh: element l (< 32) is the low nibble of ql[l] with bits 0-1
// of qh[l], l+32 the low nibble of ql[l+32] with bits 2-3, l+64 the high nibble of ql[l] with
// bits 4-5, l+96 the high nibble of ql[l+32] with bits 6-7.
void unpack_q6(const uint8_t* b, int* q) {
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = b + Q6_K::kQl + 64 * half;
    const uint8_t* qh = b + Q6_K::kQh + 32 * half;
    int* out = q + 128 * half;
    for (int l = 0; l < 32; ++l) {
      out[l] = (ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4);
      out[l + 32] = (ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4);
      out[l + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
      out[l + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
    }
  }
}

void dequant_q6_k(const uint8_t* b, float* y) {
  const float d = load_f16(b + Q6_K::kD);
  int q[kQK_K];
  unpack_q6(b, q);
  for (int e = 0; e < kQK_K; ++e) {
    const int sc = static_cast<int8_t>(b[Q6_K::kScales + e / 16]);
    y[e] = d * static_cast<float>(sc) * static_cast<float>(q[e] - 32);
  }
}

// The two low bits (0..3) of element e of a Q2_K / Q3_K super-block: bits 2j..2j+1 of
// qs[32h + l] for e = 128h + 32j + l.
int low2_k(const uint8_t* qs, int e) {
  const int h = e / 128, j = (e % 128) / 32, l = e % 32;
  return (qs[32 * h + l] >> (2 * j)) & 3;
}

// Q3_K's three-bit value (0..7) of element e: the low two bits and bit 4h + j of hmask[l].
int q3_k(const uint8_t* b, int e) {
  const int h = e / 128, j = (e % 128) / 32, l = e % 32;
  return low2_k(b + Q3_K::kQs, e) | (((b[Q3_K::kHmask + l] >> (4 * h + j)) & 1) << 2);
}

void dequant_q2_k(const uint8_t* b, float* y) {
  const float d = load_f16(b + Q2_K::kD);
  const float dmin = load_f16(b + Q2_K::kDmin);
  for (int e = 0; e < kQK_K; ++e) {
    const int sc = b[Q2_K::kScales + e / 16];
    const float dl = d * static_cast<float>(sc & 0xF);
    const float ml = dmin * static_cast<float>(sc >> 4);
    y[e] = dl * static_cast<float>(low2_k(b + Q2_K::kQs, e)) - ml;
  }
}

void dequant_q3_k(const uint8_t* b, float* y) {
  const float d = load_f16(b + Q3_K::kD);
  for (int e = 0; e < kQK_K; ++e) {
    const float dl = d * static_cast<float>(scale_q3_k(e / 16, b + Q3_K::kScales) - 32);
    y[e] = dl * static_cast<float>(q3_k(b, e) - 4);
  }
}

// 32 elements of 4-bit codes in Q4_0's nibble order through a 16-entry table, times dl.
void dequant_table32(const uint8_t* qs, const int8_t* table, float dl, float* y) {
  for (int j = 0; j < 16; ++j) {
    y[j] = dl * static_cast<float>(table[qs[j] & 0xF]);
    y[j + 16] = dl * static_cast<float>(table[qs[j] >> 4]);
  }
}

void dequant_iq4_nl(const uint8_t* b, float* y) {
  dequant_table32(b + IQ4_NL::kQs, kIQ4NLValues, load_f16(b + IQ4_NL::kD), y);
}

void dequant_iq4_xs(const uint8_t* b, float* y) {
  const float d = load_f16(b + IQ4_XS::kD);
  for (int j = 0; j < 8; ++j) {
    const float dl = d * static_cast<float>(scale_iq4_xs(j, b) - 32);
    dequant_table32(b + IQ4_XS::kQs + 16 * j, kIQ4NLValues, dl, y + 32 * j);
  }
}

void dequant_mxfp4(const uint8_t* b, float* y) {
  dequant_table32(b + MXFP4::kQs, kMXFP4Values, e8m0_half(b[MXFP4::kE]), y);
}

void dequant_q8_k(const uint8_t* b, float* y) {
  const float d = load_f32(b + Q8_K::kD);
  for (int j = 0; j < kQK_K; ++j) {
    y[j] = d * static_cast<float>(static_cast<int8_t>(b[Q8_K::kQs + j]));
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

void quant_q4_0(const float* x, uint8_t* b) {
  const float d = signed_absmax(x, 32) / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_u16(b + Q4_0::kD, fp32_to_fp16(d));
  for (int j = 0; j < 16; ++j) {
    const int q0 = std::min(15, static_cast<int>(x[j] * id + 8.5f));
    const int q1 = std::min(15, static_cast<int>(x[j + 16] * id + 8.5f));
    b[Q4_0::kQs + j] = static_cast<uint8_t>(q0 | (q1 << 4));
  }
}

void quant_q5_0(const float* x, uint8_t* b) {
  const float d = signed_absmax(x, 32) / -16.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_u16(b + Q5_0::kD, fp32_to_fp16(d));
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const int q0 = std::min(31, static_cast<int>(x[j] * id + 16.5f));
    const int q1 = std::min(31, static_cast<int>(x[j + 16] * id + 16.5f));
    b[Q5_0::kQs + j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
    qh |= static_cast<uint32_t>(q0 >> 4) << j;
    qh |= static_cast<uint32_t>(q1 >> 4) << (j + 16);
  }
  std::memcpy(b + Q5_0::kQh, &qh, 4);
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

void quant_q8_0(const float* x, uint8_t* b) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  // llama.cpp's x86 SIMD quantize_row_q8_0 (what its logits were made with): inverse scale
  // 127/amax (not 1/d), round half to even.
  const float d = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  store_u16(b + Q8_0::kD, fp32_to_fp16(d));
  for (int j = 0; j < 32; ++j) b[Q8_0::kQs + j] = static_cast<uint8_t>(round_even(x[j] * id));
}

void quant_q8_1(const float* x, uint8_t* b) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;  // as Q8_0 above
  int sum = 0;
  for (int j = 0; j < 32; ++j) {
    const int q = round_even(x[j] * id);
    b[Q8_1::kQs + j] = static_cast<uint8_t>(q);
    sum += q;
  }
  store_u16(b + Q8_1::kD, fp32_to_fp16(d));
  store_u16(b + Q8_1::kS, fp32_to_fp16(static_cast<float>(sum) * d));
}

void quant_q8_k(const float* x, uint8_t* b) {
  float amax = 0.0f, mx = 0.0f;
  for (int j = 0; j < kQK_K; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      mx = x[j];
    }
  }
  if (amax == 0.0f) {
    std::memset(b, 0, Q8_K::kBytes);
    return;
  }
  // The block's extreme maps to -127 (not +127): llama.cpp's choice, kept for identical rounding.
  const float iscale = -127.0f / mx;
  for (int j = 0; j < kQK_K; ++j) {
    b[Q8_K::kQs + j] = static_cast<uint8_t>(std::min(127, round_even(iscale * x[j])));
  }
  for (int g = 0; g < 16; ++g) {
    int sum = 0;
    for (int l = 0; l < 16; ++l) sum += static_cast<int8_t>(b[Q8_K::kQs + 16 * g + l]);
    store_i16(b + Q8_K::kBsums + 2 * g, static_cast<int16_t>(sum));
  }
  store_f32(b + Q8_K::kD, 1.0f / iscale);
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

void quant_q6_k(const float* x, uint8_t* b) {
  float scale[16];
  float max_abs = 0.0f;
  for (int j = 0; j < 16; ++j) {
    scale[j] = signed_absmax(x + 16 * j, 16) / -32.0f;
    max_abs = std::max(max_abs, std::fabs(scale[j]));
  }
  store_u16(b + Q6_K::kD, fp32_to_fp16(max_abs / 127.0f));
  const float d = load_f16(b + Q6_K::kD);
  int q[kQK_K];
  for (int j = 0; j < 16; ++j) {
    const int sc = d > 0.0f ? std::clamp(round_even(scale[j] / d), -127, 127) : 0;
    b[Q6_K::kScales + j] = static_cast<uint8_t>(static_cast<int8_t>(sc));
    const float eff = d * static_cast<float>(sc);
    for (int l = 0; l < 16; ++l) {
      q[16 * j + l] = eff != 0.0f ? std::clamp(round_even(x[16 * j + l] / eff) + 32, 0, 63) : 32;
    }
  }
  for (int half = 0; half < 2; ++half) {
    uint8_t* ql = b + Q6_K::kQl + 64 * half;
    uint8_t* qh = b + Q6_K::kQh + 32 * half;
    const int* in = q + 128 * half;
    for (int l = 0; l < 32; ++l) {
      const int q1 = in[l], q2 = in[l + 32], q3 = in[l + 64], q4 = in[l + 96];
      ql[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
      ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
      qh[l] =
          static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
    }
  }
}

// Q2_K: per 16 elements min/max affine with four levels; scales and mins to four bits.
void quant_q2_k(const float* x, uint8_t* b) {
  float scale[16], minv[16];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 16; ++j) {
    float lo = 0.0f, hi = x[16 * j];  // the min is subtracted, so it is kept <= 0
    for (int l = 0; l < 16; ++l) {
      lo = std::min(lo, x[16 * j + l]);
      hi = std::max(hi, x[16 * j + l]);
    }
    // Four levels spread over the whole range waste most of them on the tails: of a few
    // narrowed ranges, keep the one with the least squared error (Gaussian rows: 0.347 -> 0.274
    // relative RMS).
    float best_err = -1.0f;
    for (int a = 6; a <= 10; a += 2) {
      for (int c = 6; c <= 10; c += 2) {
        const float lo_c = lo * 0.1f * static_cast<float>(a);
        const float hi_c = hi * 0.1f * static_cast<float>(c);
        const float dl = (hi_c - lo_c) / 3.0f;
        float err = 0.0f;
        for (int l = 0; l < 16; ++l) {
          const float v = x[16 * j + l];
          const int q = dl > 0.0f ? std::clamp(round_even((v - lo_c) / dl), 0, 3) : 0;
          const float e = static_cast<float>(q) * dl + lo_c - v;
          err += e * e;
        }
        if (best_err < 0.0f || err < best_err) {
          best_err = err;
          scale[j] = std::max(0.0f, dl);
          minv[j] = -lo_c;
        }
      }
    }
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, minv[j]);
  }
  store_u16(b + Q2_K::kD, fp32_to_fp16(max_scale / 15.0f));
  store_u16(b + Q2_K::kDmin, fp32_to_fp16(max_min / 15.0f));
  const float d = load_f16(b + Q2_K::kD);
  const float dmin = load_f16(b + Q2_K::kDmin);
  std::memset(b + Q2_K::kQs, 0, 64);
  for (int j = 0; j < 16; ++j) {
    const int sc = d > 0.0f ? std::clamp(round_even(scale[j] / d), 0, 15) : 0;
    const int m = dmin > 0.0f ? std::clamp(round_even(minv[j] / dmin), 0, 15) : 0;
    b[Q2_K::kScales + j] = static_cast<uint8_t>(sc | (m << 4));
    const float dl = d * static_cast<float>(sc);
    const float ml = dmin * static_cast<float>(m);
    for (int l = 0; l < 16; ++l) {
      const int e = 16 * j + l;
      const int q = dl > 0.0f ? std::clamp(round_even((x[e] + ml) / dl), 0, 3) : 0;
      b[Q2_K::kQs + 32 * (e / 128) + e % 32] |= static_cast<uint8_t>(q << (2 * ((e % 128) / 32)));
    }
  }
}

// Q3_K: per 16 elements a signed scale mapping the largest magnitude to level -4 of -4..3;
// the scales to six bits (-32..31) of one f16 d.
void quant_q3_k(const float* x, uint8_t* b) {
  float scale[16];
  float max_abs = 0.0f;
  for (int j = 0; j < 16; ++j) {
    // Of the scales that map the largest magnitude to level -4 or a little inside it, the one
    // with the least squared error (Gaussian rows: 0.156 -> 0.151 relative RMS).
    const float base = signed_absmax(x + 16 * j, 16) / -4.0f;
    float best_err = -1.0f;
    scale[j] = base;
    for (int f = 6; f <= 10; ++f) {
      const float sc = base * 0.1f * static_cast<float>(f);
      float err = 0.0f;
      for (int l = 0; l < 16; ++l) {
        const float v = x[16 * j + l];
        const int q = sc != 0.0f ? std::clamp(round_even(v / sc), -4, 3) : 0;
        const float e = static_cast<float>(q) * sc - v;
        err += e * e;
      }
      if (best_err < 0.0f || err < best_err) {
        best_err = err;
        scale[j] = sc;
      }
    }
    max_abs = std::max(max_abs, std::fabs(scale[j]));
  }
  store_u16(b + Q3_K::kD, fp32_to_fp16(max_abs / 31.0f));
  const float d = load_f16(b + Q3_K::kD);
  std::memset(b, 0, Q3_K::kD);  // hmask, qs and scales are or-ed in
  for (int j = 0; j < 16; ++j) {
    const int sc = d > 0.0f ? std::clamp(round_even(scale[j] / d), -32, 31) : 0;
    const int u = sc + 32;
    uint8_t* s = b + Q3_K::kScales;
    if (j < 8) {
      s[j] |= static_cast<uint8_t>(u & 0xF);
    } else {
      s[j - 8] |= static_cast<uint8_t>((u & 0xF) << 4);
    }
    s[8 + j % 4] |= static_cast<uint8_t>((u >> 4) << (2 * (j / 4)));
    const float dl = d * static_cast<float>(sc);
    for (int l = 0; l < 16; ++l) {
      const int e = 16 * j + l;
      const int q = dl != 0.0f ? std::clamp(round_even(x[e] / dl) + 4, 0, 7) : 4;
      const int h = e / 128, jj = (e % 128) / 32, ll = e % 32;
      b[Q3_K::kQs + 32 * h + ll] |= static_cast<uint8_t>((q & 3) << (2 * jj));
      b[Q3_K::kHmask + ll] |= static_cast<uint8_t>((q >> 2) << (4 * h + jj));
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

// IQ4_NL: the element of largest magnitude maps to the level -127.
void quant_iq4_nl(const float* x, uint8_t* b) {
  store_u16(b + IQ4_NL::kD, fp32_to_fp16(signed_absmax(x, 32) / -127.0f));
  quant_table32(x, kIQ4NLValues, load_f16(b + IQ4_NL::kD), b + IQ4_NL::kQs);
}

// IQ4_XS: IQ4_NL's per-32 scales quantized to six bits (-32..31) of one f16 d.
void quant_iq4_xs(const float* x, uint8_t* b) {
  float scale[8];
  float max_abs = 0.0f;
  for (int j = 0; j < 8; ++j) {
    scale[j] = signed_absmax(x + 32 * j, 32) / -127.0f;
    max_abs = std::max(max_abs, std::fabs(scale[j]));
  }
  store_u16(b + IQ4_XS::kD, fp32_to_fp16(max_abs / 31.0f));
  const float d = load_f16(b + IQ4_XS::kD);
  uint16_t scales_h = 0;
  std::memset(b + IQ4_XS::kScalesL, 0, 4);
  for (int j = 0; j < 8; ++j) {
    const int ls = (d > 0.0f ? std::clamp(round_even(scale[j] / d), -32, 31) : 0) + 32;
    b[IQ4_XS::kScalesL + j / 2] |= static_cast<uint8_t>((ls & 0xF) << (4 * (j % 2)));
    scales_h = static_cast<uint16_t>(scales_h | ((ls >> 4) << (2 * j)));
    const float dl = d * static_cast<float>(ls - 32);
    quant_table32(x + 32 * j, kIQ4NLValues, dl, b + IQ4_XS::kQs + 16 * j);
  }
  store_u16(b + IQ4_XS::kScalesH, scales_h);
}

// MXFP4: the smallest power-of-two scale that keeps the block's largest magnitude within the
// largest FP4 value (6), then the nearest FP4 value of each element.
void quant_mxfp4(const float* x, uint8_t* b) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  int e = 0;
  if (amax > 0.0f) {
    int exp = 0;
    const float m = std::frexp(amax / 6.0f, &exp);  // amax / 6 = m * 2^exp, m in [0.5, 1)
    const int k = m == 0.5f ? exp - 1 : exp;         // 2^k >= amax / 6
    e = std::clamp(k + 127, 1, 254);
  }
  b[MXFP4::kE] = static_cast<uint8_t>(e);
  quant_table32(x, kMXFP4Values, e8m0_half(static_cast<uint8_t>(e)), b + MXFP4::kQs);
}

// ---- dot products: exact integer sums per block, scaled and accumulated in double ----

int8_t act_q(const uint8_t* act_block, int off, int j) {
  return static_cast<int8_t>(act_block[off + j]);
}

double dot_q4_0(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += Q4_0::kBytes, a += Q8_0::kBytes) {
    int isum = 0;
    for (int j = 0; j < 16; ++j) {
      const uint8_t q = w[Q4_0::kQs + j];
      isum += ((q & 0xF) - 8) * act_q(a, Q8_0::kQs, j);
      isum += ((q >> 4) - 8) * act_q(a, Q8_0::kQs, j + 16);
    }
    sum += static_cast<double>(load_f16(w + Q4_0::kD)) * load_f16(a + Q8_0::kD) * isum;
  }
  return sum;
}

double dot_q4_1(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += Q4_1::kBytes, a += Q8_1::kBytes) {
    int isum = 0;
    for (int j = 0; j < 16; ++j) {
      const uint8_t q = w[Q4_1::kQs + j];
      isum += (q & 0xF) * act_q(a, Q8_1::kQs, j);
      isum += (q >> 4) * act_q(a, Q8_1::kQs, j + 16);
    }
    sum += static_cast<double>(load_f16(w + Q4_1::kD)) * load_f16(a + Q8_1::kD) * isum +
           static_cast<double>(load_f16(w + Q4_1::kM)) * load_f16(a + Q8_1::kS);
  }
  return sum;
}

double dot_q5_0(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += Q5_0::kBytes, a += Q8_0::kBytes) {
    int q[32];
    unpack_q5(w + Q5_0::kQh, w + Q5_0::kQs, q);
    int isum = 0;
    for (int j = 0; j < 32; ++j) isum += (q[j] - 16) * act_q(a, Q8_0::kQs, j);
    sum += static_cast<double>(load_f16(w + Q5_0::kD)) * load_f16(a + Q8_0::kD) * isum;
  }
  return sum;
}

double dot_q5_1(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += Q5_1::kBytes, a += Q8_1::kBytes) {
    int q[32];
    unpack_q5(w + Q5_1::kQh, w + Q5_1::kQs, q);
    int isum = 0;
    for (int j = 0; j < 32; ++j) isum += q[j] * act_q(a, Q8_1::kQs, j);
    sum += static_cast<double>(load_f16(w + Q5_1::kD)) * load_f16(a + Q8_1::kD) * isum +
           static_cast<double>(load_f16(w + Q5_1::kM)) * load_f16(a + Q8_1::kS);
  }
  return sum;
}

double dot_q8_0(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += Q8_0::kBytes, a += Q8_0::kBytes) {
    int isum = 0;
    for (int j = 0; j < 32; ++j) isum += act_q(w, Q8_0::kQs, j) * act_q(a, Q8_0::kQs, j);
    sum += static_cast<double>(load_f16(w + Q8_0::kD)) * load_f16(a + Q8_0::kD) * isum;
  }
  return sum;
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

double dot_q6_k(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += Q6_K::kBytes, a += Q8_K::kBytes) {
    int q[kQK_K];
    unpack_q6(w, q);
    int64_t isum = 0;
    for (int j = 0; j < 16; ++j) {
      int dot = 0;
      for (int l = 0; l < 16; ++l) dot += (q[16 * j + l] - 32) * act_q(a, Q8_K::kQs, 16 * j + l);
      isum += static_cast<int64_t>(static_cast<int8_t>(w[Q6_K::kScales + j])) * dot;
    }
    sum += static_cast<double>(load_f16(w + Q6_K::kD)) * load_f32(a + Q8_K::kD) *
           static_cast<double>(isum);
  }
  return sum;
}

int16_t bsum_k(const uint8_t* a, int g) {
  int16_t v;
  std::memcpy(&v, a + Q8_K::kBsums + 2 * g, 2);
  return v;
}

// Q2_K: d * sum_j sc_j * <q, a>_j - dmin * sum_j m_j * (sum of a over sub-block j of 16).
double dot_q2_k(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += Q2_K::kBytes, a += Q8_K::kBytes) {
    int64_t isum = 0, msum = 0;
    for (int j = 0; j < 16; ++j) {
      const int sc = w[Q2_K::kScales + j];
      int dot = 0;
      for (int l = 0; l < 16; ++l) {
        dot += low2_k(w + Q2_K::kQs, 16 * j + l) * act_q(a, Q8_K::kQs, 16 * j + l);
      }
      isum += static_cast<int64_t>(sc & 0xF) * dot;
      msum += static_cast<int64_t>(sc >> 4) * bsum_k(a, j);
    }
    const double da = load_f32(a + Q8_K::kD);
    sum += static_cast<double>(load_f16(w + Q2_K::kD)) * da * static_cast<double>(isum) -
           static_cast<double>(load_f16(w + Q2_K::kDmin)) * da * static_cast<double>(msum);
  }
  return sum;
}

double dot_q3_k(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += Q3_K::kBytes, a += Q8_K::kBytes) {
    int64_t isum = 0;
    for (int j = 0; j < 16; ++j) {
      int dot = 0;
      for (int l = 0; l < 16; ++l) dot += (q3_k(w, 16 * j + l) - 4) * act_q(a, Q8_K::kQs, 16 * j + l);
      isum += static_cast<int64_t>(scale_q3_k(j, w + Q3_K::kScales) - 32) * dot;
    }
    sum += static_cast<double>(load_f16(w + Q3_K::kD)) * load_f32(a + Q8_K::kD) *
           static_cast<double>(isum);
  }
  return sum;
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

double dot_iq4_nl(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += IQ4_NL::kBytes, a += Q8_0::kBytes) {
    const int isum = dot_table32(w + IQ4_NL::kQs, kIQ4NLValues, a + Q8_0::kQs);
    sum += static_cast<double>(load_f16(w + IQ4_NL::kD)) * load_f16(a + Q8_0::kD) * isum;
  }
  return sum;
}

double dot_iq4_xs(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += IQ4_XS::kBytes, a += Q8_K::kBytes) {
    int64_t isum = 0;
    for (int j = 0; j < 8; ++j) {
      const int dot =
          dot_table32(w + IQ4_XS::kQs + 16 * j, kIQ4NLValues, a + Q8_K::kQs + 32 * j);
      isum += static_cast<int64_t>(scale_iq4_xs(j, w) - 32) * dot;
    }
    sum += static_cast<double>(load_f16(w + IQ4_XS::kD)) * load_f32(a + Q8_K::kD) *
           static_cast<double>(isum);
  }
  return sum;
}

double dot_mxfp4(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += MXFP4::kBytes, a += Q8_0::kBytes) {
    const int isum = dot_table32(w + MXFP4::kQs, kMXFP4Values, a + Q8_0::kQs);
    sum += static_cast<double>(e8m0_half(w[MXFP4::kE])) * load_f16(a + Q8_0::kD) * isum;
  }
  return sum;
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
