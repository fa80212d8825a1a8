// The weight-type table (src/kernels/types/registry.cpp) against the list of compute types:
// every weight type has its unit and every unit's entry is complete, so a type cannot be half
// added.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/types/weight_type.h"

namespace tova::kernels {
namespace {

TEST(WeightTypeTable, HoldsEveryComputeTypeInOrderThenTheActivationFormats) {
  std::vector<GgmlType> weights, formats;
  for (const WeightTypeKernels* k : weight_types()) {
    (k->is_weight_type ? weights : formats).push_back(k->type);
  }
  EXPECT_TRUE(std::equal(weights.begin(), weights.end(), kWeightTypes.begin(), kWeightTypes.end()));
  EXPECT_EQ(formats, (std::vector<GgmlType>{GgmlType::kQ8_1, GgmlType::kQ8_K}));
}

TEST(WeightTypeTable, EntriesAreCompleteAndFoundByType) {
  for (const WeightTypeKernels* k : weight_types()) {
    SCOPED_TRACE(type_name(k->type));
    EXPECT_EQ(find_weight_type(k->type), k);
    EXPECT_NE(k->dequantize_ref, nullptr);
    EXPECT_NE(k->quantize_ref, nullptr);
    EXPECT_NE(k->dequantize, nullptr);
    // A weight type has the whole matmul and a dot; an activation format none of them.
    const bool w = k->is_weight_type;
    EXPECT_EQ(k->vec_dot_ref != nullptr, w);
    EXPECT_EQ(k->vec_dot != nullptr, w);
    EXPECT_EQ(k->plan_acts != nullptr, w);
    EXPECT_EQ(k->prepare_acts != nullptr, w);
    EXPECT_EQ(k->matmul_rows != nullptr, w);
    if (w) {
      EXPECT_NE(find_weight_type(k->vec_dot_type), nullptr) << "its activation format's unit";
    }
  }
  EXPECT_EQ(find_weight_type(GgmlType::kIQ2_XXS), nullptr);
  EXPECT_EQ(find_weight_type(GgmlType::kI32), nullptr);
}

}  // namespace
}  // namespace tova::kernels
