// ggml's block layouts (the bytes of real GGUF files), shared by the scalar references and the
// SIMD kernels. Fields are read through byte offsets and memcpy rather than struct pointers:
// rows of 18- or 210-byte blocks are not aligned to their fields' natural alignment.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "core/half.h"

namespace tova::kernels::detail {

constexpr int kQK = 32;     // elements per block of the legacy types (Q4_0 ... Q8_1)
constexpr int kQK_K = 256;  // elements per super-block of the k-quants

// Byte layout of each block, in file order.
// Q4_0: f16 d; u8 qs[16]. Element j < 16 is the low nibble of qs[j], element j + 16 the high
// nibble; value (q - 8) * d.
struct Q4_0 {
  static constexpr int kBytes = 18, kD = 0, kQs = 2;
};
// Q4_1: f16 d, m; u8 qs[16]; value q * d + m.
struct Q4_1 {
  static constexpr int kBytes = 20, kD = 0, kM = 2, kQs = 4;
};
// Q5_0: f16 d; u8 qh[4] (bit j = fifth bit of element j); u8 qs[16]; value (q - 16) * d.
struct Q5_0 {
  static constexpr int kBytes = 22, kD = 0, kQh = 2, kQs = 6;
};
// Q5_1: f16 d, m; u8 qh[4]; u8 qs[16]; value q * d + m.
struct Q5_1 {
  static constexpr int kBytes = 24, kD = 0, kM = 2, kQh = 4, kQs = 8;
};
// Q8_0: f16 d; i8 qs[32].
struct Q8_0 {
  static constexpr int kBytes = 34, kD = 0, kQs = 2;
};
// Q8_1: f16 d; f16 s (= d * sum of qs); i8 qs[32].
struct Q8_1 {
  static constexpr int kBytes = 36, kD = 0, kS = 2, kQs = 4;
};
// Q4_K: f16 d, dmin; u8 scales[12] (8 six-bit scales and 8 six-bit mins); u8 qs[128].
// Sub-block j (32 elements) has value d * sc_j * q - dmin * m_j. Elements 64i .. 64i+31 are the
// low nibbles of qs[32i .. 32i+31], elements 64i+32 .. 64i+63 the high nibbles.
struct Q4_K {
  static constexpr int kBytes = 144, kD = 0, kDmin = 2, kScales = 4, kQs = 16;
};
// Q5_K: as Q4_K plus u8 qh[32]: bit 2i of qh[l] is the fifth bit of element 64i + l, bit 2i+1
// that of element 64i + 32 + l.
struct Q5_K {
  static constexpr int kBytes = 176, kD = 0, kDmin = 2, kScales = 4, kQh = 16, kQs = 48;
};
// Q6_K: u8 ql[128]; u8 qh[64]; i8 scales[16] (one per 16 elements); f16 d.
// Value d * sc * (q - 32) with q six bits; see quant_ref.cpp for the bit placement.
struct Q6_K {
  static constexpr int kBytes = 210, kQl = 0, kQh = 128, kScales = 192, kD = 208;
};
// Q2_K: u8 scales[16] (low nibble: scale, high nibble: min of 16 elements); u8 qs[64]; f16 d,
// dmin. Value d * sc * q - dmin * m with q two bits: element 128h + 32j + l (l < 32) is bits
// 2j..2j+1 of qs[32h + l]; sub-block e / 16 holds element e.
struct Q2_K {
  static constexpr int kBytes = 84, kScales = 0, kQs = 16, kD = 80, kDmin = 82;
};
// Q3_K: u8 hmask[32]; u8 qs[64]; u8 scales[12] (16 six-bit scales, see scale_q3_k); f16 d.
// Value d * (sc - 32) * (q - 4) with q three bits: the two low bits as Q2_K's, the third bit
// 4h + j of hmask[l] for element 128h + 32j + l.
struct Q3_K {
  static constexpr int kBytes = 110, kHmask = 0, kQs = 32, kScales = 96, kD = 108;
};
// IQ4_NL: f16 d; u8 qs[16]; Q4_0's nibble order, value d * kIQ4NLValues[q].
struct IQ4_NL {
  static constexpr int kBytes = 18, kD = 0, kQs = 2;
};
// IQ4_XS: f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]. Sub-block j (32 elements) has the
// six-bit scale ls_j = nibble j of scales_l | bits 2j..2j+1 of scales_h << 4, value
// d * (ls_j - 32) * kIQ4NLValues[q]; its 16 bytes qs[16j ..] in Q4_0's nibble order.
struct IQ4_XS {
  static constexpr int kBytes = 136, kD = 0, kScalesH = 2, kScalesL = 4, kQs = 8;
};
// MXFP4: u8 e (E8M0 shared exponent); u8 qs[16] (FP4 E2M1 codes, Q4_0's nibble order).
// Value kMXFP4Values[q] * e8m0_half(e): the table holds the E2M1 values doubled (integers), the
// scale is halved to match.
struct MXFP4 {
  static constexpr int kBytes = 17, kE = 0, kQs = 1;
};
// Q8_K: f32 d; i8 qs[256]; i16 bsums[16] (sums of qs in groups of 16).
struct Q8_K {
  static constexpr int kBytes = 292, kD = 0, kQs = 4, kBsums = 260;
};

inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}
inline float load_f16(const uint8_t* p) { return fp16_to_fp32(load_u16(p)); }
inline void store_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
inline void store_f32(uint8_t* p, float v) { std::memcpy(p, &v, 4); }
inline void store_i16(uint8_t* p, int16_t v) { std::memcpy(p, &v, 2); }

// Scale and min of sub-block j (0..7) from the 12 packed bytes of Q4_K / Q5_K: sub-blocks 0..3
// keep their six bits in the low bits of bytes j and j+4; 4..7 split theirs into a nibble of
// byte j+4 and the two top bits of bytes j-4 (scale) and j (min).
inline void scale_min_k4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// IQ4_NL / IQ4_XS's non-linear 4-bit levels.
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};
// FP4 E2M1 values times 2: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives.
inline constexpr int8_t kMXFP4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e - 128): half the E8M0 value 2^(e - 127), since kMXFP4Values are doubled. e = 0 and 1
// are float denormals (2^-128, 2^-127); e = 255 (NaN in the spec) is read as 2^127, as ggml does.
inline float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

// Six-bit scale i (0..15) of a Q3_K block, 0..63 (the value multiplies sc - 32): its low nibble
// is in byte i (i < 8, low nibble) or i - 8 (high nibble), its top two bits are bits
// 2 * (i / 4) of byte 8 + i % 4.
inline int scale_q3_k(int i, const uint8_t* q) {
  const int lo = i < 8 ? (q[i] & 0xF) : (q[i - 8] >> 4);
  const int hi = (q[8 + i % 4] >> (2 * (i / 4))) & 3;
  return lo | (hi << 4);
}

// Six-bit scale j (0..7) of an IQ4_XS block, 0..63 (the value multiplies ls - 32).
inline int scale_iq4_xs(int j, const uint8_t* blk) {
  const int lo = (blk[IQ4_XS::kScalesL + j / 2] >> (4 * (j % 2))) & 0xF;
  const int hi = (load_u16(blk + IQ4_XS::kScalesH) >> (2 * j)) & 3;
  return lo | (hi << 4);
}

// How the SIMD kernels see a quantized type: each row is unpacked into one unsigned byte per
// element (u) plus, per group of `group` elements, a float `mul` and `add`, so that element k of
// group g is (u[k] - offset) * mul[g] + add[g] -- evaluated in exactly that order, which is also
// the order of the scalar reference, so dequantization is bit-exact. Unsigned bytes (rather than
// signed) are what the int8 dot instructions (vpdpbusd, vpmaddubsw) take as their first operand.
struct UnpackInfo {
  int group = 32;
  int offset = 0;
  bool has_add = false;  // false: add is 0 and is not applied (keeps -0.0 results bit-exact)
  int bits = 8;          // u < 2^bits
};
// Each quantized type's unit (src/kernels/types/<type>.cpp) states its own as kUnpack.

}  // namespace tova::kernels::detail
