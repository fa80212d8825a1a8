// fp16 / bf16 scalar conversions: exhaustive over every 16-bit pattern, and against the
// compiler's _Float16 (correctly rounded) and an independent nearest-value reference for bf16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"

namespace tova {
namespace {

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

bool is_half_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool is_bf16_nan(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }

// The compiler's _Float16 is the reference where it exists: GCC 12 has it on x86, clang only
// from version 15 (clang 14, the sanitizer build, does not define __FLT16_MANT_DIG__ there).
// Without it the two comparisons below are skipped; the Release (g++) pass runs them.
#ifdef __FLT16_MANT_DIG__
#define TOVA_HAVE_FLOAT16 1
uint16_t float16_bits(_Float16 h) {
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}

_Float16 bits_float16(uint16_t u) {
  _Float16 h;
  std::memcpy(&h, &u, 2);
  return h;
}
#endif

// Floats that stress rounding: random bit patterns over all exponents, every midpoint between
// adjacent halves (and its neighbours one float ulp away), and the overflow/underflow edges.
[[maybe_unused]] std::vector<float> tricky_floats_for_fp16() {
  std::vector<float> out;
  std::mt19937 rng(42);
  for (int k = 0; k < 200000; ++k) out.push_back(bits_float(static_cast<uint32_t>(rng())));
  for (uint32_t h = 0; h < 0x7c00u; ++h) {
    const float lo = fp16_to_fp32(static_cast<uint16_t>(h));
    const float hi = fp16_to_fp32(static_cast<uint16_t>(h + 1));
    const float mid = lo + (hi - lo) / 2;  // exact: 12 significant bits
    for (float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) {
      out.push_back(f);
      out.push_back(-f);
    }
  }
  for (float f : {65504.0f, 65519.99f, 65520.0f, 65536.0f, 1e10f, 5.9604645e-8f, 2.9802322e-8f,
                  2.9802326e-8f, 1e-10f, 0.0f, -0.0f, 6.1035156e-5f, 6.1035152e-5f}) {
    out.push_back(f);
    out.push_back(-f);
  }
  out.push_back(INFINITY);
  out.push_back(-INFINITY);
  return out;
}

TEST(Half, HandValues) {
  EXPECT_EQ(fp16_to_fp32(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0xc000), -2.0f);
  EXPECT_EQ(fp16_to_fp32(0x7bff), 65504.0f);
  EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_fp32(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(fp16_to_fp32(0x7c00), INFINITY);
  EXPECT_TRUE(std::signbit(fp16_to_fp32(0x8000)));
  EXPECT_EQ(fp32_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);  // halfway to 2^16 rounds up to inf
  EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7bff);
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie -> even
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even (up)
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);             // tie with 0 -> even
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(bf16_to_fp32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_fp32(0xc140), -12.0f);
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(fp32_to_bf16(bits_float(0x3f808000u)), 0x3f80);  // tie -> even
  EXPECT_EQ(fp32_to_bf16(bits_float(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(fp32_to_bf16(bits_float(0x3f808001u)), 0x3f81);
}

TEST(Half, Fp16ExhaustiveRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto h16 = static_cast<uint16_t>(h);
    const float f = fp16_to_fp32(h16);
    const uint16_t back = fp32_to_fp16(f);
    if (is_half_nan(h16)) {
      ASSERT_TRUE(std::isnan(f)) << h;
      ASSERT_TRUE(is_half_nan(back)) << h;
      ASSERT_EQ(back & 0x8000u, h16 & 0x8000u) << h;
    } else {
      ASSERT_EQ(back, h16) << h;
    }
  }
}

TEST(Half, Fp16ToFp32MatchesFloat16) {
#ifndef TOVA_HAVE_FLOAT16
  GTEST_SKIP() << "no _Float16 in this compiler";
#else
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto h16 = static_cast<uint16_t>(h);
    const float ref = static_cast<float>(bits_float16(h16));
    const float got = fp16_to_fp32(h16);
    if (std::isnan(ref)) {
      ASSERT_TRUE(std::isnan(got)) << h;
    } else {
      ASSERT_EQ(float_bits(got), float_bits(ref)) << h;
    }
  }
#endif
}

TEST(Half, Fp32ToFp16MatchesFloat16) {
#ifndef TOVA_HAVE_FLOAT16
  GTEST_SKIP() << "no _Float16 in this compiler";
#else
  for (float f : tricky_floats_for_fp16()) {
    const uint16_t ref = float16_bits(static_cast<_Float16>(f));
    const uint16_t got = fp32_to_fp16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(is_half_nan(got)) << std::hex << float_bits(f);
      ASSERT_EQ(got & 0x8000u, ref & 0x8000u) << std::hex << float_bits(f);
    } else {
      ASSERT_EQ(got, ref) << std::hex << float_bits(f) << " " << f;
    }
  }
#endif
}

TEST(Half, Bf16ExhaustiveRoundTrip) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const auto b16 = static_cast<uint16_t>(b);
    const float f = bf16_to_fp32(b16);
    ASSERT_EQ(float_bits(f), b << 16) << b;
    const uint16_t back = fp32_to_bf16(f);
    if (is_bf16_nan(b16)) {
      ASSERT_TRUE(is_bf16_nan(back)) << b;
      ASSERT_EQ(back & 0x8000u, b16 & 0x8000u) << b;
    } else {
      ASSERT_EQ(back, b16) << b;
    }
  }
}

// Nearest bf16 by comparing exact distances in double (a different method than the bit trick
// under test): the two candidates are truncation and truncation + 1 ulp; ties go to even.
uint16_t reference_bf16(float f) {
  const uint32_t x = float_bits(f);
  const auto lo = static_cast<uint16_t>(x >> 16);
  if ((x & 0xffffu) == 0) return lo;
  const auto hi = static_cast<uint16_t>(lo + 1);  // next magnitude up (may become inf)
  const double a = std::fabs(static_cast<double>(f));
  const double lo_mag = std::fabs(static_cast<double>(bf16_to_fp32(lo)));
  // For the largest finite bf16, "one ulp up" is 2^128, which a float cannot hold.
  const double hi_mag = (hi & 0x7fffu) == 0x7f80u
                            ? std::ldexp(1.0, 128)
                            : std::fabs(static_cast<double>(bf16_to_fp32(hi)));
  const double d_lo = a - lo_mag;
  const double d_hi = hi_mag - a;
  if (d_lo < d_hi) return lo;
  if (d_hi < d_lo) return hi;
  return (lo & 1u) == 0 ? lo : hi;
}

TEST(Half, Fp32ToBf16MatchesReference) {
  std::mt19937 rng(7);
  std::vector<float> floats;
  for (int k = 0; k < 300000; ++k) floats.push_back(bits_float(static_cast<uint32_t>(rng())));
  for (uint32_t b = 0; b < 0x7f80u; b += 3) {
    const uint32_t mid = (b << 16) | 0x8000u;  // exactly halfway to the next bf16
    for (uint32_t u : {mid, mid - 1, mid + 1}) {
      floats.push_back(bits_float(u));
      floats.push_back(bits_float(u | 0x80000000u));
    }
  }
  floats.push_back(bits_float(0x7f7fffffu));  // FLT_MAX rounds up to inf
  for (float f : floats) {
    if (std::isnan(f)) {
      const uint16_t got = fp32_to_bf16(f);
      ASSERT_TRUE(is_bf16_nan(got)) << std::hex << float_bits(f);
      ASSERT_EQ(got & 0x8000u, (float_bits(f) >> 16) & 0x8000u);
      continue;
    }
    ASSERT_EQ(fp32_to_bf16(f), reference_bf16(f)) << std::hex << float_bits(f);
  }
  EXPECT_EQ(fp32_to_bf16(bits_float(0x7f7fffffu)), 0x7f80);
}

}  // namespace
}  // namespace tova
