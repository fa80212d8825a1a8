// Policies on an architecture fixture (qwen3: per-head q/k norms, head_dim * n_head != n_embd,
// NEOX rope). `window` and `sink:4` at k = 32 against llama.cpp's own cache made to drop the
// same positions after every token (scripts/llama_dump.cpp --evict): the spec's absolute
// positions, keys cached after RoPE. Every policy with k >= length equals `full` bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "model_test_util.h"

namespace tova::testing {
namespace {

std::string arch_path(const std::string& file) {
  return std::string(TOVA_TEST_DATA_DIR) + "/arch/" + file;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b, size_t from = 0) {
  double d = 0;
  for (size_t i = from; i < a.size(); ++i) {
    d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  return d;
}

TEST(ArchPolicy, Qwen3WindowAndSinkMatchLlamaCppDroppingTheSamePositions) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(arch_path("qwen3-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  const int n_vocab = (*m)->config().n_vocab;
  const auto ids = read_ids(shared_path("golden/tokens-128.json"));
  const auto full_cpp = read_f32(arch_path("qwen3-f32.logits.f32"));
  ThreadPool pool(2);
  const std::pair<const char*, const char*> cases[] = {{"window", "window-32"},
                                                       {"sink:4", "sink4-32"}};
  for (const auto& [policy, file] : cases) {
    const auto cpp = read_f32(arch_path(std::string("qwen3-f32.") + file + ".logits.f32"));
    ASSERT_EQ(cpp.size(), ids.size() * n_vocab);
    // The golden is not `full` in disguise: past k + 1 tokens it differs.
    EXPECT_GT(max_abs_diff(cpp, full_cpp, 40 * n_vocab), 0.05) << policy;
    for (int n_batch : {1, 16}) {
      const auto mine = all_logits(**m, ids, cache_options(policy, 32), n_batch, pool);
      EXPECT_LT(max_abs_diff(mine, cpp), 1e-3) << policy << " n_batch " << n_batch;
      for (size_t p = 0; p < ids.size(); ++p) {
        EXPECT_EQ(argmax_row(&mine[p * n_vocab], n_vocab), argmax_row(&cpp[p * n_vocab], n_vocab))
            << policy << " position " << p;
      }
    }
  }
}

TEST(ArchPolicy, Qwen3BudgetAtLeastLengthIsBitIdenticalToFull) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(arch_path("qwen3-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  const auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ThreadPool pool(2);
  const auto full = all_logits(**m, ids, cache_options("full", 0), 16, pool);
  for (const char* p : {"window", "sink:4", "h2o", "h2o-head", "tova", "tova-head"}) {
    const auto got = all_logits(**m, ids, cache_options(p, 128), 16, pool);
    EXPECT_EQ(0, std::memcmp(got.data(), full.data(), full.size() * sizeof(float))) << p;
    // One state short of the length: exactly one token was evicted per layer.
    std::unique_ptr<kv::MultiState> st;
    all_logits(**m, ids, cache_options(p, 127), 16, pool, &st);
    EXPECT_EQ(st->layer(0).n_held(), 127) << p;
  }
}

}  // namespace
}  // namespace tova::testing
