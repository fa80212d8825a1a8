// The one feeding loop (runtime/forward_batch.h): the chunk rule, the numbering of logits rows
// over several sequences, and that one batched call gives each sequence what it gets alone.
#include <gtest/gtest.h>

#include "model_test_util.h"
#include "runtime/forward_batch.h"

namespace tova {
namespace {

TEST(ForwardBatch, PromptStepIsTheChunkOrTheMicroBatch) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(testing::shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  auto exact = runtime::make_state(**m, testing::cache_options("tova", 24), 64);
  ASSERT_TRUE(exact.ok()) << exact.message();
  EXPECT_EQ(runtime::prompt_step(**exact, 16), 16);
  EXPECT_EQ(runtime::prompt_step(**exact, 0), 1);
  CacheOptions co = testing::cache_options("tova", 24);
  co.prefill = *parse_prefill("chunk:8");
  auto chunked = runtime::make_state(**m, co, 64);
  ASSERT_TRUE(chunked.ok()) << chunked.message();
  EXPECT_EQ(runtime::prompt_step(**chunked, 16), 8);
  EXPECT_EQ(runtime::prompt_step(**chunked, 3), 8);  // chunks are taken whole
}

TEST(ForwardBatch, RowsFollowTheOrderAddedAndMatchEachSequenceAlone) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(testing::shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  const std::vector<int32_t> ids =
      testing::read_ids(testing::shared_path("golden/tokens-128.json"));
  const size_t n_vocab = static_cast<size_t>((*m)->config().n_vocab);
  ThreadPool pool(2);
  model::ForwardScratch scratch;
  auto a = runtime::make_state(**m, testing::cache_options("tova", 24), 64);
  auto b = runtime::make_state(**m, testing::cache_options("full", 0), 64);
  ASSERT_TRUE(a.ok() && b.ok());
  runtime::ForwardBatch batch;
  const std::span<const int32_t> pa = std::span(ids).first(40);
  const std::span<const int32_t> pb = std::span(ids).subspan(40, 30);
  EXPECT_EQ(batch.add(**a, pa, runtime::LogitsAt::kNone), -1);
  EXPECT_EQ(batch.add(**b, pb.first(10), runtime::LogitsAt::kEach), 0);
  EXPECT_EQ(batch.add(**b, pb.subspan(10), runtime::LogitsAt::kLast), 10);
  EXPECT_EQ(batch.n_tokens(), 70u);
  EXPECT_EQ(batch.n_rows(), 11);
  ASSERT_TRUE(batch.run(**m, pool, scratch).ok());

  // Alone: the same tokens fed to fresh sequences, one call each.
  auto b1 = runtime::make_state(**m, testing::cache_options("full", 0), 64);
  ASSERT_TRUE(b1.ok());
  runtime::ForwardBatch alone;
  alone.add(**b1, pb, runtime::LogitsAt::kEach);
  std::vector<float> rows(30 * n_vocab);
  ASSERT_TRUE(alone.run(**m, pool, scratch, rows.data()).ok());
  for (int r = 0; r < 10; ++r) {
    const float* got = batch.row(r);
    for (size_t v = 0; v < n_vocab; ++v) {
      ASSERT_NEAR(got[v], rows[r * n_vocab + v], 1e-4f) << "row " << r;
    }
  }
  for (size_t v = 0; v < n_vocab; ++v) ASSERT_NEAR(batch.row(10)[v], rows[29 * n_vocab + v], 1e-4f);
  EXPECT_EQ((*a)->n_seen(), 40);
  EXPECT_EQ((*b)->n_seen(), 30);
}

}  // namespace
}  // namespace tova
