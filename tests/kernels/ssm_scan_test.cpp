// The Mamba2 selective scan (kernels/ssm_scan.h): a hand-computed head (2 x 2 state, 2 tokens)
// through the reference and the fast form, and the fast form against the reference on random
// runs of awkward sizes on every Highway target.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "hwy/targets.h"
#include "kernels/ssm_scan.h"

namespace tova::kernels {
namespace {

class SsmScanTest : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override { hwy::SetSupportedTargetsForTest(GetParam()); }
  void TearDown() override { hwy::SetSupportedTargetsForTest(0); }
};

std::string ssm_target_name(const ::testing::TestParamInfo<int64_t>& info) {
  return hwy::TargetName(info.param);
}

INSTANTIATE_TEST_SUITE_P(AllTargets, SsmScanTest,
                         ::testing::ValuesIn(hwy::SupportedAndGeneratedTargets()), ssm_target_name);

using ScanFn = void (*)(float*, const SsmScanRun&, float, int64_t, int64_t);

// P = 2, N = 2, a = -ln 2 (so that dt = 1 decays by exactly 0.5), by hand:
//  t1: dt = 1, x = (2, -1), B = (1, 0), C = (1, 1); state from s0 = [[2, 4], [0, 8]]:
//      s = 0.5 s0 + B x_p = [[1 + 2, 2], [0 - 1, 4]] = [[3, 2], [-1, 4]], y = (5, 3)
//  t2: dt = 2 (decay 0.25), x = (1, 1), B = (0.5, 1), C = (2, 0):
//      s = 0.25 s + 2 B x_p = [[0.75 + 1, 0.5 + 2], [-0.25 + 1, 1 + 2]] = [[1.75, 2.5], [0.75, 3]],
//      y = (3.5, 1.5)
void ssm_hand_case(ScanFn scan) {
  const float a = -std::log(2.f);
  // Rows: token t's x | B | C | dt in one row of 7.
  const float in[2][7] = {{2, -1, 1, 0, 1, 1, 1}, {1, 1, 0.5f, 1, 2, 0, 2}};
  const int rows[2] = {0, 1};
  float y[2][2] = {};
  std::vector<float> s = {2, 4, 0, 8};
  const SsmScanRun run{.rows = rows,
                       .n_tok = 2,
                       .x = &in[0][0],
                       .x_stride = 7,
                       .b = &in[0][2],
                       .c = &in[0][4],
                       .bc_stride = 7,
                       .dt = &in[0][6],
                       .dt_stride = 7,
                       .y = &y[0][0],
                       .y_stride = 2};
  scan(s.data(), run, a, 2, 2);
  const float want_s[4] = {1.75f, 2.5f, 0.75f, 3.f};
  for (int e = 0; e < 4; ++e) EXPECT_NEAR(s[e], want_s[e], 1e-5f) << e;
  EXPECT_NEAR(y[1][0], 3.5f, 1e-5f);
  EXPECT_NEAR(y[1][1], 1.5f, 1e-5f);
  EXPECT_NEAR(y[0][0], 5.f, 1e-5f);
  EXPECT_NEAR(y[0][1], 3.f, 1e-5f);
}

TEST(SsmScanRef, TwoTokensByHand) { ssm_hand_case(ssm_scan_ref); }
TEST_P(SsmScanTest, TwoTokensByHand) { ssm_hand_case(ssm_scan); }

// Random runs laid out as the layer lays them (every other row of wider matrices, x and B/C in
// one row as the conv's output holds them): head sizes and state sizes around every target's
// lanes, steps from tiny to large (decays near 1 and near 0), a nonzero state going in, the run
// split over two calls. Tolerance: float rounding of N-term dot products against double sums.
TEST_P(SsmScanTest, MatchesRefOnRandomRuns) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.f, 1.f), udt(0.001f, 4.f);
  for (int64_t P : {1, 7, 33}) {
    for (int64_t N : {1, 7, 16, 33, 128}) {
      const int64_t n_tok = 9, stride = P + 2 * N + 3, n_rows = 2 * n_tok;
      std::vector<float> in(n_rows * stride), y(n_rows * P, 0.f), y_ref = y;
      for (float& v : in) v = u(rng);
      for (int64_t r = 0; r < n_rows; ++r) in[r * stride + P + 2 * N] = udt(rng);
      std::vector<int> rows;
      for (int64_t t = 0; t < n_tok; ++t) rows.push_back(static_cast<int>(2 * t + 1));
      std::vector<float> s(P * N), s_ref;
      for (float& v : s) v = u(rng);
      s_ref = s;
      const float a = -0.5f - std::fabs(u(rng));
      SsmScanRun run{.rows = rows.data(),
                     .n_tok = n_tok,
                     .x = in.data(),
                     .x_stride = stride,
                     .b = in.data() + P,
                     .c = in.data() + P + N,
                     .bc_stride = stride,
                     .dt = in.data() + P + 2 * N,
                     .dt_stride = stride,
                     .y = y.data(),
                     .y_stride = P};
      SsmScanRun run_ref = run;
      run_ref.y = y_ref.data();
      ssm_scan_ref(s_ref.data(), run_ref, a, P, N);
      SsmScanRun first = run, second = run;
      first.n_tok = 4;
      second.rows += 4;
      second.n_tok = n_tok - 4;
      ssm_scan(s.data(), first, a, P, N);
      ssm_scan(s.data(), second, a, P, N);
      const std::string what = "P=" + std::to_string(P) + " N=" + std::to_string(N);
      for (size_t e = 0; e < y.size(); ++e) {
        ASSERT_NEAR(y[e], y_ref[e], 2e-5f * (1 + std::fabs(y_ref[e]))) << what << " y " << e;
      }
      for (size_t e = 0; e < s.size(); ++e) {
        ASSERT_NEAR(s[e], s_ref[e], 2e-5f * (1 + std::fabs(s_ref[e]))) << what << " s " << e;
      }
      // Rows not in the run are not written.
      for (int64_t p = 0; p < P; ++p) ASSERT_EQ(y[p], 0.f) << what;
    }
  }
}

// The chunked forms (the fast one on every target, and its double reference) against the
// recurrent reference: lengths around the chunk, steps from tiny to large (decays from near 1 to
// ~e^-40 per token), a nonzero state going in, a run split over two calls. Tolerance 5e-5
// relative to the largest value: float products of up to 128-term sums in another order.
TEST_P(SsmScanTest, ChunkedMatchesRecurrent) {
  const int64_t L = kSsmChunk;
  uint32_t seed = 21;
  for (int64_t P : {7, 32, 33}) {
    for (int64_t N : {7, 16, 128}) {
      for (int64_t n_tok : {int64_t{1}, L - 1, L, L + 1, 2 * L + 5}) {
        for (const float dt_hi : {0.05f, 1.f, 10.f}) {
          std::mt19937 rng(seed++);
          std::uniform_real_distribution<float> u(-1.f, 1.f), udt(0.f, dt_hi);
          const int64_t stride = P + 2 * N + 1, n_rows = 2 * n_tok;
          std::vector<float> in(n_rows * stride);
          for (float& v : in) v = u(rng);
          for (int64_t r = 0; r < n_rows; ++r) in[r * stride + P + 2 * N] = udt(rng);
          std::vector<int> rows;
          for (int64_t t = 0; t < n_tok; ++t) rows.push_back(static_cast<int>(2 * t + 1));
          std::vector<float> s0(P * N);
          for (float& v : s0) v = u(rng);
          const float a = -1.f - std::fabs(u(rng));
          std::vector<float> y_rec(n_rows * P, 0.f), y_fast = y_rec, y_ref = y_rec;
          std::vector<float> s_rec = s0, s_fast = s0, s_ref = s0;
          SsmScanRun run{.rows = rows.data(),
                         .n_tok = n_tok,
                         .x = in.data(),
                         .x_stride = stride,
                         .b = in.data() + P,
                         .c = in.data() + P + N,
                         .bc_stride = stride,
                         .dt = in.data() + P + 2 * N,
                         .dt_stride = stride,
                         .y = y_rec.data(),
                         .y_stride = P};
          ssm_scan_ref(s_rec.data(), run, a, P, N);
          std::vector<float> work(ssm_chunk_workspace_floats(P, N));
          SsmScanRun first = run, second = run;
          first.y = second.y = y_fast.data();
          first.n_tok = std::min<int64_t>(n_tok, 3);
          second.rows += first.n_tok;
          second.n_tok = n_tok - first.n_tok;
          ssm_scan_chunked(s_fast.data(), first, a, P, N, work.data());
          if (second.n_tok > 0) ssm_scan_chunked(s_fast.data(), second, a, P, N, work.data());
          run.y = y_ref.data();
          ssm_scan_chunked_ref(s_ref.data(), run, a, P, N);
          auto err = [](const std::vector<float>& x, const std::vector<float>& want) {
            float e = 0, mag = 0;
            for (size_t i = 0; i < want.size(); ++i) {
              e = std::max(e, std::fabs(x[i] - want[i]));
              mag = std::max(mag, std::fabs(want[i]));
            }
            return e / (1 + mag);
          };
          const std::string what = "P=" + std::to_string(P) + " N=" + std::to_string(N) +
                                   " tokens=" + std::to_string(n_tok) + " dt<" +
                                   std::to_string(dt_hi);
          EXPECT_LT(err(y_fast, y_rec), 5e-5f) << "fast " << what;
          EXPECT_LT(err(s_fast, s_rec), 5e-5f) << "fast " << what;
          EXPECT_LT(err(y_ref, y_rec), 5e-5f) << "ref " << what;
          EXPECT_LT(err(s_ref, s_rec), 5e-5f) << "ref " << what;
          for (int64_t p = 0; p < P; ++p) ASSERT_EQ(y_fast[p], 0.f) << what;  // rows not run
        }
      }
    }
  }
}

}  // namespace
}  // namespace tova::kernels
