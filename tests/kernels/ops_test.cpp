// Elementwise/attention ops: every SIMD op against its scalar _ref on random inputs of awkward
// sizes, on every Highway target this CPU supports, plus hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/half.h"
#include "hwy/highway.h"
#include "hwy/targets.h"
#include "kernels/ops.h"

namespace tova::kernels {
namespace {

constexpr float kEps = std::numeric_limits<float>::epsilon();
const std::vector<int64_t> kSizes = {1, 7, 16, 33, 64, 4097};

std::vector<float> random_floats(int64_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

float float_of(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// Runs each test once per compiled-and-supported Highway target, so the SSE4/AVX2/EMU128 code
// paths are tested on an AVX-512 machine too.
class OpsTest : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override { hwy::SetSupportedTargetsForTest(GetParam()); }
  void TearDown() override { hwy::SetSupportedTargetsForTest(0); }
};

std::string ops_target_param_name(const ::testing::TestParamInfo<int64_t>& info) {
  return hwy::TargetName(info.param);
}

INSTANTIATE_TEST_SUITE_P(AllTargets, OpsTest,
                         ::testing::ValuesIn(hwy::SupportedAndGeneratedTargets()),
                         ops_target_param_name);

TEST_P(OpsTest, DispatchesToTheRequestedTarget) {
  EXPECT_STREQ(ops_target_name(), hwy::TargetName(GetParam()));
}

TEST_P(OpsTest, RmsNormMatchesRef) {
  for (int64_t n : kSizes) {
    const auto x = random_floats(n, -4.f, 4.f, 1);
    const auto w = random_floats(n, -2.f, 2.f, 2);
    std::vector<float> y(n), y_ref(n);
    rms_norm(x.data(), w.data(), y.data(), n, 1e-5f);
    rms_norm_ref(x.data(), w.data(), y_ref.data(), n, 1e-5f);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(y[i], y_ref[i], 4 * kEps * std::fabs(y_ref[i]) + 1e-30f)
          << "n=" << n << " i=" << i;
    }
    // In place (y aliases x).
    auto xy = x;
    rms_norm(xy.data(), w.data(), xy.data(), n, 1e-5f);
    EXPECT_EQ(xy, y) << "n=" << n;
  }
}

TEST_P(OpsTest, RopeMatchesRef) {
  const int n_head = 3;
  for (int head_dim : {8, 64, 128}) {
    for (int n_rot : {head_dim, head_dim / 2, head_dim - 2}) {
      for (RopeMode mode : {RopeMode::kNorm, RopeMode::kNeox}) {
        for (int64_t pos : {0, 1, 4095, 100000}) {
          for (float freq_scale : {1.f, 0.25f}) {
            for (float freq_base : {10000.f, 1000000.f}) {
              const RopeParams p{.n_rot = n_rot, .freq_base = freq_base,
                                 .freq_scale = freq_scale, .mode = mode};
              const auto x = random_floats(n_head * head_dim, -3.f, 3.f,
                                           static_cast<uint32_t>(head_dim + n_rot + pos));
              auto y = x, y_ref = x;
              rope(y.data(), n_head, head_dim, pos, p);
              rope_ref(y_ref.data(), n_head, head_dim, pos, p);
              // Neither side fuses a multiply-add: bit for bit.
              for (size_t i = 0; i < x.size(); ++i) {
                ASSERT_EQ(bits_of(y[i]), bits_of(y_ref[i]))
                    << "head_dim=" << head_dim << " n_rot=" << n_rot << " mode="
                    << static_cast<int>(mode) << " pos=" << pos << " scale=" << freq_scale
                    << " i=" << i;
                if (static_cast<int>(i % head_dim) >= n_rot) {
                  ASSERT_EQ(y[i], x[i]);
                }
              }
              // The split API is what rope() does, bit for bit.
              std::vector<float> cs(n_rot);
              auto y_split = x;
              rope_cos_sin(pos, p, cs.data());
              rope_apply(y_split.data(), n_head, head_dim, cs.data(), p);
              ASSERT_EQ(y_split, y);
            }
          }
        }
      }
    }
  }
}

// The same rotation of the same values gives the same bits wherever they sit in memory (and
// the reference's bits): GCC 12 once turned the scalar tail into a fused vfmaddsub loop version
// chosen by the addresses of x and cs, so a query rotated at one address differed by an ulp
// from the same query elsewhere (issue 12: moved positions were not bit-reproducible).
TEST_P(OpsTest, RopeBitsDoNotDependOnAddresses) {
  for (int head_dim : {8, 6, 40, 64}) {
    for (RopeMode mode : {RopeMode::kNorm, RopeMode::kNeox}) {
      const RopeParams p{.n_rot = head_dim, .mode = mode};
      const int n_head = 4;
      const auto x = random_floats(n_head * head_dim, -3.f, 3.f, static_cast<uint32_t>(head_dim));
      std::vector<float> cs(head_dim);
      rope_cos_sin(12345, p, cs.data());
      auto want = x;
      rope_apply_ref(want.data(), n_head, head_dim, cs.data(), p);
      std::vector<float> xbuf(x.size() + 16), csbuf(cs.size() + 16);
      for (int xo = 0; xo < 16; ++xo) {
        for (int co = 0; co < 16; co += 3) {
          std::copy(x.begin(), x.end(), xbuf.begin() + xo);
          std::copy(cs.begin(), cs.end(), csbuf.begin() + co);
          for (int h = 1; h <= n_head; h *= 2) {  // one head at a time, two, all four
            for (int h0 = 0; h0 < n_head; h0 += h) {
              rope_apply(&xbuf[xo + h0 * head_dim], h, head_dim, &csbuf[co], p);
            }
            for (size_t i = 0; i < x.size(); ++i) {
              ASSERT_EQ(bits_of(xbuf[xo + i]), bits_of(want[i]))
                  << "head_dim=" << head_dim << " mode=" << static_cast<int>(mode)
                  << " x offset=" << xo << " cs offset=" << co << " heads per call=" << h
                  << " i=" << i;
            }
            std::copy(x.begin(), x.end(), xbuf.begin() + xo);
          }
        }
      }
    }
  }
}

// Llama-3.x frequency factors divide each frequency's angle (ggml_rope_ext's freq_factors).
TEST_P(OpsTest, RopeFreqFactorsDivideTheAngle) {
  const float ff[2] = {1.f, 8.f};
  for (RopeMode mode : {RopeMode::kNorm, RopeMode::kNeox}) {
    const RopeParams p{.n_rot = 4, .freq_base = 100.f, .mode = mode, .freq_factors = ff};
    const int64_t pos = 7;
    std::vector<float> x = {1.f, 2.f, 3.f, 4.f, 5.f};  // head_dim 5: the last one passes through
    auto y = x, y_ref = x;
    rope(y.data(), 1, 5, pos, p);
    rope_ref(y_ref.data(), 1, 5, pos, p);
    // theta_0 = 7 / 1, theta_1 = 7 * 100^(-1/2) / 8 = 0.0875, by hand.
    const double th[2] = {7.0, 0.0875};
    std::vector<float> want = x;
    for (int i = 0; i < 2; ++i) {
      const int a = mode == RopeMode::kNorm ? 2 * i : i;
      const int b = mode == RopeMode::kNorm ? 2 * i + 1 : i + 2;
      want[a] = static_cast<float>(x[a] * std::cos(th[i]) - x[b] * std::sin(th[i]));
      want[b] = static_cast<float>(x[a] * std::sin(th[i]) + x[b] * std::cos(th[i]));
    }
    for (int i = 0; i < 5; ++i) {
      EXPECT_NEAR(y[i], want[i], 1e-5f) << i;
      EXPECT_NEAR(y_ref[i], want[i], 1e-5f) << i;
    }
    // Factors of 1 change nothing, bit for bit.
    const float ones[2] = {1.f, 1.f};
    RopeParams p1 = p, p0 = p;
    p1.freq_factors = ones;
    p0.freq_factors = nullptr;
    auto y1 = x, y0 = x;
    rope(y1.data(), 1, 5, 12345, p1);
    rope(y0.data(), 1, 5, 12345, p0);
    EXPECT_EQ(y1, y0);
  }
}

TEST_P(OpsTest, GeluMulMatchesRef) {
  for (int64_t n : kSizes) {
    auto gate = random_floats(n, -12.f, 12.f, 5);
    const auto up = random_floats(n, -3.f, 3.f, 6);
    auto gate_ref = gate;
    gelu_mul(gate.data(), up.data(), n);
    gelu_mul_ref(gate_ref.data(), up.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(gate[i], gate_ref[i], 2e-6f * std::fabs(gate_ref[i]) + 2e-6f * std::fabs(up[i]))
          << "n=" << n << " i=" << i;
    }
  }
  // Saturation and huge magnitudes: x * up for large x, ~0 for very negative x, never NaN.
  std::vector<float> gate = {-1e30f, -200.f, -30.f, -10.f, -5.f, -1.f, -0.f, 0.f,
                             1e-30f, 0.5f,   1.f,   5.f,   10.f, 30.f, 200.f, 1e30f};
  const std::vector<float> up(gate.size(), 2.f);
  auto gate_ref = gate;
  gelu_mul(gate.data(), up.data(), static_cast<int64_t>(gate.size()));
  gelu_mul_ref(gate_ref.data(), up.data(), static_cast<int64_t>(gate.size()));
  for (size_t i = 0; i < gate.size(); ++i) {
    ASSERT_TRUE(std::isfinite(gate[i])) << "i=" << i;
    ASSERT_NEAR(gate[i], gate_ref[i], 2e-6f * std::fabs(gate_ref[i]) + 4e-6f) << "i=" << i;
  }
  // An element's result does not depend on where it sits (the tail runs the vector code).
  const auto x = random_floats(37, -6.f, 6.f, 8);
  const auto u = random_floats(37, -2.f, 2.f, 9);
  auto whole = x;
  gelu_mul(whole.data(), u.data(), 37);
  for (int64_t i = 0; i < 37; ++i) {
    float one = x[i];
    gelu_mul(&one, &u[i], 1);
    ASSERT_EQ(one, whole[i]) << i;
  }
}

TEST_P(OpsTest, SoftcapMatchesRef) {
  for (float cap : {30.f, 50.f, 2.f}) {
    for (int64_t n : kSizes) {
      auto x = random_floats(n, -100.f, 100.f, 7);
      auto x_ref = x;
      softcap(x.data(), n, cap);
      softcap_ref(x_ref.data(), n, cap);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_NEAR(x[i], x_ref[i], 2e-6f * cap) << "cap " << cap << " n=" << n << " i=" << i;
        ASSERT_LE(std::fabs(x[i]), cap);
      }
    }
  }
  std::vector<float> x = {-1e30f, -1e3f, -30.f, -1e-3f, 0.f, 1e-3f, 30.f, 1e3f, 1e30f};
  auto x_ref = x;
  softcap(x.data(), static_cast<int64_t>(x.size()), 30.f);
  softcap_ref(x_ref.data(), static_cast<int64_t>(x.size()), 30.f);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], x_ref[i], 6e-5f) << i;
}

TEST_P(OpsTest, SiluMulMatchesRef) {
  for (int64_t n : kSizes) {
    auto gate = random_floats(n, -20.f, 20.f, 3);
    const auto up = random_floats(n, -3.f, 3.f, 4);
    auto gate_ref = gate;
    silu_mul(gate.data(), up.data(), n);
    silu_mul_ref(gate_ref.data(), up.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(gate[i], gate_ref[i], 1e-6f * std::fabs(gate_ref[i]) + 1e-30f)
          << "n=" << n << " i=" << i;
    }
  }
  // Huge magnitudes: exp must neither overflow nor produce NaN.
  std::vector<float> gate = {-200.f, -100.f, -90.f, 90.f, 100.f, 200.f, 0.f, -0.f,
                             -1e30f, 1e30f, 1e-30f, -1e-30f, 88.f, -88.f, 5.f, -5.f, 0.5f};
  const std::vector<float> up(gate.size(), 2.f);
  auto gate_ref = gate;
  silu_mul(gate.data(), up.data(), static_cast<int64_t>(gate.size()));
  silu_mul_ref(gate_ref.data(), up.data(), static_cast<int64_t>(gate.size()));
  for (size_t i = 0; i < gate.size(); ++i) {
    ASSERT_NEAR(gate[i], gate_ref[i], 1e-6f * std::fabs(gate_ref[i]) + 1e-30f) << "i=" << i;
  }
}

TEST_P(OpsTest, SwigluOaiMulMatchesRef) {
  for (int64_t n : kSizes) {
    auto gate = random_floats(n, -20.f, 20.f, 3);
    const auto up = random_floats(n, -12.f, 12.f, 4);
    auto gate_ref = gate;
    swiglu_oai_mul(gate.data(), up.data(), n, kSwigluOaiAlpha, kSwigluOaiLimit);
    swiglu_oai_mul_ref(gate_ref.data(), up.data(), n, kSwigluOaiAlpha, kSwigluOaiLimit);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(gate[i], gate_ref[i], 2e-6f * std::fabs(gate_ref[i]) + 1e-30f)
          << "n=" << n << " i=" << i;
    }
  }
}

// By hand: the gate is clamped above only (at 7), the up branch on both sides, and gains 1.
TEST_P(OpsTest, SwigluOaiHandComputed) {
  std::vector<float> gate = {10.f, 1.f, -2.f, 0.f};
  const std::vector<float> up = {0.f, 9.f, -9.f, 3.f};
  auto sig = [](double x) { return 1 / (1 + std::exp(-1.702 * x)); };
  const std::vector<double> want = {7 * sig(7) * 1, 1 * sig(1) * 8, -2 * sig(-2) * -6, 0};
  for (bool ref : {false, true}) {
    auto g = gate;
    (ref ? swiglu_oai_mul_ref : swiglu_oai_mul)(g.data(), up.data(), 4, kSwigluOaiAlpha,
                                                kSwigluOaiLimit);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(g[i], want[i], 1e-5) << i;
  }
}

// YaRN (gpt-oss: factor 32 over 4096 positions, base 150000, 16 rotated dims): the correction
// dims are floor(16 ln(4096 / (32 2 pi)) / (2 ln 150000)) = 2 and ceil(16 ln(4096 / (2 pi)) /
// (2 ln 150000)) = 5; pairs 0-2 keep base^(-2i/16), pairs 5-7 are divided by 32, pairs 3 and 4
// blend with weights 2/3 and 1/3 of the original; every cos/sin is scaled by mscale.
TEST_P(OpsTest, RopeYarnByHand) {
  RopeParams p{.n_rot = 16, .freq_base = 150000.f, .freq_scale = 1.f / 32, .mode = RopeMode::kNeox};
  p.yarn_ext_factor = 1.f;
  p.yarn_n_ctx_orig = 4096;
  p.mscale = 1.25f;
  std::vector<double> theta(8);
  rope_thetas(p, theta.data());
  for (int i = 0; i < 8; ++i) {
    const double base = std::pow(150000.0, -2.0 * i / 16);
    const double mix = i <= 2 ? 1.0 : i >= 5 ? 0.0 : 1.0 - (i - 2) / 3.0;
    EXPECT_NEAR(theta[i], base * (mix + (1 - mix) / 32), 1e-12 * base) << i;
  }
  std::vector<float> cs(16);
  rope_cos_sin(100, p, cs.data());
  for (int i = 0; i < 8; ++i) {
    EXPECT_NEAR(cs[2 * i], 1.25 * std::cos(100 * theta[i]), 1e-6) << i;
    EXPECT_NEAR(cs[2 * i + 1], 1.25 * std::sin(100 * theta[i]), 1e-6) << i;
  }
  // Without YaRN, the rotation is what it always was.
  const RopeParams lin{.n_rot = 16, .freq_base = 150000.f, .freq_scale = 1.f / 32};
  rope_thetas(lin, theta.data());
  for (int i = 0; i < 8; ++i) {
    EXPECT_NEAR(theta[i], std::pow(150000.0, -2.0 * i / 16) / 32, 1e-15);
  }
}

TEST_P(OpsTest, SoftmaxMatchesRef) {
  for (int64_t n : kSizes) {
    for (float range : {1.f, 30.f}) {
      auto x = random_floats(n, -range, range, 5);
      if (n > 3) x[2] = -std::numeric_limits<float>::infinity();  // a masked logit
      auto x_ref = x;
      softmax(x.data(), n);
      softmax_ref(x_ref.data(), n);
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_NEAR(x[i], x_ref[i], 2e-6f * x_ref[i] + 1e-37f) << "n=" << n << " i=" << i;
        sum += x[i];
      }
      EXPECT_NEAR(sum, 1.0, 1e-5) << "n=" << n;
      if (n > 3) {
        EXPECT_EQ(x[2], 0.f);
      }
    }
  }
}

TEST_P(OpsTest, DotMatchesRef) {
  for (int64_t n : kSizes) {
    const auto a = random_floats(n, -2.f, 2.f, 6);
    const auto b = random_floats(n, -2.f, 2.f, 7);
    double abs_sum = 0;
    for (int64_t i = 0; i < n; ++i) abs_sum += std::fabs(a[i] * b[i]);
    // Float lanes accumulate ~n/lanes terms each: allow ~sqrt(n) ulps of sum |a*b|.
    const double tol = kEps * (4 * std::sqrt(static_cast<double>(n)) + 8) * abs_sum;
    EXPECT_NEAR(dot(a.data(), b.data(), n), dot_ref(a.data(), b.data(), n), tol) << "n=" << n;
  }
}

TEST_P(OpsTest, AxpyScaleAddMatchRef) {
  for (int64_t n : kSizes) {
    const auto x = random_floats(n, -2.f, 2.f, 8);
    const auto y0 = random_floats(n, -2.f, 2.f, 9);
    auto y = y0, y_ref = y0;
    axpy(0.37f, x.data(), y.data(), n);
    axpy_ref(0.37f, x.data(), y_ref.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(y[i], y_ref[i], 2 * kEps * (std::fabs(y0[i]) + std::fabs(0.37f * x[i])))
          << "n=" << n << " i=" << i;
    }
    // Single roundings on both sides: exact.
    y = y0, y_ref = y0;
    scale(y.data(), -1.7f, n);
    scale_ref(y_ref.data(), -1.7f, n);
    EXPECT_EQ(y, y_ref) << "n=" << n;
    y = y0, y_ref = y0;
    add(y.data(), x.data(), n);
    add_ref(y_ref.data(), x.data(), n);
    EXPECT_EQ(y, y_ref) << "n=" << n;
  }
}

TEST_P(OpsTest, F16DotAndAxpyMatchRef) {
  for (int64_t n : kSizes) {
    const auto a = random_floats(n, -2.f, 2.f, 10);
    const auto b = random_floats(n, -2.f, 2.f, 11);
    std::vector<uint16_t> b16(n);
    for (int64_t i = 0; i < n; ++i) b16[i] = fp32_to_fp16(b[i]);
    double abs_sum = 0;
    for (int64_t i = 0; i < n; ++i) abs_sum += std::fabs(a[i] * fp16_to_fp32(b16[i]));
    const double tol = kEps * (4 * std::sqrt(static_cast<double>(n)) + 8) * abs_sum;
    EXPECT_NEAR(dot_f16(a.data(), b16.data(), n), dot_f16_ref(a.data(), b16.data(), n), tol)
        << "n=" << n;

    auto y = a, y_ref = a;
    axpy_f16(-0.6f, b16.data(), y.data(), n);
    axpy_f16_ref(-0.6f, b16.data(), y_ref.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(y[i], y_ref[i], 2 * kEps * (std::fabs(a[i]) + std::fabs(0.6f * b[i])))
          << "n=" << n << " i=" << i;
    }
  }
}

// axpy_f16 with a = 1 onto zeros is the bare half -> float conversion: check all 65536 halves
// (subnormals, inf, NaN) against the scalar conversion.
TEST_P(OpsTest, F16LoadIsExactForEveryHalf) {
  std::vector<uint16_t> h(65536 + 7);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i);
  std::vector<float> y(h.size(), 0.f);
  axpy_f16(1.f, h.data(), y.data(), static_cast<int64_t>(h.size()));
  for (size_t i = 0; i < h.size(); ++i) {
    const float want = fp16_to_fp32(h[i]);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(y[i])) << "half 0x" << std::hex << h[i];
    } else {
      ASSERT_EQ(y[i], want) << "half 0x" << std::hex << h[i];  // -0 + 0 is +0: == is right
    }
  }
}

TEST_P(OpsTest, Fp32ToFp16RowIsBitExact) {
  std::vector<float> x = {0.f, -0.f, 1.f, -1.f, 65504.f, 65519.f, 65520.f, -65520.f, 1e6f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), float_of(0x7f800001u),
                          float_of(0xffc12345u), float_of(0x7fffffffu),
                          std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::min(), 5.9604645e-8f /* 2^-24 */,
                          2.9802322e-8f /* 2^-25: ties to 0 */, 6.1035156e-5f /* 2^-14 */};
  // Exact halfway points between neighbouring halves and their float neighbours, across the
  // subnormal and normal half ranges.
  for (uint32_t h = 0; h < 0x7c00; h += 7) {
    const double mid = (static_cast<double>(fp16_to_fp32(static_cast<uint16_t>(h))) +
                        fp16_to_fp32(static_cast<uint16_t>(h + 1))) / 2;
    const float m = static_cast<float>(mid);
    for (float v : {m, std::nextafter(m, 0.f), std::nextafter(m, 1e9f)}) {
      x.push_back(v);
      x.push_back(-v);
    }
  }
  std::mt19937 rng(12);
  for (int i = 0; i < 40000; ++i) x.push_back(float_of(static_cast<uint32_t>(rng())));  // any bits
  std::uniform_int_distribution<int> exp_dist(-27, 17);
  std::uniform_real_distribution<float> mant_dist(1.f, 2.f);
  for (int i = 0; i < 40000; ++i) x.push_back(std::ldexp(mant_dist(rng), exp_dist(rng)));

  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint16_t> y(n), y_ref(n);
  fp32_to_fp16_row(x.data(), y.data(), n);
  fp32_to_fp16_row_ref(x.data(), y_ref.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(y[i], fp32_to_fp16(x[i])) << "x bits 0x" << std::hex << bits_of(x[i]);
    ASSERT_EQ(y_ref[i], y[i]);
  }
  for (int64_t len : kSizes) {  // tails
    std::vector<uint16_t> part(len);
    fp32_to_fp16_row(x.data() + 3, part.data(), len);
    for (int64_t i = 0; i < len; ++i) ASSERT_EQ(part[i], y[i + 3]) << "len=" << len;
  }
}

// ---- Hand-computed cases ----

TEST_P(OpsTest, RopeAtPositionZeroIsIdentity) {
  for (RopeMode mode : {RopeMode::kNorm, RopeMode::kNeox}) {
    const RopeParams p{.n_rot = 64, .mode = mode};
    const auto x = random_floats(2 * 128, -3.f, 3.f, 13);
    auto y = x, y_ref = x;
    rope(y.data(), 2, 128, 0, p);
    rope_ref(y_ref.data(), 2, 128, 0, p);
    EXPECT_EQ(y, x);
    EXPECT_EQ(y_ref, x);
  }
}

TEST_P(OpsTest, RopeNormHeadDim2RotatesByOneRadian) {
  const RopeParams p{.n_rot = 2, .freq_base = 10000.f, .mode = RopeMode::kNorm};
  for (bool use_ref : {false, true}) {
    float x[4] = {1.f, 0.f, 0.3f, -0.7f};  // two heads
    (use_ref ? rope_ref : rope)(x, 2, 2, 1, p);
    const double c = std::cos(1.0), s = std::sin(1.0);
    EXPECT_NEAR(x[0], c, 1e-7);
    EXPECT_NEAR(x[1], s, 1e-7);
    EXPECT_NEAR(x[2], 0.3 * c + 0.7 * s, 2e-7);
    EXPECT_NEAR(x[3], 0.3 * s - 0.7 * c, 2e-7);
  }
}

TEST_P(OpsTest, RopePairsDependOnMode) {
  // head_dim 8, n_rot 8, pos 1: theta_i = 100^(-i/4) with base 100.
  const double theta1 = std::pow(100.0, -0.25);
  for (bool use_ref : {false, true}) {
    auto run = use_ref ? rope_ref : rope;
    float neox[8] = {0, 1, 0, 0, 0, 0, 0, 0};  // e_1 pairs with e_5 in neox
    run(neox, 1, 8, 1, RopeParams{.n_rot = 8, .freq_base = 100.f, .mode = RopeMode::kNeox});
    float norm[8] = {0, 0, 1, 0, 0, 0, 0, 0};  // e_2 pairs with e_3 (pair 1) in norm
    run(norm, 1, 8, 1, RopeParams{.n_rot = 8, .freq_base = 100.f, .mode = RopeMode::kNorm});
    for (int i = 0; i < 8; ++i) {
      const double want_neox = i == 1 ? std::cos(theta1) : i == 5 ? std::sin(theta1) : 0.0;
      const double want_norm = i == 2 ? std::cos(theta1) : i == 3 ? std::sin(theta1) : 0.0;
      EXPECT_NEAR(neox[i], want_neox, 1e-7) << "i=" << i;
      EXPECT_NEAR(norm[i], want_norm, 1e-7) << "i=" << i;
    }
  }
}

TEST_P(OpsTest, RopeAnglesAreAccurateAtLongPositions) {
  // freq_scale multiplies the position: pos 400000 * 0.25 == pos 100000.
  const RopeParams p{.n_rot = 128, .freq_base = 10000.f, .freq_scale = 0.25f};
  std::vector<float> cs(128), cs_ref(128);
  rope_cos_sin(400000, p, cs.data());
  rope_cos_sin_ref(100000, RopeParams{.n_rot = 128}, cs_ref.data());
  EXPECT_EQ(cs, cs_ref);
  for (int i = 0; i < 64; ++i) {
    const double theta = 100000.0 * std::pow(10000.0, -2.0 * i / 128);
    EXPECT_NEAR(cs[2 * i], std::cos(theta), 1e-7) << "i=" << i;
    EXPECT_NEAR(cs[2 * i + 1], std::sin(theta), 1e-7) << "i=" << i;
  }
}

TEST_P(OpsTest, SoftmaxOfEqualValuesIsUniform) {
  for (int64_t n : kSizes) {
    for (float v : {0.f, 3.5f, 1000.f, -1000.f}) {  // +-1000 would overflow exp unshifted
      std::vector<float> x(n, v), x_ref(n, v);
      softmax(x.data(), n);
      softmax_ref(x_ref.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_NEAR(x[i], 1.0 / n, 2 * kEps / n) << "n=" << n << " v=" << v;
        ASSERT_NEAR(x_ref[i], 1.0 / n, kEps / n) << "n=" << n << " v=" << v;
      }
    }
  }
}

TEST_P(OpsTest, RmsNormOfConstantVector) {
  for (int64_t n : kSizes) {
    std::vector<float> x(n, 2.f), w(n, 1.5f), y(n), y_ref(n);
    rms_norm(x.data(), w.data(), y.data(), n, 1e-5f);
    rms_norm_ref(x.data(), w.data(), y_ref.data(), n, 1e-5f);
    const double want = 2.0 / std::sqrt(4.0 + 1e-5) * 1.5;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(y[i], want, 2 * kEps * want) << "n=" << n;
      ASSERT_NEAR(y_ref[i], want, 2 * kEps * want) << "n=" << n;
    }
  }
}

TEST_P(OpsTest, SiluKnownValues) {
  for (bool use_ref : {false, true}) {
    std::vector<float> gate = {0.f, 1.f, -1.f, 0.f, 0.f, 0.f, 0.f, 0.f,
                               0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 2.f};
    const std::vector<float> up(gate.size(), 3.f);
    (use_ref ? silu_mul_ref : silu_mul)(gate.data(), up.data(), static_cast<int64_t>(gate.size()));
    EXPECT_EQ(gate[0], 0.f);
    EXPECT_NEAR(gate[1], 3.0 / (1.0 + std::exp(-1.0)), 1e-6);
    EXPECT_NEAR(gate[2], -3.0 / (1.0 + std::exp(1.0)), 1e-6);
    EXPECT_NEAR(gate[16], 6.0 / (1.0 + std::exp(-2.0)), 1e-6);
  }
}

TEST_P(OpsTest, DotAndAxpyKnownValues) {
  std::vector<float> a(33), b(33);
  for (int i = 0; i < 33; ++i) a[i] = static_cast<float>(i), b[i] = 2.f;
  EXPECT_EQ(dot(a.data(), b.data(), 33), 2.f * 528.f);  // 2 * sum(0..32), exact in float
  std::vector<uint16_t> b16(33, fp32_to_fp16(2.f));
  EXPECT_EQ(dot_f16(a.data(), b16.data(), 33), 1056.f);
  axpy_f16(0.5f, b16.data(), a.data(), 33);
  for (int i = 0; i < 33; ++i) EXPECT_EQ(a[i], static_cast<float>(i) + 1.f);
}

}  // namespace
}  // namespace tova::kernels
