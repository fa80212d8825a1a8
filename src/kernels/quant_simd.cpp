// SIMD versions of the quant.h API, dispatched at run time to the best Highway target.
#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "kernels/matmul_internal.h"
#include "kernels/quant.h"
#include "kernels/quant_blocks.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/quant_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/quant_kernels-inl.h"

#if HWY_TARGET == HWY_AVX3_DL && defined(__clang__)
// See quant_kernels-inl.h: clang needs avx512vnni in the pushed target attribute itself.
#pragma clang attribute push(__attribute__((target(HWY_TARGET_STR ",avx512vnni"))), \
                             apply_to = function)
#else
HWY_BEFORE_NAMESPACE();
#if HWY_TARGET == HWY_AVX3_DL
#pragma GCC target("avx512vnni")
#endif
#endif
namespace tova::kernels::HWY_NAMESPACE {

void DequantizeRowImpl(GgmlType type, const void* src, float* dst, int64_t n) {
  DequantizeRow(type, static_cast<const uint8_t*>(src), dst, n);
}

void QuantizeActsImpl(GgmlType type, const float* src, void* dst, int64_t n) {
  QuantizeActs(type, src, n, static_cast<uint8_t*>(dst));
}

float VecDotImpl(GgmlType type, int64_t n, const void* w_row, const void* act_row) {
  const auto* w = static_cast<const uint8_t*>(w_row);
  if (type == GgmlType::kF32 || type == GgmlType::kF16 || type == GgmlType::kBF16) {
    const float* x = static_cast<const float*>(act_row);
    float out;
    GemvFloatTile(type, &w, 1, &x, 1, n, &out);
    return out;
  }
  const detail::UnpackInfo info = detail::unpack_info(type);
  const int64_t n_group_pad = PadGroups(n / info.group);
  thread_local detail::AlignedBuffer u_buf, qs_buf, scale_buf;
  uint8_t* u = u_buf.ensure<uint8_t>(static_cast<size_t>(n));
  int8_t* qs = qs_buf.ensure<int8_t>(static_cast<size_t>(n));
  float* mul = scale_buf.ensure<float>(static_cast<size_t>(4 * n_group_pad));
  std::fill(mul, mul + 4 * n_group_pad, 0.0f);  // the padding groups must be zero
  float* add = mul + n_group_pad;
  float* d = add + n_group_pad;
  float* sa = d + n_group_pad;
  UnpackRow(type, w, n, u, mul, add);
  ActRowFromBlocks(vec_dot_type(type), info.group, static_cast<const uint8_t*>(act_row), n, qs, d,
                   sa);
  const WRow wr{u, mul, add};
  const ARow ar{qs, d, sa};
  float out;
  GemvInt8Tile(info.group, &wr, 1, &ar, 1, info.offset, n, n_group_pad, &out);
  return out;
}

}  // namespace tova::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tova::kernels {

HWY_EXPORT(DequantizeRowImpl);
HWY_EXPORT(QuantizeActsImpl);
HWY_EXPORT(VecDotImpl);

namespace {
bool is_quantized_weight(GgmlType type) {
  return is_compute_supported(type) && type != GgmlType::kF32 && type != GgmlType::kF16 &&
         type != GgmlType::kBF16;
}
}  // namespace

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
  TOVA_CHECK(is_compute_supported(type) || type == GgmlType::kQ8_1 || type == GgmlType::kQ8_K);
  TOVA_CHECK(n % type_traits(type).block_size == 0);
  HWY_DYNAMIC_DISPATCH(DequantizeRowImpl)(type, src, dst, n);
}

void quantize_activations(GgmlType vec_dot_type, const float* src, void* dst, int64_t n) {
  TOVA_CHECK(vec_dot_type == GgmlType::kF32 || vec_dot_type == GgmlType::kF16 ||
             vec_dot_type == GgmlType::kBF16 || vec_dot_type == GgmlType::kQ8_0 ||
             vec_dot_type == GgmlType::kQ8_1 || vec_dot_type == GgmlType::kQ8_K);
  TOVA_CHECK(n % type_traits(vec_dot_type).block_size == 0);
  HWY_DYNAMIC_DISPATCH(QuantizeActsImpl)(vec_dot_type, src, dst, n);
}

float vec_dot(GgmlType weight_type, int64_t n, const void* w_row, const void* act_row) {
  TOVA_CHECK(is_compute_supported(weight_type));
  TOVA_CHECK(!is_quantized_weight(weight_type) || n % type_traits(weight_type).block_size == 0);
  return HWY_DYNAMIC_DISPATCH(VecDotImpl)(weight_type, n, w_row, act_row);
}

}  // namespace tova::kernels
#endif  // HWY_ONCE
