// Elementwise and attention building blocks of a forward pass: RMSNorm, RoPE, SiLU/GELU gating,
// softmax, dot/axpy and their F16-storage twins for the KV cache.
//
// Every op has a Highway SIMD version (dynamic dispatch to the best target of the running CPU)
// and a plain scalar `_ref` twin with the same signature that the SIMD version is tested against.
// The references accumulate sums in double: they are the yardstick, not a fast path.
//
// Accuracy matters more than speed here: logits are compared to a float64 reference with a 2e-3
// relative L2 tolerance and per-token NLL within 1e-4, so transcendental functions in the SIMD
// versions are kept within ~1 ulp (Highway's Exp is documented at 1 ulp for float32), and RoPE
// angles are computed in double because theta = pos * base^(-2i/n_rot) reaches ~1e5 radians at
// long positions, where float32 range reduction would lose all precision.
#pragma once

#include <cstdint>

namespace tova::kernels {

enum class RopeMode {
  kNorm,  // rotate adjacent pairs (x[2i], x[2i+1]) (llama GGUF, whose Q/K rows are permuted)
  kNeox,  // rotate (x[i], x[i + n_rot/2]) (qwen2, gpt-neox)
};

struct RopeParams {
  int n_rot = 0;  // rotated dims per head, even and <= head_dim; the rest pass through
  float freq_base = 10000.f;
  float freq_scale = 1.f;  // linear scaling: position is multiplied by this
  RopeMode mode = RopeMode::kNorm;
  // [n_rot/2] or nullptr: theta_i is divided by freq_factors[i] (Llama-3.x's rope_freqs.weight,
  // the llama3 scaling baked in by the converter, as ggml_rope_ext applies it).
  const float* freq_factors = nullptr;
  // YaRN (rope.scaling.type yarn, as ggml_rope_ext computes it): with yarn_ext_factor != 0 the
  // angle of pair i blends the interpolated (freq_scale * theta) and the original theta by a
  // ramp over the pairs between the correction dims of yarn_beta_fast and yarn_beta_slow for
  // yarn_n_ctx_orig positions; 0: plain linear scaling.
  float yarn_ext_factor = 0.f;
  float yarn_beta_fast = 32.f;
  float yarn_beta_slow = 1.f;
  int yarn_n_ctx_orig = 0;
  // Every cos and sin is multiplied by this (YaRN's attention temperature: rotated q and k both
  // grow by it, so the scores of the rotated dims by its square).
  float mscale = 1.f;
};

// The angle per unit of position of each of the n_rot/2 pairs: theta[i] = freq_scale-blended
// freq_base^(-2i/n_rot) [/ freq_factors[i]], in double (rope_cos_sin is cos/sin(pos * theta[i])
// times p.mscale).
void rope_thetas(const RopeParams& p, double* theta);

// y = x / sqrt(mean(x^2) + eps) * w over n floats (y may alias x).
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);

// Rotates n_head consecutive head vectors of head_dim floats each, in place, at position pos.
// theta_i = pos * freq_scale * freq_base^(-2i/n_rot) [/ freq_factors[i]] for i < n_rot/2,
// computed in double.
void rope(float* x, int n_head, int head_dim, int64_t pos, const RopeParams& p);

// Hot-path split of rope(): rope_cos_sin fills cs[2*i] = cos(theta_i), cs[2*i+1] = sin(theta_i)
// for i < n_rot/2 (cs holds n_rot floats) once per position; rope_apply then rotates any number
// of heads (Q and K, all layers) with it. rope() == rope_cos_sin + rope_apply, bit for bit.
void rope_cos_sin(int64_t pos, const RopeParams& p, float* cs);
void rope_apply(float* x, int n_head, int head_dim, const float* cs, const RopeParams& p);

// gate[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)).
void silu_mul(float* gate, const float* up, int64_t n);

// gpt-oss's clamped SwiGLU (ggml's swiglu_oai): with g = min(gate[i], limit) and
// u = clamp(up[i], -limit, limit), gate[i] = g * sigmoid(alpha * g) * (u + 1).
inline constexpr float kSwigluOaiAlpha = 1.702f;
inline constexpr float kSwigluOaiLimit = 7.f;
void swiglu_oai_mul(float* gate, const float* up, int64_t n, float alpha, float limit);

// gate[i] = gelu(gate[i]) * up[i] with the tanh approximation (Gemma's gelu_pytorch_tanh):
// gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2))).
inline constexpr float kGeluSqrt2OverPi = 0.79788456080286535588f;
inline constexpr float kGeluCoef = 0.044715f;
void gelu_mul(float* gate, const float* up, int64_t n);

// x[i] = cap * tanh(x[i] / cap) (Gemma 2's final logit soft-capping), computed as llama.cpp
// does: x * (1/cap), tanh, * cap.
void softcap(float* x, int64_t n, float cap);

// y[i] += x[i] (residual connections and biases).
void add(float* y, const float* x, int64_t n);

// In-place softmax over n floats, max-subtracted so large logits do not overflow. Entries equal
// to -inf (masked) become 0.
void softmax(float* x, int64_t n);

// sum_i a[i] * b[i].
float dot(const float* a, const float* b, int64_t n);

// y[i] += a * x[i].
void axpy(float a, const float* x, float* y, int64_t n);

// y[i] *= a.
void scale(float* y, float a, int64_t n);

// F16 storage variants for the KV cache (--kv-type f16); b_f16/x_f16 hold IEEE half bits.
float dot_f16(const float* a, const uint16_t* b_f16, int64_t n);
void axpy_f16(float a, const uint16_t* x_f16, float* y, int64_t n);
// Round to nearest even, bit-identical to tova::fp32_to_fp16 (src/core/half.h), NaN -> 0x7e00.
void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n);

// Scalar references (same contracts as above).
void rms_norm_ref(const float* x, const float* w, float* y, int64_t n, float eps);
void rope_ref(float* x, int n_head, int head_dim, int64_t pos, const RopeParams& p);
void rope_cos_sin_ref(int64_t pos, const RopeParams& p, float* cs);
void rope_apply_ref(float* x, int n_head, int head_dim, const float* cs, const RopeParams& p);
void silu_mul_ref(float* gate, const float* up, int64_t n);
void swiglu_oai_mul_ref(float* gate, const float* up, int64_t n, float alpha, float limit);
void gelu_mul_ref(float* gate, const float* up, int64_t n);  // in double
void softcap_ref(float* x, int64_t n, float cap);            // in double
void add_ref(float* y, const float* x, int64_t n);
void softmax_ref(float* x, int64_t n);
float dot_ref(const float* a, const float* b, int64_t n);
void axpy_ref(float a, const float* x, float* y, int64_t n);
void scale_ref(float* y, float a, int64_t n);
float dot_f16_ref(const float* a, const uint16_t* b_f16, int64_t n);
void axpy_f16_ref(float a, const uint16_t* x_f16, float* y, int64_t n);
void fp32_to_fp16_row_ref(const float* x, uint16_t* y, int64_t n);

// Name of the Highway target the SIMD ops dispatch to on this CPU (e.g. "AVX3_DL"), for logs
// and benchmarks.
const char* ops_target_name();

}  // namespace tova::kernels
