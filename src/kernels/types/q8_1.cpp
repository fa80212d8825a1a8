// Q8_1: the activation format of Q4_1 and Q5_1 weights: blocks of 32 int8 values, an f16
// scale d and s = d * sum(q) (detail::Q8_1). Not a weight type (no matmul): its unit gives the
// rounding reference (llama.cpp's) and the dequantize the tests check.
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/q8_1.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

struct Q8_1Type : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kQ8_1;
  static constexpr GgmlType kActType = GgmlType::kF32;
  static constexpr detail::UnpackInfo kUnpack{32, 128, false, 8};
  static constexpr bool kMatmul = false;
  static void Unpack(const uint8_t* row, int64_t n, uint8_t* u, float* mul, float* add) {
    UnpackQ8(row, n / 32, detail::Q8_1::kBytes, detail::Q8_1::kQs, u, mul, add);
  }
};
using UnitType = Q8_1Type;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using namespace detail;  // NOLINT(google-build-using-namespace): block layouts
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

void dequant_q8_1(const uint8_t* b, float* y) {
  const float d = load_f16(b + Q8_1::kD);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[Q8_1::kQs + j])) * d;
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

constexpr auto kDequantize = &dequantize_blocks<32, detail::Q8_1::kBytes, dequant_q8_1>;
constexpr auto kQuantize = &quantize_blocks<32, detail::Q8_1::kBytes, quant_q8_1>;
constexpr auto kDot = static_cast<double (*)(int64_t, const uint8_t*, const uint8_t*)>(nullptr);
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kQ8_1Kernels
#include "kernels/types/unit-inl.h"
