// compare_evictions (tova trace --compare-kv-type): a hand-computed pair of traces, a trace
// against itself, and a real trace of stories260K in f32 against q8_0 and q4_0 keys.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "eval/trace_compare.h"
#include "test_data.h"

namespace tova::eval {
namespace {

using ::tova::testing::shared_path;

// One layer, one KV head, k = 2, five tokens: survival and alive flags as run_trace gives them.
TraceResult one_row(std::vector<int32_t> survival, std::vector<uint8_t> alive) {
  TraceResult r;
  r.budget = 2;
  r.n_layer = 1;
  r.n_head_kv = 1;
  r.n_tokens = static_cast<int64_t>(survival.size());
  r.tokens.assign(survival.size(), 7);
  r.survival = std::move(survival);
  r.alive_at_end = std::move(alive);
  return r;
}

TEST(TraceCompare, HandComputedPair) {
  // A (a window of 2) evicts position 0 at step 2, 1 at 3, 2 at 4. B evicts 1 at step 2, 0 at
  // step 3 and 2 at step 4: steps 2 and 3 differ, step 4 does not (2 of 3).
  const TraceResult a = one_row({2, 2, 2, 1, 0}, {0, 0, 0, 1, 1});
  const TraceResult b = one_row({3, 1, 2, 1, 0}, {0, 0, 0, 1, 1});
  auto c = compare_evictions(a, b);
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_NEAR(c->differ[0], 2.0 / 3.0, 1e-12);
  // Held after step 2: A {1, 2}, B {0, 2} (1 of 2 shared); after steps 3 and 4 the same sets.
  EXPECT_NEAR(c->overlap[0], (0.5 + 1 + 1) / 3, 1e-12);
  EXPECT_EQ(c->first_difference[0], 2);
  EXPECT_NEAR(c->differ_mean, 2.0 / 3.0, 1e-12);

  auto same = compare_evictions(a, a);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->differ[0], 0.0);
  EXPECT_EQ(same->overlap[0], 1.0);
  EXPECT_EQ(same->first_difference[0], -1);
}

TEST(TraceCompare, NothingEvictedIsNotANumber) {
  const TraceResult full = one_row({4, 3, 2, 1, 0}, {1, 1, 1, 1, 1});
  auto c = compare_evictions(full, full);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(std::isnan(c->differ[0]));
  EXPECT_TRUE(std::isnan(c->overlap[0]));
}

TEST(TraceCompare, RefusesTracesOfDifferentRuns) {
  const TraceResult a = one_row({2, 2, 2, 1, 0}, {0, 0, 0, 1, 1});
  TraceResult b = a;
  b.budget = 3;
  auto c = compare_evictions(a, b);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.message().find("budget"), std::string::npos) << c.message();
}

TEST(TraceCompare, QuantizedKeysChangeTovasChoicesOnStories) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  std::ifstream in(shared_path("golden/tokens-128.json"));
  const std::vector<int32_t> tokens = nlohmann::json::parse(in).get<std::vector<int32_t>>();
  auto spec = kv::parse_policy("tova", 16);
  ASSERT_TRUE(spec.ok());
  ThreadPool pool(1);
  auto run = [&](KvType t) {
    auto r = run_trace(**m, pool, tokens, {.policy = *spec, .kv_type = KvFormat(t, t)});
    EXPECT_TRUE(r.ok()) << r.message();
    return std::move(r).value();
  };
  const TraceResult f32 = run(KvType::kF32);
  auto again = compare_evictions(f32, run(KvType::kF32));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->differ_mean, 0.0);  // the same run twice: the same choices
  EXPECT_EQ(again->overlap_mean, 1.0);
  // stories260K's 8-wide heads in q4_0 (8-value blocks) change TOVA's choices in every layer
  // (its perplexity doubles, docs/RESULTS.md (f)); q8_0 changes fewer of them.
  auto q4 = compare_evictions(f32, run(KvType::kQ4_0));
  auto q8 = compare_evictions(f32, run(KvType::kQ8_0));
  ASSERT_TRUE(q4.ok() && q8.ok());
  for (int il = 0; il < f32.n_layer; ++il) {
    EXPECT_GT(q4->differ[il], 0.0) << "layer " << il;
    EXPECT_GE(q4->first_difference[il], 16) << "layer " << il;  // no eviction before step k
    EXPECT_LT(q4->overlap[il], 1.0) << "layer " << il;
  }
  EXPECT_LT(q8->differ_mean, q4->differ_mean);
  EXPECT_GT(q8->overlap_mean, q4->overlap_mean);
}

}  // namespace
}  // namespace tova::eval
