#include "model/weight_repack.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

#include "core/timer.h"
#include "kernels/types/weight_type.h"

namespace tova::model {

namespace {

// Rewrites m's rows into its interleaved layout, one group at a time through a buffer of one
// group (the only extra memory).
void repack_matrix(const kernels::WeightTypeKernels& k, kernels::WeightMatrix& m,
                   std::vector<uint8_t>& group) {
  const uint64_t group_bytes = m.row_bytes * static_cast<uint64_t>(k.group_rows);
  group.resize(group_bytes);
  auto* data = const_cast<uint8_t*>(m.data);  // made writable by the caller
  for (int64_t g = 0; g < m.n_out / k.group_rows; ++g) {
    uint8_t* dst = data + static_cast<uint64_t>(g) * group_bytes;
    std::memcpy(group.data(), dst, group_bytes);
    k.repack(group.data(), m.n_in, k.group_rows, dst);
  }
  m.type = k.type;
}

}  // namespace

Result<RepackStats> repack_weights(io::GgufFile& file, ModelWeights& w) {
  Timer timer;
  RepackStats stats;
  std::vector<kernels::WeightMatrix*> todo;
  for (LayerWeights& l : w.layers) {
    if (l.mixer_kind == MixerKind::kAttention || l.mixer_kind == MixerKind::kSharedKv) {
      for (kernels::WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo}) todo.push_back(m);
    }
    if (l.ffn_kind == FfnKind::kDense) {
      for (kernels::WeightMatrix* m : {&l.w_gate, &l.w_up, &l.w_down}) todo.push_back(m);
    }
  }
  // Which matrices change, and the fields that share one (by their bytes).
  std::map<const uint8_t*, std::vector<kernels::WeightMatrix*>> by_data;
  for (kernels::WeightMatrix* m : todo) {
    const kernels::WeightTypeKernels* k = kernels::find_interleaved_type(m->type);
    if (k == nullptr || m->data == nullptr || m->n_out <= 0 || m->n_out % k->group_rows != 0) {
      continue;
    }
    by_data[m->data].push_back(m);
  }
  if (by_data.empty()) return stats;
  // Shared bytes must be one matrix seen twice, never two that overlap in part.
  const uint8_t* prev_end = nullptr;
  for (auto& [data, ms] : by_data) {
    const kernels::WeightMatrix& m0 = *ms[0];
    for (const kernels::WeightMatrix* m : ms) {
      if (m->n_out != m0.n_out || m->n_in != m0.n_in || m->type != m0.type) {
        return make_error(
            "{}: two weight matrices share bytes with different shapes; cannot "
            "repack them (load with --no-repack)",
            file.path());
      }
    }
    if (prev_end != nullptr && data < prev_end) {
      return make_error(
          "{}: weight matrices overlap in part; cannot repack them (load with "
          "--no-repack)",
          file.path());
    }
    prev_end = data + m0.row_bytes * static_cast<uint64_t>(m0.n_out);
  }
  TOVA_RETURN_IF_ERROR(file.set_data_writable(true));
  std::vector<uint8_t> group;
  for (auto& [data, ms] : by_data) {
    const kernels::WeightTypeKernels& k = *kernels::find_interleaved_type(ms[0]->type);
    repack_matrix(k, *ms[0], group);
    for (kernels::WeightMatrix* m : ms) m->type = k.type;
    ++stats.n_matrices;
    stats.n_bytes += ms[0]->row_bytes * static_cast<uint64_t>(ms[0]->n_out);
  }
  TOVA_RETURN_IF_ERROR(file.set_data_writable(false));
  stats.seconds = timer.seconds();
  return stats;
}

}  // namespace tova::model
