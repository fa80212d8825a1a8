// SIMD versions of the quant.h API: dequantize and vec_dot through the weight-type table (each
// type's unit dispatches to the best Highway target), activation conversion here.
#include <cstring>

#include "core/check.h"
#include "kernels/quant.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/quant_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/quant_kernels-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

void QuantizeActsImpl(GgmlType type, const float* src, void* dst, int64_t n) {
  QuantizeActs(type, src, n, static_cast<uint8_t*>(dst));
}

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {

HWY_EXPORT(QuantizeActsImpl);

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  const WeightTypeKernels& k = weight_type(type);
  TOVA_CHECK(n % type_traits(type).block_size == 0);
  k.dequantize(static_cast<const uint8_t*>(src), dst, n);
}

void quantize_activations(GgmlType vec_dot_type, const float* src, void* dst, int64_t n) {
  TOVA_CHECK(vec_dot_type == GgmlType::kF32 || vec_dot_type == GgmlType::kF16 ||
             vec_dot_type == GgmlType::kBF16 || vec_dot_type == GgmlType::kQ8_0 ||
             vec_dot_type == GgmlType::kQ8_1 || vec_dot_type == GgmlType::kQ8_K);
  TOVA_CHECK(n % type_traits(vec_dot_type).block_size == 0);
  HWY_DYNAMIC_DISPATCH(QuantizeActsImpl)(vec_dot_type, src, dst, n);
}

float vec_dot(GgmlType weight_type_id, int64_t n, const void* w_row, const void* act_row) {
  const WeightTypeKernels& k = weight_type(weight_type_id);
  TOVA_CHECK(k.vec_dot != nullptr && "vec_dot: not a weight type");
  // Float rows may have any length; quantized ones whole blocks.
  TOVA_CHECK(n % type_traits(weight_type_id).block_size == 0);
  return k.vec_dot(n, static_cast<const uint8_t*>(w_row), static_cast<const uint8_t*>(act_row));
}

}  // namespace tova::kernels
#endif  // HWY_ONCE
