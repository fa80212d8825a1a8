// Highway SIMD versions of the ops in ops.h, compiled once per target (foreach_target) and
// dispatched at run time to the best target of the CPU.
//
// Tails shorter than a vector run the scalar formula; remaining differences from the _ref
// versions are summation order and FMA contraction (a few ulp), bounded in tests/kernels.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>

#include "core/half.h"
#include "kernels/ops.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/ops_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// foreach_target re-includes this file once per target; the headers below must follow it.
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tova::kernels::ops_hwy {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Highway's float32 Exp is accurate to 1 ulp on [-FLT_MAX, 104] but returns 0 below -104 only
// after converting its argument to int32; clamping first keeps -inf (masked logits) and huge
// negative arguments away from that conversion. exp(-104) is already 0 in float32.
HWY_INLINE VF ExpNonPositive(DF d, VF x) {
  return hn::Exp(d, hn::Max(x, hn::Set(d, -104.0f)));
}

// Exact IEEE half -> float for n = Lanes(DF) halves.
HWY_INLINE VF LoadF16(DF df, const uint16_t* p) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
#else
  // Highway's emulated PromoteTo turns inf/NaN halves into finite floats; do it ourselves.
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<uint16_t, DF> du16;
  const auto h = hn::PromoteTo(di, hn::LoadU(du16, p));
  const auto sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(di, 0x8000)));
  const auto exp_mant = hn::And(h, hn::Set(di, 0x7fff));
  // Rebias the exponent by 127 - 15 = 112 (a plain add: the mantissa cannot carry into it).
  const auto normal = hn::Add(hn::ShiftLeft<13>(exp_mant), hn::Set(di, 112 << 23));
  const auto inf_nan = hn::Or(hn::ShiftLeft<13>(exp_mant), hn::Set(di, 0x7f800000));
  // Subnormal halves are mant * 2^-24: exact in float, and never a float subnormal (no DAZ risk).
  const auto mant = hn::And(h, hn::Set(di, 0x3ff));
  const auto subnormal =
      hn::BitCast(di, hn::Mul(hn::ConvertTo(df, mant), hn::Set(df, 1.0f / 16777216.0f)));
  auto bits = hn::IfThenElse(hn::Lt(exp_mant, hn::Set(di, 0x400)), subnormal, normal);
  bits = hn::IfThenElse(hn::Gt(exp_mant, hn::Set(di, 0x7bff)), inf_nan, bits);
  return hn::BitCast(df, hn::Or(bits, sign));
#endif
}

// Float -> IEEE half bits, round to nearest even, the same case split as tova::fp32_to_fp16
// (the hardware vcvtps2ph keeps NaN payloads, and Highway's emulation truncates).
HWY_INLINE void StoreF16(DF df, VF v, uint16_t* p) {
  const hn::RebindToSigned<DF> di;
  const hn::Rebind<uint16_t, DF> du16;
  const auto bits = hn::BitCast(di, v);
  const auto sign = hn::And(hn::ShiftRight<16>(bits), hn::Set(di, 0x8000));
  const auto abs = hn::And(bits, hn::Set(di, 0x7fffffff));
  // Normal halves: add 0xfff + lsb so that the carry out of the 13 dropped bits rounds to nearest
  // even (a carry into the exponent is the correct result). Clamped so int32 cannot overflow;
  // clamped values become inf below.
  const auto abs_c = hn::Min(abs, hn::Set(di, 0x477ff000));
  const auto lsb = hn::And(hn::ShiftRight<13>(abs_c), hn::Set(di, 1));
  const auto normal = hn::Sub(
      hn::ShiftRight<13>(hn::Add(abs_c, hn::Add(hn::Set(di, 0xfff), lsb))), hn::Set(di, 112 << 10));
  // Half subnormals: adding 0.5f makes the float ulp 2^-24, one half-subnormal step, so the FPU
  // does the round-to-nearest-even; the mantissa bits are then the half bits.
  const auto subnormal = hn::Sub(
      hn::BitCast(di, hn::Add(hn::BitCast(df, abs), hn::Set(df, 0.5f))), hn::Set(di, 0x3f000000));
  auto r = hn::IfThenElse(hn::Lt(abs, hn::Set(di, 0x38800000)), subnormal, normal);
  r = hn::IfThenElse(hn::Gt(abs, hn::Set(di, 0x477fefff)), hn::Set(di, 0x7c00), r);
  r = hn::IfThenElse(hn::Gt(abs, hn::Set(di, 0x7f800000)), hn::Set(di, 0x7e00), r);
  hn::StoreU(hn::DemoteTo(du16, hn::Or(r, sign)), du16, p);
}

HWY_INLINE float SumLanes(DF d, VF v) { return hn::GetLane(hn::SumOfLanes(d, v)); }

void RmsNorm(const float* x, const float* w, float* y, int64_t n, float eps) {
  const DF d;
  const int64_t nl = static_cast<int64_t>(hn::Lanes(d));
  VF s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 4 * nl <= n; i += 4 * nl) {
    const VF v0 = hn::LoadU(d, x + i), v1 = hn::LoadU(d, x + i + nl);
    const VF v2 = hn::LoadU(d, x + i + 2 * nl), v3 = hn::LoadU(d, x + i + 3 * nl);
    s0 = hn::MulAdd(v0, v0, s0);
    s1 = hn::MulAdd(v1, v1, s1);
    s2 = hn::MulAdd(v2, v2, s2);
    s3 = hn::MulAdd(v3, v3, s3);
  }
  for (; i + nl <= n; i += nl) {
    const VF v = hn::LoadU(d, x + i);
    s0 = hn::MulAdd(v, v, s0);
  }
  double sum_sq = SumLanes(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)));
  for (; i < n; ++i) sum_sq += static_cast<double>(x[i]) * x[i];
  const float inv_rms =
      static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(n) + eps));

  const VF vinv = hn::Set(d, inv_rms);
  i = 0;
  for (; i + nl <= n; i += nl) {
    hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(d, x + i), vinv), hn::LoadU(d, w + i)), d, y + i);
  }
  for (; i < n; ++i) y[i] = x[i] * inv_rms * w[i];
}

void RopeApply(float* x, int n_head, int head_dim, const float* cs, const RopeParams& p) {
  const DF d;
  const int nl = static_cast<int>(hn::Lanes(d));
  const int half = p.n_rot / 2;
  for (int h = 0; h < n_head; ++h) {
    float* v = x + static_cast<int64_t>(h) * head_dim;
    int i = 0;
    if (p.mode == RopeMode::kNorm) {
      for (; i + nl <= half; i += nl) {
        VF c, s, x0, x1;
        hn::LoadInterleaved2(d, cs + 2 * i, c, s);
        hn::LoadInterleaved2(d, v + 2 * i, x0, x1);
        const VF y0 = hn::Sub(hn::Mul(x0, c), hn::Mul(x1, s));
        const VF y1 = hn::Add(hn::Mul(x0, s), hn::Mul(x1, c));
        hn::StoreInterleaved2(y0, y1, d, v + 2 * i);
      }
    } else {
      for (; i + nl <= half; i += nl) {
        VF c, s;
        hn::LoadInterleaved2(d, cs + 2 * i, c, s);
        const VF x0 = hn::LoadU(d, v + i);
        const VF x1 = hn::LoadU(d, v + i + half);
        hn::StoreU(hn::Sub(hn::Mul(x0, c), hn::Mul(x1, s)), d, v + i);
        hn::StoreU(hn::Add(hn::Mul(x0, s), hn::Mul(x1, c)), d, v + i + half);
      }
    }
    // The tail goes through one-lane vectors, not scalar code: GCC 12 recognises the scalar
    // form as a complex multiplication and vectorises it with vfmaddsub (fused, one rounding)
    // even under -ffp-contract=off, in a loop version that runs or not depending on the
    // addresses of x and cs; so identical inputs at other addresses rounded differently.
    const hn::CappedTag<float, 1> d1;
    for (; i < half; ++i) {
      const auto c = hn::Set(d1, cs[2 * i]);
      const auto s = hn::Set(d1, cs[2 * i + 1]);
      float* a = p.mode == RopeMode::kNorm ? v + 2 * i : v + i;
      float* b = p.mode == RopeMode::kNorm ? v + 2 * i + 1 : v + i + half;
      const auto x0 = hn::Set(d1, *a);
      const auto x1 = hn::Set(d1, *b);
      *a = hn::GetLane(hn::Sub(hn::Mul(x0, c), hn::Mul(x1, s)));
      *b = hn::GetLane(hn::Add(hn::Mul(x0, s), hn::Mul(x1, c)));
    }
  }
}

void SiluMul(float* gate, const float* up, int64_t n) {
  const DF d;
  const int64_t nl = static_cast<int64_t>(hn::Lanes(d));
  const VF one = hn::Set(d, 1.0f);
  const VF zero = hn::Zero(d);
  int64_t i = 0;
  for (; i + nl <= n; i += nl) {
    const VF g = hn::LoadU(d, gate + i);
    // sigmoid(g) = 1/(1+e) for g >= 0 and e/(1+e) for g < 0 with e = exp(-|g|): Exp only sees
    // arguments <= 0, so it never overflows.
    const VF e = ExpNonPositive(d, hn::Neg(hn::Abs(g)));
    const VF num = hn::IfThenElse(hn::Lt(g, zero), hn::Mul(g, e), g);
    const VF silu = hn::Div(num, hn::Add(one, e));
    hn::StoreU(hn::Mul(silu, hn::LoadU(d, up + i)), d, gate + i);
  }
  for (; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void SwigluOaiMul(float* gate, const float* up, int64_t n, float alpha, float limit) {
  const DF d;
  const int64_t nl = static_cast<int64_t>(hn::Lanes(d));
  const VF one = hn::Set(d, 1.0f), zero = hn::Zero(d);
  const VF va = hn::Set(d, alpha), vlim = hn::Set(d, limit), vneg_lim = hn::Set(d, -limit);
  auto step = [&](const VF graw, const VF uraw) {
    const VF g = hn::Min(graw, vlim);
    const VF u = hn::Min(hn::Max(uraw, vneg_lim), vlim);
    // sigmoid(a g) as in SiluMul: Exp only sees arguments <= 0.
    const VF ag = hn::Mul(va, g);
    const VF e = ExpNonPositive(d, hn::Neg(hn::Abs(ag)));
    const VF num = hn::IfThenElse(hn::Lt(ag, zero), e, one);
    const VF sig = hn::Div(num, hn::Add(one, e));
    return hn::Mul(hn::Mul(g, sig), hn::Add(u, one));
  };
  int64_t i = 0;
  for (; i + nl <= n; i += nl) {
    hn::StoreU(step(hn::LoadU(d, gate + i), hn::LoadU(d, up + i)), d, gate + i);
  }
  if (i < n) {
    // The tail through the same vector code on a padded copy.
    HWY_ALIGN float g[hn::MaxLanes(d)] = {};
    HWY_ALIGN float u[hn::MaxLanes(d)] = {};
    std::copy_n(gate + i, n - i, g);
    std::copy_n(up + i, n - i, u);
    hn::Store(step(hn::Load(d, g), hn::Load(d, u)), d, g);
    std::copy_n(g, n - i, gate + i);
  }
}

// Runs f(vector) over n floats; the tail goes through the same vector code on a padded copy,
// so an element's result never depends on n or on where it sits.
template <class F>
HWY_INLINE void MapPadded(float* x, const float* y, int64_t n, float pad, F f) {
  const DF d;
  const int64_t nl = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + nl <= n; i += nl) {
    hn::StoreU(f(hn::LoadU(d, x + i), y ? hn::LoadU(d, y + i) : hn::Zero(d)), d, x + i);
  }
  if (i < n) {
    HWY_ALIGN float tx[hn::MaxLanes(d)];
    HWY_ALIGN float ty[hn::MaxLanes(d)];
    for (int64_t j = 0; j < nl; ++j) {
      tx[j] = i + j < n ? x[i + j] : pad;
      ty[j] = y && i + j < n ? y[i + j] : 0.f;
    }
    hn::Store(f(hn::Load(d, tx), hn::Load(d, ty)), d, tx);
    for (int64_t j = 0; i + j < n; ++j) x[i + j] = tx[j];
  }
}

// tanh of an argument clamped to [-10, 10] (tanh(10) rounds to 1 in float; Highway's Tanh is
// specified on finite arguments).
HWY_INLINE VF TanhClamped(DF d, VF u) {
  return hn::Tanh(d, hn::Min(hn::Max(u, hn::Set(d, -10.f)), hn::Set(d, 10.f)));
}

void GeluMul(float* gate, const float* up, int64_t n) {
  const DF d;
  const VF half = hn::Set(d, 0.5f), one = hn::Set(d, 1.f);
  const VF c0 = hn::Set(d, kGeluSqrt2OverPi), c1 = hn::Set(d, kGeluCoef);
  MapPadded(gate, up, n, 0.f, [&](VF x, VF u) {
    const VF inner = hn::Mul(hn::Mul(c0, x), hn::Add(one, hn::Mul(c1, hn::Mul(x, x))));
    const VF g = hn::Mul(hn::Mul(half, x), hn::Add(one, TanhClamped(d, inner)));
    return hn::Mul(g, u);
  });
}

void Softcap(float* x, int64_t n, float cap) {
  const DF d;
  const VF vcap = hn::Set(d, cap), vinv = hn::Set(d, 1.f / cap);
  MapPadded(x, nullptr, n, 0.f,
            [&](VF v, VF) { return hn::Mul(vcap, TanhClamped(d, hn::Mul(v, vinv))); });
}

void Add(float* y, const float* x, int64_t n) {
  const DF d;
  const int64_t nl = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + nl <= n; i += nl) {
    hn::StoreU(hn::Add(hn::LoadU(d, y + i), hn::LoadU(d, x + i)), d, y + i);
  }
  for (; i < n; ++i) y[i] += x[i];
}

void Softmax(float* x, int64_t n) {
  if (n <= 0) return;
  const DF d;
  const int64_t nl = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  VF vmax = hn::Set(d, -HUGE_VALF);
  for (; i + nl <= n; i += nl) vmax = hn::Max(vmax, hn::LoadU(d, x + i));
  float max = hn::GetLane(hn::MaxOfLanes(d, vmax));
  for (; i < n; ++i) max = std::fmax(max, x[i]);

  vmax = hn::Set(d, max);
  VF s0 = hn::Zero(d), s1 = hn::Zero(d);
  i = 0;
  for (; i + 2 * nl <= n; i += 2 * nl) {
    const VF e0 = ExpNonPositive(d, hn::Sub(hn::LoadU(d, x + i), vmax));
    const VF e1 = ExpNonPositive(d, hn::Sub(hn::LoadU(d, x + i + nl), vmax));
    hn::StoreU(e0, d, x + i);
    hn::StoreU(e1, d, x + i + nl);
    s0 = hn::Add(s0, e0);
    s1 = hn::Add(s1, e1);
  }
  for (; i + nl <= n; i += nl) {
    const VF e = ExpNonPositive(d, hn::Sub(hn::LoadU(d, x + i), vmax));
    hn::StoreU(e, d, x + i);
    s0 = hn::Add(s0, e);
  }
  double sum = SumLanes(d, hn::Add(s0, s1));
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }

  const float inv = static_cast<float>(1.0 / sum);
  const VF vinv = hn::Set(d, inv);
  i = 0;
  for (; i + nl <= n; i += nl) hn::StoreU(hn::Mul(hn::LoadU(d, x + i), vinv), d, x + i);
  for (; i < n; ++i) x[i] *= inv;
}

float Dot(const float* a, const float* b, int64_t n) {
  const DF d;
  const int64_t nl = static_cast<int64_t>(hn::Lanes(d));
  VF s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 4 * nl <= n; i += 4 * nl) {
    s0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), s0);
    s1 = hn::MulAdd(hn::LoadU(d, a + i + nl), hn::LoadU(d, b + i + nl), s1);
    s2 = hn::MulAdd(hn::LoadU(d, a + i + 2 * nl), hn::LoadU(d, b + i + 2 * nl), s2);
    s3 = hn::MulAdd(hn::LoadU(d, a + i + 3 * nl), hn::LoadU(d, b + i + 3 * nl), s3);
  }
  for (; i + nl <= n; i += nl) s0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), s0);
  float sum = SumLanes(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void Axpy(float a, const float* x, float* y, int64_t n) {
  const DF d;
  const int64_t nl = static_cast<int64_t>(hn::Lanes(d));
  const VF va = hn::Set(d, a);
  int64_t i = 0;
  for (; i + nl <= n; i += nl) {
    hn::StoreU(hn::MulAdd(va, hn::LoadU(d, x + i), hn::LoadU(d, y + i)), d, y + i);
  }
  for (; i < n; ++i) y[i] += a * x[i];
}

void Scale(float* y, float a, int64_t n) {
  const DF d;
  const int64_t nl = static_cast<int64_t>(hn::Lanes(d));
  const VF va = hn::Set(d, a);
  int64_t i = 0;
  for (; i + nl <= n; i += nl) hn::StoreU(hn::Mul(hn::LoadU(d, y + i), va), d, y + i);
  for (; i < n; ++i) y[i] *= a;
}

float DotF16(const float* a, const uint16_t* b, int64_t n) {
  const DF d;
  const int64_t nl = static_cast<int64_t>(hn::Lanes(d));
  VF s0 = hn::Zero(d), s1 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 2 * nl <= n; i += 2 * nl) {
    s0 = hn::MulAdd(hn::LoadU(d, a + i), LoadF16(d, b + i), s0);
    s1 = hn::MulAdd(hn::LoadU(d, a + i + nl), LoadF16(d, b + i + nl), s1);
  }
  for (; i + nl <= n; i += nl) s0 = hn::MulAdd(hn::LoadU(d, a + i), LoadF16(d, b + i), s0);
  float sum = SumLanes(d, hn::Add(s0, s1));
  for (; i < n; ++i) sum += a[i] * fp16_to_fp32(b[i]);
  return sum;
}

void AxpyF16(float a, const uint16_t* x, float* y, int64_t n) {
  const DF d;
  const int64_t nl = static_cast<int64_t>(hn::Lanes(d));
  const VF va = hn::Set(d, a);
  int64_t i = 0;
  for (; i + nl <= n; i += nl) {
    hn::StoreU(hn::MulAdd(va, LoadF16(d, x + i), hn::LoadU(d, y + i)), d, y + i);
  }
  for (; i < n; ++i) y[i] += a * fp16_to_fp32(x[i]);
}

void Fp32ToFp16Row(const float* x, uint16_t* y, int64_t n) {
  const DF d;
  const int64_t nl = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + nl <= n; i += nl) StoreF16(d, hn::LoadU(d, x + i), y + i);
  for (; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace tova::kernels::ops_hwy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tova::kernels {
namespace ops_hwy {
HWY_EXPORT(RmsNorm);
HWY_EXPORT(RopeApply);
HWY_EXPORT(SiluMul);
HWY_EXPORT(SwigluOaiMul);
HWY_EXPORT(GeluMul);
HWY_EXPORT(Softcap);
HWY_EXPORT(Add);
HWY_EXPORT(Softmax);
HWY_EXPORT(Dot);
HWY_EXPORT(Axpy);
HWY_EXPORT(Scale);
HWY_EXPORT(DotF16);
HWY_EXPORT(AxpyF16);
HWY_EXPORT(Fp32ToFp16Row);
HWY_EXPORT(TargetName);
}  // namespace ops_hwy

void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
  HWY_DYNAMIC_DISPATCH(ops_hwy::RmsNorm)(x, w, y, n, eps);
}

// The angles are n_rot/2 scalar double-precision cos/sin per position, shared by every head
// and layer; vectorising them would cost accuracy for no measurable time.
void rope_cos_sin(int64_t pos, const RopeParams& p, float* cs) { rope_cos_sin_ref(pos, p, cs); }

void rope_apply(float* x, int n_head, int head_dim, const float* cs, const RopeParams& p) {
  HWY_DYNAMIC_DISPATCH(ops_hwy::RopeApply)(x, n_head, head_dim, cs, p);
}

void rope(float* x, int n_head, int head_dim, int64_t pos, const RopeParams& p) {
  constexpr int kMaxStackRot = 512;
  float cs_small[kMaxStackRot];
  std::unique_ptr<float[]> cs_large;
  float* cs = cs_small;
  if (p.n_rot > kMaxStackRot) {
    cs_large = std::make_unique<float[]>(p.n_rot);
    cs = cs_large.get();
  }
  rope_cos_sin(pos, p, cs);
  rope_apply(x, n_head, head_dim, cs, p);
}

void silu_mul(float* gate, const float* up, int64_t n) {
  HWY_DYNAMIC_DISPATCH(ops_hwy::SiluMul)(gate, up, n);
}

void swiglu_oai_mul(float* gate, const float* up, int64_t n, float alpha, float limit) {
  HWY_DYNAMIC_DISPATCH(ops_hwy::SwigluOaiMul)(gate, up, n, alpha, limit);
}

void gelu_mul(float* gate, const float* up, int64_t n) {
  HWY_DYNAMIC_DISPATCH(ops_hwy::GeluMul)(gate, up, n);
}

void softcap(float* x, int64_t n, float cap) { HWY_DYNAMIC_DISPATCH(ops_hwy::Softcap)(x, n, cap); }

void add(float* y, const float* x, int64_t n) { HWY_DYNAMIC_DISPATCH(ops_hwy::Add)(y, x, n); }

void softmax(float* x, int64_t n) { HWY_DYNAMIC_DISPATCH(ops_hwy::Softmax)(x, n); }

float dot(const float* a, const float* b, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(ops_hwy::Dot)(a, b, n);
}

void axpy(float a, const float* x, float* y, int64_t n) {
  HWY_DYNAMIC_DISPATCH(ops_hwy::Axpy)(a, x, y, n);
}

void scale(float* y, float a, int64_t n) { HWY_DYNAMIC_DISPATCH(ops_hwy::Scale)(y, a, n); }

float dot_f16(const float* a, const uint16_t* b_f16, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(ops_hwy::DotF16)(a, b_f16, n);
}

void axpy_f16(float a, const uint16_t* x_f16, float* y, int64_t n) {
  HWY_DYNAMIC_DISPATCH(ops_hwy::AxpyF16)(a, x_f16, y, n);
}

void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n) {
  HWY_DYNAMIC_DISPATCH(ops_hwy::Fp32ToFp16Row)(x, y, n);
}

const char* ops_target_name() { return HWY_DYNAMIC_DISPATCH(ops_hwy::TargetName)(); }

}  // namespace tova::kernels
#endif  // HWY_ONCE
