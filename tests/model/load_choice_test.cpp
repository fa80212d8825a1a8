// How Model::load holds the weights when --mmap is not given: memory of its own (huge pages,
// faster streaming) while the copy and the page cache's copy both fit, else a mapping of the
// file (one copy) -- so a model of up to ~70 % of RAM runs with one copy of its weights.
#include <gtest/gtest.h>

#include "model/model.h"
#include "model_test_util.h"

namespace tova::model {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(LoadChoice, OwnMemoryWhileBothCopiesFitElseAMapping) {
  EXPECT_FALSE(load_by_mapping(kGiB, 20 * kGiB));          // TinyLlama-size on 24 GiB
  EXPECT_FALSE(load_by_mapping(10 * kGiB, 20 * kGiB));     // exactly half
  EXPECT_TRUE(load_by_mapping(10 * kGiB + 1, 20 * kGiB));  // more than half
  EXPECT_TRUE(load_by_mapping(17 * kGiB, 22 * kGiB));      // Qwen3-30B-A3B Q4_0 on 24 GiB
  EXPECT_TRUE(load_by_mapping(2 * kGiB, kGiB));            // larger than what is available
  EXPECT_FALSE(load_by_mapping(17 * kGiB, 0));             // unknown: own memory as before
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
