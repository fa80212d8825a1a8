#include "kv/key_similarity.h"

#include <cmath>
#include <vector>


namespace tova::kv {

void key_similarity(const KeyRows& r, double* out) {
  std::vector<double> key(r.head_dim), anchor(r.head_dim);
  std::vector<uint8_t> row(kv_row_bytes(r.type, r.head_dim));
  std::vector<float> row_f(r.head_dim);
  const auto* pools = static_cast<const uint8_t*>(r.keys);
  const size_t pool = key_pool_bytes(r.type, r.head_dim, r.n_slot);
  auto load = [&](int g, int s) {
    key_get_row(r.type, r.head_dim, pools + g * pool + key_tile_offset(r.type, r.head_dim, s),
                s % key_tile_slots(r.type), row.data());
    kv_dequantize_row_ref(r.type, row.data(), row_f.data(), r.head_dim);
    for (int d = 0; d < r.head_dim; ++d) key[d] = row_f[d];
    double n2 = 0;
    for (double x : key) n2 += x * x;
    return std::sqrt(n2);
  };
  for (int g = 0; g < r.n_head_kv; ++g) {
    const int64_t* pos = r.pos + static_cast<size_t>(g) * r.n_slot;
    std::fill(anchor.begin(), anchor.end(), 0.0);
    int n = 0;
    for (int s = 0; s < r.slot_end; ++s) {
      if (pos[s] < 0) continue;
      const double norm = load(g, s);
      ++n;
      if (norm == 0) continue;
      for (int d = 0; d < r.head_dim; ++d) anchor[d] += key[d] / norm;
    }
    if (n == 0) continue;
    double a2 = 0;
    for (double& x : anchor) {
      x /= n;
      a2 += x * x;
    }
    const double a_norm = std::sqrt(a2);
    for (int s = 0; s < r.slot_end; ++s) {
      if (pos[s] < 0) continue;
      const double norm = load(g, s);
      double dot = 0;
      for (int d = 0; d < r.head_dim; ++d) dot += key[d] * anchor[d];
      out[static_cast<size_t>(g) * r.n_slot + s] =
          norm == 0 || a_norm == 0 ? 0.0 : dot / (norm * a_norm);
    }
  }
}

}  // namespace tova::kv
