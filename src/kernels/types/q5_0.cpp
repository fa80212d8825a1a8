// Q5_0: blocks of 32 weights, f16 scale d, 4 bytes of fifth bits and 16 bytes of nibbles
// (detail::Q5_0); value (q - 16) * d. Activations: Q8_0. Decode: the 256-bit blocks-of-32
// kernel on AVX2, AVX3 and AVX3_DL; prefill: the int8 token-lane tiles.
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/q5_0.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

inline void UnpackQ5_0(const uint8_t* row, int64_t nb, uint8_t* u, float* mul, float* add) {
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + b * detail::Q5_0::kBytes;
    UnpackQ5(blk, detail::Q5_0::kQh, detail::Q5_0::kQs, u + 32 * b);
    mul[b] = LoadF16(blk + detail::Q5_0::kD);
    add[b] = 0.0f;
  }
}

struct Q5_0Type : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kQ5_0;
  static constexpr GgmlType kActType = GgmlType::kQ8_0;
  static constexpr detail::UnpackInfo kUnpack{32, 16, false, 5};
  static void Unpack(const uint8_t* row, int64_t n, uint8_t* u, float* mul, float* add) {
    UnpackQ5_0(row, n / 32, u, mul, add);
  }
#if TOVA_AVX2_DECODE_TARGET
  static constexpr bool kDecodeAvx2 = true;
  static GemvDecodeFn PickDecodeAvx2(int r, int t) { return PickBlocksAvx2<GgmlType::kQ5_0>(r, t); }
#endif
};
using UnitType = Q5_0Type;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using namespace detail;  // NOLINT(google-build-using-namespace): block layouts
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

void dequant_q5_0(const uint8_t* b, float* y) {
  const float d = load_f16(b + Q5_0::kD);
  int q[32];
  unpack_q5(b + Q5_0::kQh, b + Q5_0::kQs, q);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q[j] - 16) * d;
}

void quant_q5_0(const float* x, uint8_t* b) {
  const float d = signed_absmax(x, 32) / -16.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_u16(b + Q5_0::kD, fp32_to_fp16(d));
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    const int q0 = std::min(31, static_cast<int>(x[j] * id + 16.5f));
    const int q1 = std::min(31, static_cast<int>(x[j + 16] * id + 16.5f));
    b[Q5_0::kQs + j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
    qh |= static_cast<uint32_t>(q0 >> 4) << j;
    qh |= static_cast<uint32_t>(q1 >> 4) << (j + 16);
  }
  std::memcpy(b + Q5_0::kQh, &qh, 4);
}

double dot_q5_0(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += Q5_0::kBytes, a += Q8_0::kBytes) {
    int q[32];
    unpack_q5(w + Q5_0::kQh, w + Q5_0::kQs, q);
    int isum = 0;
    for (int j = 0; j < 32; ++j) isum += (q[j] - 16) * act_q(a, Q8_0::kQs, j);
    sum += static_cast<double>(load_f16(w + Q5_0::kD)) * load_f16(a + Q8_0::kD) * isum;
  }
  return sum;
}

constexpr auto kDequantize = &dequantize_blocks<32, detail::Q5_0::kBytes, dequant_q5_0>;
constexpr auto kQuantize = &quantize_blocks<32, detail::Q5_0::kBytes, quant_q5_0>;
constexpr auto kDot = &dot_blocks<32, dot_q5_0>;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kQ5_0Kernels
#include "kernels/types/unit-inl.h"
