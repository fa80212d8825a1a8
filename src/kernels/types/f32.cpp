// F32: the reference format: no conversion, one element per "block". Activations stay float32. Decode: GemvFloat tiles
// (one row, one token: four accumulators, quant_kernels-inl.h); prefill: the float token-lane
// tiles (GemmFloatTile).
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/f32.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

struct F32Type : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kF32;
  static constexpr GgmlType kActType = GgmlType::kF32;
  static constexpr bool kFloat = true;
};
using UnitType = F32Type;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

void dequant_f32(const uint8_t* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
void quant_f32(const float* src, uint8_t* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
double dot_f32(int64_t n, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(detail::load_f32(w + 4 * i)) * detail::load_f32(a + 4 * i);
  return sum;
}

constexpr auto kDequantize = &dequant_f32;
constexpr auto kQuantize = &quant_f32;
constexpr auto kDot = &dot_f32;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kF32Kernels
#include "kernels/types/unit-inl.h"
