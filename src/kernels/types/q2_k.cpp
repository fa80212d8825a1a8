// Q2_K: super-blocks of 256 weights, 16 sub-blocks of 16 with 4-bit scales and mins, 2-bit
// quants, f16 d and dmin (detail::Q2_K). Activations: Q8_K. Decode: GemvQ2_KAvx2 on AVX2, AVX3
// and AVX3_DL; prefill: the int8 token-lane tiles (groups of 16).
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/q2_k.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

struct Q2_KType : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kQ2_K;
  static constexpr GgmlType kActType = GgmlType::kQ8_K;
  static constexpr detail::UnpackInfo kUnpack{16, 0, true, 2};
  static void Unpack(const uint8_t* row, int64_t n, uint8_t* u, float* mul, float* add) {
    UnpackQ23_K<false>(row, n / 256, u, mul, add);
  }
#if TOVA_AVX2_DECODE_TARGET
  static constexpr bool kDecodeAvx2 = true;
  static GemvDecodeFn PickDecodeAvx2(int r, int t) {
    static constexpr GemvDecodeFn kTable[2][4] = TOVA_DECODE_AVX2_TABLE(GemvQ2_KAvx2);
    return kTable[r - 1][t - 1];
  }
#endif
};
using UnitType = Q2_KType;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using namespace detail;  // NOLINT(google-build-using-namespace): block layouts
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

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

constexpr auto kDequantize = &dequantize_blocks<256, detail::Q2_K::kBytes, dequant_q2_k>;
constexpr auto kQuantize = &quantize_blocks<256, detail::Q2_K::kBytes, quant_q2_k>;
constexpr auto kDot = &dot_blocks<256, dot_q2_k>;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kQ2_KKernels
#include "kernels/types/unit-inl.h"
