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
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

constexpr auto kDequantize = &dequantize_blocks<256, detail::Q8_K::kBytes, dequant_q8_k>;
constexpr auto kQuantize = &quantize_blocks<256, detail::Q8_K::kBytes, quant_q8_k>;
constexpr auto kDot = static_cast<double (*)(int64_t, const uint8_t*, const uint8_t*)>(nullptr);
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kQ8_KKernels
#include "kernels/types/unit-inl.h"
