// tova trace: survival counts against hand-computed values (window, sink, full) and against
// evictions derived independently from the model's full attention (tova, tova-head, h2o in
// layer 0, whose queries and keys do not depend on what the cache keeps).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "eval/trace.h"
#include "runtime/sequence.h"
#include "test_data.h"

namespace tova::eval {
namespace {

using ::tova::testing::shared_path;

std::vector<int32_t> first_tokens(size_t n) {
  std::ifstream in(shared_path("golden/tokens-128.json"));
  std::vector<int32_t> t = nlohmann::json::parse(in).get<std::vector<int32_t>>();
  t.resize(n);
  return t;
}

std::unique_ptr<model::Model> load_stories() {
  auto m = model::Model::load(shared_path("models/stories260K.gguf"));
  EXPECT_TRUE(m.ok()) << m.message();
  return m.ok() ? std::move(m).value() : nullptr;
}

TraceResult trace(const model::Model& m, const std::string& policy, int budget, size_t n,
                  int64_t far_age = 0) {
  auto spec = kv::parse_policy(policy, budget);
  EXPECT_TRUE(spec.ok()) << spec.message();
  ThreadPool pool(1);
  auto r = run_trace(m, pool, first_tokens(n), {.policy = *spec, .far_age = far_age});
  EXPECT_TRUE(r.ok()) << r.message();
  return std::move(r).value();
}

// Every (layer, KV head) row of the trace must equal `want` (survival) and `alive`.
void expect_all_rows(const TraceResult& r, const std::vector<int32_t>& want,
                     const std::vector<uint8_t>& alive) {
  for (int il = 0; il < r.n_layer; ++il) {
    for (int g = 0; g < r.n_head_kv; ++g) {
      const size_t i0 = r.index(il, g, 0);
      EXPECT_EQ(std::vector<int32_t>(r.survival.begin() + i0, r.survival.begin() + i0 + r.n_tokens),
                want)
          << "layer " << il << " head " << g;
      EXPECT_EQ(std::vector<uint8_t>(r.alive_at_end.begin() + i0,
                                     r.alive_at_end.begin() + i0 + r.n_tokens),
                alive)
          << "layer " << il << " head " << g;
    }
  }
}

TEST(Trace, WindowOfThreeOverEightTokens) {
  TOVA_REQUIRE_SHARED();
  auto m = load_stories();
  ASSERT_NE(m, nullptr);
  const TraceResult r = trace(*m, "window", 3, 8, /*far_age=*/2);
  // After step t >= 3 the window holds {t-2, t-1, t}: token p is evicted at step p + 3 and was
  // seen by tokens p+1..p+3. Tokens 5, 6, 7 are held at the end, seen by 2, 1, 0 later tokens.
  expect_all_rows(r, {3, 3, 3, 3, 3, 2, 1, 0}, {0, 0, 0, 0, 0, 1, 1, 1});
  for (int il = 0; il < r.n_layer; ++il) {
    EXPECT_EQ(r.first_token_survival[il], 3.0);
    // k/2 = 1: only the newest of the three held states is "recent".
    EXPECT_NEAR(r.recent_share[il], 1.0 / 3.0, 1e-12);
    EXPECT_EQ(r.survival_median[il], 3.0);
    EXPECT_EQ(r.survival_p90[il], 3.0);
    EXPECT_EQ(r.evicted_on_arrival[il], 0.0);
    EXPECT_EQ(r.kept_over_2k[il], 0.0);
    EXPECT_NEAR(r.mean_age[il], 1.0, 1e-12);         // ages {0, 1, 2}
    EXPECT_NEAR(r.far_share[il], 1.0 / 3.0, 1e-12);  // age >= 2: one of three
  }
  EXPECT_EQ(r.mean_survival, (std::vector<double>{3, 3, 3, 3, 3, 2, 1, 0}));
}

TEST(Trace, SinkKeepsTheFirstTokenForever) {
  TOVA_REQUIRE_SHARED();
  auto m = load_stories();
  ASSERT_NE(m, nullptr);
  const TraceResult r = trace(*m, "sink:1", 3, 8);
  // Held after step t >= 3: {0, t-1, t}. Token p >= 1 is evicted at step p + 2.
  expect_all_rows(r, {7, 2, 2, 2, 2, 2, 1, 0}, {1, 0, 0, 0, 0, 0, 1, 1});
  for (int il = 0; il < r.n_layer; ++il) {
    EXPECT_EQ(r.first_token_survival[il], 7.0);
    EXPECT_EQ(r.kept_over_2k[il], 1.0 / 8.0);  // only position 0 reaches 2k = 6
    EXPECT_EQ(r.survival_median[il], 2.0);
    // Held after step t >= 3: ages {t, 1, 0}, mean (t + 1) / 3; over t = 3..7 that is 2.
    EXPECT_NEAR(r.mean_age[il], 2.0, 1e-12);
  }
}

TEST(Trace, FullKeepsEverything) {
  TOVA_REQUIRE_SHARED();
  auto m = load_stories();
  ASSERT_NE(m, nullptr);
  const TraceResult r = trace(*m, "full", 0, 6);
  expect_all_rows(r, {5, 4, 3, 2, 1, 0}, {1, 1, 1, 1, 1, 1});
  EXPECT_EQ(r.budget, -1);
  EXPECT_TRUE(std::isnan(r.recent_share_mean));
  EXPECT_TRUE(std::isnan(r.survival_median[0]));  // nothing evicted
  EXPECT_TRUE(std::isnan(r.mean_age[0]));
  EXPECT_TRUE(std::isnan(r.far_share[0]));
}

// ---- Independent derivation for score-based policies, layer 0 ----------------------------

// Records, for layer 0, every query row's post-softmax probabilities per query head and
// position, under a policy that never evicts (so they are the full model's attention).
struct SpyLog {
  int n_made = 0;  // policy objects made since the last reset (the first one is layer 0)
  std::vector<std::vector<std::map<int64_t, double>>> rows;  // [t][head][pos] -> prob
};
SpyLog& spy_log() {
  static SpyLog log;
  return log;
}

class SpyPolicy final : public kv::KvPolicy {
 public:
  explicit SpyPolicy(bool record) : record_(record) {}
  std::unique_ptr<kv::KvPolicy> clone() const override {
    return std::make_unique<SpyPolicy>(*this);
  }
  kv::ScoreNeed score_need() const override { return kv::ScoreNeed::kCurrent; }
  void observe(const kv::SlotView& v, const float* probs) override {
    if (!record_) return;
    std::vector<std::map<int64_t, double>> row(v.n_head);
    const int group = v.n_head / v.n_head_kv;
    for (int h = 0; h < v.n_head; ++h) {
      const int64_t* pos = v.pos + static_cast<size_t>(h / group) * v.n_slot;
      for (int s = 0; s < v.n_slot; ++s) {
        if (pos[s] >= 0) row[h][pos[s]] = probs[static_cast<size_t>(h) * v.n_slot + s];
      }
    }
    spy_log().rows.push_back(std::move(row));
  }
  void choose_evictions(const kv::SlotView& v, int n, int32_t* out) override {
    (void)v;
    (void)n;
    (void)out;
    ADD_FAILURE() << "the spy policy must never evict";
  }

 private:
  bool record_;
};

TOVA_REGISTER_POLICY(kv::PolicyInfo{
    .name = "test-spy",
    .help = "test only: records layer 0's attention, never evicts",
    .listed = false,
    .make = [](const kv::PolicyArgs&) -> std::unique_ptr<kv::KvPolicy> {
      return std::make_unique<SpyPolicy>(spy_log().n_made++ == 0);
    },
});

// The full model's layer-0 attention for the first n tokens: [t][head][pos] -> prob.
std::vector<std::vector<std::map<int64_t, double>>> full_layer0_attention(const model::Model& m,
                                                                          size_t n) {
  spy_log() = SpyLog{};
  auto spec = kv::parse_policy("test-spy", static_cast<int>(n));
  EXPECT_TRUE(spec.ok()) << spec.message();
  auto st = runtime::make_state(m, {.policy = *spec}, static_cast<int64_t>(n));
  EXPECT_TRUE(st.ok()) << st.message();
  ThreadPool pool(1);
  model::ForwardScratch scratch;
  const std::vector<int32_t> tokens = first_tokens(n);
  EXPECT_TRUE(runtime::feed(m, pool, scratch, **st, tokens, 1, nullptr).ok());
  EXPECT_EQ(spy_log().rows.size(), n);
  return spy_log().rows;
}

enum class Rule { kTova, kH2o };

// Replays a policy on layer 0 from the full attention: a query over the held set S sees the
// full probabilities renormalised over S (same scores, softmax over fewer states). Returns the
// survival of each position for KV head g (head_wise: g's own query heads score; else all).
std::vector<int32_t> derive_layer0(const std::vector<std::vector<std::map<int64_t, double>>>& att,
                                   Rule rule, bool head_wise, int g, int n_head_kv, int k,
                                   double* min_margin) {
  const int64_t T = static_cast<int64_t>(att.size());
  const int n_head = static_cast<int>(att[0].size());
  const int group = n_head / n_head_kv;
  const int h0 = head_wise ? g * group : 0;
  const int h1 = head_wise ? h0 + group : n_head;
  std::set<int64_t> held;
  std::map<int64_t, double> acc;  // h2o accumulated score
  std::vector<int64_t> evicted_at(T, -1);
  *min_margin = INFINITY;
  for (int64_t t = 0; t < T; ++t) {
    held.insert(t);
    std::map<int64_t, double> score;  // mean over heads of renormalised probabilities
    for (int h = h0; h < h1; ++h) {
      double z = 0;
      for (int64_t p : held) z += att[t][h].at(p);
      for (int64_t p : held) score[p] += att[t][h].at(p) / z / (h1 - h0);
    }
    for (auto [p, s] : score) acc[p] += s;
    if (static_cast<int>(held.size()) <= k) continue;
    // Candidates: h2o protects the k/2 most recent states (the new one included).
    std::vector<std::pair<double, int64_t>> cand;
    for (int64_t p : held) {
      if (rule == Rule::kH2o && p > t - k / 2) continue;
      cand.push_back({rule == Rule::kH2o ? acc[p] : score[p], p});
    }
    std::sort(cand.begin(), cand.end());
    if (cand.size() > 1) {
      *min_margin = std::min(*min_margin, (cand[1].first - cand[0].first) / cand[1].first);
    }
    const int64_t victim = cand[0].second;
    evicted_at[victim] = t;
    held.erase(victim);
    acc.erase(victim);
  }
  std::vector<int32_t> surv(T);
  for (int64_t p = 0; p < T; ++p) {
    surv[p] = static_cast<int32_t>(evicted_at[p] >= 0 ? evicted_at[p] - p : T - 1 - p);
  }
  return surv;
}

void check_layer0(const std::string& policy, Rule rule, bool head_wise, int k, size_t n) {
  auto m = load_stories();
  ASSERT_NE(m, nullptr);
  const auto att = full_layer0_attention(*m, n);
  ASSERT_EQ(att.size(), n);
  const TraceResult r = trace(*m, policy, k, n);
  for (int g = 0; g < r.n_head_kv; ++g) {
    double margin = 0;
    const std::vector<int32_t> want =
        derive_layer0(att, rule, head_wise, g, r.n_head_kv, k, &margin);
    // A float near-tie could legitimately flip an eviction; say so if one is the cause.
    const size_t i0 = r.index(0, g, 0);
    EXPECT_EQ(std::vector<int32_t>(r.survival.begin() + i0, r.survival.begin() + i0 + n), want)
        << policy << " k=" << k << " KV head " << g
        << "; smallest relative gap between the two lowest scores: " << margin;
    int evicted = 0;
    for (size_t p = 0; p < n; ++p) evicted += r.alive_at_end[i0 + p] ? 0 : 1;
    EXPECT_EQ(evicted, static_cast<int>(n) - k);
  }
}

TEST(Trace, TovaLayer0MatchesIndependentDerivation) {
  TOVA_REQUIRE_SHARED();
  check_layer0("tova", Rule::kTova, false, 8, 64);
}

TEST(Trace, TovaHeadLayer0MatchesIndependentDerivation) {
  TOVA_REQUIRE_SHARED();
  check_layer0("tova-head", Rule::kTova, true, 6, 48);
}

TEST(Trace, H2oLayer0MatchesIndependentDerivation) {
  TOVA_REQUIRE_SHARED();
  check_layer0("h2o", Rule::kH2o, false, 8, 64);
}

// h2o always holds the k/2 most recent positions and k/2 older ones: the recent share is
// exactly 1/2 at every evicting step.
TEST(Trace, H2oRecentShareIsOneHalf) {
  TOVA_REQUIRE_SHARED();
  auto m = load_stories();
  ASSERT_NE(m, nullptr);
  const TraceResult r = trace(*m, "h2o", 8, 64);
  for (int il = 0; il < r.n_layer; ++il) EXPECT_NEAR(r.recent_share[il], 0.5, 1e-12);
}

TEST(Trace, LongestKeptAggregatesByText) {
  TraceResult r;
  r.n_layer = 1;
  r.n_head_kv = 1;
  r.n_tokens = 5;
  r.tokens = {7, 3, 7, 4, 3};
  r.mean_survival = {10, 1, 4, 5, 3};
  auto text = [](int32_t id) { return fmt::format("t{}", id); };
  const auto top = longest_kept(r, text, 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].text, "t7");  // (10 + 4) / 2 = 7
  EXPECT_DOUBLE_EQ(top[0].mean_survival, 7.0);
  EXPECT_EQ(top[0].count, 2);
  EXPECT_EQ(top[1].text, "t4");  // 5, then t3 at (1 + 3) / 2 = 2
  EXPECT_EQ(longest_kept(r, text, 10).size(), 3u);
}

}  // namespace
}  // namespace tova::eval
