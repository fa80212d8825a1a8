// How Model::load holds the weights when --mmap is not given: memory of its own (huge pages,
// faster streaming) while it fits, the page cache's copy dropped behind the read once both
// copies would not; else a mapping of the file (one copy) -- so a model of up to ~70 % of RAM
// runs with one copy of its weights.
#include <gtest/gtest.h>

#include "model/model.h"
#include "model_test_util.h"

namespace tova::model {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(LoadChoice, OwnMemoryWhileItFitsWithOneCopyElseAMapping) {
  constexpr auto kRead = WeightHolding::kRead;
  constexpr auto kDrop = WeightHolding::kReadDropCache;
  constexpr auto kMap = WeightHolding::kMap;
  EXPECT_EQ(choose_weight_holding(kGiB, 20 * kGiB), kRead);           // TinyLlama-size on 24 GiB
  EXPECT_EQ(choose_weight_holding(10 * kGiB, 20 * kGiB), kRead);      // exactly half: both copies
  EXPECT_EQ(choose_weight_holding(10 * kGiB + 1, 20 * kGiB), kDrop);  // more than half: one copy
  EXPECT_EQ(choose_weight_holding(12 * kGiB, 22 * kGiB), kDrop);      // gpt-oss-20b on 24 GiB
  EXPECT_EQ(choose_weight_holding(16 * kGiB, 20 * kGiB), kDrop);      // exactly 80 %
  EXPECT_EQ(choose_weight_holding(16 * kGiB + 1, 20 * kGiB), kMap);   // more: mapped
  EXPECT_EQ(choose_weight_holding(2 * kGiB, kGiB), kMap);             // larger than available
  EXPECT_EQ(choose_weight_holding(17 * kGiB, 0), kRead);              // unknown: own memory
}

TEST(LoadChoice, ASmallModelIsReadAndMmapForcesAMapping) {
  TOVA_REQUIRE_SHARED();
  const std::string path = std::string(TOVA_TEST_DATA_DIR) + "/arch/qwen3-f32.gguf";
  auto read = Model::load(path);
  ASSERT_TRUE(read.ok()) << read.message();
  EXPECT_FALSE((*read)->mapped());
  auto mapped = Model::load(path, {.mmap = true});
  ASSERT_TRUE(mapped.ok()) << mapped.message();
  EXPECT_TRUE((*mapped)->mapped());
}

}  // namespace
}  // namespace tova::model
