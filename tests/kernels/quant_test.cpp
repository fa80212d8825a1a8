// Weight formats: hand-built blocks, quantize/dequantize round trips, SIMD vs scalar reference,
// and the integer dot products against the dequantized values they stand for.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/half.h"
#include "hwy/targets.h"
#include "kernels/quant.h"
#include "kernels/simd_target.h"

#include "kernel_test_util.h"
#include "test_data.h"

namespace tova::kernels {
namespace {

std::string name_of(GgmlType t) { return std::string(type_name(t)); }

int64_t block_of(GgmlType t) { return type_traits(t).block_size; }

size_t bytes_of(GgmlType t, int64_t n) {
  return static_cast<size_t>(n / block_of(t) * type_traits(t).type_size);
}

// Awkward sizes: block * {1, 3, 7, 33}, or {1, 7, 33, 4097} for the one-element "blocks".
std::vector<int64_t> sizes_for(GgmlType t) {
  const int64_t b = block_of(t);
  if (b == 1) return {1, 7, 33, 4097};
  return {b, 3 * b, 7 * b, 33 * b};
}

std::vector<float> random_floats(int64_t n, uint32_t seed, float scale = 1.0f,
                                 bool outliers = true) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  if (!outliers) return v;
  // Outliers and exact zeros, as real activations have.
  for (size_t i = 0; i < v.size(); i += 97) v[i] *= 8.0f;
  for (size_t i = 5; i < v.size(); i += 131) v[i] = 0.0f;
  return v;
}

std::vector<uint8_t> quantize(GgmlType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(bytes_of(t, static_cast<int64_t>(x.size())));
  quantize_row_ref(t, x.data(), q.data(), static_cast<int64_t>(x.size()));
  return q;
}

std::vector<float> dequantize_ref(GgmlType t, const std::vector<uint8_t>& q, int64_t n) {
  std::vector<float> y(static_cast<size_t>(n));
  dequantize_row_ref(t, q.data(), y.data(), n);
  return y;
}

uint16_t f16(float f) { return fp32_to_fp16(f); }

// ---- hand-built blocks ----

TEST(QuantHand, Q4_0BlockDequantizes) {
  for_each_target([&] {
    // d = 0.5; byte j holds element j (low nibble j) and element j + 16 (high nibble 15 - j).
    uint8_t block[18];
    const uint16_t d = f16(0.5f);
    std::memcpy(block, &d, 2);
    for (int j = 0; j < 16; ++j) block[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    float expect[32];
    for (int j = 0; j < 16; ++j) {
      expect[j] = (j - 8) * 0.5f;       // -4.0 .. 3.5
      expect[j + 16] = (7 - j) * 0.5f;  // 3.5 .. -4.0
    }
    float ref[32], simd[32];
    dequantize_row_ref(GgmlType::kQ4_0, block, ref, 32);
    dequantize_row(GgmlType::kQ4_0, block, simd, 32);
    for (int j = 0; j < 32; ++j) {
      EXPECT_EQ(ref[j], expect[j]) << j;
      EXPECT_EQ(simd[j], expect[j]) << j;
    }
    EXPECT_EQ(ref[0], -4.0f);
    EXPECT_EQ(ref[16], 3.5f);
  });
}

TEST(QuantHand, Q6_KBlockDequantizes) {
  for_each_target([&] {
    // Start from all-zero bits (q = 0 -> value -32 * d * scale) and set single fields.
    uint8_t block[210] = {};
    uint8_t* ql = block;
    uint8_t* qh = block + 128;
    auto* sc = reinterpret_cast<int8_t*>(block + 192);
    const uint16_t d = f16(1.0f);
    std::memcpy(block + 208, &d, 2);
    for (int j = 0; j < 16; ++j) sc[j] = 1;
    sc[8] = -2;         // elements 128..143
    sc[2] = 3;          // elements 32..47
    ql[0] = 0x35;       // element 0: low nibble 5; element 64: high nibble 3
    ql[32] = 0x7A;      // element 32: 10; element 96: 7
    qh[0] = 0x93;       // 0b10'01'00'11: +48 -> element 0, +0 -> 32, +16 -> 64, +32 -> 96
    ql[64 + 3] = 0x0F;  // second half, element 128 + 3: low nibble 15
    std::vector<float> expect(256, -32.0f);
    for (int e = 32; e < 48; ++e) expect[e] = -96.0f;
    for (int e = 128; e < 144; ++e) expect[e] = 64.0f;
    expect[0] = (5 + 48 - 32) * 1.0f;   // 21
    expect[64] = (3 + 16 - 32) * 1.0f;  // -13
    expect[32] = (10 + 0 - 32) * 3.0f;  // -66
    expect[96] = (7 + 32 - 32) * 1.0f;  // 7
    expect[131] = (15 - 32) * -2.0f;    // 34
    float ref[256], simd[256];
    dequantize_row_ref(GgmlType::kQ6_K, block, ref, 256);
    dequantize_row(GgmlType::kQ6_K, block, simd, 256);
    for (int e = 0; e < 256; ++e) {
      EXPECT_EQ(ref[e], expect[static_cast<size_t>(e)]) << e;
      EXPECT_EQ(simd[e], expect[static_cast<size_t>(e)]) << e;
    }
  });
}

// Dequantizes one hand-built block with the reference and on every target.
void expect_block(GgmlType t, const uint8_t* block, const std::vector<float>& expect) {
  const int64_t n = static_cast<int64_t>(expect.size());
  std::vector<float> ref(expect.size()), simd(expect.size());
  dequantize_row_ref(t, block, ref.data(), n);
  for_each_target([&] {
    dequantize_row(t, block, simd.data(), n);
    for (int64_t e = 0; e < n; ++e) {
      EXPECT_EQ(ref[e], expect[e]) << name_of(t) << " " << e;
      EXPECT_EQ(simd[e], expect[e]) << name_of(t) << " " << e;
    }
  });
}

TEST(QuantHand, Q2_KBlockDequantizes) {
  // d = 1, dmin = 0.5; sub-block 5 (elements 80..95) has scale 3 and min 2 (-1); element 80 is
  // bits 4-5 (j = 2) of qs[16] (l = 16).
  uint8_t block[84] = {};
  const uint16_t d = f16(1.0f), dmin = f16(0.5f);
  std::memcpy(block + 80, &d, 2);
  std::memcpy(block + 82, &dmin, 2);
  block[5] = 3 | (2 << 4);
  block[16 + 16] = 3 << 4;
  std::vector<float> expect(256, 0.0f);
  for (int e = 80; e < 96; ++e) expect[e] = -1.0f;
  expect[80] = 3.0f * 3.0f - 1.0f;
  expect_block(GgmlType::kQ2_K, block, expect);
}

TEST(QuantHand, Q3_KBlockDequantizes) {
  // All-zero bits: q = 0 - 4, scale 0 - 32, d = 1 -> 128. Scale 0 = 33 (low nibble 1 in byte 0,
  // top bits 2 in bits 0-1 of byte 8); scale 13 = 30 (low nibble 14 in the high nibble of byte
  // 5, top bits 1 in bits 6-7 of byte 9).
  uint8_t block[110] = {};
  uint8_t* hmask = block;
  uint8_t* qs = block + 32;
  uint8_t* sc = block + 96;
  const uint16_t d = f16(1.0f);
  std::memcpy(block + 108, &d, 2);
  sc[0] = 1;
  sc[8] = 2;
  sc[5] = 14 << 4;
  sc[9] = 1 << 6;
  qs[0] = 3;         // element 0: low bits 3
  hmask[0] = 1;      // element 0: third bit (h = 0, j = 0) -> q = 7
  qs[48] = 1 << 4;   // element 208 = 128 + 2 * 32 + 16: low bits 1 (bits 4-5 of qs[32 + 16])
  hmask[16] = 1 << 6;  // its third bit: bit 4 * 1 + 2 of hmask[16] -> q = 5
  std::vector<float> expect(256, 128.0f);
  for (int e = 0; e < 16; ++e) expect[e] = -4.0f;
  expect[0] = 3.0f;
  for (int e = 208; e < 224; ++e) expect[e] = 8.0f;
  expect[208] = -2.0f;
  expect_block(GgmlType::kQ3_K, block, expect);
}

const int kIQ4[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

TEST(QuantHand, IQ4_NLBlockDequantizes) {
  uint8_t block[18];
  const uint16_t d = f16(0.5f);
  std::memcpy(block, &d, 2);
  for (int j = 0; j < 16; ++j) block[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  std::vector<float> expect(32);
  for (int j = 0; j < 16; ++j) {
    expect[j] = 0.5f * static_cast<float>(kIQ4[j]);
    expect[j + 16] = 0.5f * static_cast<float>(kIQ4[15 - j]);
  }
  expect_block(GgmlType::kIQ4_NL, block, expect);
}

TEST(QuantHand, IQ4_XSBlockDequantizes) {
  // Zero scale bits: ls = 0 -> -32; code 0 -> -127. Sub-block 3 gets ls = 53 (low nibble 5 in
  // the high nibble of scales_l[1], top bits 3 in bits 6-7 of scales_h) -> 21.
  uint8_t block[136] = {};
  const uint16_t d = f16(1.0f), scales_h = 3 << 6;
  std::memcpy(block, &d, 2);
  std::memcpy(block + 2, &scales_h, 2);
  block[4 + 1] = 5 << 4;
  block[8 + 16 * 3] = 8 | (15 << 4);  // element 96: code 8 (1), element 112: code 15 (113)
  std::vector<float> expect(256, -32.0f * -127.0f);
  for (int e = 96; e < 128; ++e) expect[e] = 21.0f * -127.0f;
  expect[96] = 21.0f;
  expect[112] = 21.0f * 113.0f;
  expect_block(GgmlType::kIQ4_XS, block, expect);
}

TEST(QuantHand, MXFP4BlockDequantizes) {
  // FP4 E2M1 codes 0..7: 0, 0.5, 1, 1.5, 2, 3, 4, 6; 8..15 their negatives. Scale 2^(e - 127),
  // with e = 0 and 1 giving float denormals.
  const float fp4[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  for (int e : {0, 1, 2, 100, 127, 128, 254}) {
    uint8_t block[17];
    block[0] = static_cast<uint8_t>(e);
    for (int j = 0; j < 16; ++j) block[1 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    std::vector<float> expect(32);
    for (int j = 0; j < 16; ++j) {
      // Code 8 is -0 in E2M1; ggml's table (and so tova) reads it as +0.
      expect[j] = j == 8 ? 0.0f : std::ldexp(fp4[j], e - 127);
      expect[j + 16] = 15 - j == 8 ? 0.0f : std::ldexp(fp4[15 - j], e - 127);
    }
    SCOPED_TRACE(e);
    expect_block(GgmlType::kMXFP4, block, expect);
  }
}

TEST(QuantHand, Q8_0ActivationRoundsLikeLlamaCppOnX86) {
  for_each_target([&] {
    // llama.cpp's x86 quantize_row_q8_0 (which made the golden logits): scale d = amax / 127,
    // values x * (127 / amax) rounded half to even. amax = 127 makes that x itself.
    std::vector<float> x(32, 0.0f);
    x[0] = 127.0f;
    x[1] = 62.5f;
    x[2] = -62.5f;
    x[3] = 0.5f;
    x[4] = -1.5f;
    x[5] = 2.4999998f;
    x[6] = 3.5f;
    std::vector<uint8_t> ref(34), simd(34);
    quantize_row_ref(GgmlType::kQ8_0, x.data(), ref.data(), 32);
    quantize_activations(GgmlType::kQ8_0, x.data(), simd.data(), 32);
    uint16_t d;
    std::memcpy(&d, ref.data(), 2);
    EXPECT_EQ(fp16_to_fp32(d), 1.0f);
    const auto* q = reinterpret_cast<const int8_t*>(ref.data() + 2);
    EXPECT_EQ(q[0], 127);
    EXPECT_EQ(q[1], 62);
    EXPECT_EQ(q[2], -62);
    EXPECT_EQ(q[3], 0);
    EXPECT_EQ(q[4], -2);
    EXPECT_EQ(q[5], 2);
    EXPECT_EQ(q[6], 4);
    EXPECT_EQ(ref, simd);
  });
}

TEST(QuantHand, Q8_KActivationRoundsHalfToEvenFromSignedMax) {
  for_each_target([&] {
    // The first largest-magnitude element is -127, so iscale = -127 / -127 = 1: ties go to even.
    std::vector<float> x(256, 0.0f);
    x[0] = -127.0f;
    x[1] = 127.0f;  // same magnitude later in the scan: not the scale's reference
    x[2] = 62.5f;
    x[3] = -3.5f;
    x[20] = 1.0f;
    std::vector<uint8_t> ref(292), simd(292);
    quantize_row_ref(GgmlType::kQ8_K, x.data(), ref.data(), 256);
    quantize_activations(GgmlType::kQ8_K, x.data(), simd.data(), 256);
    float d;
    std::memcpy(&d, ref.data(), 4);
    EXPECT_EQ(d, 1.0f);
    const auto* q = reinterpret_cast<const int8_t*>(ref.data() + 4);
    EXPECT_EQ(q[0], -127);
    EXPECT_EQ(q[1], 127);
    EXPECT_EQ(q[2], 62);
    EXPECT_EQ(q[3], -4);
    int16_t bsums[16];
    std::memcpy(bsums, ref.data() + 260, sizeof(bsums));
    EXPECT_EQ(bsums[0], -127 + 127 + 62 - 4);
    EXPECT_EQ(bsums[1], 1);
    EXPECT_EQ(ref, simd);
  });
}

// ---- round trips ----

// RMS error of dequantize(quantize(x)) relative to RMS(x), for Gaussian x: ~15% above what
// these quantizers measure (f16 2e-4, bf16 1.7e-3, q8_0 5.4e-3, q6_k 0.019, 5-bit 0.038-0.043,
// 4-bit 0.079-0.088 (iq4_nl, iq4_xs 0.081), mxfp4 0.115, q3_k 0.151, q2_k 0.274).
double round_trip_bound(GgmlType t) {
  switch (t) {
    case GgmlType::kF32:
      return 0.0;
    case GgmlType::kF16:
      return 3e-4;
    case GgmlType::kBF16:
      return 2e-3;
    case GgmlType::kQ8_0:
      return 6.5e-3;
    case GgmlType::kQ6_K:
      return 0.022;
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1:
    case GgmlType::kQ5_K:
      return 0.05;
    case GgmlType::kQ3_K:
      return 0.175;
    case GgmlType::kQ2_K:
      return 0.31;
    case GgmlType::kMXFP4:  // power-of-two scales
      return 0.135;
    default:
      return 0.1;  // 4-bit types
  }
}

TEST(QuantRoundTrip, ErrorFitsTheType) {
  for (GgmlType t : kWeightTypes) {
    const int64_t n = 4096;
    const std::vector<float> x = random_floats(n, 1234, 1.0f, /*outliers=*/false);
    const std::vector<float> y = dequantize_ref(t, quantize(t, x), n);
    double err2 = 0.0, sig2 = 0.0, max_rel = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double e = static_cast<double>(y[i]) - x[i];
      err2 += e * e;
      sig2 += static_cast<double>(x[i]) * x[i];
    }
    // The largest error, relative to the absmax of its block (a bug shows up as ~1).
    const int64_t blk = std::max<int64_t>(32, block_of(t));
    for (int64_t b = 0; b < n; b += blk) {
      double amax = 0.0;
      for (int64_t i = b; i < b + blk; ++i) amax = std::max(amax, std::fabs(double{x[i]}));
      for (int64_t i = b; i < b + blk; ++i) {
        max_rel = std::max(max_rel, std::fabs(static_cast<double>(y[i]) - x[i]) / amax);
      }
    }
    const double rel = std::sqrt(err2 / sig2);
    EXPECT_LE(rel, round_trip_bound(t)) << name_of(t);
    EXPECT_LE(max_rel, 4 * round_trip_bound(t) + 1e-7) << name_of(t);
  }
}

// ---- SIMD vs scalar reference ----

TEST(QuantSimd, DequantizeMatchesReferenceExactly) {
  for_each_target([&] {
    std::vector<GgmlType> types(kWeightTypes.begin(), kWeightTypes.end());
    types.push_back(GgmlType::kQ8_1);
    types.push_back(GgmlType::kQ8_K);
    for (GgmlType t : types) {
      for (int64_t n : sizes_for(t)) {
        const std::vector<float> x = random_floats(n, static_cast<uint32_t>(n) + 7);
        const std::vector<uint8_t> q = quantize(t, x);
        const std::vector<float> ref = dequantize_ref(t, q, n);
        std::vector<float> simd(static_cast<size_t>(n));
        dequantize_row(t, q.data(), simd.data(), n);
        EXPECT_EQ(0, std::memcmp(ref.data(), simd.data(), simd.size() * sizeof(float)))
            << name_of(t) << " n=" << n;
      }
    }
  });
}

TEST(QuantSimd, ActivationQuantizationIsBitIdentical) {
  for_each_target([&] {
    const GgmlType types[] = {GgmlType::kQ8_0, GgmlType::kQ8_1, GgmlType::kQ8_K,
                              GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16};
    for (GgmlType t : types) {
      for (int64_t n : sizes_for(t == GgmlType::kF32 || t == GgmlType::kF16 || t == GgmlType::kBF16
                                     ? GgmlType::kF32
                                     : t)) {
        for (float scale : {1.0f, 1e-3f, 300.0f}) {
          std::vector<float> x = random_floats(n, static_cast<uint32_t>(n * 3 + 1), scale);
          if (n >= 64) std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // an all-zero block
          std::vector<uint8_t> ref(bytes_of(t, n)), simd(bytes_of(t, n), 0xCD);
          quantize_row_ref(t, x.data(), ref.data(), n);
          quantize_activations(t, x.data(), simd.data(), n);
          EXPECT_EQ(ref, simd) << name_of(t) << " n=" << n << " scale=" << scale;
        }
      }
    }
  });
}

// Sum over elements of |w_i * a_i| using the dequantized values: the scale that float
// rounding errors of a dot product are relative to.
double abs_dot(GgmlType wt, const std::vector<uint8_t>& w, const std::vector<uint8_t>& act,
               int64_t n) {
  const std::vector<float> wf = dequantize_ref(wt, w, n);
  const GgmlType at = vec_dot_type(wt);
  std::vector<float> af(static_cast<size_t>(n));
  if (at == GgmlType::kF32) {
    std::memcpy(af.data(), act.data(), af.size() * sizeof(float));
  } else {
    dequantize_row_ref(at, act.data(), af.data(), n);
  }
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += std::fabs(static_cast<double>(wf[i]) * af[i]);
  return s;
}

// The exact dot of the dequantized weight and activation values, in double.
double dequantized_dot(GgmlType wt, const std::vector<uint8_t>& w, const std::vector<uint8_t>& act,
                       int64_t n) {
  const std::vector<float> wf = dequantize_ref(wt, w, n);
  const GgmlType at = vec_dot_type(wt);
  std::vector<float> af(static_cast<size_t>(n));
  if (at == GgmlType::kF32) {
    std::memcpy(af.data(), act.data(), af.size() * sizeof(float));
  } else {
    dequantize_row_ref(at, act.data(), af.data(), n);
  }
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(wf[i]) * af[i];
  return s;
}

TEST(QuantSimd, VecDotMatchesReference) {
  for_each_target([&] {
    for (GgmlType t : kWeightTypes) {
      for (int64_t n : sizes_for(t)) {
        const std::vector<float> wf = random_floats(n, static_cast<uint32_t>(n) + 11);
        const std::vector<float> xf = random_floats(n, static_cast<uint32_t>(n) + 13, 2.0f);
        const std::vector<uint8_t> w = quantize(t, wf);
        const GgmlType at = vec_dot_type(t);
        std::vector<uint8_t> act(bytes_of(at, n));
        quantize_row_ref(at, xf.data(), act.data(), n);
        const double ref = vec_dot_ref(t, n, w.data(), act.data());
        const double simd = vec_dot(t, n, w.data(), act.data());
        const double scale = abs_dot(t, w, act, n);
        EXPECT_LE(std::fabs(simd - ref), 2e-6 * scale + 1e-30) << name_of(t) << " n=" << n;
      }
    }
  });
}

TEST(QuantRef, VecDotMeansTheDequantizedDot) {
  // The integer formulas (offsets, mins, bsums) against plain dequantized values. Q4_1/Q5_1
  // use the activation block's f16 sum s, so they agree only to f16 precision on that term.
  for (GgmlType t : kWeightTypes) {
    const int64_t n = 33 * std::max<int64_t>(32, block_of(t));
    const std::vector<float> wf = random_floats(n, 99);
    const std::vector<float> xf = random_floats(n, 98);
    const std::vector<uint8_t> w = quantize(t, wf);
    const GgmlType at = vec_dot_type(t);
    std::vector<uint8_t> act(bytes_of(at, n));
    quantize_row_ref(at, xf.data(), act.data(), n);
    const double ref = vec_dot_ref(t, n, w.data(), act.data());
    const double exact = dequantized_dot(t, w, act, n);
    const bool f16_sum = t == GgmlType::kQ4_1 || t == GgmlType::kQ5_1;
    const double tol = (f16_sum ? 2e-3 : 1e-6) * abs_dot(t, w, act, n);
    EXPECT_LE(std::fabs(ref - exact), tol) << name_of(t);
  }
}

// ---- ggml's own blocks (scripts/make_quant_blocks.sh: ggml's quantizers and dequantization) ----

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(QuantGgml, DequantizesGgmlBlocksBitExactlyOnEveryTarget) {
  // Blocks written by ggml (commit 34af94cd) from the same floats as its dequantization beside
  // them: every bit of the layout (scale packing, level tables, E8M0) has to agree.
  struct Case {
    const char* file;  // ggml's type name
    GgmlType type;
  };
  for (const Case& c : {Case{"q2_K", GgmlType::kQ2_K}, Case{"q3_K", GgmlType::kQ3_K},
                        Case{"iq4_nl", GgmlType::kIQ4_NL}, Case{"iq4_xs", GgmlType::kIQ4_XS},
                        Case{"mxfp4", GgmlType::kMXFP4}}) {
    SCOPED_TRACE(c.file);
    const std::string base = std::string(TOVA_TEST_DATA_DIR) + "/quant/ggml-" + c.file;
    const std::vector<uint8_t> blocks = read_bytes(base + ".blocks");
    const std::vector<uint8_t> want_bytes = read_bytes(base + ".f32");
    const int64_t n = static_cast<int64_t>(want_bytes.size() / 4);
    ASSERT_GT(n, 0);
    ASSERT_EQ(blocks.size(), bytes_of(c.type, n));
    std::vector<float> want(static_cast<size_t>(n));
    std::memcpy(want.data(), want_bytes.data(), want_bytes.size());
    const std::vector<float> ref = dequantize_ref(c.type, blocks, n);
    EXPECT_EQ(0, std::memcmp(ref.data(), want.data(), want_bytes.size()));
    for (int64_t i = 0, bad = 0; i < n && bad < 5; ++i) {
      if (ref[i] != want[i]) {
        ADD_FAILURE() << "element " << i << ": tova " << ref[i] << ", ggml " << want[i];
        ++bad;
      }
    }
    // The int8 dot products on those blocks mean ggml's values, on every target.
    const std::vector<float> xf = random_floats(n, 77);
    const GgmlType at = vec_dot_type(c.type);
    std::vector<uint8_t> act(bytes_of(at, n));
    quantize_row_ref(at, xf.data(), act.data(), n);
    std::vector<float> af(static_cast<size_t>(n));
    dequantize_row_ref(at, act.data(), af.data(), n);
    double exact = 0.0, scale = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      exact += static_cast<double>(want[i]) * af[i];
      scale += std::fabs(static_cast<double>(want[i]) * af[i]);
    }
    const double ref_dot = vec_dot_ref(c.type, n, blocks.data(), act.data());
    EXPECT_LE(std::fabs(ref_dot - exact), 1e-6 * scale);
    for_each_target([&] {
      std::vector<float> simd(static_cast<size_t>(n));
      dequantize_row(c.type, blocks.data(), simd.data(), n);
      EXPECT_EQ(0, std::memcmp(simd.data(), want.data(), want_bytes.size()));
      const double d = vec_dot(c.type, n, blocks.data(), act.data());
      EXPECT_LE(std::fabs(d - ref_dot), 2e-6 * scale);
    });
  }
}

TEST(QuantGgml, DotProductsMatchGgmlsCpuBackend) {
  // ggml's CPU backend (its own Q8 activations and SIMD vec_dot) on its blocks, against tova's
  // activation conversion and int8 dot products on every target: only float summation order
  // may differ.
  for (const char* type : {"q2_K", "q3_K", "iq4_nl", "iq4_xs", "mxfp4"}) {
    SCOPED_TRACE(type);
    const std::string base = std::string(TOVA_TEST_DATA_DIR) + "/quant/ggml-" + type;
    const GgmlType t = *parse_type_name(type);
    const std::vector<uint8_t> blocks = read_bytes(base + ".blocks");
    const std::vector<uint8_t> w_bytes = read_bytes(base + ".f32");
    const std::vector<uint8_t> a_bytes = read_bytes(base + ".act.f32");
    const std::vector<uint8_t> dot_bytes = read_bytes(base + ".dot.f32");
    const int64_t n = static_cast<int64_t>(a_bytes.size() / 4);
    const int64_t rows = static_cast<int64_t>(dot_bytes.size() / 4);
    ASSERT_GT(n, 0);
    ASSERT_EQ(w_bytes.size(), static_cast<size_t>(4 * n * rows));
    ASSERT_EQ(blocks.size(), bytes_of(t, n * rows));
    std::vector<float> w(static_cast<size_t>(n * rows)), a(static_cast<size_t>(n)),
        want(static_cast<size_t>(rows));
    std::memcpy(w.data(), w_bytes.data(), w_bytes.size());
    std::memcpy(a.data(), a_bytes.data(), a_bytes.size());
    std::memcpy(want.data(), dot_bytes.data(), dot_bytes.size());
    const GgmlType at = vec_dot_type(t);
    std::vector<uint8_t> act(bytes_of(at, n));
    quantize_row_ref(at, a.data(), act.data(), n);
    const size_t row_bytes = bytes_of(t, n);
    for (int64_t r = 0; r < rows; ++r) {
      double scale = 0.0;
      for (int64_t i = 0; i < n; ++i) scale += std::fabs(static_cast<double>(w[r * n + i]) * a[i]);
      const uint8_t* row = blocks.data() + r * row_bytes;
      EXPECT_LE(std::fabs(vec_dot_ref(t, n, row, act.data()) - want[r]), 1e-5 * scale) << r;
      for_each_target([&] {
        EXPECT_LE(std::fabs(vec_dot(t, n, row, act.data()) - want[r]), 1e-5 * scale) << r;
      });
    }
  }
}

TEST(QuantApi, VecDotTypes) {
  EXPECT_EQ(vec_dot_type(GgmlType::kF32), GgmlType::kF32);
  EXPECT_EQ(vec_dot_type(GgmlType::kF16), GgmlType::kF32);
  EXPECT_EQ(vec_dot_type(GgmlType::kBF16), GgmlType::kF32);
  EXPECT_EQ(vec_dot_type(GgmlType::kQ4_0), GgmlType::kQ8_0);
  EXPECT_EQ(vec_dot_type(GgmlType::kQ5_0), GgmlType::kQ8_0);
  EXPECT_EQ(vec_dot_type(GgmlType::kQ8_0), GgmlType::kQ8_0);
  EXPECT_EQ(vec_dot_type(GgmlType::kQ4_1), GgmlType::kQ8_1);
  EXPECT_EQ(vec_dot_type(GgmlType::kQ5_1), GgmlType::kQ8_1);
  EXPECT_EQ(vec_dot_type(GgmlType::kQ4_K), GgmlType::kQ8_K);
  EXPECT_EQ(vec_dot_type(GgmlType::kQ5_K), GgmlType::kQ8_K);
  EXPECT_EQ(vec_dot_type(GgmlType::kQ6_K), GgmlType::kQ8_K);
  // As llama.cpp's CPU backend: the k/IQ4_XS types take Q8_K, the 32-blocks Q8_0.
  EXPECT_EQ(vec_dot_type(GgmlType::kQ2_K), GgmlType::kQ8_K);
  EXPECT_EQ(vec_dot_type(GgmlType::kQ3_K), GgmlType::kQ8_K);
  EXPECT_EQ(vec_dot_type(GgmlType::kIQ4_XS), GgmlType::kQ8_K);
  EXPECT_EQ(vec_dot_type(GgmlType::kIQ4_NL), GgmlType::kQ8_0);
  EXPECT_EQ(vec_dot_type(GgmlType::kMXFP4), GgmlType::kQ8_0);
  EXPECT_NE(std::string(simd_target_name()), "");
}

}  // namespace
}  // namespace tova::kernels
