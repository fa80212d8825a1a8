// Scalar reference of the attention kernel; the fast path lives in attention_simd.cpp.
#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"

namespace tova::kernels {
namespace {

bool visible(int64_t pos, const AttentionArgs& a) {
  return pos >= 0 && pos >= a.min_pos && pos <= a.max_pos;
}

// Every stored row of one KV head as floats (exact: every stored type widens exactly).
std::vector<float> rows_of(KvType t, bool keys, const void* base, int g, const AttentionArgs& a) {
  const int hd = a.head_dim;
  const size_t row = kv_row_bytes(t, hd);
  std::vector<uint8_t> canon(row);
  std::vector<float> out(static_cast<size_t>(a.n_slot) * hd);
  const auto* b = static_cast<const uint8_t*>(base);
  for (int s = 0; s < a.n_slot; ++s) {
    if (keys) {
      const uint8_t* pool = b + g * key_pool_bytes(t, hd, a.n_slot);
      key_get_row(t, hd, pool + key_tile_offset(t, hd, s), s % key_tile_slots(t), canon.data());
    } else {
      std::copy_n(b + (static_cast<size_t>(g) * a.n_slot + s) * row, row, canon.data());
    }
    kv_dequantize_row_ref(t, canon.data(), &out[static_cast<size_t>(s) * hd], hd);
  }
  return out;
}

}  // namespace

void quantize_query(const float* x, int head_dim, int block, int8_t* q, float* d, int32_t* sum) {
  for (int b = 0; b < head_dim / block; ++b) {
    const float* xb = x + b * block;
    float amax = 0.f;
    for (int i = 0; i < block; ++i) amax = std::max(amax, std::fabs(xb[i]));
    const float db = amax / 127.f;
    const float id = db != 0.f ? 1.f / db : 0.f;
    int32_t s = 0;
    for (int i = 0; i < block; ++i) {
      const int v = static_cast<int>(std::nearbyint(xb[i] * id));
      q[b * block + i] = static_cast<int8_t>(v);
      s += v;
    }
    d[b] = db;
    sum[b] = s;
  }
}

void attention_ref(const AttentionArgs& a) {
  const int head_end = a.head_end < 0 ? a.n_head : a.head_end;
  const int group = a.n_head / a.n_head_kv;
  const size_t hd = static_cast<size_t>(a.head_dim);
  const int end = a.slot_end < 0 ? a.n_slot : a.slot_end;
  std::vector<double> sc(a.n_slot);
  std::vector<float> qrow(hd), orow(hd);
  std::vector<double> qd(hd);
  for (int g = a.head_begin / group; g * group < head_end; ++g) {
    const std::vector<float> keys = rows_of(a.k_type, true, a.k, g, a);
    const std::vector<float> values = rows_of(a.v_type, false, a.v, g, a);
    const int64_t* pos = a.pos + static_cast<size_t>(g) * a.n_slot;
    for (int h = std::max(a.head_begin, g * group); h < std::min(head_end, (g + 1) * group); ++h) {
      std::copy_n(a.q + h * hd, hd, qrow.data());
      if (a.k_rotated) hadamard_ref(qrow.data(), a.head_dim);
      if (kv_quantized(a.k_type)) {
        // The integers and scales the kernel's int8 dot products use.
        const int block = kv_block_size(a.k_type, a.head_dim).value();
        std::vector<int8_t> q8(hd);
        std::vector<float> dq(hd / block);
        std::vector<int32_t> sum(hd / block);
        quantize_query(qrow.data(), a.head_dim, block, q8.data(), dq.data(), sum.data());
        for (size_t i = 0; i < hd; ++i) qd[i] = static_cast<double>(dq[i / block]) * q8[i];
      } else {
        for (size_t i = 0; i < hd; ++i) qd[i] = qrow[i];
      }
      double mx = -std::numeric_limits<double>::infinity();
      for (int s = 0; s < a.n_slot; ++s) {
        if (s >= end || !visible(pos[s], a)) continue;
        double d = 0;
        for (size_t i = 0; i < hd; ++i) d += qd[i] * keys[s * hd + i];
        sc[s] = d * a.scale;
        if (a.softcap > 0.f) sc[s] = a.softcap * std::tanh(sc[s] / a.softcap);
        mx = std::max(mx, sc[s]);
      }
      const double sink = a.sinks != nullptr ? a.sinks[h] : -std::numeric_limits<double>::infinity();
      const bool any_seen = mx != -std::numeric_limits<double>::infinity();
      mx = std::max(mx, sink);
      // The sink is in the denominator only; a head that sees no slot stays all zeros.
      double sum = any_seen && a.sinks != nullptr ? std::exp(sink - mx) : 0.0;
      for (int s = 0; s < a.n_slot; ++s) {
        const bool live = s < end && visible(pos[s], a);
        sc[s] = live ? std::exp(sc[s] - mx) : 0.0;
        sum += sc[s];
      }
      for (size_t i = 0; i < hd; ++i) {
        double o = 0;
        for (int s = 0; s < a.n_slot; ++s) {
          if (sc[s] != 0.0) o += sc[s] / sum * values[s * hd + i];
        }
        orow[i] = static_cast<float>(o);
      }
      if (a.v_rotated) hadamard_ref(orow.data(), a.head_dim);
      std::copy_n(orow.data(), hd, a.out + h * hd);
      if (a.probs) {
        for (int s = 0; s < a.n_slot; ++s) {
          a.probs[static_cast<size_t>(h) * a.n_slot + s] = static_cast<float>(sc[s] / sum);
        }
      }
    }
  }
}

}  // namespace tova::kernels
