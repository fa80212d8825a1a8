#include "model/moved_keys.h"

#include <algorithm>

#include "core/check.h"
#include "core/half.h"

namespace tova::model {

namespace {

const float* cos_sin_at(std::span<const float> cos_sin, int64_t m,
                        const kernels::RopeParams& rope) {
  const size_t off = static_cast<size_t>(m) * rope.n_rot;
  TOVA_CHECK(m >= 0 && off + rope.n_rot <= cos_sin.size());
  return cos_sin.data() + off;
}

}  // namespace

void MovedKeys::rotate_keys(const kv::LayerState& L, kv::PositionMode mode,
                            const kernels::RopeParams& rope, std::span<const float> cos_sin) {
  const int n_slot = L.n_slot(), hd = L.head_dim();
  const KvType stored_type = L.kv_type().k;
  type = stored_type == KvType::kF16 ? KvType::kF16 : KvType::kF32;
  const size_t elem = type == KvType::kF16 ? 2 : 4;
  mapped.resize(static_cast<size_t>(L.n_head_kv()) * n_slot);
  keys.resize(mapped.size() * hd * elem);
  row.resize(hd);
  stored.resize(kv_row_bytes(stored_type, hd));
  for (int g = 0; g < L.n_head_kv(); ++g) {
    const size_t base = static_cast<size_t>(g) * n_slot;
    kv::map_slot_positions(mode, {L.pos() + base, static_cast<size_t>(n_slot)},
                           {&mapped[base], static_cast<size_t>(n_slot)}, order);
    for (int32_t sl : order) {  // the held slots
      const size_t off = (base + sl) * hd;
      const float* cs = cos_sin_at(cos_sin, mapped[base + sl], rope);
      if (stored_type == KvType::kF32) {
        float* dst = reinterpret_cast<float*>(keys.data()) + off;
        std::copy_n(static_cast<const float*>(L.keys()) + off, hd, dst);
        kernels::rope_apply(dst, 1, hd, cs, rope);
        continue;
      }
      L.key_row(g, sl, stored.data());
      kv_dequantize_row_ref(stored_type, stored.data(), row.data(), hd);
      if (L.k_rotated()) hadamard_ref(row.data(), hd);  // its own inverse
      kernels::rope_apply(row.data(), 1, hd, cs, rope);
      if (type == KvType::kF16) {
        kernels::fp32_to_fp16_row(row.data(), reinterpret_cast<uint16_t*>(keys.data()) + off, hd);
      } else {
        std::copy_n(row.data(), hd, reinterpret_cast<float*>(keys.data()) + off);
      }
    }
  }
}

const float* MovedKeys::rotate_query(const kv::LayerState& L, const float* q_in, int64_t p,
                                     int n_head, const kernels::RopeParams& rope,
                                     std::span<const float> cos_sin) {
  const int n_slot = L.n_slot(), hd = L.head_dim(), n_head_kv = L.n_head_kv();
  const int group = n_head / n_head_kv;
  q.assign(q_in, q_in + static_cast<size_t>(n_head) * hd);
  for (int g = 0; g < n_head_kv; ++g) {
    const int64_t* pos = L.pos() + static_cast<size_t>(g) * n_slot;
    const int sl = static_cast<int>(std::find(pos, pos + n_slot, p) - pos);
    TOVA_CHECK(sl < n_slot);  // the query's own state joined before it attends
    const float* cs = cos_sin_at(cos_sin, mapped[static_cast<size_t>(g) * n_slot + sl], rope);
    kernels::rope_apply(&q[static_cast<size_t>(g) * group * hd], group, hd, cs, rope);
  }
  return q.data();
}

}  // namespace tova::model
