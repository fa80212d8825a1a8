// Position modes (spec/POSITIONS.md) against the float64 reference of
// golden/policy-stories260K-positions.json: every (policy, budget, mode) within the tolerances
// of golden/README.md, all configurations as sequences of ONE batch. Then the exactness rules:
// while nothing is evicted every mode is `full`, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>

#include "model_test_util.h"
#include "policy_run_util.h"

namespace tova::testing {
namespace {

struct PositionsGolden {
  std::string policy;
  int budget;
  kv::PositionMode positions;
  double mean_nll;
  std::vector<double> nll;
  std::vector<std::vector<std::vector<int64_t>>> kept;  // [layer][head_kv] sorted positions
};

CacheOptions cache_options(const std::string& policy, int budget,
                                    kv::PositionMode positions = kv::PositionMode::kAbsolute) {
  CacheOptions o = testing::cache_options(policy, budget);
  o.positions = positions;
  return o;
}

std::vector<PolicyRun> positions_run_all(const model::Model& m, const std::vector<int32_t>& ids,
                               const std::vector<PositionsGolden>& gold) {
  std::vector<CacheOptions> configs;
  for (const PositionsGolden& g : gold) configs.push_back(cache_options(g.policy, g.budget, g.positions));
  return run_policies(m, ids, configs);
}

double positions_overlap(const PositionsGolden& g, const PolicyRun& r) { return kept_overlap(g.kept, r.kept); }

TEST(PositionsGolden, EveryPolicyBudgetAndMode) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  std::ifstream in(shared_path("golden/policy-stories260K-positions.json"));
  const nlohmann::json j = nlohmann::json::parse(in);
  const auto ids = j["tokens"].get<std::vector<int32_t>>();
  std::vector<PositionsGolden> gold;
  for (const auto& r : j["results"]) {
    auto mode = kv::parse_position_mode(r["positions"].get<std::string>());
    ASSERT_TRUE(mode.ok()) << mode.message();
    gold.push_back(
        {r["policy"], r["budget"], *mode, r["mean_nll"], r["nll"], r["kept_positions_final"]});
  }
  ASSERT_GE(gold.size(), 36u);
  if (std::getenv("TOVA_SANITIZE_RUN") != nullptr) {
    std::vector<PositionsGolden> some;
    for (size_t i = 0; i < gold.size(); i += 6) some.push_back(gold[i]);
    gold = some;
  }
  const std::vector<PolicyRun> runs = positions_run_all(**m, ids, gold);
  int kept_ok = 0;
  for (size_t c = 0; c < gold.size(); ++c) {
    const PositionsGolden& g = gold[c];
    const PolicyRun& r = runs[c];
    SCOPED_TRACE(g.policy + " k=" + std::to_string(g.budget) + " " +
                 std::string(kv::position_mode_name(g.positions)));
    ASSERT_EQ(r.nll.size(), g.nll.size());
    double mean = 0;
    for (double x : r.nll) mean += x;
    mean /= r.nll.size();
    EXPECT_NEAR(mean, g.mean_nll, 0.005 * g.mean_nll) << "mean NLL";
    const size_t exact_until = std::min<size_t>(g.budget + 1, g.nll.size());
    for (size_t i = 0; i < exact_until; ++i) {
      ASSERT_NEAR(r.nll[i], g.nll[i], 1e-4) << "prediction " << i;
    }
    const double ov = positions_overlap(g, r);
    kept_ok += ov >= 0.95;
    if (ov < 0.95) ADD_FAILURE() << "kept positions overlap only " << ov;
  }
  EXPECT_GE(kept_ok, static_cast<int>(0.9 * gold.size()));
}

// With k >= sequence length nothing is evicted, every gap is 1, and gap and rank rotate each key
// by its own position: every (policy, mode) of the registries equals absolute `full` bit for bit
// (`full` itself included), in exact and chunked prefill.
TEST(PositionsGolden, NothingEvictedIsFullBitForBit) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  auto ids = read_ids(shared_path("golden/tokens-1024.json"));
  ids.resize(200);
  ThreadPool pool(2);
  const auto full = all_logits(**m, ids, cache_options("full", 0), 32, pool);
  const std::vector<std::string> policies = every_policy();
  ASSERT_GE(policies.size(), 12u);
  for (kv::PositionMode mode : kv::kPositionModes) {
    for (const std::string& p : policies) {
      // A policy that scores keys as stored after RoPE (expected-attention) refuses the modes
      // that move positions, with an error naming the mode; absolute is never refused.
      auto probe = runtime::make_state(**m, cache_options(p, 256, mode), 0);
      if (!probe.ok()) {
        EXPECT_NE(mode, kv::PositionMode::kAbsolute) << p << ": " << probe.message();
        EXPECT_NE(probe.message().find(kv::position_mode_name(mode)), std::string::npos)
            << p << ": " << probe.message();
        continue;
      }
      const auto got = all_logits(**m, ids, cache_options(p, 256, mode), 32, pool);
      EXPECT_EQ(0, std::memcmp(got.data(), full.data(), full.size() * sizeof(float)))
          << p << " " << kv::position_mode_name(mode);
    }
    // Chunked prefill (its forward calls take 50 tokens, so compare with absolute chunks).
    auto chunked = cache_options("tova", 256, mode);
    chunked.prefill = {.chunk = 50};
    auto chunked_abs = cache_options("tova", 256);
    chunked_abs.prefill = {.chunk = 50};
    const auto want = all_logits(**m, ids, chunked_abs, 32, pool);
    const auto got = all_logits(**m, ids, chunked, 32, pool);
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(float)))
        << "chunk:50 " << kv::position_mode_name(mode);
  }
}

// Absolute mode is untouched by moved sequences in the same batch: mixing an absolute and a
// gap sequence gives each the logits it gets beside a twin of its own mode, bit for bit (same
// batch shapes, so the same matmul blocking).
TEST(PositionsGolden, MixedBatchesChangeNothing) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  auto ids = read_ids(shared_path("golden/tokens-1024.json"));
  ids.resize(160);
  ThreadPool pool(2);
  const int n_vocab = (*m)->config().n_vocab;
  constexpr size_t kStep = 16;
  // Logits of both sequences, [2][n][n_vocab], fed together.
  auto pair_logits = [&](kv::PositionMode m0, kv::PositionMode m1) {
    auto a = runtime::make_state(**m, cache_options("tova", 32, m0), 0);
    auto b = runtime::make_state(**m, cache_options("tova", 32, m1), 0);
    EXPECT_TRUE(a.ok() && b.ok());
    model::ForwardScratch scratch;
    std::vector<float> logits(2 * kStep * n_vocab);
    std::vector<std::vector<float>> out(2);
    for (size_t p0 = 0; p0 < ids.size(); p0 += kStep) {
      std::vector<model::BatchToken> batch;
      for (kv::MultiState* st : {a->get(), b->get()}) {
        for (size_t p = p0; p < p0 + kStep; ++p) batch.push_back({ids[p], st, true});
      }
      EXPECT_TRUE((*m)->forward(batch, pool, scratch, logits.data()).ok());
      out[0].insert(out[0].end(), logits.begin(), logits.begin() + kStep * n_vocab);
      out[1].insert(out[1].end(), logits.begin() + kStep * n_vocab, logits.end());
    }
    return out;
  };
  using kv::PositionMode;
  const auto mixed = pair_logits(PositionMode::kAbsolute, PositionMode::kGap);
  const auto abs2 = pair_logits(PositionMode::kAbsolute, PositionMode::kAbsolute);
  const auto gap2 = pair_logits(PositionMode::kGap, PositionMode::kGap);
  const size_t bytes = abs2[0].size() * sizeof(float);
  EXPECT_EQ(0, std::memcmp(mixed[0].data(), abs2[0].data(), bytes));
  EXPECT_EQ(0, std::memcmp(mixed[1].data(), gap2[1].data(), bytes));
  // Evictions happened (k = 32 of 160), so the modes differ.
  EXPECT_NE(0, std::memcmp(mixed[0].data(), mixed[1].data(), bytes));
}

}  // namespace
}  // namespace tova::testing
