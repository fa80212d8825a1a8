#include "kernels/attention.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/half.h"
#include "kernels/ops.h"

namespace tova::kernels {
namespace {

float load_kv(const void* base, bool f16, size_t i) {
  return f16 ? fp16_to_fp32(static_cast<const uint16_t*>(base)[i])
             : static_cast<const float*>(base)[i];
}

}  // namespace

void attention(const AttentionArgs& a) {
  const int head_end = a.head_end < 0 ? a.n_head : a.head_end;
  const int group = a.n_head / a.n_head_kv;
  const size_t hd = static_cast<size_t>(a.head_dim);
  for (int h = a.head_begin; h < head_end; ++h) {
    const int g = h / group;
    const int64_t* pos = a.pos + static_cast<size_t>(g) * a.n_slot;
    const size_t kv_off = static_cast<size_t>(g) * a.n_slot * hd;
    float* p = a.probs ? a.probs + static_cast<size_t>(h) * a.n_slot : a.scratch;
    const float* q = a.q + h * hd;
    float mx = -std::numeric_limits<float>::infinity();
    for (int s = 0; s < a.n_slot; ++s) {
      if (pos[s] < 0 || pos[s] > a.max_pos) {
        p[s] = -std::numeric_limits<float>::infinity();
        continue;
      }
      const float d = a.kv_f16 ? dot_f16(q, static_cast<const uint16_t*>(a.k) + kv_off + s * hd,
                                         a.head_dim)
                               : dot(q, static_cast<const float*>(a.k) + kv_off + s * hd,
                                     a.head_dim);
      p[s] = d * a.scale;
      mx = std::max(mx, p[s]);
    }
    float sum = 0.f;
    for (int s = 0; s < a.n_slot; ++s) {
      p[s] = p[s] == -std::numeric_limits<float>::infinity() ? 0.f : std::exp(p[s] - mx);
      sum += p[s];
    }
    const float inv = 1.f / sum;
    float* out = a.out + h * hd;
    std::memset(out, 0, hd * sizeof(float));
    for (int s = 0; s < a.n_slot; ++s) {
      if (p[s] == 0.f) continue;
      p[s] *= inv;
      if (a.kv_f16) {
        axpy_f16(p[s], static_cast<const uint16_t*>(a.v) + kv_off + s * hd, out, a.head_dim);
      } else {
        axpy(p[s], static_cast<const float*>(a.v) + kv_off + s * hd, out, a.head_dim);
      }
    }
  }
}

void attention_ref(const AttentionArgs& a) {
  const int head_end = a.head_end < 0 ? a.n_head : a.head_end;
  const int group = a.n_head / a.n_head_kv;
  const size_t hd = static_cast<size_t>(a.head_dim);
  std::vector<double> sc(a.n_slot);
  for (int h = a.head_begin; h < head_end; ++h) {
    const int g = h / group;
    const int64_t* pos = a.pos + static_cast<size_t>(g) * a.n_slot;
    const size_t kv_off = static_cast<size_t>(g) * a.n_slot * hd;
    double mx = -std::numeric_limits<double>::infinity();
    for (int s = 0; s < a.n_slot; ++s) {
      if (pos[s] < 0 || pos[s] > a.max_pos) continue;
      double d = 0;
      for (size_t i = 0; i < hd; ++i) {
        d += static_cast<double>(a.q[h * hd + i]) * load_kv(a.k, a.kv_f16, kv_off + s * hd + i);
      }
      sc[s] = d * a.scale;
      mx = std::max(mx, sc[s]);
    }
    double sum = 0;
    for (int s = 0; s < a.n_slot; ++s) {
      const bool live = pos[s] >= 0 && pos[s] <= a.max_pos;
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
