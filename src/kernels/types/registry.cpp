// The one table of weight types (see weight_type.h). Adding a type: its unit
// src/kernels/types/<type>.cpp, which defines k<Type>Kernels, and one line in each list below.
#include <array>

#include "core/check.h"
#include "kernels/types/weight_type.h"

namespace tova::kernels {

extern const WeightTypeKernels kF32Kernels, kF16Kernels, kBF16Kernels, kQ8_0Kernels,
    kQ4_0Kernels, kQ4_1Kernels, kQ5_0Kernels, kQ5_1Kernels, kQ2_KKernels, kQ3_KKernels,
    kQ4_KKernels, kQ5_KKernels, kQ6_KKernels, kIQ4_NLKernels, kIQ4_XSKernels, kMXFP4Kernels,
    kQ8_1Kernels, kQ8_KKernels, kQ4_0_R8Kernels;

namespace {

const std::array<const WeightTypeKernels*, 19> kTable = {
    &kF32Kernels,   &kF16Kernels,    &kBF16Kernels,   &kQ8_0Kernels,  &kQ4_0Kernels,
    &kQ4_1Kernels,  &kQ5_0Kernels,   &kQ5_1Kernels,   &kQ2_KKernels,  &kQ3_KKernels,
    &kQ4_KKernels,  &kQ5_KKernels,   &kQ6_KKernels,   &kIQ4_NLKernels, &kIQ4_XSKernels,
    &kMXFP4Kernels, &kQ8_1Kernels,   &kQ8_KKernels,   &kQ4_0_R8Kernels,
};

// By type id, for the lookup on every matmul call (ggml's ids are small).
constexpr uint32_t kMaxId = 256;  // ggml's ids and tova's own (dtype.h)
struct ById {
  std::array<const WeightTypeKernels*, kMaxId> entry{};
  ById() {
    for (const WeightTypeKernels* k : kTable) entry[static_cast<uint32_t>(k->type)] = k;
  }
};

const ById& by_id() {
  static const ById table;
  return table;
}

}  // namespace

const WeightTypeKernels* find_weight_type(GgmlType type) {
  const auto id = static_cast<uint32_t>(type);
  return id < kMaxId ? by_id().entry[id] : nullptr;
}

const WeightTypeKernels& weight_type(GgmlType type) {
  const WeightTypeKernels* k = find_weight_type(type);
  TOVA_CHECK(k != nullptr && "no kernels for this weight type");
  return *k;
}

std::span<const WeightTypeKernels* const> weight_types() { return kTable; }

const WeightTypeKernels* find_interleaved_type(GgmlType base) {
  for (const WeightTypeKernels* k : kTable) {
    if (k->group_rows > 0 && k->base_type == base) return k;
  }
  return nullptr;
}

}  // namespace tova::kernels
