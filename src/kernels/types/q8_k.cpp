// Q8_K: the activation format of the k-quants and IQ4_XS: super-blocks of 256 int8 values, an
// f32 scale d and the sums of each 16 (detail::Q8_K). Not a weight type (no matmul): its unit
// gives the rounding reference (llama.cpp's) and the dequantize the tests check.
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/q8_k.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

inline void UnpackQ8_K(const uint8_t* row, int64_t nb, uint8_t* u, float* mul, float* add) {
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * detail::Q8_K::kBytes;
    const uint8_t* qs = blk + detail::Q8_K::kQs;
    uint8_t* o = u + detail::kQK_K * b;
    for (int j = 0; j < detail::kQK_K; ++j) o[j] = qs[j] ^ 0x80;
    const float d = detail::load_f32(blk + detail::Q8_K::kD);
    for (int g = 0; g < 8; ++g) {
      mul[8 * b + g] = d;
      add[8 * b + g] = 0.0f;
    }
  }
}

struct Q8_KType : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kQ8_K;
  static constexpr GgmlType kActType = GgmlType::kF32;
  static constexpr detail::UnpackInfo kUnpack{32, 128, false, 8};
  static constexpr bool kMatmul = false;
  static void Unpack(const uint8_t* row, int64_t n, uint8_t* u, float* mul, float* add) {
    UnpackQ8_K(row, n / 256, u, mul, add);
  }
};
using UnitType = Q8_KType;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using namespace detail;  // NOLINT(google-build-using-namespace): block layouts
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

void dequant_q8_k(const uint8_t* b, float* y) {
  const float d = load_f32(b + Q8_K::kD);
  for (int j = 0; j < kQK_K; ++j) {
    y[j] = d * static_cast<float>(static_cast<int8_t>(b[Q8_K::kQs + j]));
  }
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

constexpr auto kDequantize = &dequantize_blocks<256, detail::Q8_K::kBytes, dequant_q8_k>;
constexpr auto kQuantize = &quantize_blocks<256, detail::Q8_K::kBytes, quant_q8_k>;
constexpr auto kDot = static_cast<double (*)(int64_t, const uint8_t*, const uint8_t*)>(nullptr);
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kQ8_KKernels
#include "kernels/types/unit-inl.h"
