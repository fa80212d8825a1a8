// Matmul orchestration: convert the activations once, then split the output rows over threads.
#include "kernels/matmul.h"

#include <vector>

#include "core/check.h"
#include "kernels/matmul_internal.h"
#include "kernels/quant.h"

namespace tova::kernels {
namespace {

// Below this many multiply-adds a matmul runs on the calling thread: waking the pool costs
// more than it saves (stories260K's 64x64 matrices are ~4K).
constexpr int64_t kMinParallelWork = int64_t{1} << 18;
// Activation elements below which converting them is not worth a second thread.
constexpr int64_t kMinParallelPrepare = int64_t{1} << 16;

}  // namespace

void matmul(const WeightMatrix& w, const float* x, int64_t n_tok, float* y, ThreadPool& pool) {
  TOVA_CHECK(is_compute_supported(w.type));
  TOVA_CHECK(w.n_in % type_traits(w.type).block_size == 0);
  if (n_tok <= 0 || w.n_out <= 0) return;
  // Reused across calls. Named through a reference because inside the lambdas below, run on
  // pool threads, the thread_local's own name would mean each worker's (empty) instance.
  thread_local detail::ActBuffer acts_storage;
  detail::ActBuffer& acts = acts_storage;
  detail::plan_acts(w.type, w.n_in, n_tok, x, &acts);
  const bool parallel = pool.size() > 1 && w.n_out * w.n_in * n_tok >= kMinParallelWork;
  if (acts.layout != detail::ActLayout::kFloatRows) {
    if (parallel && n_tok >= 2 * acts.lanes && n_tok * w.n_in >= kMinParallelPrepare) {
      pool.parallel_for(n_tok, acts.lanes,
                        [&](int64_t t0, int64_t t1) { detail::prepare_acts(x, t0, t1, &acts); });
    } else {
      detail::prepare_acts(x, 0, n_tok, &acts);
    }
  }
  if (!parallel) {
    detail::matmul_rows(w, acts, 0, w.n_out, y);
    return;
  }
  // Row ranges in multiples of 16 keep the kernels' 4-row tiles and 16-row chunks whole.
  pool.parallel_for(w.n_out, 16,
                    [&](int64_t o0, int64_t o1) { detail::matmul_rows(w, acts, o0, o1, y); });
}

void matmul_ref(const WeightMatrix& w, const float* x, int64_t n_tok, float* y) {
  TOVA_CHECK(is_compute_supported(w.type));
  const GgmlType act_type = vec_dot_type(w.type);
  const TypeTraits& at = type_traits(act_type);
  std::vector<uint8_t> act(static_cast<size_t>(w.n_in / at.block_size * at.type_size));
  for (int64_t t = 0; t < n_tok; ++t) {
    quantize_row_ref(act_type, x + t * w.n_in, act.data(), w.n_in);
    for (int64_t o = 0; o < w.n_out; ++o) {
      y[t * w.n_out + o] = vec_dot_ref(w.type, w.n_in, w.data + o * w.row_bytes, act.data());
    }
  }
}

}  // namespace tova::kernels
