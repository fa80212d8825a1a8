// Scalar references for ops.h: plain loops, sums in double. The SIMD versions are tested
// against these, so they favour obviousness over speed.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"
#include "core/half.h"
#include "kernels/ops.h"

namespace tova::kernels {

void rms_norm_ref(const float* x, const float* w, float* y, int64_t n, float eps) {
  double sum_sq = 0.0;
  for (int64_t i = 0; i < n; ++i) sum_sq += static_cast<double>(x[i]) * x[i];
  const float inv_rms = static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inv_rms * w[i];
}

void rope_thetas(const RopeParams& p, double* theta) {
  TOVA_DCHECK(p.n_rot % 2 == 0);
  // YaRN's correction dims (ggml_rope_yarn_corr_dims): the pair whose wavelength makes
  // `beta` turns over n_ctx_orig positions, floor for beta_fast and ceil for beta_slow.
  double low = 0, high = 0;
  if (p.yarn_ext_factor != 0.f) {
    auto corr_dim = [&](double beta) {
      return p.n_rot * std::log(p.yarn_n_ctx_orig / (beta * 2 * M_PI)) /
             (2 * std::log(static_cast<double>(p.freq_base)));
    };
    low = std::max(0.0, std::floor(corr_dim(p.yarn_beta_fast)));
    high = std::min(p.n_rot - 1.0, std::ceil(corr_dim(p.yarn_beta_slow)));
  }
  for (int i = 0; i < p.n_rot / 2; ++i) {
    double th = std::pow(static_cast<double>(p.freq_base), -2.0 * i / p.n_rot);
    if (p.yarn_ext_factor == 0.f) {
      th *= static_cast<double>(p.freq_scale);
      if (p.freq_factors != nullptr) th /= static_cast<double>(p.freq_factors[i]);
      theta[i] = th;
      continue;
    }
    if (p.freq_factors != nullptr) th /= static_cast<double>(p.freq_factors[i]);
    // Pairs below `low` keep their angle (extrapolate), pairs above `high` are interpolated
    // (freq_scale), the ones between blend linearly.
    const double y = (i - low) / std::max(0.001, high - low);
    const double mix = (1 - std::min(1.0, std::max(0.0, y))) * p.yarn_ext_factor;
    theta[i] = th * (p.freq_scale * (1 - mix) + mix);
  }
}

void rope_cos_sin_ref(int64_t pos, const RopeParams& p, float* cs) {
  TOVA_DCHECK(p.n_rot % 2 == 0);
  // Double throughout: at pos ~1e5 theta is ~1e5 rad and float32 would leave ~1e-2 rad of
  // phase error after range reduction.
  constexpr int kMaxStack = 512;
  double stack[kMaxStack / 2];
  std::vector<double> heap;
  double* theta = stack;
  if (p.n_rot > kMaxStack) {
    heap.resize(p.n_rot / 2);
    theta = heap.data();
  }
  const double pd = static_cast<double>(pos);
  if (p.yarn_ext_factor == 0.f) {
    // The angle as it always was computed here (same bits as before YaRN).
    const double scaled_pos = pd * static_cast<double>(p.freq_scale);
    for (int i = 0; i < p.n_rot / 2; ++i) {
      theta[i] = scaled_pos * std::pow(static_cast<double>(p.freq_base), -2.0 * i / p.n_rot);
      if (p.freq_factors != nullptr) theta[i] /= static_cast<double>(p.freq_factors[i]);
    }
  } else {
    rope_thetas(p, theta);
    for (int i = 0; i < p.n_rot / 2; ++i) theta[i] *= pd;
  }
  for (int i = 0; i < p.n_rot / 2; ++i) {
    const double a = theta[i];
    cs[2 * i] = static_cast<float>(std::cos(a) * p.mscale);
    cs[2 * i + 1] = static_cast<float>(std::sin(a) * p.mscale);
  }
}

void rope_apply_ref(float* x, int n_head, int head_dim, const float* cs, const RopeParams& p) {
  TOVA_DCHECK(p.n_rot % 2 == 0 && p.n_rot <= head_dim);
  const int half = p.n_rot / 2;
  for (int h = 0; h < n_head; ++h) {
    float* v = x + static_cast<int64_t>(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      const float c = cs[2 * i];
      const float s = cs[2 * i + 1];
      float* a = p.mode == RopeMode::kNorm ? v + 2 * i : v + i;
      float* b = p.mode == RopeMode::kNorm ? v + 2 * i + 1 : v + i + half;
      const float x0 = *a;
      const float x1 = *b;
      *a = x0 * c - x1 * s;
      *b = x0 * s + x1 * c;
    }
  }
}

void rope_ref(float* x, int n_head, int head_dim, int64_t pos, const RopeParams& p) {
  std::vector<float> cs(static_cast<size_t>(p.n_rot));
  rope_cos_sin_ref(pos, p, cs.data());
  rope_apply_ref(x, n_head, head_dim, cs.data(), p);
}

void silu_mul_ref(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void swiglu_oai_mul_ref(float* gate, const float* up, int64_t n, float alpha, float limit) {
  for (int64_t i = 0; i < n; ++i) {
    const double g = std::min(gate[i], limit);
    const double u = std::clamp(up[i], -limit, limit);
    gate[i] = static_cast<float>(g / (1.0 + std::exp(-alpha * g)) * (u + 1.0));
  }
}

void gelu_mul_ref(float* gate, const float* up, int64_t n) {
  const double c0 = std::sqrt(2.0 / M_PI), c1 = 0.044715;
  for (int64_t i = 0; i < n; ++i) {
    const double x = gate[i];
    const double g = 0.5 * x * (1.0 + std::tanh(c0 * x * (1.0 + c1 * x * x)));
    gate[i] = static_cast<float>(g * up[i]);
  }
}

void softcap_ref(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(cap * std::tanh(static_cast<double>(x[i]) / cap));
  }
}

void add_ref(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void softmax_ref(float* x, int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) max = std::fmax(max, x[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(x[i] / sum);
}

float dot_ref(const float* a, const float* b, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(a[i]) * b[i];
  return static_cast<float>(sum);
}

void axpy_ref(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void scale_ref(float* y, float a, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] *= a;
}

float dot_f16_ref(const float* a, const uint16_t* b_f16, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(a[i]) * fp16_to_fp32(b_f16[i]);
  return static_cast<float>(sum);
}

void axpy_f16_ref(float a, const uint16_t* x_f16, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * fp16_to_fp32(x_f16[i]);
}

void fp32_to_fp16_row_ref(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

}  // namespace tova::kernels
