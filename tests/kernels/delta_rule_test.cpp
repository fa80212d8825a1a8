// The Gated DeltaNet kernels (kernels/delta_rule.h): a hand-computed gated delta rule (2 heads,
// 3 tokens), the fast form against the scalar reference on random inputs of awkward sizes on
// every Highway target, and the conv1d and l2 norm by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "hwy/targets.h"
#include "kernels/delta_rule.h"

namespace tova::kernels {
namespace {

class DeltaRuleTest : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override { hwy::SetSupportedTargetsForTest(GetParam()); }
  void TearDown() override { hwy::SetSupportedTargetsForTest(0); }
};

std::string target_param_name(const ::testing::TestParamInfo<int64_t>& info) {
  return hwy::TargetName(info.param);
}

INSTANTIATE_TEST_SUITE_P(AllTargets, DeltaRuleTest,
                         ::testing::ValuesIn(hwy::SupportedAndGeneratedTargets()),
                         target_param_name);

using Step = void (*)(float*, const float*, const float*, const float*, float, float, float,
                      int64_t, float*);

// Two heads of size 2 through three tokens, by hand (S: the state, out = scale S^T q with
// scale = 1/sqrt(2); the kernels store S transposed: m[j][i] = S[i][j]).
//
// Head 0, decay 0.5, beta 0.5:
//  t1 k=(1,0) v=(2,4) q=(1,0): S^T k = 0, delta = .5(2,4) = (1,2), S = [[1,2],[0,0]],
//     out = (S[0][0], S[0][1]) = (1, 2)
//  t2 k=(0,1) v=(2,0) q=(.6,.8): S = .5 S = [[.5,1],[0,0]], S^T k = (0,0), delta = (1,0),
//     S[1] += (1,0): S = [[.5,1],[1,0]], out = (.5*.6 + 1*.8, 1*.6 + 0) = (1.1, .6)
//  t3 k=(.6,.8) v=(1,1) q=(1,0): S = [[.25,.5],[.5,0]], S^T k = (.15+.4, .3) = (.55,.3),
//     delta = .5(.45,.7) = (.225,.35), S[0] += .6 delta = (.385,.71), S[1] += .8 delta =
//     (.68,.28), out = S[0] = (.385, .71)
// Head 1, decay 1, beta 1:
//  t1 k=(0,1) v=(3,-1) q=(0,1): delta = (3,-1), S = [[0,0],[3,-1]], out = S[1] = (3,-1)
//  t2 k=(0,1) v=(1,1) q=(1,0): S^T k = (3,-1), delta = (-2,2), S[1] = (1,1), out = S[0] = (0,0)
//  t3 k=(1,0) v=(5,5) q=(.6,.8): S^T k = (0,0), delta = (5,5), S = [[5,5],[1,1]],
//     out = .6 S[0] + .8 S[1] = (3.8, 3.8)
void hand_case(Step step) {
  const float scale = 1.f / std::sqrt(2.f);
  const float decay[2] = {0.5f, 1.f}, beta[2] = {0.5f, 1.f};
  const float k[2][3][2] = {{{1, 0}, {0, 1}, {.6f, .8f}}, {{0, 1}, {0, 1}, {1, 0}}};
  const float v[2][3][2] = {{{2, 4}, {2, 0}, {1, 1}}, {{3, -1}, {1, 1}, {5, 5}}};
  const float q[2][3][2] = {{{1, 0}, {.6f, .8f}, {1, 0}}, {{0, 1}, {1, 0}, {.6f, .8f}}};
  const float want_out[2][3][2] = {{{1, 2}, {1.1f, .6f}, {.385f, .71f}},
                                   {{3, -1}, {0, 0}, {3.8f, 3.8f}}};
  // Final states, transposed: head 0 S = [[.385,.71],[.68,.28]], head 1 S = [[5,5],[1,1]].
  const float want_m[2][4] = {{.385f, .68f, .71f, .28f}, {5, 1, 5, 1}};
  for (int h = 0; h < 2; ++h) {
    float m[4] = {0, 0, 0, 0};
    for (int t = 0; t < 3; ++t) {
      float out[2];
      step(m, q[h][t], k[h][t], v[h][t], decay[h], beta[h], scale, 2, out);
      for (int j = 0; j < 2; ++j) {
        EXPECT_NEAR(out[j], want_out[h][t][j] * scale, 1e-6f) << "head " << h << " token " << t;
      }
    }
    for (int e = 0; e < 4; ++e) EXPECT_NEAR(m[e], want_m[h][e], 1e-6f) << "head " << h;
  }
}

TEST_P(DeltaRuleTest, TwoHeadsThreeTokensByHand) {
  hand_case(gated_delta_rule);
  hand_case(gated_delta_rule_ref);
}

TEST_P(DeltaRuleTest, MatchesRefOnRandomInputs) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t n : {1, 7, 16, 33, 128}) {
    std::vector<float> m(n * n), m_ref(n * n), out(n), out_ref(n);
    for (float& x : m) x = u(rng);
    m_ref = m;
    for (int t = 0; t < 5; ++t) {
      std::vector<float> q(n), k(n), v(n);
      for (int64_t i = 0; i < n; ++i) q[i] = u(rng), k[i] = u(rng), v[i] = u(rng);
      l2_norm(q.data(), n, 1e-6f);
      l2_norm(k.data(), n, 1e-6f);
      const float decay = 0.5f + 0.5f * std::fabs(u(rng)), beta = std::fabs(u(rng));
      gated_delta_rule(m.data(), q.data(), k.data(), v.data(), decay, beta, 0.25f, n, out.data());
      gated_delta_rule_ref(m_ref.data(), q.data(), k.data(), v.data(), decay, beta, 0.25f, n,
                           out_ref.data());
      for (int64_t j = 0; j < n; ++j) {
        ASSERT_NEAR(out[j], out_ref[j], 2e-5f * (1 + std::fabs(out_ref[j]))) << "n=" << n;
      }
    }
    for (int64_t e = 0; e < n * n; ++e) {
      ASSERT_NEAR(m[e], m_ref[e], 2e-5f * (1 + std::fabs(m_ref[e]))) << "n=" << n;
    }
  }
}

// A run of random tokens (l2-normalized q and k, v in [-1, 1], beta in (0, 1), log decays in
// [g_lo, g_hi]) laid out as the layer lays them: rows of a wider matrix, every other row.
struct DeltaRunCase {
  int64_t n = 0, n_tok = 0;
  std::vector<int> rows;
  std::vector<float> qkv, gates, out;  // qkv rows [q | k | v] of 3n; gates rows [g | beta]
  DeltaRuleRun run() {
    return {.rows = rows.data(), .n_tok = n_tok, .q = qkv.data(), .k = qkv.data() + n,
            .v = qkv.data() + 2 * n, .qkv_stride = 3 * n, .g = gates.data(),
            .beta = gates.data() + 1, .gate_stride = 2, .out = out.data(), .out_stride = n};
  }
};

DeltaRunCase delta_run_case(int64_t n, int64_t n_tok, float g_lo, float g_hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f), ug(g_lo, g_hi), ub(0.f, 1.f);
  DeltaRunCase c{.n = n, .n_tok = n_tok};
  const int64_t n_rows = 2 * n_tok;
  c.qkv.resize(n_rows * 3 * n);
  c.gates.resize(n_rows * 2);
  c.out.assign(n_rows * n, 0.f);
  for (int64_t r = 0; r < n_rows; ++r) {
    float* row = &c.qkv[r * 3 * n];
    for (int64_t i = 0; i < 3 * n; ++i) row[i] = u(rng);
    l2_norm(row, n, 1e-6f);
    l2_norm(row + n, n, 1e-6f);
    c.gates[2 * r] = ug(rng);
    c.gates[2 * r + 1] = ub(rng);
  }
  for (int64_t t = 0; t < n_tok; ++t) c.rows.push_back(static_cast<int>(2 * t + 1));
  return c;
}

// max |a - b| / (1 + max |b|) over the run's output rows, and over two states.
float delta_out_err(const DeltaRunCase& a, const DeltaRunCase& b) {
  float err = 0, mag = 0;
  for (const int r : b.rows) {
    for (int64_t j = 0; j < b.n; ++j) {
      err = std::max(err, std::fabs(a.out[r * a.n + j] - b.out[r * b.n + j]));
      mag = std::max(mag, std::fabs(b.out[r * b.n + j]));
    }
  }
  return err / (1 + mag);
}
float delta_state_err(const std::vector<float>& a, const std::vector<float>& b) {
  float err = 0, mag = 0;
  for (size_t e = 0; e < b.size(); ++e) {
    err = std::max(err, std::fabs(a[e] - b[e]));
    mag = std::max(mag, std::fabs(b[e]));
  }
  return err / (1 + mag);
}

// The chunked forms (the fast one on every target, and its double reference) against the
// recurrent reference: lengths around the chunk, gates from none to strong decay, a nonzero
// state going in. Tolerance 2e-5 relative to the largest value: float rounding of a few
// products of 64 terms (the recurrent reference sums in double, stores S in float per token).
TEST_P(DeltaRuleTest, ChunkedMatchesRecurrent) {
  const int64_t C = kDeltaChunk;
  struct Gates {
    float lo, hi;
  };
  const Gates gate_ranges[] = {{0.f, 0.f}, {-0.5f, 0.f}, {-8.f, -2.f}, {-40.f, -20.f}};
  uint32_t seed = 1;
  for (int64_t n : {16, 33}) {
    for (int64_t n_tok : {int64_t{1}, C - 1, C, C + 1, 3 * C + 5}) {
      for (const Gates& gr : gate_ranges) {
        DeltaRunCase rec = delta_run_case(n, n_tok, gr.lo, gr.hi, seed);
        DeltaRunCase fast = rec, ref = rec;
        std::mt19937 rng(seed++);
        std::uniform_real_distribution<float> u(-1.f, 1.f);
        std::vector<float> m0(n * n);
        for (float& x : m0) x = u(rng);
        std::vector<float> m_rec = m0, m_fast = m0, m_ref = m0;
        std::vector<float> work(delta_chunk_workspace_floats(n));
        const float scale = 1.f / std::sqrt(static_cast<float>(n));
        gated_delta_rule_run_ref(m_rec.data(), rec.run(), scale, n);
        gated_delta_rule_chunked(m_fast.data(), fast.run(), scale, n, work.data());
        gated_delta_rule_chunked_ref(m_ref.data(), ref.run(), scale, n);
        const std::string what = "n=" + std::to_string(n) + " tokens=" + std::to_string(n_tok) +
                                 " g in [" + std::to_string(gr.lo) + ", " +
                                 std::to_string(gr.hi) + "]";
        EXPECT_LT(delta_out_err(fast, rec), 2e-5f) << "fast " << what;
        EXPECT_LT(delta_out_err(ref, rec), 2e-5f) << "ref " << what;
        EXPECT_LT(delta_state_err(m_fast, m_rec), 2e-5f) << "fast " << what;
        EXPECT_LT(delta_state_err(m_ref, m_rec), 2e-5f) << "ref " << what;
        // Rows not in the run are not written.
        for (int64_t j = 0; j < n; ++j) ASSERT_EQ(fast.out[j], 0.f) << what;
      }
    }
  }
}

// The chunk boundary is invisible: a run split in two calls (the state carried) gives the
// same outputs and state as one call, to float rounding.
TEST_P(DeltaRuleTest, ChunkedRunSplitAnywhere) {
  const int64_t n = 16, n_tok = 100;
  DeltaRunCase whole = delta_run_case(n, n_tok, -1.f, 0.f, 99);
  DeltaRunCase split = whole;
  std::vector<float> m_whole(n * n, 0.f), m_split(n * n, 0.f);
  std::vector<float> work(delta_chunk_workspace_floats(n));
  gated_delta_rule_chunked(m_whole.data(), whole.run(), 0.25f, n, work.data());
  DeltaRuleRun a = split.run(), b = split.run();
  a.n_tok = 37;
  b.rows += 37;
  b.n_tok = n_tok - 37;
  gated_delta_rule_chunked(m_split.data(), a, 0.25f, n, work.data());
  gated_delta_rule_chunked(m_split.data(), b, 0.25f, n, work.data());
  EXPECT_LT(delta_out_err(split, whole), 1e-5f);
  EXPECT_LT(delta_state_err(m_split, m_whole), 1e-5f);
}

// The conv1d (+ silu for DeltaNet, alone for the short-convolution kind) over a run (every
// target) against the reference, channel counts around the lanes, kernels of 1 to 5 taps, the
// run split over two channel ranges and two calls.
TEST_P(DeltaRuleTest, ConvSiluMatchesRef) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  for (const bool silu : {true, false}) {
    for (int64_t ch : {1, 7, 16, 33, 100}) {
      for (int taps : {0, 1, 2, 3, 4}) {
        const int64_t n_tok = 9, stride = ch + 3;
        std::vector<float> x(2 * n_tok * stride), w(ch * (taps + 1)), st(ch * taps);
        for (float& v : x) v = u(rng);
        for (float& v : w) v = u(rng);
        for (float& v : st) v = u(rng);
        std::vector<int> rows;
        for (int64_t t = 0; t < n_tok; ++t) rows.push_back(static_cast<int>(2 * t));
        std::vector<float> x_ref = x, st_ref = st;
        const auto ref = silu ? causal_conv1d_silu_ref : causal_conv1d_ref;
        const auto fast = silu ? causal_conv1d_silu : causal_conv1d;
        ref(st_ref.data(), w.data(), x_ref.data(), stride, rows.data(), n_tok, ch, taps);
        const int64_t mid = ch / 2;
        fast(st.data(), w.data(), x.data(), stride, rows.data(), 4, taps, 0, mid);
        fast(st.data(), w.data(), x.data(), stride, rows.data(), 4, taps, mid, ch);
        fast(st.data(), w.data(), x.data(), stride, rows.data() + 4, n_tok - 4, taps, 0, ch);
        for (size_t e = 0; e < x.size(); ++e) {
          ASSERT_NEAR(x[e], x_ref[e], 1e-5f * (1 + std::fabs(x_ref[e])))
              << "silu " << silu << " channels " << ch << " taps " << taps << " at " << e;
        }
        for (size_t e = 0; e < st.size(); ++e) ASSERT_EQ(st[e], st_ref[e]) << ch << " " << taps;
      }
    }
  }
}

TEST(DeltaNetKernels, ConvStepByHand) {
  // 2 channels, kernel 3 (2 taps of state): y = s0 w0 + s1 w1 + x w2, then the state shifts.
  float state[4] = {1, 2, -1, 0.5f};
  const float w[6] = {0.5f, 0.25f, 2, 1, -1, 3};
  const float x1[2] = {4, 2};
  float y[2];
  causal_conv1d_step(state, w, x1, 2, 2, y);
  EXPECT_FLOAT_EQ(y[0], 1 * 0.5f + 2 * 0.25f + 4 * 2);     // 9
  EXPECT_FLOAT_EQ(y[1], -1 * 1 + 0.5f * -1 + 2 * 3);       // 4.5
  EXPECT_FLOAT_EQ(state[0], 2);
  EXPECT_FLOAT_EQ(state[1], 4);
  EXPECT_FLOAT_EQ(state[2], 0.5f);
  EXPECT_FLOAT_EQ(state[3], 2);
  float x2[2] = {0, 1};
  causal_conv1d_step(state, w, x2, 2, 2, x2);  // in place
  EXPECT_FLOAT_EQ(x2[0], 2 * 0.5f + 4 * 0.25f);           // 2
  EXPECT_FLOAT_EQ(x2[1], 0.5f * 1 + 2 * -1 + 1 * 3);      // 1.5
}

TEST(DeltaNetKernels, L2NormAndSoftplus) {
  float x[2] = {3, 4};
  l2_norm(x, 2, 1e-6f);
  EXPECT_FLOAT_EQ(x[0], 0.6f);
  EXPECT_FLOAT_EQ(x[1], 0.8f);
  float z[2] = {0, 0};
  l2_norm(z, 2, 1e-6f);  // eps keeps a zero vector zero
  EXPECT_EQ(z[0], 0.f);
  EXPECT_FLOAT_EQ(softplus(0.f), std::log(2.f));
  EXPECT_EQ(softplus(25.f), 25.f);  // ggml: the identity above 20
}

}  // namespace
}  // namespace tova::kernels
