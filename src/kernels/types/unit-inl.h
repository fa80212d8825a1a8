// The entry points of one weight type's unit: included at the end of src/kernels/types/<type>.cpp
// in every target pass, after the unit has defined its traits struct as `UnitType` in
// HWY_NAMESPACE; in the last pass it defines the unit's table entry, named TOVA_UNIT_KERNELS,
// from the unit's scalar references (namespace ref: kDequantize, kQuantize, kDot, the last
// null for an activation format). An interleaved layout (UnitType::kInterleaved) defines
// TOVA_UNIT_INTERLEAVED and ref::kRepack, ref::kRowOf; its row-pointer entries stay null.
//
// Highway "-inl.h" pattern (per-target toggle).

#if defined(TOVA_KERNELS_TYPES_UNIT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef TOVA_KERNELS_TYPES_UNIT_INL_H_
#undef TOVA_KERNELS_TYPES_UNIT_INL_H_
#else
#define TOVA_KERNELS_TYPES_UNIT_INL_H_
#endif

#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {
namespace {

void UnitDequantize(const uint8_t* src, float* dst, int64_t n) {
  if constexpr (!UnitType::kInterleaved) DequantizeRow<UnitType>(src, dst, n);
}

float UnitVecDot(int64_t n, const uint8_t* w_row, const uint8_t* act_row) {
  if constexpr (UnitType::kMatmul && !UnitType::kInterleaved) {
    return VecDot<UnitType>(n, w_row, act_row);
  }
  return 0.0f;
}

void UnitPlanActs(int64_t n_in, int64_t n_tok, const float* x, detail::ActBuffer* acts) {
  if constexpr (UnitType::kMatmul) PlanActs<UnitType>(n_in, n_tok, x, acts);
}

void UnitPrepareActs(const float* x, int64_t t_begin, int64_t t_end, int64_t k_begin,
                     int64_t k_end, detail::ActBuffer* acts) {
  if constexpr (UnitType::kMatmul) PrepareActs<UnitType>(x, t_begin, t_end, k_begin, k_end, acts);
}

void UnitMatmulRows(const WeightMatrix& w, const detail::ActBuffer& acts, int64_t o_begin,
                    int64_t o_end, float* y) {
  if constexpr (UnitType::kMatmul) MatmulRows<UnitType>(w, acts, o_begin, o_end, y);
}

}  // namespace
}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {

HWY_EXPORT(UnitDequantize);
HWY_EXPORT(UnitVecDot);
HWY_EXPORT(UnitPlanActs);
HWY_EXPORT(UnitPrepareActs);
HWY_EXPORT(UnitMatmulRows);

void dequantize(const uint8_t* src, float* dst, int64_t n) {
  HWY_DYNAMIC_DISPATCH(UnitDequantize)(src, dst, n);
}
float vec_dot(int64_t n, const uint8_t* w_row, const uint8_t* act_row) {
  return HWY_DYNAMIC_DISPATCH(UnitVecDot)(n, w_row, act_row);
}
void plan_acts(int64_t n_in, int64_t n_tok, const float* x, detail::ActBuffer* acts) {
  HWY_DYNAMIC_DISPATCH(UnitPlanActs)(n_in, n_tok, x, acts);
}
void prepare_acts(const float* x, int64_t t_begin, int64_t t_end, int64_t k_begin, int64_t k_end,
                  detail::ActBuffer* acts) {
  HWY_DYNAMIC_DISPATCH(UnitPrepareActs)(x, t_begin, t_end, k_begin, k_end, acts);
}
void matmul_rows(const WeightMatrix& w, const detail::ActBuffer& acts, int64_t o_begin,
                 int64_t o_end, float* y) {
  HWY_DYNAMIC_DISPATCH(UnitMatmulRows)(w, acts, o_begin, o_end, y);
}

constexpr bool kUnitIsWeight = HWY_NAMESPACE::UnitType::kMatmul;
// Rows one after the other (not an interleaved layout): the row-pointer entries exist.
constexpr bool kUnitRows = !HWY_NAMESPACE::UnitType::kInterleaved;

}  // namespace

extern const WeightTypeKernels TOVA_UNIT_KERNELS;
const WeightTypeKernels TOVA_UNIT_KERNELS = {
    .type = HWY_NAMESPACE::UnitType::kType,
    .vec_dot_type = HWY_NAMESPACE::UnitType::kActType,
    .is_weight_type = kUnitIsWeight,
    .dequantize_ref = ref::kDequantize,
    .quantize_ref = ref::kQuantize,
    .vec_dot_ref = ref::kDot,
    .dequantize = kUnitRows ? &dequantize : nullptr,
    .vec_dot = kUnitIsWeight && kUnitRows ? &vec_dot : nullptr,
    .plan_acts = kUnitIsWeight ? &plan_acts : nullptr,
    .prepare_acts = kUnitIsWeight ? &prepare_acts : nullptr,
    .matmul_rows = kUnitIsWeight ? &matmul_rows : nullptr,
#ifdef TOVA_UNIT_INTERLEAVED
    .group_rows = HWY_NAMESPACE::UnitType::kGroupRows,
    .base_type = HWY_NAMESPACE::UnitType::kBaseType,
    .repack = ref::kRepack,
    .row_of = ref::kRowOf,
#endif
};

}  // namespace tova::kernels
#endif  // HWY_ONCE

#endif  // include guard
