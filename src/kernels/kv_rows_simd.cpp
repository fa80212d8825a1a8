// SIMD conversion of K/V rows into their storage types (kv_rows.h), compiled once per target.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/half.h"
#include "kernels/kv_rows.h"
#include "kernels/ops.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/kv_rows_simd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace tova::kernels::kv_rows_hwy {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Vectors of at most `span` lanes that divide it (span: 32, 16, 8 or 4).
template <class F>
void WithSpanVector(int span, F&& fn) {
  const hn::ScalableTag<float> df;
  if (span % static_cast<int>(hn::Lanes(df)) == 0) return fn(df);
  if (span % 8 == 0) return fn(hn::CappedTag<float, 8>());
  fn(hn::CappedTag<float, 4>());
}

template <class D>
HWY_INLINE float BlockAbsMax(D d, const float* x, int n) {
  const int nl = static_cast<int>(hn::Lanes(d));
  auto m = hn::Zero(d);
  for (int i = 0; i < n; i += nl) m = hn::Max(m, hn::Abs(hn::LoadU(d, x + i)));
  return hn::GetLane(hn::MaxOfLanes(d, m));
}

// q8_0: d = amax / 127, q = round-to-nearest-even(x / d), as kv_quantize_row_ref.
template <class D>
void Q8Row(D d, const float* x, uint8_t* y, int hd, int block) {
  const hn::Rebind<int8_t, D> di8;
  const int nl = static_cast<int>(hn::Lanes(d));
  for (int b = 0; b < hd / block; ++b, y += 2 + block) {
    const float* xb = x + b * block;
    const float amax = BlockAbsMax(d, xb, block);
    const float db = amax / 127.f;
    const float id = db != 0.f ? 1.f / db : 0.f;
    const uint16_t h = fp32_to_fp16(db);
    std::memcpy(y, &h, 2);
    const auto vid = hn::Set(d, id);
    for (int i = 0; i < block; i += nl) {
      const auto q = hn::NearestInt(hn::Mul(hn::LoadU(d, xb + i), vid));
      hn::StoreU(hn::DemoteTo(di8, q), di8, reinterpret_cast<int8_t*>(y + 2 + i));
    }
  }
}

// q4_0 as llama.cpp: d = (the element of largest magnitude, the first of equals) / -8,
// nibble = min(15, trunc(x / d + 8.5)).
template <class D>
void Q4Row(D d, const float* x, uint8_t* y, int hd, int block) {
  const hn::Rebind<int32_t, D> di;
  const hn::Rebind<uint8_t, D> du8;
  const int nl = static_cast<int>(hn::Lanes(d));
  const int half = block / 2;
  for (int b = 0; b < hd / block; ++b, y += 2 + half) {
    const float* xb = x + b * block;
    const float amax = BlockAbsMax(d, xb, block);
    float mx = 0.f;
    for (int j = 0; j < block; ++j) {
      if (std::fabs(xb[j]) == amax) {
        mx = xb[j];
        break;
      }
    }
    const float db = mx / -8.f;
    const float id = db != 0.f ? 1.f / db : 0.f;
    const uint16_t h = fp32_to_fp16(db);
    std::memcpy(y, &h, 2);
    const auto vid = hn::Set(d, id), v85 = hn::Set(d, 8.5f);
    const auto v15 = hn::Set(di, 15);
    for (int i = 0; i < half; i += nl) {
      const auto lo = hn::Min(v15, hn::ConvertTo(di, hn::Add(hn::Mul(hn::LoadU(d, xb + i), vid), v85)));
      const auto hi =
          hn::Min(v15, hn::ConvertTo(di, hn::Add(hn::Mul(hn::LoadU(d, xb + half + i), vid), v85)));
      const auto packed = hn::Or(lo, hn::ShiftLeft<4>(hi));  // 0..255 in int32 lanes
      hn::StoreU(hn::DemoteTo(du8, packed), du8, y + 2 + i);
    }
  }
}

void StoreRows(KvType t, bool rotate, const float* src, uint8_t* dst, int64_t n_rows, int hd) {
  if (t == KvType::kF32 || t == KvType::kF16 || t == KvType::kBF16 || !kv_quantized(t)) {
    kv_store_rows_ref(t, false, src, dst, n_rows, hd);  // (not reached: see kv_store_rows)
    return;
  }
  const int block = kv_block_size(t, hd).value();
  const size_t rb = kv_row_bytes(t, hd);
  std::vector<float> tmp(rotate ? hd : 0);
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* x = src + r * hd;
    if (rotate) {
      std::copy_n(x, hd, tmp.data());
      hadamard_ref(tmp.data(), hd);
      x = tmp.data();
    }
    uint8_t* y = dst + r * rb;
    if (t == KvType::kQ8_0) {
      WithSpanVector(block, [&](auto d) { Q8Row(d, x, y, hd, block); });
    } else {
      WithSpanVector(block / 2, [&](auto d) { Q4Row(d, x, y, hd, block); });
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tova::kernels::kv_rows_hwy
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tova::kernels {
namespace kv_rows_hwy {
HWY_EXPORT(StoreRows);
}  // namespace kv_rows_hwy

void kv_store_rows(KvType t, bool rotate, const float* src, uint8_t* dst, int64_t n_rows,
                   int head_dim) {
  switch (t) {
    case KvType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n_rows) * head_dim * sizeof(float));
      return;
    case KvType::kF16:
      fp32_to_fp16_row(src, reinterpret_cast<uint16_t*>(dst), n_rows * head_dim);
      return;
    case KvType::kBF16:  // a shift and a rounding per element: the compiler's loop does
      kv_store_rows_ref(t, false, src, dst, n_rows, head_dim);
      return;
    case KvType::kQ8_0:
    case KvType::kQ4_0:
      HWY_DYNAMIC_DISPATCH(kv_rows_hwy::StoreRows)(t, rotate, src, dst, n_rows, head_dim);
      return;
  }
}

void kv_store_rows_ref(KvType t, bool rotate, const float* src, uint8_t* dst, int64_t n_rows,
                       int head_dim) {
  const size_t rb = kv_row_bytes(t, head_dim);
  std::vector<float> tmp(head_dim);
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* x = src + r * head_dim;
    if (rotate && kv_quantized(t)) {
      std::copy_n(x, head_dim, tmp.data());
      hadamard_ref(tmp.data(), head_dim);
      x = tmp.data();
    }
    kv_quantize_row_ref(t, x, dst + r * rb, head_dim);
  }
}

}  // namespace tova::kernels
#endif  // HWY_ONCE
