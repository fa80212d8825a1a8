// The load-time repack (model/weight_repack.h; ModelOptions::repack): which matrices it takes,
// that it keeps one copy of the weights (in place, mapped or read into memory), and that a
// repacked model computes what the file's layout computes: prompts (calls of
// kMatmulBatchInvariantTokens tokens or more) bit for bit, single tokens and verify-sized steps
// within float rounding of the int8 sums' order.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/matmul.h"
#include "model_test_util.h"

namespace tova {
namespace {

double rel_l2(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

class WeightRepack : public ::testing::TestWithParam<std::string> {};

TEST_P(WeightRepack, ComputesWhatTheFileLayoutComputes) {
  TOVA_REQUIRE_SHARED();
  const std::string path = testing::shared_path("models/" + GetParam() + ".gguf");
  auto plain = model::Model::load(path, {.repack = false});
  ASSERT_TRUE(plain.ok()) << plain.message();
  EXPECT_EQ((*plain)->repack_stats().n_matrices, 0);
  const std::vector<int32_t> all =
      testing::read_ids(testing::shared_path("golden/tokens-128.json"));
  const std::vector<int32_t> ids(all.begin(), all.begin() + 40);
  const int n_vocab = (*plain)->config().n_vocab;
  ThreadPool pool(2);
  const CacheOptions co = testing::cache_options("full", 0);
  const std::vector<float> ref_prompt =
      testing::all_logits(**plain, ids, co, kernels::kMatmulBatchInvariantTokens, pool);
  const std::vector<float> ref_one = testing::all_logits(**plain, ids, co, 1, pool);
  for (bool mmap : {false, true}) {
    SCOPED_TRACE(mmap ? "mapped" : "read into memory");
    auto packed = model::Model::load(path, {.mmap = mmap, .repack = true});
    ASSERT_TRUE(packed.ok()) << packed.message();
    const model::ModelWeights& w = (*packed)->weights();
    // Every layer's q, k, v, o, gate, up and down (all of 8k rows here) and nothing else.
    EXPECT_EQ((*packed)->repack_stats().n_matrices, 7 * (*packed)->config().n_layer);
    EXPECT_EQ(w.layers[0].wq.type, GgmlType::kQ4_0_R8);
    EXPECT_EQ(w.layers[0].w_down.type, GgmlType::kQ4_0_R8);
    EXPECT_EQ(w.token_embd.type, (*plain)->weights().token_embd.type);
    EXPECT_EQ(w.n_bytes, (*plain)->weights().n_bytes);
    EXPECT_EQ((*packed)->fingerprint(), (*plain)->fingerprint());
    // Prompts: the token-lane tiles unpack rows into Q4_0's form: the same bits.
    const std::vector<float> prompt =
        testing::all_logits(**packed, ids, co, kernels::kMatmulBatchInvariantTokens, pool);
    EXPECT_EQ(prompt, ref_prompt);
    // Single tokens (the group kernels, one token) and steps of 4 (a verify step's size): the
    // block sums are exact; only the float sums' order differs.
    for (int n_batch : {1, 4}) {
      const std::vector<float> got = testing::all_logits(**packed, ids, co, n_batch, pool);
      const std::vector<float> ref =
          n_batch == 1 ? ref_one : testing::all_logits(**plain, ids, co, n_batch, pool);
      int agree = 0;
      for (size_t p = 0; p < ids.size(); ++p) {
        const float* a = &got[p * n_vocab];
        const float* b = &ref[p * n_vocab];
        if (p < 8) EXPECT_LT(rel_l2(a, b, n_vocab), 1e-4) << "n_batch=" << n_batch << " pos " << p;
        agree += testing::argmax_row(a, n_vocab) == testing::argmax_row(b, n_vocab);
      }
      EXPECT_GE(agree, 36) << "n_batch=" << n_batch << ": argmax agreement (>= 90% of 40)";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Q4_0Models, WeightRepack,
                         ::testing::Values("rand-llama-gqa-q4_0", "rand-qwen2-q4_0"));

TEST(WeightRepack, LeavesOtherTypesAlone) {
  TOVA_REQUIRE_SHARED();
  auto m =
      model::Model::load(testing::shared_path("models/rand-llama-gqa-q8_0.gguf"), {.repack = true});
  ASSERT_TRUE(m.ok()) << m.message();
  EXPECT_EQ((*m)->repack_stats().n_matrices, 0);
  EXPECT_EQ((*m)->weights().layers[0].wq.type, GgmlType::kQ8_0);
}

}  // namespace
}  // namespace tova
