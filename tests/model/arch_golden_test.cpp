// Each architecture fixture (tests/data/arch, written by `tova make-random --arch`) against
// llama.cpp's logits and greedy tokens (scripts/make_arch_goldens.sh). The fixtures are F32, so
// the tolerance is golden/README.md's for F32 models: max |diff| < 1e-3 and the same argmax at
// every one of the 128 positions; greedy decoding of 64 tokens must be equal token for token.
//
// Except for GELU: llama.cpp's CPU backend rounds every GELU input to F16 and reads the result
// from a table (GGML_GELU_FP16 in ggml-cpu/vec.h), which moves the Gemma fixtures' logits by up
// to 3.3e-3; tova computes the tanh approximation in float. With that table switched off in a
// separate llama.cpp build (2026-11-24, docs/ARCHITECTURES.md), llama.cpp and tova agree to
// 6.9e-6 (gemma2) and 8.6e-6 (gemma3). So the Gemma families allow max |diff| < 5e-3 against
// stock llama.cpp, with every argmax and the greedy tokens still identical.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "model/arch.h"
#include "model/fixture/families.h"
#include "model_test_util.h"

namespace tova::testing {
namespace {

std::string golden_arch_path(const std::string& file) {
  return std::string(TOVA_TEST_DATA_DIR) + "/arch/" + file;
}

// qwen3next's fixture carries float rounding further than the others (its logits are of the
// same size: rms 1.20 against qwen35moe's 1.19; why, not yet known): max |diff| 8.8e-4 on x86
// (AVX3_DL); under qemu (2026-12-08) 1.17e-3 on NEON and SVE 128, 1.22e-3 on SVE 256, 1.64e-3
// on SVE 512, at relative L2 4.3e-5 to 6.5e-5, every argmax equal. Held to 2e-3 there, the
// relative L2 to 1e-4 (issue 46's F32 rule is 1e-3) and every argmax below; the other
// qwen3next fixtures keep 1e-3.
double tolerance(const std::string& family) {
  if (family == "qwen3next") return 2e-3;
  return family.starts_with("gemma") ? 5e-3 : 1e-3;
}

class ArchGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ArchGolden, LogitsMatchLlamaCppAtEveryPosition) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(golden_arch_path(GetParam() + "-f32.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  const int n_vocab = (*m)->config().n_vocab;
  const auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ThreadPool pool(2);
  const auto mine = all_logits(**m, ids, cache_options("full", 0), 64, pool);
  const auto cpp = read_f32(golden_arch_path(GetParam() + "-f32.logits.f32"));
  ASSERT_EQ(cpp.size(), mine.size());
  double max_diff = 0, num = 0, den = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    const double d = static_cast<double>(mine[i]) - cpp[i];
    max_diff = std::max(max_diff, std::fabs(d));
    num += d * d;
    den += static_cast<double>(cpp[i]) * cpp[i];
  }
  if (GetParam().starts_with("gemma4")) {
    // Six layers of llama.cpp's F16-table GELU behind per-head q/k/v norms: relative L2 4.3e-4,
    // max |diff| 3.6e-3 (2026-11-29): held to the Gemma families' max |diff| < 5e-3 (above) and
    // to what was measured at every position but one near-tie: argmax at 127 of 128.
    EXPECT_LT(max_diff, tolerance(GetParam()));
    EXPECT_LT(std::sqrt(num / den), 2e-3);
    int agree = 0;
    for (size_t p = 0; p < ids.size(); ++p) {
      agree += argmax_row(&mine[p * n_vocab], n_vocab) == argmax_row(&cpp[p * n_vocab], n_vocab);
    }
    EXPECT_GE(agree, static_cast<int>(ids.size()) - 1);
    std::printf("%s: max |diff| %.3g, relative L2 %.3g, argmax %d of %zu\n", GetParam().c_str(),
                max_diff, std::sqrt(num / den), agree, ids.size());
    return;
  }
  EXPECT_LT(max_diff, tolerance(GetParam()));
  if (GetParam() == "qwen3next") EXPECT_LT(std::sqrt(num / den), 1e-4);
  for (size_t p = 0; p < ids.size(); ++p) {
    EXPECT_EQ(argmax_row(&mine[p * n_vocab], n_vocab), argmax_row(&cpp[p * n_vocab], n_vocab))
        << "position " << p;
  }
  std::printf("%s: max |diff| %.3g, relative L2 %.3g\n", GetParam().c_str(), max_diff,
              std::sqrt(num / den));
}

// tova's 64 greedy tokens after the first 16 of tokens-128 equal llama.cpp's; or, with
// teacher_forced >= 0, llama.cpp's tokens fed back one at a time and at least that many of them
// tova's argmax too.
// prompt_step: the 16 prompt tokens fed in steps of this many (16: one batch).
void expect_greedy_64(const std::string& name, int teacher_forced = -1, int prompt_step = 16) {
  auto m = model::Model::load(golden_arch_path(name + ".gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  const int n_vocab = (*m)->config().n_vocab;
  auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ids.resize(16);
  const auto want = read_ids(golden_arch_path(name + ".greedy.json"));
  ASSERT_EQ(want.size(), 64u);
  ThreadPool pool(2);
  auto state = runtime::make_state(**m, cache_options("full", 0), 16 + 64);
  ASSERT_TRUE(state.ok()) << state.message();
  model::ForwardScratch scratch;
  std::vector<float> logits(n_vocab);
  std::vector<model::BatchToken> batch;
  for (size_t i = 0; i < ids.size(); ++i) {
    batch.push_back({.token = ids[i], .state = state->get(), .logits = i + 1 == ids.size()});
    if (batch.size() == static_cast<size_t>(prompt_step) && i + 1 < ids.size()) {
      ASSERT_TRUE((*m)->forward(batch, pool, scratch, nullptr).ok());
      batch.clear();
    }
  }
  std::vector<int32_t> got;
  int agree = 0;
  for (int t = 0; t < 64; ++t) {
    auto st = (*m)->forward(batch, pool, scratch, logits.data());
    ASSERT_TRUE(st.ok()) << st.message();
    got.push_back(argmax_row(logits.data(), n_vocab));
    agree += got.back() == want[t];
    const int32_t next = teacher_forced >= 0 ? want[t] : got.back();
    batch = {{.token = next, .state = state->get(), .logits = true}};
  }
  if (teacher_forced >= 0) {
    std::printf("%s, prompt in steps of %d, teacher-forced: argmax %d of 64\n", name.c_str(),
                prompt_step, agree);
    EXPECT_GE(agree, teacher_forced) << name;
  } else {
    EXPECT_EQ(got, want);
  }
}

TEST_P(ArchGolden, Greedy64EqualsLlamaCpp) {
  TOVA_REQUIRE_SHARED();
  expect_greedy_64(GetParam() + "-f32");
}

// Q8_0 weights: tova's default mode rounds activations to Q8_0 blocks as llama.cpp does, so it
// targets llama.cpp's logits (golden/README.md: relative L2 < 5e-3) and its argmax at >= 90% of
// positions.
class ArchGoldenQ8 : public ::testing::TestWithParam<std::string> {};

// Gemma 4's E and MoE fixtures at Q8_0 (nine layers with per-layer inputs and double-wide
// feed-forwards; six layers with a dense and an expert feed-forward each) measure a relative L2
// of 3.03e-2 and 3.55e-2 against llama.cpp (2026-11-29), above the 3e-2 of the other quantized
// fixtures: llama.cpp's GELU is a float16 table (a relative error of ~3e-4 per activation), and
// rounding every activation to int8 blocks turns that into different int8 values from the
// first token on. A throwaway build of tova with llama.cpp's table emulated in gelu_mul
// measured 6e-8 at every position up to a single rounding flip (position 27 for gemma4e, 11
// for gemma4moe, 24 for gemma4), 1.96e-2 / 2.21e-2 in all (docs/ARCHITECTURES.md, gemma4).
// Held to 4e-2 and the argmax at >= 90% of the positions; their F32 files to 2e-3 (above).
constexpr double kGemma4Q8Bound = 4e-2;

TEST_P(ArchGoldenQ8, LogitsMatchLlamaCppWithQ8Activations) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(golden_arch_path(GetParam() + "-q8_0.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  const int n_vocab = (*m)->config().n_vocab;
  const auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ThreadPool pool(2);
  const auto mine = all_logits(**m, ids, cache_options("full", 0), 64, pool);
  const auto cpp = read_f32(golden_arch_path(GetParam() + "-q8_0.logits.f32"));
  ASSERT_EQ(cpp.size(), mine.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    num += (static_cast<double>(mine[i]) - cpp[i]) * (static_cast<double>(mine[i]) - cpp[i]);
    den += static_cast<double>(cpp[i]) * cpp[i];
  }
  // smollm3's fixture is four layers deep (twice the others) to hold a NoPE layer: its rounding
  // of activations to Q8_0 blocks compounds to a relative L2 of 1.6e-2 (2026-11-29), held to
  // the 3e-2 of the quantized mixtures; its 64 greedy tokens are still llama.cpp's.
  // gemma4: six layers, and llama.cpp's F16-table GELU (above).
  const bool deep = GetParam() == "smollm3" || GetParam().starts_with("gemma4");
  EXPECT_LT(std::sqrt(num / den), GetParam() == "gemma4e" ? kGemma4Q8Bound : deep ? 3e-2 : 5e-3);
  int agree = 0;
  for (size_t p = 0; p < ids.size(); ++p) {
    agree += argmax_row(&mine[p * n_vocab], n_vocab) == argmax_row(&cpp[p * n_vocab], n_vocab);
  }
  EXPECT_GE(agree, at_least_percent(ids.size(), 90));
  std::printf("%s q8_0: relative L2 %.3g, argmax %d of %zu\n", GetParam().c_str(),
              std::sqrt(num / den), agree, ids.size());
}

TEST_P(ArchGoldenQ8, Greedy64EqualsLlamaCpp) {
  TOVA_REQUIRE_SHARED();
  if (GetParam() == "gemma4e") {
    // llama.cpp's float16 GELU table moves this fixture's Q8_0 logits by 3e-2 (kGemma4Q8Bound),
    // so a free-running continuation parts from llama.cpp's at the first near-tie. Since the
    // fixture keeps per_layer_model_proj in F16 as llama-quantize does (2026-12-07), that is
    // token 9 whether the prompt is one step or sixteen: llama.cpp's Q8_0 continuation leaves
    // its own F32 one there (279 where F32 gives 384) while tova's Q8_0 continuation follows the
    // F32 one. So both are held, as scripts/check_heldback.sh holds quantized files, to
    // llama.cpp's continuation fed back (teacher-forced): tova's argmax at >= 90 % of the 64
    // tokens (measured 61 of 64 for either prompt step).
    expect_greedy_64(GetParam() + "-q8_0", 58);
    expect_greedy_64(GetParam() + "-q8_0", 58, 1);
    return;
  }
  expect_greedy_64(GetParam() + "-q8_0");
}

INSTANTIATE_TEST_SUITE_P(Families, ArchGoldenQ8,
                         ::testing::Values("qwen3", "phi3", "smollm3", "gemma4", "gemma4e"));

// Mixtures of experts at Q8_0: rounding the activations moves a small random MoE network by
// more than a dense one (a near-tie in a router can pick another expert: the token's output
// then differs by a whole expert), so these compare with llama.cpp's logits within a relative
// L2 of 3e-2 and the same argmax at >= 90% of the positions (issue 33).
class ArchGoldenMoeQ8 : public ::testing::TestWithParam<std::string> {};

TEST_P(ArchGoldenMoeQ8, LogitsMatchLlamaCppWithQ8Activations) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(golden_arch_path(GetParam() + "-q8_0.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  const int n_vocab = (*m)->config().n_vocab;
  const auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ThreadPool pool(2);
  const auto mine = all_logits(**m, ids, cache_options("full", 0), 64, pool);
  const auto cpp = read_f32(golden_arch_path(GetParam() + "-q8_0.logits.f32"));
  ASSERT_EQ(cpp.size(), mine.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    num += (static_cast<double>(mine[i]) - cpp[i]) * (static_cast<double>(mine[i]) - cpp[i]);
    den += static_cast<double>(cpp[i]) * cpp[i];
  }
  EXPECT_LT(std::sqrt(num / den), GetParam() == "gemma4moe" ? kGemma4Q8Bound : 3e-2);
  int agree = 0;
  for (size_t p = 0; p < ids.size(); ++p) {
    agree += argmax_row(&mine[p * n_vocab], n_vocab) == argmax_row(&cpp[p * n_vocab], n_vocab);
  }
  EXPECT_GE(agree, at_least_percent(ids.size(), 90));
  std::printf("%s q8_0: relative L2 %.3g, argmax %d of %zu\n", GetParam().c_str(),
              std::sqrt(num / den), agree, ids.size());
}

INSTANTIATE_TEST_SUITE_P(Families, ArchGoldenMoeQ8,
                         ::testing::Values("qwen3moe", "qwen2moe", "mixtral", "gemma4moe"));
// The hybrids (Gated DeltaNet, short convolutions or Mamba2 + attention; nemotron_h's
// squared-ReLU feed-forward layers besides; falcon-h1's attention beside Mamba2) at Q8_0 under the
// same bounds: the recurrent state carries a token's rounding into later ones (qwen35moe's router
// adds the MoE case).
INSTANTIATE_TEST_SUITE_P(Hybrids, ArchGoldenMoeQ8,
                         ::testing::Values("qwen35", "qwen35moe", "lfm2", "lfm2moe",
                                           "granitehybrid", "granitehybrid-moe", "nemotron_h",
                                           "nemotron_h_moe", "nemotron_h_moe-latent",
                                           "qwen3next", "qwen3next-ssm_in", "falcon-h1"));

// gpt-oss as it ships (MXFP4 experts, Q8_0 attention, embedding and output; llama-quantize's
// MXFP4_MOE), against llama.cpp's logits of the same file: within a relative L2 of 3e-2 and
// the same argmax at >= 90% of the positions, as the other quantized mixtures.
TEST(ArchGoldenMxfp4, GptOssLogitsMatchLlamaCpp) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(golden_arch_path("gpt-oss-mxfp4.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  const int n_vocab = (*m)->config().n_vocab;
  const auto ids = read_ids(shared_path("golden/tokens-128.json"));
  ThreadPool pool(2);
  const auto mine = all_logits(**m, ids, cache_options("full", 0), 64, pool);
  const auto cpp = read_f32(golden_arch_path("gpt-oss-mxfp4.logits.f32"));
  ASSERT_EQ(cpp.size(), mine.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    num += (static_cast<double>(mine[i]) - cpp[i]) * (static_cast<double>(mine[i]) - cpp[i]);
    den += static_cast<double>(cpp[i]) * cpp[i];
  }
  EXPECT_LT(std::sqrt(num / den), 3e-2);
  int agree = 0;
  for (size_t p = 0; p < ids.size(); ++p) {
    agree += argmax_row(&mine[p * n_vocab], n_vocab) == argmax_row(&cpp[p * n_vocab], n_vocab);
  }
  EXPECT_GE(agree, at_least_percent(ids.size(), 90));
}

// Every fixture of every registered architecture (a family added without goldens fails here).
std::vector<std::string> fixture_names() {
  std::vector<std::string> names;
  for (const model::FixtureFamily* a : model::all_fixture_families()) {
    for (const model::RandomShape& f : a->fixtures()) names.push_back(f.name);
  }
  return names;
}

INSTANTIATE_TEST_SUITE_P(Families, ArchGolden, ::testing::ValuesIn(fixture_names()));

}  // namespace
}  // namespace tova::testing
