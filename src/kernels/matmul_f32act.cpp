#include "kernels/matmul_f32act.h"

#include <algorithm>
#include <vector>

#include "kernels/ops.h"
#include "kernels/quant.h"

namespace tova::kernels {

void matmul_f32_activations(const WeightMatrix& w, const float* x, int64_t n_tok, float* y,
                            ThreadPool& pool) {
  // Rows are dequantized once per call and reused for every token of the batch.
  const int64_t grain = std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(1, w.n_in * n_tok));
  pool.parallel_for(w.n_out, grain, [&](int64_t o0, int64_t o1) {
    std::vector<float> row(w.n_in);
    for (int64_t o = o0; o < o1; ++o) {
      dequantize_row(w.type, w.data + w.row_bytes * o, row.data(), w.n_in);
      for (int64_t t = 0; t < n_tok; ++t) {
        y[t * w.n_out + o] = dot(row.data(), x + t * w.n_in, w.n_in);
      }
    }
  });
}

}  // namespace tova::kernels
