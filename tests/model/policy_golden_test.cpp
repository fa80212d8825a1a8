// Every (policy, budget) of golden/policy-*.json: mean NLL, per-token NLL before the first
// eviction, and the positions kept at the end, against the float64 reference implementation of
// spec/POLICIES.md. All configurations run as sequences of ONE batch, as `tova ppl` does.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "model_test_util.h"
#include "policy_run_util.h"

namespace tova::testing {
namespace {

struct Golden {
  std::string policy;
  int budget;
  double mean_nll;
  std::vector<double> nll;
  std::vector<std::vector<std::vector<int64_t>>> kept;  // [layer][head_kv] sorted positions
};

// Feeds all configurations together, micro-batches of `chunk` positions x configurations.
std::vector<PolicyRun> run_all(const model::Model& m, const std::vector<int32_t>& ids,
                               const std::vector<Golden>& gold) {
  std::vector<CacheOptions> configs;
  for (const Golden& g : gold) configs.push_back(cache_options(g.policy, g.budget));
  return run_policies(m, ids, configs);
}

double overlap(const Golden& g, const PolicyRun& r) { return kept_overlap(g.kept, r.kept); }

void check_file(const std::string& model_file, const std::string& golden_file) {
  auto m = model::Model::load(shared_path(model_file));
  ASSERT_TRUE(m.ok()) << m.message();
  std::ifstream in(shared_path(golden_file));
  const nlohmann::json j = nlohmann::json::parse(in);
  const auto ids = j["tokens"].get<std::vector<int32_t>>();
  std::vector<Golden> gold;
  for (const auto& r : j["results"]) {
    gold.push_back({r["policy"], r["budget"], r["mean_nll"], r["nll"], r["kept_positions_final"]});
  }
  // Sanitizer runs are ~5x slower: they check a spread of configurations, not all.
  if (std::getenv("TOVA_SANITIZE_RUN") != nullptr) {
    std::vector<Golden> some;
    for (size_t i = 0; i < gold.size(); i += 4) some.push_back(gold[i]);
    gold = some;
  }
  const std::vector<PolicyRun> runs = run_all(**m, ids, gold);
  int kept_ok = 0;
  for (size_t c = 0; c < gold.size(); ++c) {
    const Golden& g = gold[c];
    const PolicyRun& r = runs[c];
    SCOPED_TRACE(g.policy + " k=" + std::to_string(g.budget));
    ASSERT_EQ(r.nll.size(), g.nll.size());
    double mean = 0;
    for (double x : r.nll) mean += x;
    mean /= r.nll.size();
    EXPECT_NEAR(mean, g.mean_nll, 0.005 * g.mean_nll) << "mean NLL";
    // Until the first eviction (at the step where k+1 states are held) every policy is `full`.
    const size_t exact_until =
        g.policy == "full" ? g.nll.size() : std::min<size_t>(g.budget + 1, g.nll.size());
    for (size_t i = 0; i < exact_until; ++i) {
      ASSERT_NEAR(r.nll[i], g.nll[i], 1e-4) << "prediction " << i;
    }
    const double ov = overlap(g, r);
    kept_ok += ov >= 0.95;
    if (ov < 0.95)
      ADD_FAILURE() << "kept positions overlap only " << ov
                    << " (allowed for <10% of pairs; a near-tie must explain it)";
  }
  // The README allows a float32 near-tie to flip an eviction in up to 10% of the pairs; the
  // ADD_FAILURE above reports each miss so it can be investigated. Right now we have none.
  EXPECT_GE(kept_ok, static_cast<int>(0.9 * gold.size()));
}

TEST(PolicyGolden, Stories260K) {
  TOVA_REQUIRE_SHARED();
  check_file("models/stories260K.gguf", "golden/policy-stories260K-1024.json");
}

TEST(PolicyGolden, BookLm3M) {
  TOVA_REQUIRE_SHARED();
  check_file("models/booklm-3m.gguf", "golden/policy-booklm-pg19-10146-1024.json");
}

// With k >= sequence length no policy ever evicts, so each must equal `full` bit for bit.
TEST(PolicyGolden, BudgetAtLeastLengthIsBitIdenticalToFull) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  auto ids = read_ids(shared_path("golden/tokens-1024.json"));
  ids.resize(300);
  ThreadPool pool(2);
  const auto full = all_logits(**m, ids, cache_options("full", 0), 32, pool);
  for (const std::string& p : every_bounded_policy()) {
    for (int k : {300, 512}) {
      const auto got = all_logits(**m, ids, cache_options(p, k), 32, pool);
      EXPECT_EQ(0, std::memcmp(got.data(), full.data(), full.size() * sizeof(float)))
          << p << " k=" << k;
    }
  }
}

// Exact prefill is the same computation whatever the micro-batch: token by token == 64 at once.
TEST(PolicyGolden, ExactPrefillDoesNotDependOnBatching) {
  TOVA_REQUIRE_SHARED();
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  ASSERT_TRUE(m.ok()) << m.message();
  auto ids = read_ids(shared_path("golden/tokens-1024.json"));
  ids.resize(200);
  ThreadPool pool(2);
  for (const char* p : {"tova", "h2o-head", "sink:4"}) {
    std::unique_ptr<kv::MultiState> s1, s64;
    const auto a = all_logits(**m, ids, cache_options(p, 32), 1, pool, &s1);
    const auto b = all_logits(**m, ids, cache_options(p, 32), 64, pool, &s64);
    double max_diff = 0;
    for (size_t i = 0; i < a.size(); ++i)
      max_diff = std::max(max_diff, double(std::fabs(a[i] - b[i])));
    EXPECT_LT(max_diff, 1e-4) << p;
    for (int il = 0; il < s1->n_layer(); ++il) {
      EXPECT_EQ(s1->layer(il).n_evicted(), s64->layer(il).n_evicted());
    }
  }
}

}  // namespace
}  // namespace tova::testing
