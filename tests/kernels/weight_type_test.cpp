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
  std::vector<GgmlType> weights, formats, interleaved;
  for (const WeightTypeKernels* k : weight_types()) {
    if (k->group_rows > 0) {
      interleaved.push_back(k->type);
    } else {
      (k->is_weight_type ? weights : formats).push_back(k->type);
    }
  }
  EXPECT_TRUE(std::equal(weights.begin(), weights.end(), kWeightTypes.begin(), kWeightTypes.end()));
  EXPECT_EQ(formats, (std::vector<GgmlType>{GgmlType::kQ8_1, GgmlType::kQ8_K}));
  EXPECT_EQ(interleaved, (std::vector<GgmlType>{GgmlType::kQ4_0_R8}));
}

TEST(WeightTypeTable, EntriesAreCompleteAndFoundByType) {
  for (const WeightTypeKernels* k : weight_types()) {
    SCOPED_TRACE(type_name(k->type));
    EXPECT_EQ(find_weight_type(k->type), k);
    if (k->group_rows > 0) {
      // An interleaved layout: rows are not addressable; matmul, repack and row_of are whole,
      // and its base type has a unit and a row layout of the same bytes.
      EXPECT_TRUE(k->is_weight_type);
      EXPECT_EQ(k->dequantize_ref, nullptr);
      EXPECT_EQ(k->vec_dot, nullptr);
      EXPECT_NE(k->repack, nullptr);
      EXPECT_NE(k->row_of, nullptr);
      EXPECT_NE(k->matmul_rows, nullptr);
      EXPECT_NE(k->plan_acts, nullptr);
      EXPECT_NE(k->prepare_acts, nullptr);
      ASSERT_NE(find_weight_type(k->base_type), nullptr);
      EXPECT_EQ(find_weight_type(k->base_type)->group_rows, 0);
      EXPECT_EQ(k->vec_dot_type, find_weight_type(k->base_type)->vec_dot_type);
      EXPECT_EQ(type_traits(k->type).type_size, type_traits(k->base_type).type_size);
      EXPECT_EQ(find_interleaved_type(k->base_type), k);
      continue;
    }
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
