// The multi-token prediction block drafts as llama.cpp's draft-mtp path does: on the qwen35-mtp,
// qwen35moe-mtp and qwen3next-mtp fixtures, the logits each drafted token was chosen from, and
// the drafts, equal llama.cpp's (goldens by scripts/make_mtp_goldens.sh: 4 drafts after the
// first 12 tokens of tokens-128.json, then after 5 more accepted tokens, twice). The target is fed as a session
// would be (the rows of every fed token handed to the drafter), the drafter syncs the block's
// K/V from them and chains its own output rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/model_test_util.h"
#include "runtime/drafter.h"
#include "runtime/engine_access.h"
#include "tova/engine.h"

namespace tova {
namespace {

class NextnDraft : public ::testing::TestWithParam<std::string> {};

TEST_P(NextnDraft, DraftLogitsMatchLlamaCpp) {
  TOVA_REQUIRE_SHARED();
  const std::string base = std::string(TOVA_TEST_DATA_DIR) + "/arch/" + GetParam() + "-mtp-f32";
  auto e = Engine::load({.model_path = base + ".gguf", .n_threads = 2});
  ASSERT_TRUE(e.ok()) << e.message();
  const model::Model& m = EngineAccess::model(**e);
  const int n_vocab = m.config().n_vocab, n_embd = m.config().n_embd;
  const std::vector<int32_t> ids =
      testing::read_ids(testing::shared_path("golden/tokens-128.json"));
  const std::vector<float> golden = testing::read_f32(base + ".draft.logits.f32");
  std::ifstream jf(base + ".draft.json");
  const auto drafts = nlohmann::json::parse(jf).get<std::vector<std::vector<int32_t>>>();
  constexpr int kPrompt = 12, kDraft = 4, kStep = 5, kRounds = 3;
  ASSERT_EQ(golden.size(), static_cast<size_t>(kRounds * kDraft) * n_vocab);

  const CacheOptions full = testing::cache_options("full", 0);
  auto d =
      runtime::make_mtp_drafter(**e, {.type = "draft-mtp", .n_max = kDraft, .p_min = 0.f}, full);
  ASSERT_TRUE(d.ok()) << d.message();
  auto state = runtime::make_state(m, full, 0);
  ASSERT_TRUE(state.ok()) << state.message();
  model::ForwardScratch scratch;
  std::vector<float> logits(n_vocab), hidden;
  auto feed = [&](int a, int b) {
    std::vector<model::BatchToken> batch;
    for (int p = a; p < b; ++p) {
      batch.push_back({.token = ids[p], .state = state->get(), .logits = p + 1 == b});
    }
    hidden.resize(static_cast<size_t>(b - a) * n_embd);
    ASSERT_TRUE(m.forward(batch, EngineAccess::pool(**e), scratch, logits.data(), {}, hidden.data()).ok());
    (*d)->observe(a, std::span(ids).subspan(a, b - a), hidden.data());
  };
  feed(0, kPrompt - 1);
  int P = kPrompt;
  for (int r = 0; r < kRounds; ++r) {
    SCOPED_TRACE(r);
    auto out = (*d)->draft(std::span(ids).first(P), kDraft);
    ASSERT_TRUE(out.ok()) << out.message();
    EXPECT_EQ(*out, drafts[r]);
    const std::span<const float> got = (*d)->last_logits();
    ASSERT_EQ(got.size(), static_cast<size_t>(kDraft) * n_vocab);
    for (int i = 0; i < kDraft; ++i) {
      const float* want = &golden[(static_cast<size_t>(r) * kDraft + i) * n_vocab];
      double err = 0, ref = 0;
      for (int t = 0; t < n_vocab; ++t) {
        const double x = got[static_cast<size_t>(i) * n_vocab + t] - want[t];
        err += x * x;
        ref += static_cast<double>(want[t]) * want[t];
      }
      EXPECT_LE(std::sqrt(err / ref), 1e-4) << "draft " << i;
    }
    feed(P - 1, P - 1 + kStep);
    P += kStep;
  }
}

// A long history (1100 tokens): the block syncs in passes of at most 512 pairs; a drafter that
// first drafts at the end equals one that drafted every 100 tokens on the way (drafts and
// their logits).
TEST_P(NextnDraft, LongSyncInPassesEqualsStepwiseSync) {
  TOVA_REQUIRE_SHARED();
  const std::string base = std::string(TOVA_TEST_DATA_DIR) + "/arch/" + GetParam() + "-mtp-f32";
  auto e = Engine::load({.model_path = base + ".gguf", .n_threads = 2});
  ASSERT_TRUE(e.ok()) << e.message();
  const model::Model& m = EngineAccess::model(**e);
  const int n_vocab = m.config().n_vocab, n_embd = m.config().n_embd;
  const std::vector<int32_t> t128 =
      testing::read_ids(testing::shared_path("golden/tokens-128.json"));
  std::vector<int32_t> ids;
  for (int i = 0; ids.size() < 1100; ++i) ids.push_back(t128[(i * 7) % t128.size()]);
  const CacheOptions full = testing::cache_options("full", 0);
  const SpeculativeOptions so{.type = "draft-mtp", .n_max = 3, .p_min = 0.f};
  auto once = runtime::make_mtp_drafter(**e, so, full);
  auto often = runtime::make_mtp_drafter(**e, so, full);
  ASSERT_TRUE(once.ok() && often.ok());
  auto state = runtime::make_state(m, full, 0);
  ASSERT_TRUE(state.ok());
  model::ForwardScratch scratch;
  std::vector<float> logits(n_vocab), hidden;
  const int n = static_cast<int>(ids.size());
  for (int a = 0; a < n - 1; a += 100) {
    const int b = std::min(n - 1, a + 100);
    std::vector<model::BatchToken> batch;
    for (int p = a; p < b; ++p) batch.push_back({.token = ids[p], .state = state->get()});
    hidden.resize(static_cast<size_t>(b - a) * n_embd);
    ASSERT_TRUE(m.forward(batch, EngineAccess::pool(**e), scratch, logits.data(), {}, hidden.data()).ok());
    const auto toks = std::span(ids).subspan(a, b - a);
    (*once)->observe(a, toks, hidden.data());
    (*often)->observe(a, toks, hidden.data());
    ASSERT_TRUE((*often)->draft(std::span(ids).first(b + 1), 3).ok());
  }
  auto x = (*once)->draft(ids, 3);
  auto y = (*often)->draft(ids, 3);
  ASSERT_TRUE(x.ok() && y.ok());
  EXPECT_EQ(*x, *y);
  const auto lx = (*once)->last_logits(), ly = (*often)->last_logits();
  ASSERT_EQ(lx.size(), ly.size());
  double err = 0, ref = 0;
  for (size_t i = 0; i < lx.size(); ++i) {
    err += (lx[i] - ly[i]) * static_cast<double>(lx[i] - ly[i]);
    ref += ly[i] * static_cast<double>(ly[i]);
  }
  EXPECT_LE(std::sqrt(err / ref), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Families, NextnDraft,
                         ::testing::Values("qwen35", "qwen35moe", "qwen3next"));

}  // namespace
}  // namespace tova
