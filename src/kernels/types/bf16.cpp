// BF16: bfloat16 (the top half of an f32), one element per "block". Activations stay float32. Decode: GemvFloat tiles
// (one row, one token: four accumulators, quant_kernels-inl.h); prefill: the float token-lane
// tiles (GemmFloatTile).
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/bf16.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

struct BF16Type : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kBF16;
  static constexpr GgmlType kActType = GgmlType::kF32;
  static constexpr bool kFloat = true;
};
using UnitType = BF16Type;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

void dequant_bf16(const uint8_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(detail::load_u16(src + 2 * i));
}
void quant_bf16(const float* src, uint8_t* dst, int64_t n) { fp32_to_bf16_row(src, dst, n); }
double dot_bf16(int64_t n, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    sum += static_cast<double>(bf16_to_fp32(detail::load_u16(w + 2 * i))) * detail::load_f32(a + 4 * i);
  }
  return sum;
}

constexpr auto kDequantize = &dequant_bf16;
constexpr auto kQuantize = &quant_bf16;
constexpr auto kDot = &dot_bf16;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kBF16Kernels
#include "kernels/types/unit-inl.h"
