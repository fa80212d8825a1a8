// matmul (SIMD, threaded, tiled) against matmul_ref for every weight type, several shapes and
// token counts, 1 and 2 threads; and the kernels on real GGUF weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "hwy/targets.h"
#include "io/gguf.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"
#include "test_data.h"

#include "kernel_test_util.h"

namespace tova::kernels {
namespace {

struct Matrix {
  std::vector<uint8_t> bytes;
  std::vector<float> dequant;  // [n_out][n_in]
  WeightMatrix w;
};

Matrix random_matrix(GgmlType t, int64_t n_out, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> f(static_cast<size_t>(n_out * n_in));
  for (auto& v : f) v = dist(rng);
  Matrix m;
  const uint64_t row_bytes = bytes_per_row(t, n_in).value();
  m.bytes.resize(row_bytes * static_cast<uint64_t>(n_out));
  m.dequant.resize(f.size());
  for (int64_t o = 0; o < n_out; ++o) {
    quantize_row_ref(t, f.data() + o * n_in, m.bytes.data() + o * row_bytes, n_in);
    dequantize_row_ref(t, m.bytes.data() + o * row_bytes, m.dequant.data() + o * n_in, n_in);
  }
  m.w = WeightMatrix{t, m.bytes.data(), n_in, n_out, row_bytes};
  return m;
}

std::vector<float> random_acts(int64_t n_tok, int64_t n_in, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n_tok * n_in));
  for (auto& v : x) v = dist(rng);
  return x;
}

// One matmul problem with its reference answer, computed once and checked on every target.
struct MatmulProblem {
  const WeightMatrix* w;
  int64_t n_tok;
  std::vector<float> x;       // [n_tok][n_in]
  std::vector<float> ref;     // [n_tok][n_out], matmul_ref
  std::vector<double> scale;  // [n_tok][n_out], sum_i |w_i x_i| with dequantized w
};

MatmulProblem make_problem(const WeightMatrix& w, const std::vector<float>& dequant, int64_t n_tok,
                     uint32_t seed) {
  MatmulProblem p{&w, n_tok, random_acts(n_tok, w.n_in, seed), {}, {}};
  p.ref.resize(static_cast<size_t>(n_tok * w.n_out));
  matmul_ref(w, p.x.data(), n_tok, p.ref.data());
  p.scale.resize(p.ref.size());
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t o = 0; o < w.n_out; ++o) {
      double s = 0.0;
      for (int64_t i = 0; i < w.n_in; ++i) {
        s += std::fabs(static_cast<double>(dequant[o * w.n_in + i]) * p.x[t * w.n_in + i]);
      }
      p.scale[t * w.n_out + o] = s;
    }
  }
  return p;
}

// Runs matmul and checks |y - ref| <= 1e-5 * sum_i |w_i x_i| for every output: the kernels
// round activations exactly like the reference, so only float-vs-double summation differs.
void check_matmul(const MatmulProblem& p, ThreadPool& pool, const std::string& what) {
  const WeightMatrix& w = *p.w;
  std::vector<float> y(p.ref.size(), std::nanf(""));
  matmul(w, p.x.data(), p.n_tok, y.data(), pool);
  int bad = 0;
  for (size_t i = 0; i < y.size() && bad < 5; ++i) {
    const double diff = std::fabs(static_cast<double>(y[i]) - p.ref[i]);
    if (!(diff <= 1e-5 * p.scale[i] + 1e-30)) {
      ADD_FAILURE() << what << " threads=" << pool.size() << " t=" << i / w.n_out
                    << " o=" << i % w.n_out << " y=" << y[i] << " ref=" << p.ref[i]
                    << " scale=" << p.scale[i];
      ++bad;
    }
  }
}

TEST(Matmul, MatchesReferenceForEveryTypeShapeAndThreadCount) {
  ThreadPool pool1(1), pool2(2);
  struct Shape {
    int64_t n_out, n_in_blocks;
  };
  // Block counts 1, 3, 7, 33 along n_in; odd row counts exercise the 4-row and 16-row tails.
  const Shape shapes[] = {{1, 1}, {7, 3}, {33, 7}, {203, 33}};
  for (GgmlType t : kWeightTypes) {
    const int64_t blk = std::max<int64_t>(32, type_traits(t).block_size);
    for (const Shape& s : shapes) {
      const int64_t n_in = s.n_in_blocks * blk;
      const Matrix m = random_matrix(t, s.n_out, n_in, static_cast<uint32_t>(n_in + s.n_out));
      // 1 and 3: row kernels; 17 and 33: token-lane kernels where the type has them (with a
      // partial last token group).
      for (int64_t n_tok : {1, 3, 17, 33}) {
        const MatmulProblem p = make_problem(m.w, m.dequant, n_tok, static_cast<uint32_t>(n_tok));
        const std::string what = std::string(type_name(t)) + " " + std::to_string(s.n_out) + "x" +
                                 std::to_string(n_in) + " n_tok=" + std::to_string(n_tok);
        for_each_target([&] {
          check_matmul(p, pool1, what);
          check_matmul(p, pool2, what);
        });
      }
    }
  }
}

TEST(Matmul, ManyTokensAndLargeRowsOnTwoThreads) {
  // Large enough to run threaded, with token counts around the kernels' tile sizes.
  ThreadPool pool(2);
  for (GgmlType t : {GgmlType::kQ4_0, GgmlType::kQ6_K, GgmlType::kF16, GgmlType::kQ8_0}) {
    const Matrix m = random_matrix(t, 100, 512, 5);
    for (int64_t n_tok : {8, 16, 31, 40, 64}) {
      const MatmulProblem p = make_problem(m.w, m.dequant, n_tok, static_cast<uint32_t>(n_tok) + 1);
      for_each_target([&] {
        check_matmul(p, pool, std::string(type_name(t)) + " n_tok=" + std::to_string(n_tok));
      });
    }
  }
}

TEST(Matmul, ActivationsSplitByColumnsGiveTheBitsOfOneThread) {
  // One or two groups of token lanes (12-31 tokens: a batched decode step) are too few to split
  // the activation conversion by token; wide rows split it by columns instead (23 parts of 256,
  // the last thread's share uneven). Every thread count must give the same bits, and the
  // reference's answer.
  ThreadPool pool1(1), pool2(2), pool3(3);
  for (GgmlType t : {GgmlType::kQ4_0, GgmlType::kQ4_K, GgmlType::kQ6_K, GgmlType::kF16}) {
    const Matrix m = random_matrix(t, 40, 23 * 256, 29);
    for (int64_t n_tok : {12, 16, 31}) {
      const MatmulProblem p = make_problem(m.w, m.dequant, n_tok, static_cast<uint32_t>(n_tok) + 5);
      const std::string what = std::string(type_name(t)) + " n_tok=" + std::to_string(n_tok);
      for_each_target([&] {
        std::vector<float> y1(p.ref.size(), std::nanf("")), y(p.ref.size());
        matmul(m.w, p.x.data(), n_tok, y1.data(), pool1);
        for (ThreadPool* pool : {&pool2, &pool3}) {
          std::fill(y.begin(), y.end(), std::nanf(""));
          matmul(m.w, p.x.data(), n_tok, y.data(), *pool);
          EXPECT_EQ(0, std::memcmp(y1.data(), y.data(), y.size() * sizeof(float)))
              << what << " threads=" << pool->size();
        }
        check_matmul(p, pool2, what);
      });
    }
  }
}

TEST(Matmul, TileShapesOfEveryTarget) {
  // The token-lane tiles hold 48 tokens on AVX3_DL and AVX3 (3 x 16) and 16 on AVX2 (2 x 8),
  // the decode tiles 4 rows x 4 tokens on AVX3_DL and 2 x 4 on AVX2 and AVX3: token counts on
  // both sides of each (and of the switch from decode rows to token lanes at 8 or 12 tokens),
  // and 37 rows (a partial 4-row tile after a whole 32-row chunk), for every quantized type
  // (each has a direct decode kernel, a distinct int16 step count in the maddubs tiles, or the
  // signed tiles).
  ThreadPool pool(2);
  for (GgmlType t : kWeightTypes) {
    if (t == GgmlType::kF32 || t == GgmlType::kF16 || t == GgmlType::kBF16) continue;
    const Matrix m = random_matrix(t, 37, 512, 23);
    for (int64_t n_tok : {2, 7, 8, 9, 11, 12, 16, 24, 25, 48, 49}) {
      const MatmulProblem p = make_problem(m.w, m.dequant, n_tok, static_cast<uint32_t>(n_tok) + 3);
      for_each_target([&] {
        check_matmul(p, pool, std::string(type_name(t)) + " n_tok=" + std::to_string(n_tok));
      });
    }
  }
}

TEST(Matmul, TokenQuadsWithBlockTails) {
  // The token-quad decode kernels (matmul_decode_quad-inl.h) take blocks in groups of 4
  // (AVX3_DL) or 2 (AVX2, AVX3) with the last group partial, and quads of tokens, the last one
  // padded with zero tokens or its tokens left to the row kernels (kQuadMinTokens): block
  // counts on both sides of each group size, 2 to 9 tokens.
  ThreadPool pool1(1), pool2(2);
  for (int64_t n_blocks : {1, 2, 3, 4, 5, 6, 7, 9, 33}) {
    const Matrix m = random_matrix(GgmlType::kQ4_0, 9, 32 * n_blocks,
                                   static_cast<uint32_t>(n_blocks) + 41);
    for (int64_t n_tok : {2, 3, 4, 5, 6, 7, 8, 9}) {
      const MatmulProblem p = make_problem(m.w, m.dequant, n_tok, static_cast<uint32_t>(n_tok) + 7);
      const std::string what =
          "q4_0 blocks=" + std::to_string(n_blocks) + " n_tok=" + std::to_string(n_tok);
      for_each_target([&] {
        check_matmul(p, pool1, what);
        check_matmul(p, pool2, what);
      });
    }
  }
}

TEST(Matmul, MXFP4ExponentsAtTheEdges) {
  // E8M0 exponents that the random rows never hold: 0 and 1 (the scale 2^(e - 128) is a float
  // denormal), 2 (the smallest normal), and large ones, alone in a row and mixed; 7 blocks (a
  // partial group of 4), 1 to 5 tokens (every decode tile), on every target; checked relative
  // to the row's own magnitude, so that tiny rows are checked too.
  ThreadPool pool(2);
  const int64_t n_in = 7 * 32;
  const std::vector<std::vector<int>> row_exps = {
      {0, 0, 0, 0, 0, 0, 0}, {1, 0, 1, 1, 0, 1, 0}, {2, 2, 2, 2, 2, 2, 2},
      {120, 127, 128, 135, 126, 131, 129}, {0, 127, 1, 200, 2, 60, 150}};
  const int64_t n_out = static_cast<int64_t>(row_exps.size());
  const uint64_t row_bytes = bytes_per_row(GgmlType::kMXFP4, n_in).value();
  std::vector<uint8_t> bytes(row_bytes * static_cast<uint64_t>(n_out));
  std::vector<float> dequant(static_cast<size_t>(n_out * n_in));
  std::mt19937 rng(99);
  for (int64_t o = 0; o < n_out; ++o) {
    uint8_t* row = bytes.data() + o * row_bytes;
    for (int b = 0; b < 7; ++b) {
      row[17 * b] = static_cast<uint8_t>(row_exps[o][b]);
      for (int i = 1; i < 17; ++i) row[17 * b + i] = static_cast<uint8_t>(rng());
    }
    dequantize_row_ref(GgmlType::kMXFP4, row, dequant.data() + o * n_in, n_in);
  }
  const WeightMatrix w{GgmlType::kMXFP4, bytes.data(), n_in, n_out, row_bytes};
  for (int64_t n_tok : {1, 2, 3, 5}) {
    const MatmulProblem p = make_problem(w, dequant, n_tok, static_cast<uint32_t>(n_tok) + 40);
    for (float r : p.ref) ASSERT_NE(r, 0.0f);  // even the rows of 2^-128 scales are not 0
    for_each_target([&] {
      std::vector<float> y(p.ref.size(), std::nanf(""));
      matmul(w, p.x.data(), n_tok, y.data(), pool);
      for (size_t i = 0; i < y.size(); ++i) {
        const double diff = std::fabs(static_cast<double>(y[i]) - p.ref[i]);
        EXPECT_TRUE(diff <= 1e-5 * p.scale[i]) << "n_tok=" << n_tok << " t=" << i / n_out
                                               << " o=" << i % n_out << " y=" << y[i]
                                               << " ref=" << p.ref[i];
      }
    });
  }
}

TEST(Matmul, MXFP4BlockGroupsTailsAndScales) {
  // The 256-bit MXFP4 decode kernels take whole groups of 8 blocks (two blocks per vector, the
  // activations permuted to match) and the blocks after them one at a time: block counts on
  // both sides of 8 and 16, each row tile (1-2 rows x 1-4 tokens, and 5 rows, 7 and 9 tokens for
  // partial tiles). Random bytes, not quantized rows, so every nibble pattern; E8M0 exponents
  // spread over 2^9 per row, so that a scale or a correction in the wrong lane shows within the
  // tolerance, and rows of the denormal scales (0 and 1; 2 the smallest normal one) and of the
  // large ones alone (a row's error bound follows its largest blocks).
  ThreadPool pool(1);
  for (int64_t nb : {1, 7, 8, 9, 15, 16, 17, 23, 90}) {
    const int64_t n_in = 32 * nb, n_out = 5;
    std::mt19937 rng(static_cast<uint32_t>(nb));
    Matrix m;
    const uint64_t row_bytes = bytes_per_row(GgmlType::kMXFP4, n_in).value();
    m.bytes.resize(row_bytes * n_out);
    for (uint8_t& byte : m.bytes) byte = static_cast<uint8_t>(rng());
    for (int64_t o = 0; o < n_out; ++o) {
      // Row 0: exponents 0..3; row 1: 140..150; the others 118..126.
      const int base = o == 0 ? 0 : o == 1 ? 140 : 118;
      const int span = o == 0 ? 4 : o == 1 ? 11 : 9;
      for (int64_t b = 0; b < nb; ++b) {
        m.bytes[static_cast<size_t>(o * row_bytes + b * 17)] =
            static_cast<uint8_t>(base + static_cast<int>(rng() % span));
      }
    }
    m.dequant.resize(static_cast<size_t>(n_in * n_out));
    for (int64_t o = 0; o < n_out; ++o) {
      dequantize_row_ref(GgmlType::kMXFP4, m.bytes.data() + o * row_bytes,
                         m.dequant.data() + o * n_in, n_in);
    }
    m.w = WeightMatrix{GgmlType::kMXFP4, m.bytes.data(), n_in, n_out, row_bytes};
    for (int64_t n_tok : {1, 2, 3, 4, 7, 9}) {
      const MatmulProblem p =
          make_problem(m.w, m.dequant, n_tok, static_cast<uint32_t>(nb * 10 + n_tok));
      for_each_target([&] {
        check_matmul(p, pool, "mxfp4 blocks=" + std::to_string(nb) + " n_tok=" +
                                  std::to_string(n_tok));
      });
    }
  }
}

TEST(Matmul, RepeatedCallsReuseBuffersCorrectly) {
  // A big call then small ones: stale buffer contents (padding tokens) must not leak in.
  ThreadPool pool(2);
  const Matrix m = random_matrix(GgmlType::kQ4_0, 48, 256, 17);
  std::vector<MatmulProblem> problems;
  for (int64_t n_tok : {40, 9, 1, 33, 2}) {
    problems.push_back(make_problem(m.w, m.dequant, n_tok, static_cast<uint32_t>(n_tok) * 7));
  }
  for_each_target([&] {
    for (const MatmulProblem& p : problems) check_matmul(p, pool, "n_tok=" + std::to_string(p.n_tok));
  });
}

TEST(Matmul, GroupedGivesTheBitsOfOneCallPerJob) {
  // A mixture of experts' task list: each job its own matrix and tokens (none, one, a few, a
  // token-lane group and more), an expert's gate and up over the same x (one conversion), row
  // counts that put the split inside and across jobs; mixed types take one call per job.
  ThreadPool pool1(1), pool2(2);
  struct Group {
    std::vector<GgmlType> types;
    int64_t n_in;
  };
  const Group groups[] = {
      {{GgmlType::kMXFP4, GgmlType::kMXFP4, GgmlType::kMXFP4, GgmlType::kMXFP4, GgmlType::kMXFP4,
        GgmlType::kMXFP4},
       256},
      {{GgmlType::kQ3_K, GgmlType::kQ3_K, GgmlType::kQ3_K, GgmlType::kQ3_K, GgmlType::kQ3_K,
        GgmlType::kQ3_K},
       512},
      {{GgmlType::kQ8_0, GgmlType::kQ8_0, GgmlType::kQ8_0, GgmlType::kQ8_0, GgmlType::kQ8_0,
        GgmlType::kQ8_0},
       256},
      {{GgmlType::kF32, GgmlType::kF32, GgmlType::kF32, GgmlType::kF32, GgmlType::kF32,
        GgmlType::kF32},
       128},
      {{GgmlType::kQ4_0, GgmlType::kQ4_0, GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_0,
        GgmlType::kQ4_0},
       256},
  };
  const int64_t n_out[] = {400, 400, 48, 197, 320, 65};
  for (const Group& g : groups) {
    std::vector<Matrix> ms;
    for (size_t i = 0; i < g.types.size(); ++i) {
      ms.push_back(random_matrix(g.types[i], n_out[i], g.n_in, static_cast<uint32_t>(20 + i)));
    }
    for (int64_t scale : {1, 4}) {  // scale 1: one token per job at most (decode)
      // Jobs 0 and 1 (gate and up of one expert) share x; the others have their own.
      const int64_t toks[] = {scale, scale, 0, 3 * scale - 2, 17 * (scale - 1) + 1, 16 * (scale - 1) + 1};
      std::vector<std::vector<float>> xs;
      for (size_t i = 0; i < ms.size(); ++i) {
        xs.push_back(random_acts(std::max<int64_t>(toks[i], 1), g.n_in, static_cast<uint32_t>(i)));
      }
      for_each_target([&] {
        for (ThreadPool* pool : {&pool1, &pool2}) {
          std::vector<std::vector<float>> one(ms.size()), grouped(ms.size());
          std::vector<MatmulJob> jobs;
          for (size_t i = 0; i < ms.size(); ++i) {
            const float* x = xs[i == 1 ? 0 : i].data();
            one[i].assign(static_cast<size_t>(std::max<int64_t>(toks[i], 1) * n_out[i]), 1.5f);
            grouped[i] = one[i];
            if (toks[i] > 0) matmul(ms[i].w, x, toks[i], one[i].data(), *pool);
            jobs.push_back({&ms[i].w, x, toks[i], grouped[i].data()});
          }
          matmul_grouped(jobs, *pool);
          for (size_t i = 0; i < ms.size(); ++i) {
            EXPECT_EQ(0, std::memcmp(one[i].data(), grouped[i].data(), one[i].size() * 4))
                << type_name(g.types[i]) << " job " << i << " n_tok=" << toks[i]
                << " threads=" << pool->size();
          }
        }
      });
    }
  }
}

TEST(Matmul, MultiGivesTheBitsOfOneCallPerMatrix) {
  // q/k/v-like stacks: row counts that are not multiples of 16 put the thread split inside a
  // matrix and across matrix boundaries; mixed types take one call per matrix.
  ThreadPool pool1(1), pool2(2);
  struct Stack {
    std::vector<GgmlType> types;
    std::vector<int64_t> n_out;
    int64_t n_in;
  };
  const Stack stacks[] = {
      {{GgmlType::kQ4_0, GgmlType::kQ4_0, GgmlType::kQ4_0}, {200, 33, 33}, 256},
      {{GgmlType::kQ8_0, GgmlType::kQ8_0}, {97, 160}, 512},
      {{GgmlType::kQ6_K, GgmlType::kQ6_K}, {64, 48}, 256},
      {{GgmlType::kF16, GgmlType::kF16, GgmlType::kF16}, {40, 24, 24}, 128},
      {{GgmlType::kQ4_0, GgmlType::kQ8_0, GgmlType::kQ4_0}, {64, 32, 17}, 256},
  };
  for (const Stack& st : stacks) {
    std::vector<Matrix> ms;
    for (size_t i = 0; i < st.types.size(); ++i) {
      ms.push_back(random_matrix(st.types[i], st.n_out[i], st.n_in, static_cast<uint32_t>(i)));
    }
    for (int64_t n_tok : {1, 3, 17, 64}) {
      const std::vector<float> x = random_acts(n_tok, st.n_in, 11);
      for_each_target([&] {
        for (ThreadPool* pool : {&pool1, &pool2}) {
          std::vector<std::vector<float>> one(ms.size()), multi(ms.size());
          std::vector<const WeightMatrix*> ws;
          std::vector<float*> ys;
          for (size_t i = 0; i < ms.size(); ++i) {
            one[i].assign(static_cast<size_t>(n_tok * st.n_out[i]), std::nanf(""));
            multi[i].assign(one[i].size(), std::nanf(""));
            matmul(ms[i].w, x.data(), n_tok, one[i].data(), *pool);
            ws.push_back(&ms[i].w);
            ys.push_back(multi[i].data());
          }
          matmul_multi(ws, x.data(), n_tok, ys, *pool);
          for (size_t i = 0; i < ms.size(); ++i) {
            EXPECT_EQ(0, std::memcmp(one[i].data(), multi[i].data(), one[i].size() * 4))
                << type_name(st.types[i]) << " matrix " << i << " n_tok=" << n_tok
                << " threads=" << pool->size();
          }
        }
      });
    }
  }
}

// ---- real weights: llama.cpp-written GGUF files ----

std::unique_ptr<io::GgufFile> open_model(const std::string& name) {
  auto f = io::GgufFile::open(testing::shared_path("models/" + name));
  EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.message());
  return f.ok() ? std::move(f).value() : nullptr;
}

// RMS of (dequantized - f32 original) / RMS(original) over a whole tensor.
double relative_rms(const io::GgufTensorInfo& q, const io::GgufTensorInfo& f32) {
  const int64_t n_in = q.dims[0];
  const int64_t rows = q.n_elements / n_in;
  const uint64_t row_bytes = bytes_per_row(q.type, n_in).value();
  std::vector<float> row(static_cast<size_t>(n_in)), ref_row(row.size());
  const auto* orig = reinterpret_cast<const float*>(f32.data);
  double e2 = 0.0, s2 = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row(q.type, q.data + r * row_bytes, row.data(), n_in);
    dequantize_row_ref(q.type, q.data + r * row_bytes, ref_row.data(), n_in);
    EXPECT_EQ(0, std::memcmp(row.data(), ref_row.data(), row.size() * sizeof(float))) << q.name;
    for (int64_t i = 0; i < n_in; ++i) {
      const double o = orig[r * n_in + i];
      e2 += (row[i] - o) * (row[i] - o);
      s2 += o * o;
    }
  }
  return std::sqrt(e2 / s2);
}

TEST(MatmulRealData, DequantizedWeightsMatchTheF32Model) {
  // The fixtures are one random model written in several types, so the Q4_0/Q6_K/Q8_0/F16/BF16
  // tensors must dequantize to the F32 file's values within the type's error. A wrong nibble or
  // bit order gives an error of order 1.
  TOVA_REQUIRE_SHARED();
  auto f32 = open_model("rand-llama-gqa-f32.gguf");
  ASSERT_NE(f32, nullptr);
  struct Case {
    const char* file;
    double bound;  // relative RMS bound per tensor type
  };
  for (const Case& c :
       {Case{"rand-llama-gqa-q4_0.gguf", 0.12}, Case{"rand-llama-gqa-q8_0.gguf", 6e-3},
        Case{"rand-llama-gqa-f16.gguf", 4e-4}, Case{"rand-llama-gqa-bf16.gguf", 3e-3}}) {
    auto q = open_model(c.file);
    ASSERT_NE(q, nullptr);
    int checked = 0;
    for (const auto& t : q->tensors()) {
      if (t.type == GgmlType::kF32 || t.dims.size() != 2) continue;
      const io::GgufTensorInfo* orig = f32->find_tensor(t.name);
      ASSERT_NE(orig, nullptr) << t.name;
      ASSERT_EQ(orig->type, GgmlType::kF32);
      const double rel = relative_rms(t, *orig);
      const double bound = t.type == GgmlType::kQ6_K ? 0.03 : c.bound;
      EXPECT_LE(rel, bound) << c.file << " " << t.name << " (" << type_name(t.type) << ")";
      ++checked;
    }
    EXPECT_GT(checked, 4) << c.file;
  }
}

TEST(MatmulRealData, MatmulOnRealTensorsMatchesReference) {
  TOVA_REQUIRE_SHARED();
  ThreadPool pool(2);
  for (const char* file :
       {"rand-llama-gqa-q4_0.gguf", "rand-llama-gqa-q8_0.gguf", "rand-llama-gqa-f16.gguf",
        "rand-llama-gqa-bf16.gguf", "rand-qwen2-q8_0.gguf"}) {
    auto q = open_model(file);
    ASSERT_NE(q, nullptr);
    for (const char* name : {"output.weight", "blk.0.ffn_down.weight", "blk.1.attn_k.weight"}) {
      const io::GgufTensorInfo* t = q->find_tensor(name);
      // Files with a tied output (qwen2) multiply by the token embeddings.
      if (t == nullptr && std::string(name) == "output.weight")
        t = q->find_tensor("token_embd.weight");
      ASSERT_NE(t, nullptr) << name;
      const int64_t n_in = t->dims[0], n_out = t->dims[1];
      const WeightMatrix w{t->type, t->data, n_in, n_out, bytes_per_row(t->type, n_in).value()};
      std::vector<float> dequant(static_cast<size_t>(n_in * n_out));
      for (int64_t o = 0; o < n_out; ++o) {
        dequantize_row_ref(t->type, t->data + o * w.row_bytes, dequant.data() + o * n_in, n_in);
      }
      for (int64_t n_tok : {1, 20, 64}) {
        const MatmulProblem p = make_problem(w, dequant, n_tok, 3);
        for_each_target([&] {
          check_matmul(p, pool, std::string(file) + " " + name + " n_tok=" + std::to_string(n_tok));
        });
      }
    }
  }
}

}  // namespace
}  // namespace tova::kernels
