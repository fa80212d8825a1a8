// Q8_0: blocks of 32 int8 weights and an f16 scale d (detail::Q8_0). Activations: Q8_0.
// Unpacked as q + 128 (the signed tiles on AVX2 and AVX3). Decode: the VNNI kernel on AVX3_DL
// for several tokens, the 256-bit blocks-of-32 kernel for one token there and on AVX2 and AVX3.
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/types/ref_blocks.h"
#include "kernels/types/weight_type.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/types/q8_0.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/matmul_engine-inl.h"

#include "kernels/target_begin-inl.h"
namespace tova::kernels::HWY_NAMESPACE {

struct Q8_0Type : WeightTypeBase {
  static constexpr GgmlType kType = GgmlType::kQ8_0;
  static constexpr GgmlType kActType = GgmlType::kQ8_0;
  static constexpr detail::UnpackInfo kUnpack{32, 128, false, 8};
  static void Unpack(const uint8_t* row, int64_t n, uint8_t* u, float* mul, float* add) {
    UnpackQ8(row, n / 32, detail::Q8_0::kBytes, detail::Q8_0::kQs, u, mul, add);
  }
#if TOVA_AVX2_DECODE_TARGET
  static constexpr bool kDecodeAvx2 = true;
  static GemvDecodeFn PickDecodeAvx2(int r, int t) { return PickBlocksAvx2<GgmlType::kQ8_0>(r, t); }
#endif
#if HWY_TARGET == HWY_AVX3_DL
  static constexpr bool kDecodeVnni = true;
  // One-token Q8_0 streams faster through the 256-bit kernel on Zen 4: bench_matmul q8_0
  // 5632x2048 ntok:1, one thread, 3 rounds alternating: VNNI 18.8/20.5/20.1 GB/s, 256-bit
  // 21.8/23.3/22.0; two threads level (memory-bound). With more tokens the VNNI tiles reuse
  // each row 4 times.
  static bool UseVnniDecode(int64_t n_tok) { return n_tok != 1; }
  static int64_t DecodeActBytesVnni(int64_t n) { return Q8_0ActBytes(n); }
  static GemvDecodeFn PickDecodeVnni(int r, int t) {
    static constexpr GemvDecodeFn kTable[4][4] = TOVA_DECODE_VNNI_TABLE(GemvQ8_0);
    return kTable[r - 1][t - 1];
  }
  static void PrepareDecodeVnni(const int8_t* qs, const float* d, int64_t n, uint8_t* out) {
    PrepareQ8_0(qs, d, n, out);
  }
#endif
};
using UnitType = Q8_0Type;

}  // namespace tova::kernels::HWY_NAMESPACE
#include "kernels/target_end-inl.h"

#if HWY_ONCE
namespace tova::kernels {
namespace {
namespace ref {
using namespace detail;  // NOLINT(google-build-using-namespace): block layouts
using namespace detail::ref;  // NOLINT(google-build-using-namespace): the block references

void dequant_q8_0(const uint8_t* b, float* y) {
  const float d = load_f16(b + Q8_0::kD);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[Q8_0::kQs + j])) * d;
}

void quant_q8_0(const float* x, uint8_t* b) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  // llama.cpp's x86 SIMD quantize_row_q8_0 (what its logits were made with): inverse scale
  // 127/amax (not 1/d), round half to even.
  const float d = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  store_u16(b + Q8_0::kD, fp32_to_fp16(d));
  for (int j = 0; j < 32; ++j) b[Q8_0::kQs + j] = static_cast<uint8_t>(round_even(x[j] * id));
}

double dot_q8_0(int64_t nb, const uint8_t* w, const uint8_t* a) {
  double sum = 0.0;
  for (int64_t i = 0; i < nb; ++i, w += Q8_0::kBytes, a += Q8_0::kBytes) {
    int isum = 0;
    for (int j = 0; j < 32; ++j) isum += act_q(w, Q8_0::kQs, j) * act_q(a, Q8_0::kQs, j);
    sum += static_cast<double>(load_f16(w + Q8_0::kD)) * load_f16(a + Q8_0::kD) * isum;
  }
  return sum;
}

constexpr auto kDequantize = &dequantize_blocks<32, detail::Q8_0::kBytes, dequant_q8_0>;
constexpr auto kQuantize = &quantize_blocks<32, detail::Q8_0::kBytes, quant_q8_0>;
constexpr auto kDot = &dot_blocks<32, dot_q8_0>;
}  // namespace ref
}  // namespace
}  // namespace tova::kernels
#endif  // HWY_ONCE

#define TOVA_UNIT_KERNELS kQ8_0Kernels
#include "kernels/types/unit-inl.h"
