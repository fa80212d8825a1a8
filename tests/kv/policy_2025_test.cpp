// Hand-computed cases and float64 references for expected-attention, rkv and BASE+merge
// (docs/POLICIES-EXTRA.md). The harness plays the model's part in the step order of
// kv/layer_step: a token joins with its key and value, its query row is observed (the
// probabilities and, for expected-attention, the query before RoPE are given), the layer
// evicts.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <set>
#include <vector>

#include "kv/multi_state.h"
#include "kv/policy_registry.h"

namespace tova::kv {
namespace {

using Held = std::vector<int64_t>;
using Vec = std::vector<float>;  // one row per head, concatenated
// Probability of (query head, query position, key position).
using ProbFn = std::function<double(int h, int64_t q, int64_t p)>;

struct Shape {
  int n_head = 2;
  int n_head_kv = 1;
  int dim = 2;
};

class Layer {
 public:
  Layer(const std::string& policy, int budget, Shape shape, QueryRope rope = {},
        KvFormat kv_type = {})
      : shape_(shape), rope_(std::move(rope)) {
    auto spec = parse_policy(policy, budget);
    EXPECT_TRUE(spec.ok()) << spec.message();
    auto ms = MultiState::create({.n_layer = 1,
                                  .n_head = shape.n_head,
                                  .n_head_kv = shape.n_head_kv,
                                  .head_dim = shape.dim,
                                  .policy = *spec,
                                  .kv_type = kv_type});
    EXPECT_TRUE(ms.ok()) << ms.message();
    ms_ = std::move(ms).value();
    if (rope_.head_dim == 0) {
      rope_.head_dim = shape.dim;
      rope_.scale = 1 / std::sqrt(static_cast<double>(shape.dim));
    }
  }
  LayerState& L() { return ms_->layer(0); }

  // Token at `pos` joins with keys k and values v ([n_head_kv][dim]); its row attends with
  // prob (0 where not given) and query q ([n_head][dim], for policies that read queries).
  void step(int64_t pos, const Vec& k, const Vec& v, const Vec& q = {}, const ProbFn& prob = {}) {
    int32_t slots[8];
    L().insert(pos, k.data(), v.data(), slots);
    SlotView view = L().view();
    view.query_pos = pos;
    view.step_last_pos = pos;
    std::vector<float> probs;
    if (ms_->score_need() != ScoreNeed::kNone) {
      probs.assign(static_cast<size_t>(shape_.n_head) * L().n_slot(), 0.f);
      const int group = shape_.n_head / shape_.n_head_kv;
      for (int h = 0; h < shape_.n_head && prob; ++h) {
        for (int s = 0; s < L().n_slot(); ++s) {
          const int64_t p = L().pos()[(h / group) * L().n_slot() + s];
          if (p >= 0) probs[h * L().n_slot() + s] = static_cast<float>(prob(h, pos, p));
        }
      }
    }
    Vec qq = q.empty() ? Vec(static_cast<size_t>(shape_.n_head) * shape_.dim, 0.f) : q;
    if (ms_->needs_queries()) {
      view.query = qq.data();
      view.rope = &rope_;
    }
    if (ms_->score_need() != ScoreNeed::kNone || ms_->needs_queries()) {
      L().policy().observe(view, probs.empty() ? nullptr : probs.data());
    }
    ms_->advance(1);
    L().evict(pos);
  }

  Held held(int g) {
    Held out;
    for (int s = 0; s < L().n_slot(); ++s) {
      const int64_t p = L().pos()[g * L().n_slot() + s];
      if (p >= 0) out.push_back(p);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // The f32 value row of the state at position p in KV head g.
  Vec value(int g, int64_t p) {
    for (int s = 0; s < L().n_slot(); ++s) {
      if (L().pos()[g * L().n_slot() + s] == p) {
        const float* v = static_cast<const float*>(L().values()) +
                         (static_cast<size_t>(g) * L().n_slot() + s) * shape_.dim;
        return Vec(v, v + shape_.dim);
      }
    }
    return {};
  }

 private:
  Shape shape_;
  QueryRope rope_;
  std::unique_ptr<MultiState> ms_;
};

// ---------------------------------------------------------------------------------------------
// expected-attention

// Two query heads share one KV head, head_dim 2, no rotation (n_rot 0), s = 1/sqrt(2), W = 2.
// The last two queries: head 0 (1,0) and (3,0): mu = (2,0), Sigma = diag(1, 0); head 1 (0,1)
// twice: mu = (0,1), Sigma = 0. Keys of positions 10..13: d = (0,-1), a = (1,0), c = (-1,0),
// b = (0,1); every |v| = 1. Expected logits z = s k.mu + s^2/2 k^T Sigma k:
//   head 0: a sqrt2 + 1/4 = 1.664, b 0, c -sqrt2 + 1/4 = -1.164, d 0
//     softmax (5.281, 1, 0.312, 1) / 7.593 = a .696, b .132, c .041, d .132
//   head 1: a 0, b 1/sqrt2, c 0, d -1/sqrt2: softmax (1, 2.028, 1, .493) / 4.521
//     = a .221, b .449, c .221, d .109
//   mean: a .458, b .290, c .131, d .120: d (position 10) goes.
// Without the covariance term head 0's c would be e^-sqrt2 / 6.356 = .038 and c's mean .130
// below d's .133: the covariance decides this case.
const Vec kQ0 = {5, 5, 5, 5};  // early rows the window of 2 forgets
const Vec kQ1 = {1, 0, 0, 1};  // [head 0 (1,0)][head 1 (0,1)]
const Vec kQ2 = {3, 0, 0, 1};

std::map<int64_t, Vec> ea_keys() {
  return {{10, {0, -1}}, {11, {1, 0}}, {12, {-1, 0}}, {13, {0, 1}}};
}

TEST(ExpectedAttention, TheCovarianceOfTheQueriesDecides) {
  Layer l("expected-attention:2", 3, {});
  const auto k = ea_keys();
  l.step(10, k.at(10), {1, 0}, kQ0);
  l.step(11, k.at(11), {1, 0}, kQ0);
  l.step(12, k.at(12), {1, 0}, kQ1);
  EXPECT_EQ(l.held(0), (Held{10, 11, 12}));  // nothing goes before the budget is passed
  l.step(13, k.at(13), {0, 1}, kQ2);
  EXPECT_EQ(l.held(0), (Held{11, 12, 13}));
}

TEST(ExpectedAttention, ScoresAreTimesTheValueNorm) {
  // As above with |v_d| = 2: d scores .240 and c (.131) goes instead.
  Layer l("expected-attention:2", 3, {});
  const auto k = ea_keys();
  l.step(10, k.at(10), {0, 2}, kQ0);
  l.step(11, k.at(11), {1, 0}, kQ0);
  l.step(12, k.at(12), {1, 0}, kQ1);
  l.step(13, k.at(13), {0, 1}, kQ2);
  EXPECT_EQ(l.held(0), (Held{10, 11, 13}));
}

TEST(ExpectedAttention, TheFirstFourPositionsStayAndTheirQueriesAreNotCounted) {
  // Keys that the queries favour come late; positions 0..3 (the sinks) stay whatever they
  // score while more than one other state is held. The queries of positions 0..3 are left out
  // of the statistics (W = 8 would hold them): they point away from key 4 and would make mu
  // favour key 5 instead.
  Layer l("expected-attention:8", 5, {});
  const Vec away = {-9, 0, -9, 0};
  for (int64_t p = 0; p < 4; ++p) l.step(p, {-1, 0}, {1, 0}, away);
  l.step(4, {1, 0}, {1, 0}, kQ1);
  l.step(5, {-1, 0}, {1, 0}, kQ2);  // the lowest of 4, 5: 5
  EXPECT_EQ(l.held(0), (Held{0, 1, 2, 3, 4}));
}

// Float64 reference: the rule straight from docs/POLICIES-EXTRA.md with the mean rotation summed
// over the 512 next positions as matrices and Sigma formed explicitly, against the cache on
// random keys, values and queries (GQA 4 heads / 2 KV heads, head_dim 6 with 4 rotated dims,
// both pair layouts).
struct EaRef {
  int n_head = 4, n_kv = 2, dim = 6, n_rot = 4, window = 3, budget = 5;
  bool neox = false;
  std::vector<double> theta = {0.9, 0.05};
  std::vector<Vec> queries;                            // rows observed (positions >= 4)
  std::vector<std::map<int64_t, std::pair<Vec, Vec>>> held;  // [g] pos -> (key, value)

  // Mean over m = p+1..p+512 of the rotation at m, as a dim x dim matrix.
  std::vector<double> rbar(int64_t p) const {
    std::vector<double> r(dim * dim, 0.0);
    for (int d = n_rot; d < dim; ++d) r[d * dim + d] = 1;
    for (int i = 0; i < n_rot / 2; ++i) {
      const int a = neox ? i : 2 * i, b = neox ? i + n_rot / 2 : 2 * i + 1;
      double c = 0, s = 0;
      for (int64_t m = p + 1; m <= p + 512; ++m) {
        c += std::cos(m * theta[i]);
        s += std::sin(m * theta[i]);
      }
      c /= 512;
      s /= 512;
      r[a * dim + a] = c;
      r[a * dim + b] = -s;
      r[b * dim + a] = s;
      r[b * dim + b] = c;
    }
    return r;
  }

  // The position KV head g evicts after the token at p joined.
  int64_t evict(int g, int64_t p) const {
    const auto R = rbar(p);
    const int group = n_head / n_kv;
    const int rows = std::min<int>(window, queries.size());
    std::map<int64_t, double> score;
    for (const auto& [pos, kv] : held[g]) score[pos] = 0;
    std::map<int64_t, double> z;
    const bool sinks = static_cast<int>(held[g].size()) - 4 >= 1;
    for (int hg = 0; hg < group; ++hg) {
      const int h = g * group + hg;
      std::vector<double> mu(dim, 0.0), S(dim * dim, 0.0);
      for (int r = 0; r < rows; ++r) {
        for (int d = 0; d < dim; ++d) mu[d] += queries[queries.size() - 1 - r][h * dim + d] / rows;
      }
      for (int r = 0; r < rows; ++r) {
        const Vec& q = queries[queries.size() - 1 - r];
        for (int a = 0; a < dim; ++a) {
          for (int b = 0; b < dim; ++b) {
            S[a * dim + b] += (q[h * dim + a] - mu[a]) * (q[h * dim + b] - mu[b]) / rows;
          }
        }
      }
      // mu' = R mu, Sigma' = R Sigma R^T.
      std::vector<double> mu2(dim, 0.0), RS(dim * dim, 0.0), S2(dim * dim, 0.0);
      for (int a = 0; a < dim; ++a) {
        for (int b = 0; b < dim; ++b) mu2[a] += R[a * dim + b] * mu[b];
      }
      for (int a = 0; a < dim; ++a) {
        for (int b = 0; b < dim; ++b) {
          for (int c = 0; c < dim; ++c) RS[a * dim + b] += R[a * dim + c] * S[c * dim + b];
        }
      }
      for (int a = 0; a < dim; ++a) {
        for (int b = 0; b < dim; ++b) {
          for (int c = 0; c < dim; ++c) S2[a * dim + b] += RS[a * dim + c] * R[b * dim + c];
        }
      }
      const double s = 1 / std::sqrt(static_cast<double>(dim));
      double sum = 0;
      for (const auto& [pos, kv] : held[g]) {
        if (sinks && pos < 4) continue;
        const Vec& k = kv.first;
        double m = 0, v = 0;
        for (int a = 0; a < dim; ++a) {
          m += k[a] * mu2[a];
          for (int b = 0; b < dim; ++b) v += k[a] * S2[a * dim + b] * k[b];
        }
        z[pos] = std::exp(s * m + s * s * v / 2);
        sum += z[pos];
      }
      for (auto& [pos, e] : z) score[pos] += e / sum / group;
    }
    int64_t best = -1;
    double lowest = 0;
    for (const auto& [pos, kv] : held[g]) {
      if (sinks && pos < 4) continue;
      double n2 = 0;
      for (float x : kv.second) n2 += double(x) * x;
      const double sc = score[pos] * std::sqrt(n2);
      if (best < 0 || sc < lowest) best = pos, lowest = sc;  // ties: the smaller position
    }
    return best;
  }
};

TEST(ExpectedAttentionReference, RandomStepsEvictAsTheRuleSays) {
  for (const bool neox : {false, true}) {
    EaRef ref;
    ref.neox = neox;
    ref.held.resize(ref.n_kv);
    QueryRope rope{.head_dim = ref.dim, .n_rot = ref.n_rot, .neox = neox, .theta = ref.theta,
                   .scale = 1 / std::sqrt(6.0)};
    Layer l("expected-attention:3", ref.budget, {.n_head = 4, .n_head_kv = 2, .dim = 6}, rope);
    uint64_t x = neox ? 7 : 3;
    auto rnd = [&] {  // multiples of 1/8 in [-1, 1)
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      return static_cast<float>(static_cast<int>((x >> 33) % 16) - 8) / 8.f;
    };
    for (int64_t p = 0; p < 40; ++p) {
      Vec k(12), v(12), q(24);
      for (float& e : k) e = rnd();
      for (float& e : v) e = rnd();
      for (float& e : q) e = rnd();
      l.step(p, k, v, q);
      if (p >= 4) ref.queries.push_back(q);
      for (int g = 0; g < 2; ++g) {
        ref.held[g][p] = {Vec(k.begin() + 6 * g, k.begin() + 6 * g + 6),
                          Vec(v.begin() + 6 * g, v.begin() + 6 * g + 6)};
        if (static_cast<int>(ref.held[g].size()) > ref.budget) ref.held[g].erase(ref.evict(g, p));
        Held want;
        for (const auto& [pos, kv] : ref.held[g]) want.push_back(pos);
        ASSERT_EQ(l.held(g), want) << "neox " << neox << " token " << p << " head " << g;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// rkv

TEST(Rkv, TheBufferFillsThenTheLayerGoesBackToItsBudget) {
  // rkv:4 at k = 3: nothing leaves until 8 are held, then 5 go at once (down to 3).
  Layer l("rkv:4", 3, {.n_head = 2, .n_head_kv = 2});
  for (int64_t p = 0; p < 7; ++p) l.step(p, {1, 0, 1, 0}, {1, 0, 1, 0});
  EXPECT_EQ(l.held(0).size(), 7u);
  EXPECT_EQ(l.L().n_slot(), 8);  // k + B + 1
  l.step(7, {1, 0, 1, 0}, {1, 0, 1, 0});
  EXPECT_EQ(l.held(0).size(), 3u);
  EXPECT_EQ(l.L().n_evicted(), 5);
}

TEST(Rkv, TheMostRedundantKeysGo) {
  // rkv:1 at k = 10: at 12 held, 2 go; the 8 newest (4..11) stay; candidates 0..3. No attention
  // anywhere: importance 0, so the two highest redundancies go (lambda * 0 - 0.9 R).
  // KV head 0 keys 0..3: (1,0) (0,1) (1,0) (-1,0). Cosines: c02 = 1, c03 = c23 = -1, others 0.
  //   Each key's most recent near copy (cos > 0.5) does not count: 0 <-> 2.
  //   Row means /4: m0 = (0 + 0 - 1)/4 = -.25, m1 = 0, m2 = -.25, m3 = (-1 + 0 - 1)/4 = -.5.
  //   Highest: 1, then 0 and 2 tie (the smaller position goes): {1, 0} go.
  // KV head 1 keys: (0,1) (1,0) (1,0) (1,0): 1, 2, 3 are near copies of each other; each row
  //   drops its most recent one: m0 = 0, m1 = m2 = m3 = 1/4: {1, 2} go.
  Layer l("rkv:1", 10, {.n_head = 2, .n_head_kv = 2});
  const std::vector<Vec> keys = {{1, 0, 0, 1}, {0, 1, 1, 0}, {1, 0, 1, 0}, {-1, 0, 1, 0}};
  for (int64_t p = 0; p < 12; ++p) l.step(p, p < 4 ? keys[p] : Vec{0.5f, 0.5f, 0.5f, 0.5f}, {1, 1, 1, 1});
  EXPECT_EQ(l.held(0), (Held{2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(l.held(1), (Held{0, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
}

TEST(Rkv, ImportanceFromTheWindowsQueriesWeighsIn) {
  // As above (KV head 0), but the 8 window rows pay key 1 all their attention: its importance
  // 1, max-pooled over its neighbours 0..3 within 3 ranks: every candidate scores 0.1 - 0.9 R,
  // as before -- pooling over 7 makes four candidates equal. With 12 candidates the pooling
  // has ends: rkv:1 at k = 18 (20 held, 2 go, candidates 0..11), keys all equal (R uniform),
  // attention on position 0 only: pooled importance 1 for 0..3, 0 for 4..11: 4 and 5 go.
  Layer l("rkv:1", 18, {.n_head = 2, .n_head_kv = 2});
  const ProbFn on0 = [](int, int64_t, int64_t p) { return p == 0 ? 1.0 : 0.0; };
  for (int64_t p = 0; p < 20; ++p) l.step(p, {1, 0, 1, 0}, {1, 1, 1, 1}, {}, on0);
  Held want = {0, 1, 2, 3};
  for (int64_t p = 6; p < 20; ++p) want.push_back(p);
  EXPECT_EQ(l.held(0), want);
  EXPECT_EQ(l.held(1), want);
}

// Float64 reference of rkv on random keys and probabilities (head_dim 3, two KV heads of two
// query heads, B = 3, k = 12).
TEST(RkvReference, RandomStepsEvictAsTheRuleSays) {
  const int k = 12, B = 3, dim = 3;
  Layer l("rkv:3", k, {.n_head = 4, .n_head_kv = 2, .dim = dim});
  uint64_t x = 5;
  auto rnd = [&](int m) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int>((x >> 33) % m);
  };
  std::map<std::tuple<int, int64_t, int64_t>, double> probs;  // (h, q, p) sixteenths / 16
  std::vector<std::map<int64_t, Vec>> held(2);
  std::vector<int64_t> rows;  // query positions observed
  const ProbFn prob = [&](int h, int64_t q, int64_t p) {
    auto it = probs.find({h, q, p});
    return it == probs.end() ? 0.0 : it->second;
  };
  for (int64_t p = 0; p < 60; ++p) {
    Vec key(2 * dim);
    for (float& e : key) e = static_cast<float>(rnd(9) - 4) / 4.f;
    for (int h = 0; h < 4; ++h) {
      for (int64_t s = 0; s <= p; ++s) probs[{h, p, s}] = rnd(17) / 16.0;
    }
    l.step(p, key, Vec(2 * dim, 1.f), {}, prob);
    rows.push_back(p);
    for (int g = 0; g < 2; ++g) {
      held[g][p] = Vec(key.begin() + g * dim, key.begin() + (g + 1) * dim);
      const int n_held = static_cast<int>(held[g].size());
      if (n_held > k + B) {
        const int n = n_held - k;
        std::vector<int64_t> pos;
        for (const auto& [q, kk] : held[g]) pos.push_back(q);
        const int n_cand = n_held - std::min(8, n_held - n);
        std::vector<double> imp(n_cand, 0.0), pooled(n_cand), red(n_cand);
        const int n_rows = std::min<int>(8, rows.size());
        for (int j = 0; j < n_cand; ++j) {
          for (int r = 0; r < n_rows; ++r) {
            const int64_t q = rows[rows.size() - 1 - r];
            if (pos[j] > q) continue;
            imp[j] += (prob(2 * g, q, pos[j]) + prob(2 * g + 1, q, pos[j])) / 2;
          }
          imp[j] /= 8;
        }
        for (int j = 0; j < n_cand; ++j) {
          pooled[j] = 0;
          for (int i = std::max(0, j - 3); i <= std::min(n_cand - 1, j + 3); ++i) {
            pooled[j] = std::max(pooled[j], imp[i]);
          }
        }
        auto cosine = [&](int i, int j) {
          const Vec& a = held[g][pos[i]];
          const Vec& b = held[g][pos[j]];
          double ab = 0, aa = 0, bb = 0;
          for (int d = 0; d < dim; ++d) ab += a[d] * b[d], aa += a[d] * a[d], bb += b[d] * b[d];
          return aa == 0 || bb == 0 ? 0.0 : ab / std::sqrt(aa) / std::sqrt(bb);
        };
        double sum = 0;
        for (int i = 0; i < n_cand; ++i) {
          int last = -1;
          for (int j = 0; j < n_cand; ++j) {
            if (j != i && cosine(i, j) > 0.5) last = j;
          }
          double m = 0;
          for (int j = 0; j < n_cand; ++j) {
            if (j != i && j != last) m += cosine(i, j);
          }
          red[i] = std::exp(m / n_cand);
          sum += red[i];
        }
        std::vector<std::pair<double, int64_t>> z;
        for (int i = 0; i < n_cand; ++i) z.push_back({0.1 * pooled[i] - 0.9 * red[i] / sum, pos[i]});
        std::sort(z.begin(), z.end());
        for (int j = 0; j < n; ++j) held[g].erase(z[j].second);
      }
      Held want;
      for (const auto& [q, kk] : held[g]) want.push_back(q);
      ASSERT_EQ(l.held(g), want) << "token " << p << " head " << g;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// BASE+merge

// tova+merge, k = 2, two query heads on one KV head, values (16,0) (0,16) (0,0) at 0, 1, 2.
// Rows (both heads alike): row 0 gives pos0 1; row 1 pos0 and pos1 1/2 each; row 2 pos0 1/4,
// pos1 and pos2 3/8. tova evicts pos0 (1/4). Accumulated: A0 = 1 + 1/2 + 1/4 = 1.75, A1 = 7/8,
// A2 = 3/8; the window of 32 after pos0 holds 1 and 2 (m = 2), mean 5/8: 1.75 / (5/8) > 1, so
// the merge happens whatever the draw: v1 += v0 / 2, v2 += v0 / 2.
TEST(Merge, TheEvictedValueGoesToTheStatesAfterIt) {
  const ProbFn rows = [](int, int64_t q, int64_t p) {
    const std::map<int64_t, std::map<int64_t, double>> t = {
        {0, {{0, 1.0}}}, {1, {{0, 0.5}, {1, 0.5}}}, {2, {{0, 0.25}, {1, 0.375}, {2, 0.375}}}};
    auto c = t.at(q).find(p);
    return c == t.at(q).end() ? 0.0 : c->second;
  };
  Layer l("tova+merge", 2, {});
  l.step(0, {1, 0}, {16, 0}, {}, rows);
  l.step(1, {1, 0}, {0, 16}, {}, rows);
  l.step(2, {1, 0}, {0, 0}, {}, rows);
  EXPECT_EQ(l.held(0), (Held{1, 2}));
  EXPECT_EQ(l.value(0, 1), (Vec{8, 16}));
  EXPECT_EQ(l.value(0, 2), (Vec{8, 0}));
}

TEST(Merge, AStateNoQueryAttendedToIsDroppedNotMerged) {
  // As above, but pos0 never receives attention: A0 = 0, probability 0.
  const ProbFn rows = [](int, int64_t q, int64_t p) { return p == 0 ? 0.0 : 1.0 / (q + 1); };
  Layer l("h2o+merge", 2, {});
  l.step(0, {1, 0}, {16, 0}, {}, rows);
  l.step(1, {1, 0}, {0, 16}, {}, rows);
  l.step(2, {1, 0}, {0, 0}, {}, rows);
  EXPECT_EQ(l.held(0), (Held{1, 2}));
  EXPECT_EQ(l.value(0, 1), (Vec{0, 16}));
  EXPECT_EQ(l.value(0, 2), (Vec{0, 0}));
}

TEST(Merge, TheNewestEvictedStateHasNoStateAfterIt) {
  // The joining token is evicted (tova gives it the least): nothing follows it, nothing merges.
  const ProbFn rows = [](int, int64_t, int64_t p) { return p == 2 ? 0.0 : 0.5; };
  Layer l("tova+merge", 2, {});
  l.step(0, {1, 0}, {16, 0}, {}, rows);
  l.step(1, {1, 0}, {0, 16}, {}, rows);
  l.step(2, {1, 0}, {4, 4}, {}, rows);
  EXPECT_EQ(l.held(0), (Held{0, 1}));
  EXPECT_EQ(l.value(0, 0), (Vec{16, 0}));
  EXPECT_EQ(l.value(0, 1), (Vec{0, 16}));
}

TEST(Merge, QuantizedValuesAreMergedInFloatAndStoredAgain) {
  // The first case with q8_0 values (head_dim 32): the merged rows are what storing the float
  // sums gives, within q8_0's rounding of the result.
  const ProbFn rows = [](int, int64_t q, int64_t p) {
    if (q == 2) return p == 0 ? 0.25 : 0.375;
    return q == 0 ? 1.0 : 0.5;
  };
  Shape sh{.n_head = 2, .n_head_kv = 1, .dim = 32};
  Layer l("tova+merge", 2, sh, {}, KvFormat(KvType::kF32, KvType::kQ8_0));
  Vec k(32, 0.f), v0(32, 0.f), v1(32, 0.f), v2(32, 0.f);
  k[0] = 1;
  for (int d = 0; d < 32; ++d) v0[d] = static_cast<float>(d), v1[d] = 1, v2[d] = -1;
  l.step(0, k, v0, {}, rows);
  l.step(1, k, v1, {}, rows);
  l.step(2, k, v2, {}, rows);
  ASSERT_EQ(l.held(0), (Held{1, 2}));
  std::vector<uint8_t> row(kv_row_bytes(KvType::kQ8_0, 32));
  Vec got(32);
  for (int64_t p : {1, 2}) {
    for (int s = 0; s < l.L().n_slot(); ++s) {
      if (l.L().pos()[s] != p) continue;
      std::memcpy(row.data(), static_cast<const uint8_t*>(l.L().values()) + s * row.size(),
                  row.size());
      kv_dequantize_row_ref(KvType::kQ8_0, row.data(), got.data(), 32);
    }
    for (int d = 0; d < 32; ++d) {
      const float want = (p == 1 ? 1.f : -1.f) + static_cast<float>(d) / 2;
      EXPECT_NEAR(got[d], want, 17.f / 127) << "pos " << p << " dim " << d;
    }
  }
}

TEST(Merge, BudgetAtLeastTheLengthMergesNothing) {
  const ProbFn rows = [](int, int64_t q, int64_t) { return 1.0 / (q + 1); };
  for (const char* p : {"tova+merge", "h2o+merge"}) {
    Layer l(p, 8, {});
    for (int64_t t = 0; t < 8; ++t) l.step(t, {1, 0}, {float(t), 1}, {}, rows);
    EXPECT_EQ(l.L().n_evicted(), 0);
    for (int64_t t = 0; t < 8; ++t) EXPECT_EQ(l.value(0, t), (Vec{float(t), 1})) << p;
  }
}

// ---------------------------------------------------------------------------------------------
// The registry's side

TEST(PolicyRegistry2025, BadFormsAreOneErrorNamingTheField) {
  auto expect_error = [](const std::string& text, const std::string& needle) {
    auto r = parse_policy(text, 8);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.message().find(needle), std::string::npos) << r.message();
    EXPECT_EQ(r.message().find('\n'), std::string::npos);
  };
  expect_error("expected-attention:0", "query window W must be 1..4096, got 0");
  expect_error("expected-attention:x", "not an integer W");
  expect_error("rkv:0", "buffer B must be 1..");
  expect_error("merge", "is a suffix: BASE+merge");
  expect_error("full+merge", "never evicts");
  expect_error("adakv:tova+merge", "takes a policy that evicts by itself");
  expect_error("tova+merge+merge", "takes a policy that evicts by itself");
  expect_error("lru+merge", "unknown KV policy 'lru'");
  expect_error("sink:9+merge", "N < the budget");
  EXPECT_EQ(parse_policy("sink:4+merge", 8)->label(), "sink:4+merge");
  EXPECT_EQ(parse_policy("snapkv+tova:16+merge", 8)->label(), "snapkv+tova:16+merge");
  EXPECT_EQ(parse_policy("expected-attention", 8)->label(), "expected-attention");
  EXPECT_NE(policy_choices().find("BASE+merge"), std::string::npos);
  EXPECT_NE(policy_choices().find("expected-attention[:W]"), std::string::npos);
  EXPECT_NE(policy_choices().find("rkv[:B]"), std::string::npos);
}

TEST(PolicyRegistry2025, ExpectedAttentionNeedsAbsolutePositions) {
  auto spec = parse_policy("expected-attention", 8);
  ASSERT_TRUE(spec.ok());
  auto ms = MultiState::create({.n_layer = 1,
                                .n_head = 2,
                                .n_head_kv = 1,
                                .head_dim = 2,
                                .policy = *spec,
                                .positions = PositionMode::kGap});
  ASSERT_FALSE(ms.ok());
  EXPECT_NE(ms.message().find("needs the absolute position mode, not 'gap'"), std::string::npos)
      << ms.message();
}

}  // namespace
}  // namespace tova::kv
