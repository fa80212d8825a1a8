// The interleaved layouts made at load (q4_0_r8 from Q4_0; kernels/types/q4_0_r8.cpp): the
// repack and its inverse, and matmul on them against the scalar reference (the base type's, row
// by row) on every SIMD target, for the few-token group kernels (1 to 11 tokens: decode and
// verify steps) and the token-lane path of prompts, which must give Q4_0's bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/matmul_internal.h"
#include "kernels/quant.h"
#include "kernels/types/weight_type.h"

#include "kernel_test_util.h"

namespace tova::kernels {
namespace {

struct Pair {
  std::vector<uint8_t> base_bytes, packed_bytes;
  std::vector<float> dequant;  // [n_out][n_in]
  WeightMatrix base, packed;
};

Pair random_pair(int64_t n_out, int64_t n_in, uint32_t seed) {
  const WeightTypeKernels& k = *find_interleaved_type(GgmlType::kQ4_0);
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Pair p;
  const uint64_t row_bytes = bytes_per_row(GgmlType::kQ4_0, n_in).value();
  p.base_bytes.resize(row_bytes * n_out);
  p.dequant.resize(static_cast<size_t>(n_out * n_in));
  std::vector<float> f(static_cast<size_t>(n_in));
  for (int64_t o = 0; o < n_out; ++o) {
    for (auto& v : f) v = dist(rng);
    quantize_row_ref(GgmlType::kQ4_0, f.data(), p.base_bytes.data() + o * row_bytes, n_in);
    dequantize_row_ref(GgmlType::kQ4_0, p.base_bytes.data() + o * row_bytes,
                       p.dequant.data() + o * n_in, n_in);
  }
  p.packed_bytes.resize(p.base_bytes.size());
  k.repack(p.base_bytes.data(), n_in, n_out, p.packed_bytes.data());
  p.base = {GgmlType::kQ4_0, p.base_bytes.data(), n_in, n_out, row_bytes};
  p.packed = {k.type, p.packed_bytes.data(), n_in, n_out, row_bytes};
  return p;
}

std::vector<float> random_acts(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = dist(rng);
  return x;
}

TEST(Interleaved, Q4_0R8IsFoundAndRowsComeBack) {
  const WeightTypeKernels* k = find_interleaved_type(GgmlType::kQ4_0);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->type, GgmlType::kQ4_0_R8);
  EXPECT_EQ(k->group_rows, 8);
  EXPECT_EQ(k->vec_dot_type, GgmlType::kQ8_0);
  EXPECT_EQ(find_weight_type(GgmlType::kQ4_0_R8), k);
  // A file cannot claim the layout.
  EXPECT_EQ(find_type_traits(static_cast<uint32_t>(GgmlType::kQ4_0_R8)), nullptr);
  EXPECT_FALSE(is_compute_supported(GgmlType::kQ4_0_R8));
  EXPECT_EQ(type_traits(GgmlType::kQ4_0_R8).type_size, 18);
  for (int64_t nb : {1, 3, 64}) {
    const Pair p = random_pair(24, 32 * nb, static_cast<uint32_t>(nb));
    EXPECT_NE(p.base_bytes, p.packed_bytes);
    std::vector<uint8_t> row(p.base.row_bytes);
    for (int64_t o = 0; o < 24; ++o) {
      k->row_of(p.packed_bytes.data(), p.base.n_in, o, row.data());
      ASSERT_EQ(0, std::memcmp(row.data(), p.base_bytes.data() + o * p.base.row_bytes, row.size()))
          << "nb=" << nb << " row " << o;
    }
  }
}

// matmul on the interleaved matrix against matmul_ref (Q4_0's reference, double sums) within
// 1e-5 of sum |w x| per output, as every type's test; and its reference equals Q4_0's bit for bit.
void check_against_reference(const Pair& p, int64_t n_tok, ThreadPool& pool,
                             const std::string& what) {
  const std::vector<float> x = random_acts(n_tok * p.base.n_in, static_cast<uint32_t>(n_tok) + 3);
  const size_t n_y = static_cast<size_t>(n_tok * p.base.n_out);
  std::vector<float> ref(n_y), ref_base(n_y);
  matmul_ref(p.packed, x.data(), n_tok, ref.data());
  matmul_ref(p.base, x.data(), n_tok, ref_base.data());
  ASSERT_EQ(0, std::memcmp(ref.data(), ref_base.data(), n_y * sizeof(float))) << what;
  for_each_target([&] {
    std::vector<float> y(n_y, std::nanf("")), y_base(n_y, std::nanf(""));
    matmul(p.packed, x.data(), n_tok, y.data(), pool);
    int bad = 0;
    for (size_t i = 0; i < n_y && bad < 5; ++i) {
      const int64_t t = static_cast<int64_t>(i) / p.base.n_out,
                    o = static_cast<int64_t>(i) % p.base.n_out;
      double scale = 0.0;
      for (int64_t k = 0; k < p.base.n_in; ++k) {
        scale +=
            std::fabs(static_cast<double>(p.dequant[o * p.base.n_in + k]) * x[t * p.base.n_in + k]);
      }
      const double diff = std::fabs(static_cast<double>(y[i]) - ref[i]);
      if (!(diff <= 1e-5 * scale + 1e-30)) {
        ADD_FAILURE() << what << " threads=" << pool.size() << " t=" << t << " o=" << o
                      << " y=" << y[i] << " ref=" << ref[i];
        ++bad;
      }
    }
    // Calls of kMatmulBatchInvariantTokens tokens or more run the row-unpacking paths, which
    // compute exactly as Q4_0's (the same unpacked rows).
    if (n_tok >= kMatmulBatchInvariantTokens) {
      matmul(p.base, x.data(), n_tok, y_base.data(), pool);
      EXPECT_EQ(0, std::memcmp(y.data(), y_base.data(), n_y * sizeof(float))) << what;
    }
  });
}

TEST(Interleaved, Q4_0R8MatchesReferenceOnEveryTarget) {
  // Block counts on both sides of the kernels' steps; 8 to 104 rows (1 to 13 groups, threads
  // splitting them); 1 to 11 tokens (the group kernels: 4 tokens a call on AVX2, 8 on AVX-512,
  // the rest in a second call) and 12, 17, 20, 33 (the token-lane tiles of prompts).
  ThreadPool pool1(1), pool2(2);
  for (int64_t nb : {1, 2, 3, 7, 33, 64}) {
    for (int64_t n_out : {8, 40, 104}) {
      const Pair p = random_pair(n_out, 32 * nb, static_cast<uint32_t>(nb * 131 + n_out));
      for (int64_t n_tok : {1, 2, 3, 4, 5, 7, 8, 9, 11, 12, 17, 20, 33}) {
        const std::string what = "q4_0_r8 " + std::to_string(n_out) + "x" +
                                 std::to_string(32 * nb) + " n_tok=" + std::to_string(n_tok);
        check_against_reference(p, n_tok, pool1, what);
        if (n_out * nb >= 40 * 33) check_against_reference(p, n_tok, pool2, what);
      }
    }
  }
}

TEST(Interleaved, Q4_0R8RowRangesThatCutAGroup) {
  // Threads split rows in multiples of 16, but matmul_rows takes any range: a range that starts
  // or ends inside a group computes the group and writes only its own rows.
  const Pair p = random_pair(32, 32 * 5, 77);
  for (int64_t n_tok : {1, 3, 6}) {
    const std::vector<float> x = random_acts(n_tok * p.base.n_in, 5);
    std::vector<float> ref(static_cast<size_t>(n_tok * 32));
    matmul_ref(p.packed, x.data(), n_tok, ref.data());
    for_each_target([&] {
      detail::ActBuffer acts;
      detail::plan_acts(p.packed.type, p.packed.n_in, n_tok, x.data(), &acts);
      detail::prepare_acts(x.data(), 0, n_tok, &acts);
      for (auto [lo, hi] :
           {std::pair{3, 13}, std::pair{8, 9}, std::pair{17, 32}, std::pair{0, 5}}) {
        std::vector<float> y(ref.size(), std::nanf(""));
        detail::matmul_rows(p.packed, acts, lo, hi, y.data());
        for (int64_t t = 0; t < n_tok; ++t) {
          for (int64_t o = 0; o < 32; ++o) {
            const float v = y[t * 32 + o];
            if (o < lo || o >= hi) {
              EXPECT_TRUE(std::isnan(v)) << "row " << o << " outside [" << lo << "," << hi << ")";
            } else {
              EXPECT_NEAR(v, ref[t * 32 + o], 1e-3f * (1.0f + std::fabs(ref[t * 32 + o])))
                  << "n_tok=" << n_tok << " t=" << t << " row " << o;
            }
          }
        }
      }
    });
  }
}

}  // namespace
}  // namespace tova::kernels
