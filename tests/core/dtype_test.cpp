// ggml type tables: sizes derived by hand from each block layout, name parsing, row sizes.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/dtype.h"

namespace tova {
namespace {

struct Expected {
  uint32_t id;
  const char* name;
  int64_t block_size;
  int64_t type_size;
};

// type_size from the block layouts (d/m are fp16 scales, QK_K = 256).
constexpr Expected kExpected[] = {
    {0, "f32", 1, 4},
    {1, "f16", 1, 2},
    {2, "q4_0", 32, 2 + 16},          // d + 32 nibbles
    {3, "q4_1", 32, 2 + 2 + 16},      // d, m + 32 nibbles
    {6, "q5_0", 32, 2 + 4 + 16},      // d + high bits + nibbles
    {7, "q5_1", 32, 2 + 2 + 4 + 16},  // d, m + high bits + nibbles
    {8, "q8_0", 32, 2 + 32},          // d + 32 int8
    {9, "q8_1", 32, 2 + 2 + 32},      // d, s + 32 int8
    {10, "q2_k", 256, 16 + 64 + 2 + 2},
    {11, "q3_k", 256, 32 + 64 + 12 + 2},
    {12, "q4_k", 256, 2 + 2 + 12 + 128},
    {13, "q5_k", 256, 2 + 2 + 12 + 32 + 128},
    {14, "q6_k", 256, 128 + 64 + 16 + 2},
    {15, "q8_k", 256, 4 + 256 + 16 * 2},  // f32 d + int8 + int16 block sums
    {20, "iq4_nl", 32, 2 + 16},           // d + 32 nibbles
    {23, "iq4_xs", 256, 2 + 2 + 4 + 128},  // d, scales_h, scales_l + nibbles
    {39, "mxfp4", 32, 1 + 16},            // E8M0 exponent + 32 FP4 nibbles
    {24, "i8", 1, 1},
    {25, "i16", 1, 2},
    {26, "i32", 1, 4},
    {27, "i64", 1, 8},
    {28, "f64", 1, 8},
    {30, "bf16", 1, 2},
};

TEST(Dtype, TraitsMatchBlockLayouts) {
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.name);
    const TypeTraits* t = find_type_traits(e.id);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->name, e.name);
    EXPECT_EQ(t->block_size, e.block_size);
    EXPECT_EQ(t->type_size, e.type_size);
    EXPECT_EQ(&type_traits(static_cast<GgmlType>(e.id)), t);
    EXPECT_EQ(type_name(static_cast<GgmlType>(e.id)), e.name);
  }
}

TEST(Dtype, UnknownIds) {
  // 4 and 5 (q4_2, q4_3) and 31..33 were removed from ggml; the rest were never assigned.
  for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 40u, 200u, 0xffffffffu}) {
    EXPECT_EQ(find_type_traits(id), nullptr) << id;
  }
}

TEST(Dtype, ParseTypeName) {
  EXPECT_EQ(*parse_type_name("q4_0"), GgmlType::kQ4_0);
  EXPECT_EQ(*parse_type_name("Q4_0"), GgmlType::kQ4_0);
  EXPECT_EQ(*parse_type_name("F16"), GgmlType::kF16);
  EXPECT_EQ(*parse_type_name("bf16"), GgmlType::kBF16);
  EXPECT_EQ(*parse_type_name("Q6_K"), GgmlType::kQ6_K);
  EXPECT_EQ(*parse_type_name("iq2_xxs"), GgmlType::kIQ2_XXS);
  for (const char* bad : {"q4_2", "", "f32 ", "q8", "float"}) {
    auto r = parse_type_name(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.message().find(std::string("'") + bad + "'"), std::string::npos) << r.message();
  }
  // Every known type's name parses back to it.
  for (uint32_t id = 0; id < 64; ++id) {
    const TypeTraits* t = find_type_traits(id);
    if (t == nullptr) continue;
    auto r = parse_type_name(t->name);
    ASSERT_TRUE(r.ok()) << t->name;
    EXPECT_EQ(static_cast<uint32_t>(*r), id);
  }
}

TEST(Dtype, BytesPerRow) {
  EXPECT_EQ(*bytes_per_row(GgmlType::kF32, 7), 28u);
  EXPECT_EQ(*bytes_per_row(GgmlType::kF32, 0), 0u);
  EXPECT_EQ(*bytes_per_row(GgmlType::kF16, 3), 6u);
  EXPECT_EQ(*bytes_per_row(GgmlType::kQ8_0, 64), 68u);
  EXPECT_EQ(*bytes_per_row(GgmlType::kQ4_K, 512), 288u);
  EXPECT_EQ(*bytes_per_row(GgmlType::kQ6_K, 4096), 16u * 210u);
  auto r = bytes_per_row(GgmlType::kQ4_0, 33);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("q4_0"), std::string::npos) << r.message();
  EXPECT_NE(r.message().find("32"), std::string::npos) << r.message();
  EXPECT_NE(r.message().find("33"), std::string::npos) << r.message();
  EXPECT_FALSE(bytes_per_row(GgmlType::kQ4_K, 128).ok());
  EXPECT_FALSE(bytes_per_row(GgmlType::kF32, -1).ok());
  EXPECT_FALSE(bytes_per_row(GgmlType::kQ8_0, -32).ok());
}

TEST(Dtype, ComputeSupported) {
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0,
                     GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                     GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kQ2_K,
                     GgmlType::kQ3_K, GgmlType::kIQ4_NL, GgmlType::kIQ4_XS, GgmlType::kMXFP4}) {
    EXPECT_TRUE(is_compute_supported(t)) << type_name(t);
  }
  // The registry lists exactly the supported types, each once, every one a known type.
  EXPECT_EQ(compute_types().size(), 16u);
  for (GgmlType t : compute_types()) {
    EXPECT_TRUE(is_compute_supported(t));
    EXPECT_NE(find_type_traits(static_cast<uint32_t>(t)), nullptr);
    EXPECT_EQ(std::count(compute_types().begin(), compute_types().end(), t), 1);
  }
  for (GgmlType t : {GgmlType::kQ8_1, GgmlType::kQ8_K, GgmlType::kIQ3_S,
                     GgmlType::kIQ2_XXS, GgmlType::kI32, GgmlType::kF64, GgmlType::kTQ1_0}) {
    EXPECT_FALSE(is_compute_supported(t)) << type_name(t);
  }
}

}  // namespace
}  // namespace tova
