// The retrieval model ../shared/models/niah-13m-f16.gguf (a real trained llama, F16 weights)
// against llama.cpp (tests/data/niah, scripts/make_niah_golden.sh): the logits of
// tokens-128.json, the greedy continuation of its first 16 tokens, and a 1,886-token needle
// prompt whose greedy answer is the needle's number.
//
// llama.cpp rounds the activations of F16 matrix products to F16; tova keeps them in float32
// (as for every F16 model, see logits_golden_test.cpp). The two therefore differ by that
// rounding (a relative L2 error of ~1e-3 here), not by anything in the forward pass.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "model_test_util.h"

namespace tova::testing {
namespace {

std::string niah_data(const std::string& file) {
  return std::string(TOVA_TEST_DATA_DIR) + "/niah/" + file;
}

double rel_l2(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

// Greedy tokens after `prompt` (exact prefill, full cache). `state` (null: a new one) already
// holds `prompt` when `logits` holds its last position's logits.
std::vector<int32_t> greedy(const model::Model& m, const std::vector<int32_t>& prompt, int n,
                            ThreadPool& pool, kv::MultiState* state = nullptr,
                            std::vector<float> logits = {}) {
  const int n_vocab = m.config().n_vocab;
  model::ForwardScratch scratch;
  std::unique_ptr<kv::MultiState> own;
  if (state == nullptr) {
    auto made = runtime::make_state(m, cache_options("full", 0), int64_t(prompt.size()));
    EXPECT_TRUE(made.ok()) << made.message();
    own = std::move(made).value();
    state = own.get();
    logits.resize(n_vocab);
    EXPECT_TRUE(runtime::feed(m, pool, scratch, *state, prompt, 512, logits.data()).ok());
  }
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(argmax_row(logits.data(), n_vocab));
    EXPECT_TRUE(runtime::feed(m, pool, scratch, *state, {&out.back(), 1}, 1, logits.data()).ok());
  }
  return out;
}

class NiahGolden : public ::testing::Test {
 protected:
  void SetUp() override {
    TOVA_REQUIRE_SHARED();
    auto m = model::Model::load(shared_path("models/niah-13m-f16.gguf"));
    ASSERT_TRUE(m.ok()) << m.message();
    model_ = std::move(m).value();
  }
  std::unique_ptr<model::Model> model_;
  ThreadPool pool_{2};
};

TEST_F(NiahGolden, LogitsMatchLlamaCpp) {
  const int n_vocab = model_->config().n_vocab;
  const auto ids = read_ids(shared_path("golden/tokens-128.json"));
  const auto mine = all_logits(*model_, ids, cache_options("full", 0), 64, pool_);
  const auto cpp = read_f32(niah_data("tokens-128.logits.f32"));
  ASSERT_EQ(mine.size(), cpp.size());
  EXPECT_LT(rel_l2(mine.data(), cpp.data(), mine.size()), 4e-3);
  int agree = 0;
  for (int p = 0; p < 128; ++p) {
    agree += argmax_row(&mine[p * n_vocab], n_vocab) == argmax_row(&cpp[p * n_vocab], n_vocab);
  }
  EXPECT_GE(agree, 122) << "argmax agreement with llama.cpp (>= 95% of 128)";
}

TEST_F(NiahGolden, GreedyMatchesLlamaCpp) {
  const auto ids = read_ids(shared_path("golden/tokens-128.json"));
  const std::vector<int32_t> prompt(ids.begin(), ids.begin() + 16);
  EXPECT_EQ(greedy(*model_, prompt, 64, pool_), read_ids(niah_data("tokens-128.greedy.json")));
}

// 1,886 tokens with the needle a third of the way in: the full cache finds it, as llama.cpp
// does, and the last positions' logits agree.
TEST_F(NiahGolden, NeedlePromptAnswerMatchesLlamaCpp) {
  // ~2 s of arithmetic in Release, ~5x that under the sanitizers, which the shorter tests above
  // already run through the same code.
  const int n_vocab = model_->config().n_vocab;
  const auto prompt = read_ids(niah_data("needle-prompt.tokens.json"));
  ASSERT_GT(prompt.size(), 1800u);
  std::unique_ptr<kv::MultiState> state;
  const auto mine = all_logits(*model_, prompt, cache_options("full", 0), 512, pool_, &state);
  const auto cpp = read_f32(niah_data("needle-prompt.last8.logits.f32"));
  ASSERT_EQ(cpp.size(), size_t(8) * n_vocab);
  EXPECT_LT(rel_l2(&mine[mine.size() - cpp.size()], cpp.data(), cpp.size()), 4e-3);
  std::vector<float> last(mine.end() - n_vocab, mine.end());
  EXPECT_EQ(greedy(*model_, prompt, 8, pool_, state.get(), std::move(last)),
            read_ids(niah_data("needle-prompt.greedy.json")));
}

}  // namespace
}  // namespace tova::testing
