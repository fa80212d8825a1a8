// --simd / TOVA_SIMD: choosing a SIMD target by name moves every kernel's dispatch to it, and a
// target this CPU cannot run is refused with the list of those it can.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "hwy/targets.h"
#include "kernels/ops.h"
#include "kernels/simd_target.h"

namespace tova::kernels {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

class SimdTarget : public ::testing::Test {
 protected:
  void TearDown() override { ASSERT_TRUE(set_simd_target("native").ok()); }
};

TEST_F(SimdTarget, ListsTheCompiledTargetsThisCpuRunsBestFirst) {
  const std::vector<std::string> names = simd_targets_supported();
  ASSERT_FALSE(names.empty());
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_EQ(names.size(), targets.size());
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(names[i], lower(hwy::TargetName(targets[i])));
  EXPECT_EQ(lower(simd_target_name()), names.front());
}

TEST_F(SimdTarget, EveryTargetByNameMovesTheKernelsDispatch) {
  const std::vector<std::string> names = simd_targets_supported();
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(set_simd_target(name).ok());
    EXPECT_EQ(lower(simd_target_name()), name);
    // A kernel's own view of where it runs: the dispatch really moved, not only the label.
    EXPECT_EQ(lower(ops_target_name()), name);
    EXPECT_FLOAT_EQ(dot(std::vector<float>{1, 2, 3}.data(), std::vector<float>{4, 5, 6}.data(), 3),
                    32.0f);
    // The list does not depend on the choice.
    EXPECT_EQ(simd_targets_supported(), names);
    EXPECT_EQ(lower(simd_target_name()), name);
  }
}

TEST_F(SimdTarget, NamesAreCaseInsensitiveAndScalarAndNativeAreAliases) {
  const std::vector<std::string> names = simd_targets_supported();
  ASSERT_TRUE(set_simd_target("SCALAR").ok());
  EXPECT_EQ(lower(simd_target_name()), names.back());
  ASSERT_TRUE(set_simd_target("native").ok());
  EXPECT_EQ(lower(simd_target_name()), names.front());
  ASSERT_TRUE(set_simd_target(names.back()).ok());
  ASSERT_TRUE(set_simd_target("").ok());
  EXPECT_EQ(lower(simd_target_name()), names.front());
}

TEST_F(SimdTarget, AnUnknownOrUnsupportedTargetIsRefusedNamingTheSupportedOnes) {
  // Another architecture's targets are refused: ARM's on x86, x86's on ARM (where neon and sve2
  // are real targets and not refused).
  const std::vector<std::string> supported = simd_targets_supported();
  int refused = 0;
  for (const char* bad : {"avx9000", "neon", "sve2", "avx2", "avx3"}) {
    if (std::find(supported.begin(), supported.end(), bad) != supported.end()) continue;
    ++refused;
    const Status st = set_simd_target(bad);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find(bad), std::string::npos) << st.message();
    for (const std::string& name : simd_targets_supported()) {
      EXPECT_NE(st.message().find(name), std::string::npos) << st.message();
    }
  }
  EXPECT_GE(refused, 3);
  // A refused choice leaves the dispatch where it was.
  EXPECT_EQ(lower(simd_target_name()), simd_targets_supported().front());
}

}  // namespace
}  // namespace tova::kernels
