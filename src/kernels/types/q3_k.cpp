// Q3_K: super-blocks of 256 weights, 16 six-bit scales, 2-bit quants plus a high-bit mask, f16
// d (detail::Q3_K); value d * (sc - 32) * (q - 4). Activations: Q8_K. Decode: GemvQ3_KAvx2 on
// AVX2, AVX3 and AVX3_DL; prefill: the int8 token-lane tiles (groups of 16).
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/q3_k.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

struct Q3_KType : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kQ3_K;
  static constexpr GgmlType kActType = GgmlType::kQ8_K;
  static constexpr detail::UnpackInfo kUnpack{16, 4, false, 3};
  static void Unpack(const uint8_t* row, int64_t n, uint8_t* u, float* mul, float* add) {
    UnpackQ23_K<true>(row, n / 256, u, mul, add);
  }
#if TOVA_AVX2_DECODE_TARGET
  static constexpr bool kDecodeAvx2 = true;
  static GemvDecodeFn PickDecodeAvx2(int r, int t) {
    static constexpr GemvDecodeFn kTable[2][4] = TOVA_DECODE_AVX2_TABLE(GemvQ3_KAvx2);
    return kTable[r - 1][t - 1];
  }
#endif
};
using UnitType = Q3_KType;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using namespace detail;  // NOLINT(google-build-using-namespace): block layouts
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

// Q3_K's three-bit value (0..7) of element e: the low two bits and bit 4h + j of hmask[l].
int q3_k(const uint8_t* b, int e) {
  const int h = e / 128, j = (e % 128) / 32, l = e % 32;
  return low2_k(b + Q3_K::kQs, e) | (((b[Q3_K::kHmask + l] >> (4 * h + j)) & 1) << 2);
}

void dequant_q3_k(const uint8_t* b, float* y) {
  const float d = load_f16(b + Q3_K::kD);
  for (int e = 0; e < kQK_K; ++e) {
    const float dl = d * static_cast<float>(scale_q3_k(e / 16, b + Q3_K::kScales) - 32);
    y[e] = dl * static_cast<float>(q3_k(b, e) - 4);
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

constexpr auto kDequantize = &dequantize_blocks<256, detail::Q3_K::kBytes, dequant_q3_k>;
constexpr auto kQuantize = &quantize_blocks<256, detail::Q3_K::kBytes, quant_q3_k>;
constexpr auto kDot = &dot_blocks<256, dot_q3_k>;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kQ3_KKernels
#include "kernels/types/unit-inl.h"
