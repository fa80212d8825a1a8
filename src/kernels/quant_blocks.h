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

inline UnpackInfo unpack_info(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0:
      return {32, 8, false, 4};
    case GgmlType::kQ4_1:
      return {32, 0, true, 4};
    case GgmlType::kQ5_0:
      return {32, 16, false, 5};
    case GgmlType::kQ5_1:
      return {32, 0, true, 5};
    case GgmlType::kQ8_0:
    case GgmlType::kQ8_1:
    case GgmlType::kQ8_K:
      return {32, 128, false, 8};
    case GgmlType::kQ4_K:
      return {32, 0, true, 4};
    case GgmlType::kQ5_K:
      return {32, 0, true, 5};
    case GgmlType::kQ6_K:
      return {16, 32, false, 6};
    default:
      return {};
  }
}

}  // namespace tova::kernels::detail
