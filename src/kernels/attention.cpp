// Scalar reference of the attention kernel; the fast path lives in attention_simd.cpp.
#include "kernels/attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include "core/half.h"

namespace tova::kernels {
namespace {

float load_kv(const void* base, bool f16, size_t i) {
  return f16 ? fp16_to_fp32(static_cast<const uint16_t*>(base)[i])
             : static_cast<const float*>(base)[i];
}

bool visible(int64_t pos, const AttentionArgs& a) {
  return pos >= 0 && pos >= a.min_pos && pos <= a.max_pos;
}

}  // namespace

void attention_ref(const AttentionArgs& a) {
  const int head_end = a.head_end < 0 ? a.n_head : a.head_end;
  const int group = a.n_head / a.n_head_kv;
  const size_t hd = static_cast<size_t>(a.head_dim);
  const int end = a.slot_end < 0 ? a.n_slot : a.slot_end;
  std::vector<double> sc(a.n_slot);
  for (int h = a.head_begin; h < head_end; ++h) {
    const int g = h / group;
    const int64_t* pos = a.pos + static_cast<size_t>(g) * a.n_slot;
    const size_t kv_off = static_cast<size_t>(g) * a.n_slot * hd;
    double mx = -std::numeric_limits<double>::infinity();
    for (int s = 0; s < a.n_slot; ++s) {
      if (s >= end || !visible(pos[s], a)) continue;
      double d = 0;
      for (size_t i = 0; i < hd; ++i) {
        d += static_cast<double>(a.q[h * hd + i]) * load_kv(a.k, a.kv_f16, kv_off + s * hd + i);
      }
      sc[s] = d * a.scale;
      if (a.softcap > 0.f) sc[s] = a.softcap * std::tanh(sc[s] / a.softcap);
      mx = std::max(mx, sc[s]);
    }
    double sum = 0;
    for (int s = 0; s < a.n_slot; ++s) {
      const bool live = s < end && visible(pos[s], a);
      sc[s] = live ? std::exp(sc[s] - mx) : 0.0;
      sum += sc[s];
    }
    for (size_t i = 0; i < hd; ++i) {
      double o = 0;
      for (int s = 0; s < a.n_slot; ++s) {
        if (sc[s] != 0.0) o += sc[s] / sum * load_kv(a.v, a.kv_f16, kv_off + s * hd + i);
      }
      a.out[h * hd + i] = static_cast<float>(o);
    }
    if (a.probs) {
      for (int s = 0; s < a.n_slot; ++s) {
        a.probs[static_cast<size_t>(h) * a.n_slot + s] = static_cast<float>(sc[s] / sum);
      }
    }
  }
}

}  // namespace tova::kernels
