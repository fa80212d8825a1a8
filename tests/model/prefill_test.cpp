// Prefill modes of spec/POLICIES.md at model level: chunk:1 is exact; chunk:C evicts once per
// chunk using the chunk's last token; chunk:inf keeps the top k of the last prompt token.
#include <gtest/gtest.h>

#include "model_test_util.h"

namespace tova::testing {
namespace {

runtime::CacheOptions with_prefill(const std::string& policy, int k, const std::string& mode) {
  runtime::CacheOptions o = cache_options(policy, k);
  o.prefill = *runtime::parse_prefill(mode);
  return o;
}

TEST(Prefill, ParseModes) {
  EXPECT_EQ(runtime::parse_prefill("exact")->chunk, 0);
  EXPECT_EQ(runtime::parse_prefill("chunk:16")->chunk, 16);
  EXPECT_TRUE(runtime::parse_prefill("chunk:inf")->inf);
  for (const char* bad : {"chunk:0", "chunk:-1", "chunk:", "chunky", "", "chunk:1x"}) {
    EXPECT_FALSE(runtime::parse_prefill(bad).ok()) << bad;
  }
}

TEST(Prefill, ChunkOfOneIsExact) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  auto ids = read_ids(shared_path("golden/tokens-1024.json"));
  ids.resize(100);
  ThreadPool pool(2);
  for (const char* p : {"tova", "h2o"}) {
    const auto a = all_logits(**m, ids, with_prefill(p, 20, "exact"), 1, pool);
    const auto b = all_logits(**m, ids, with_prefill(p, 20, "chunk:1"), 1, pool);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4)) << p;
  }
}

TEST(Prefill, ChunkInfKeepsTheTopKOfTheLastPromptToken) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  auto ids = read_ids(shared_path("golden/tokens-1024.json"));
  ids.resize(64);
  ThreadPool pool(1);
  // The whole prompt at once under chunk:inf sees exactly what full sees: same logits.
  std::unique_ptr<kv::MultiState> s;
  const auto got = all_logits(**m, ids, with_prefill("tova", 16, "chunk:inf"), 64, pool, &s);
  const auto full = all_logits(**m, ids, cache_options("full", 0), 64, pool);
  double max_diff = 0;
  for (size_t i = 0; i < got.size(); ++i) max_diff = std::max(max_diff, double(std::fabs(got[i] - full[i])));
  EXPECT_LT(max_diff, 1e-5);
  for (int il = 0; il < s->n_layer(); ++il) {
    EXPECT_EQ(s->layer(il).n_held(), 16);
    EXPECT_EQ(s->layer(il).n_evicted(), 48);
  }
  // Chunks of 16: the cache holds k=16 after every chunk, and memory is k + C slots.
  std::unique_ptr<kv::MultiState> c;
  all_logits(**m, ids, with_prefill("window", 16, "chunk:16"), 1, pool, &c);
  EXPECT_EQ(c->layer(0).n_slot(), 32);
  std::vector<int64_t> held;
  for (int sl = 0; sl < c->layer(0).n_slot(); ++sl) {
    if (c->layer(0).pos()[sl] >= 0) held.push_back(c->layer(0).pos()[sl]);
  }
  std::sort(held.begin(), held.end());
  ASSERT_EQ(held.size(), 16u);
  EXPECT_EQ(held.front(), 48);
  EXPECT_EQ(held.back(), 63);
}

}  // namespace
}  // namespace tova::testing
