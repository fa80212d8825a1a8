// tova::StateCache (the public prefix-state cache): a held state continues a longer prompt to
// the same logits as feeding the whole prompt; least recently used states leave memory by count
// and by bytes, to the spill directory when there is one, and come back from it; states that
// cannot be continued exactly are never held; a spill directory that cannot be used is an error
// naming the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/stories_engine.h"
#include "test_data.h"
#include "tova/batch.h"
#include "tova/engine.h"
#include "tova/state_cache.h"

namespace tova {
namespace {

using testing::stories;

SessionOptions options(const char* policy = "tova", const char* prefill = "exact") {
  SessionOptions o;
  auto c = parse_cache_options(policy, 8, prefill, "f32");
  EXPECT_TRUE(c.ok()) << c.message();
  o.cache = *c;
  o.sampling.temp = 0;
  return o;
}

std::unique_ptr<Session> fed(const std::vector<int32_t>& tokens, const SessionOptions& o) {
  auto s = stories().new_session(o);
  EXPECT_TRUE(s.ok()) << s.message();
  (*s)->queue(tokens);
  Batch batch(stories());
  std::vector<Session*> one = {s->get()};
  EXPECT_TRUE(batch.drain(one).ok());
  return std::move(*s);
}

std::vector<int32_t> conversation(int32_t first, size_t n) {
  std::vector<int32_t> t = {1};
  for (size_t i = 1; i < n; ++i) t.push_back(first + static_cast<int32_t>(i));
  return t;
}

std::vector<int32_t> extended(std::vector<int32_t> t) {
  t.insert(t.end(), {200, 201, 202});
  return t;
}

TEST(StateCache, AHeldStateContinuesALongerPromptAsFeedingItWhole) {
  auto cache = StateCache::open(stories(), {});
  ASSERT_TRUE(cache.ok()) << cache.message();
  const auto tokens = conversation(20, 12);
  (*cache)->put(fed(tokens, options()), "a");
  EXPECT_NE((*cache)->held("a"), nullptr);
  EXPECT_EQ((*cache)->held("b"), nullptr);
  const auto prompt = extended(tokens);
  const StateMatch m = (*cache)->find(prompt, options().cache);
  ASSERT_TRUE(m);
  EXPECT_TRUE(m.in_memory);
  EXPECT_EQ(m.n_tokens, static_cast<int64_t>(tokens.size()));
  EXPECT_GT(m.bytes, 0u);
  // Another budget is another cache: no match.
  auto other = parse_cache_options("tova", 9, "exact", "f32");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE((*cache)->find(prompt, *other));
  // The prompt itself (not strictly longer) is not continued.
  EXPECT_FALSE((*cache)->find(tokens, options().cache));

  auto s = (*cache)->take(m, prompt, options());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ((*cache)->stats().n_held, 0);
  EXPECT_EQ((*cache)->held_bytes(), 0u);
  (*s)->queue(std::span<const int32_t>(prompt).subspan(tokens.size()));
  std::vector<Session*> one = {s->get()};
  ASSERT_TRUE(Batch(stories()).drain(one).ok());
  auto whole = fed(prompt, options());
  ASSERT_TRUE(whole->has_logits() && (*s)->has_logits());
  EXPECT_EQ(std::vector<float>((*s)->logits().begin(), (*s)->logits().end()),
            std::vector<float>(whole->logits().begin(), whole->logits().end()));
}

TEST(StateCache, LeastRecentlyUsedLeaveByCountToTheSpillDirectoryAndComeBack) {
  const std::string dir = testing::make_temp_dir();
  auto cache = StateCache::open(stories(), {.max_states = 2, .spill_dir = dir});
  ASSERT_TRUE(cache.ok()) << cache.message();
  const auto a = conversation(20, 10), b = conversation(40, 10), c = conversation(60, 10);
  (*cache)->put(fed(a, options()), "a");
  (*cache)->put(fed(b, options()), "b");
  (*cache)->put(fed(c, options()), "c");
  StateCacheStats st = (*cache)->stats();
  EXPECT_EQ(st.n_held, 2);
  EXPECT_EQ(st.n_spilled, 1);
  EXPECT_EQ(st.n_stored, 1);
  EXPECT_EQ((*cache)->held("a"), nullptr);  // the least recently used went to disk
  const StateMatch m = (*cache)->find(extended(a), options().cache);
  ASSERT_TRUE(m);
  EXPECT_FALSE(m.in_memory);
  auto s = (*cache)->take(m, extended(a), options());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ((*s)->history(), a);
  EXPECT_EQ((*cache)->stats().n_restored, 1);
  EXPECT_EQ((*cache)->stats().n_stored, 0);
  // flush: every held state to disk, memory empty.
  (*cache)->flush();
  st = (*cache)->stats();
  EXPECT_EQ(st.n_held, 0);
  EXPECT_EQ(st.n_stored, 2);
}

TEST(StateCache, TheByteBudgetCountsWhatTheOwnerReservesBeside) {
  const uint64_t one = fed(conversation(20, 10), options())->stats().kv_capacity;
  auto cache = StateCache::open(stories(), {.max_bytes = 2 * one + one / 2});
  ASSERT_TRUE(cache.ok());
  (*cache)->put(fed(conversation(20, 10), options()), "a");
  (*cache)->put(fed(conversation(40, 10), options()), "b");
  EXPECT_EQ((*cache)->held_bytes(), 2 * one);
  // Beside `one` reserved bytes only one state fits: the older goes (no spill directory: dropped).
  (*cache)->put(fed(conversation(60, 10), options()), "c", one);
  EXPECT_EQ((*cache)->stats().n_held, 1);
  EXPECT_NE((*cache)->held("c"), nullptr);
  // Room for a request: the held state leaves unless it is the one being taken.
  const StateMatch keep = (*cache)->find(extended(conversation(60, 10)), options().cache);
  ASSERT_TRUE(keep.in_memory);
  EXPECT_TRUE((*cache)->make_room(2 * one, 0, keep));  // taking it frees its own bytes
  EXPECT_EQ((*cache)->stats().n_held, 1);
  EXPECT_FALSE((*cache)->make_room(3 * one, 0, keep));
  EXPECT_TRUE((*cache)->make_room(2 * one, 0));
  EXPECT_EQ((*cache)->stats().n_held, 0);
  EXPECT_FALSE((*cache)->make_room(3 * one, 0));
}

TEST(StateCache, StatesThatCannotContinueExactlyAreNotHeld) {
  auto cache = StateCache::open(stories(), {});
  ASSERT_TRUE(cache.ok());
  EXPECT_FALSE(StateCache::reusable(options("tova", "chunk:4").cache));
  EXPECT_TRUE(StateCache::reusable(options().cache));
  (*cache)->put(fed(conversation(20, 10), options("tova", "chunk:4")), "a");
  EXPECT_EQ((*cache)->stats().n_held, 0);
  EXPECT_FALSE((*cache)->find(extended(conversation(20, 10)), options("tova", "chunk:4").cache));
}

TEST(StateCache, AnUnusableSpillDirectoryIsAnErrorNamingTheField) {
  const std::string file = testing::make_temp_dir() + "/a-file";
  FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  auto cache = StateCache::open(stories(), {.spill_dir = file});
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.message().rfind("spill dir '", 0), 0u) << cache.message();
}

}  // namespace
}  // namespace tova

namespace tova {
namespace {

// A hybrid model (qwen35: Gated DeltaNet layers, lfm2: short convolutions, granitehybrid:
// Mamba2, each with recurrent
// states): a held state is only ever continued whole. A prompt that shares part of its tokens
// and then differs finds nothing (a recurrent state cannot be cut back to that shorter prefix);
// one that extends it continues to the logits of feeding it whole.
class HybridStateCache : public ::testing::TestWithParam<std::string> {};

TEST_P(HybridStateCache, AHybridModelsStateIsContinuedWholeOrNotAtAll) {
  auto e = Engine::load(
      {.model_path = std::string(TOVA_TEST_DATA_DIR) + "/arch/" + GetParam() + "-f32.gguf",
       .n_threads = 1});
  ASSERT_TRUE(e.ok()) << e.message();
  auto feed = [&](const std::vector<int32_t>& t) {
    auto s = (*e)->new_session(options());
    EXPECT_TRUE(s.ok()) << s.message();
    (*s)->queue(t);
    std::vector<Session*> one = {s->get()};
    EXPECT_TRUE(Batch(**e).drain(one).ok());
    return std::move(*s);
  };
  auto cache = StateCache::open(**e, {});
  ASSERT_TRUE(cache.ok()) << cache.message();
  const auto tokens = conversation(20, 12);
  (*cache)->put(feed(tokens), "a");
  auto diverging = tokens;
  diverging[6] = 300;
  diverging.push_back(301);
  EXPECT_FALSE((*cache)->find(diverging, options().cache));
  const auto prompt = extended(tokens);
  const StateMatch m = (*cache)->find(prompt, options().cache);
  ASSERT_TRUE(m);
  EXPECT_EQ(m.n_tokens, static_cast<int64_t>(tokens.size()));
  auto s = (*cache)->take(m, prompt, options());
  ASSERT_TRUE(s.ok()) << s.message();
  (*s)->queue(std::span<const int32_t>(prompt).subspan(tokens.size()));
  std::vector<Session*> one = {s->get()};
  ASSERT_TRUE(Batch(**e).drain(one).ok());
  // Prompts run through the chunked delta rule (chunks of 64 from where each feed starts), so a
  // continued state rounds its products at other chunk boundaries than a whole feed: equal
  // within float rounding, not bit for bit (the kernels' own test bounds the forms at 2e-5).
  auto whole = feed(prompt);
  const auto got = (*s)->logits();
  const auto want = whole->logits();
  ASSERT_EQ(got.size(), want.size());
  float max_diff = 0.f;
  for (size_t i = 0; i < got.size(); ++i) max_diff = std::max(max_diff, std::abs(got[i] - want[i]));
  EXPECT_LE(max_diff, 1e-5f);
}

// qwen35's and qwen3next's Gated DeltaNet states, lfm2's convolution states, granitehybrid's
// and nemotron_h's Mamba2 states (nemotron_h's feed-forward layers keep none), falcon-h1's K/V
// and Mamba2 state in every layer.
INSTANTIATE_TEST_SUITE_P(Families, HybridStateCache,
                         ::testing::Values("qwen35", "lfm2", "granitehybrid", "nemotron_h",
                                           "qwen3next", "falcon-h1"));

}  // namespace
}  // namespace tova
