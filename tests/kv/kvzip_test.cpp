// kvzip's rule (docs/POLICIES-EXTRA.md) against the cache: the layer holds everything between
// cuts; a scoring pass run on a copy (the reconstruction's rows observed as the model's
// attention would give them) scores each held state by the largest probability it receives from
// any query head of its KV group and any reconstruction row; the cut keeps each KV head's k
// highest. A hand-computed case and a float64 reference on random rows. (The pass through the
// model, and "budget >= length equals full" on real answers: tests/eval/kvzip_eval_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "kv/multi_state.h"
#include "kv/policies/kvzip.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

constexpr int kZipHead = 4;  // query heads 0,1 read KV head 0; heads 2,3 read KV head 1
constexpr int kZipHeadKv = 2;
constexpr int kZipDim = 2;

std::unique_ptr<MultiState> make(int budget) {
  auto spec = parse_policy("kvzip", budget);
  EXPECT_TRUE(spec.ok()) << spec.message();
  auto ms = MultiState::create(
      {.n_layer = 1, .n_head = kZipHead, .n_head_kv = kZipHeadKv, .head_dim = kZipDim, .policy = *spec});
  EXPECT_TRUE(ms.ok()) << ms.message();
  return std::move(ms).value();
}

// n tokens join (positions n_seen ..), each layer step as the model takes it (evict after each).
void join(MultiState& ms, int n) {
  LayerState& L = ms.layer(0);
  for (int i = 0; i < n; ++i) {
    const int64_t p = ms.n_seen();
    float k[kZipHeadKv * kZipDim] = {}, v[kZipHeadKv * kZipDim] = {};
    int32_t slots[kZipHeadKv];
    L.insert(p, k, v, slots);
    ms.advance(1);
    L.evict(p);
  }
}

// prob[h][pos] for one query row: attends every held state (reconstruction's too).
using Row = std::map<int, std::map<int64_t, double>>;

// The pass on a copy: rows.size() reconstruction tokens join after the held context, each
// observing its row; then `ms` takes the copy's scores and is cut to its budget.
void pass_and_cut(MultiState& ms, const std::vector<Row>& rows) {
  std::unique_ptr<MultiState> copy = ms.clone();
  const int64_t start = copy->n_seen();
  LayerState& C = copy->layer(0);
  kvzip_scorer(C.policy())->begin_pass(start);
  for (const Row& row : rows) {
    join(*copy, 1);
    std::vector<float> probs(static_cast<size_t>(kZipHead) * C.n_slot(), 0.f);
    for (int h = 0; h < kZipHead; ++h) {
      const int g = h / (kZipHead / kZipHeadKv);
      for (int s = 0; s < C.n_slot(); ++s) {
        const int64_t p = C.pos()[g * C.n_slot() + s];
        auto r = row.find(h);
        if (p < 0 || r == row.end()) continue;
        auto c = r->second.find(p);
        if (c != r->second.end()) probs[h * C.n_slot() + s] = static_cast<float>(c->second);
      }
    }
    SlotView v = C.view();
    v.query_pos = copy->n_seen() - 1;
    C.policy().observe(v, probs.data());
  }
  LayerState& L = ms.layer(0);
  kvzip_scorer(L.policy())->set_cut_scores(kvzip_scorer(C.policy())->pass_scores());
  L.evict_to(ms.policy().budget, start - 1);
}

std::set<int64_t> held(const MultiState& ms, int g) {
  const LayerState& L = ms.layer(0);
  std::set<int64_t> out;
  for (int s = 0; s < L.n_slot(); ++s) {
    if (L.pos()[g * L.n_slot() + s] >= 0) out.insert(L.pos()[g * L.n_slot() + s]);
  }
  return out;
}

// k = 2, four states held (positions 0..3), two reconstruction rows (positions 4, 5).
//   KV head 0 (heads 0, 1): largest over heads and rows: p0 max(.1,.3,.05,.2) = .3, p1 .5,
//     p2 .6, p3 .4: keeps {1, 2}. Row 5 gives the reconstruction's own p4 .9: not a context
//     state, never kept.
//   KV head 1 (heads 2, 3): p0 .7, p1 .1, p2 .1, p3 .7: keeps {0, 3}.
TEST(Kvzip, HandComputedCut) {
  auto ms = make(2);
  join(*ms, 4);
  EXPECT_EQ(held(*ms, 0), (std::set<int64_t>{0, 1, 2, 3}));  // nothing goes before a cut
  const std::vector<Row> rows = {
      {{0, {{0, .1}, {1, .5}, {2, .2}, {3, .1}}},
       {1, {{0, .3}, {1, .1}, {2, .1}, {3, .4}}},
       {2, {{0, .7}, {1, .1}, {2, .1}, {3, .1}}},
       {3, {{0, .1}, {1, .1}, {2, .1}, {3, .1}}}},
      {{0, {{0, .05}, {1, .05}, {2, .6}, {3, .1}, {4, .9}}},
       {1, {{0, .2}, {1, .2}, {2, .2}, {3, .2}}},
       {2, {{0, .1}, {1, .1}, {2, .1}, {3, .1}}},
       {3, {{0, .1}, {1, .1}, {2, .1}, {3, .7}}}},
  };
  pass_and_cut(*ms, rows);
  EXPECT_EQ(held(*ms, 0), (std::set<int64_t>{1, 2}));
  EXPECT_EQ(held(*ms, 1), (std::set<int64_t>{0, 3}));
  // Tokens after a cut are held whole until the next one; they take the positions after the
  // context (the reconstruction ran on the copy: it took none of the sequence's).
  join(*ms, 3);
  EXPECT_EQ(held(*ms, 0), (std::set<int64_t>{1, 2, 4, 5, 6}));
}

// The rule in float64 on random rows: each KV head keeps the k states with the largest
// (max over its heads and rows), ties to the larger position; a budget at least the held count
// keeps everything (the state equals full's: nothing leaves).
TEST(KvzipReference, RandomRowsKeepTheLargestMaxima) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const int n = 5 + static_cast<int>(rng() % 30);
    const int k = 1 + static_cast<int>(rng() % (n + 3));
    const int n_rows = 1 + static_cast<int>(rng() % 6);
    auto ms = make(k);
    join(*ms, n);
    std::vector<Row> rows(n_rows);
    std::uniform_int_distribution<int> sixteenths(0, 16);  // exact in float: ties happen
    for (int r = 0; r < n_rows; ++r) {
      for (int h = 0; h < kZipHead; ++h) {
        for (int64_t p = 0; p <= n + r; ++p) rows[r][h][p] = sixteenths(rng) / 16.0;
      }
    }
    pass_and_cut(*ms, rows);
    for (int g = 0; g < kZipHeadKv; ++g) {
      std::vector<std::pair<double, int64_t>> score;  // (max, position)
      for (int64_t p = 0; p < n; ++p) {
        double best = 0;
        for (int r = 0; r < n_rows; ++r) {
          for (int h = g * 2; h < g * 2 + 2; ++h) best = std::max(best, rows[r][h][p]);
        }
        score.push_back({best, p});
      }
      std::sort(score.begin(), score.end());  // lowest (score, position) goes first
      std::set<int64_t> want;
      for (size_t i = score.size() - std::min<size_t>(score.size(), k); i < score.size(); ++i) {
        want.insert(score[i].second);
      }
      EXPECT_EQ(held(*ms, g), want) << "trial " << trial << " n " << n << " k " << k << " g " << g;
    }
  }
}

TEST(Kvzip, IsNotForPerStepUse) {
  // The layer holds everything between cuts (the pass decides), so the registry keeps it out of
  // the per-step every-policy tests, and a layer made with it never evicts on its own.
  const PolicyInfo* info = find_policy("kvzip");
  ASSERT_NE(info, nullptr);
  EXPECT_FALSE(info->listed);
  auto ms = make(3);
  join(*ms, 40);
  EXPECT_EQ(ms->layer(0).n_held(), 40);
  EXPECT_EQ(ms->holds_all_until(), 3);  // what a follower may ride along for
}

}  // namespace
}  // namespace tova::kv
