// Logits of every model in shared/models on tokens-128.json against golden/README.md's
// references (llama.cpp and a float64 reference), all 128 positions.
//
// Which golden each type targets: tova keeps activations in float32 for F32/F16/BF16 weights,
// so those match the float64 reference (`.ref64`); for Q8_0/Q4_0 (and the Q6_K output of Q4_0
// files) it rounds activations to Q8_0/Q8_K blocks exactly as llama.cpp does, so those match
// llama.cpp's logits.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "model_test_util.h"

namespace tova::testing {
namespace {

struct Case {
  std::string model;
  enum Target { kF32, kRef64, kLlamaCpp } target;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.model; }

class LogitsGolden : public ::testing::TestWithParam<Case> {};

TEST_P(LogitsGolden, MatchesReference) {
  TOVA_REQUIRE_SHARED();
  const Case& c = GetParam();
  auto m = model::Model::load(shared_path("models/" + c.model + ".gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  const int n_vocab = (*m)->config().n_vocab;
  const auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ASSERT_EQ(ids.size(), 128u);
  ThreadPool pool(2);
  const auto mine = all_logits(**m, ids, cache_options("full", 0), 64, pool);
  const auto cpp = read_f32(shared_path("golden/" + c.model + ".logits.f32"));
  ASSERT_EQ(cpp.size(), mine.size());

  if (c.target == Case::kF32) {
    double max_diff = 0;
    for (size_t i = 0; i < mine.size(); ++i) {
      max_diff = std::max(max_diff, std::fabs(static_cast<double>(mine[i]) - cpp[i]));
    }
    EXPECT_LT(max_diff, 1e-3);
    for (int p = 0; p < 128; ++p) {
      EXPECT_EQ(argmax_row(&mine[p * n_vocab], n_vocab), argmax_row(&cpp[p * n_vocab], n_vocab))
          << "position " << p;
    }
    return;
  }
  const auto ref64 = read_f32(shared_path("golden/" + c.model + ".ref64.logits.f32"));
  const auto& target = c.target == Case::kRef64 ? ref64 : cpp;
  double num = 0, den = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    num += (static_cast<double>(mine[i]) - target[i]) * (static_cast<double>(mine[i]) - target[i]);
    den += static_cast<double>(target[i]) * target[i];
  }
  const double rel = std::sqrt(num / den);
  EXPECT_LT(rel, c.target == Case::kRef64 ? 2e-3 : 5e-3) << "relative L2 error";
  int agree = 0;
  for (int p = 0; p < 128; ++p) {
    agree += argmax_row(&mine[p * n_vocab], n_vocab) == argmax_row(&ref64[p * n_vocab], n_vocab);
  }
  EXPECT_GE(agree, 116) << "argmax agreement with ref64 (>= 90% of 128)";
}

INSTANTIATE_TEST_SUITE_P(
    AllModels, LogitsGolden,
    ::testing::Values(Case{"stories260K", Case::kF32}, Case{"booklm-3m", Case::kF32},
                      Case{"rand-llama-gqa-f32", Case::kF32}, Case{"rand-qwen2-f32", Case::kF32},
                      Case{"rand-llama-gqa-f16", Case::kRef64},
                      Case{"rand-qwen2-f16", Case::kRef64},
                      Case{"rand-llama-gqa-bf16", Case::kRef64},
                      Case{"rand-qwen2-bf16", Case::kRef64},
                      Case{"rand-llama-gqa-q8_0", Case::kLlamaCpp},
                      Case{"rand-qwen2-q8_0", Case::kLlamaCpp},
                      Case{"rand-llama-gqa-q4_0", Case::kLlamaCpp},
                      Case{"rand-qwen2-q4_0", Case::kLlamaCpp}),
    [](const auto& info) {
      std::string s = info.param.model;
      for (char& ch : s) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return s;
    });

// Every model file in shared/models has a case above.
TEST(LogitsGolden, CoversEveryModel) {
  TOVA_REQUIRE_SHARED();
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(shared_path("models"))) {
    n += e.path().extension() == ".gguf";
  }
  EXPECT_EQ(n, 12);
}

// Micro-batch size must not change the result beyond float rounding of the matmul tiles.
TEST(LogitsGolden, BatchSizeDoesNotMatter) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  const auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ThreadPool pool(2);
  const auto a = all_logits(**m, ids, cache_options("full", 0), 1, pool);
  const auto b = all_logits(**m, ids, cache_options("full", 0), 128, pool);
  double max_diff = 0;
  for (size_t i = 0; i < a.size(); ++i) max_diff = std::max(max_diff, double(std::fabs(a[i] - b[i])));
  EXPECT_LT(max_diff, 1e-4);
}

}  // namespace
}  // namespace tova::testing
