// tova bench's protocol: an unbounded cache is sized for depth + test up front, so no test
// times a cache growing (doubling and copying) inside its measured steps.
#include <gtest/gtest.h>

#include "eval/bench.h"
#include "eval/throughput.h"
#include "test_data.h"

namespace tova {
namespace {

TEST(Bench, FullCacheIsReservedForDepthPlusTest) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(testing::shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  auto full = kv::parse_policy("full", 0);
  ASSERT_TRUE(full.ok());
  eval::BenchOptions o;
  o.n_prompt = {0};
  o.n_gen = {8};
  o.n_depth = {300};  // crosses the 256 slots an unreserved cache starts with
  o.n_threads = {1};
  o.repetitions = 1;
  o.caches = {CacheOptions{.policy = *full}};
  auto r = eval::run_bench(**m, "stories260K", o);
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->size(), 1u);
  auto reserved = eval::bytes_per_sequence(**m, *full, kv::KvType::kF32, 308, 0);
  ASSERT_TRUE(reserved.ok());
  EXPECT_EQ((*r)[0].kv_bytes, *reserved);  // 308 slots, never grown to 512
}

}  // namespace
}  // namespace tova
