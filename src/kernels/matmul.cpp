// Matmul orchestration: convert the activations once, then split the output rows over threads.
#include "kernels/matmul.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "core/check.h"
#include "kernels/matmul_internal.h"
#include "kernels/quant.h"
#include "kernels/types/weight_type.h"

namespace tova::kernels {
namespace {

// Below this many multiply-adds a matmul runs on the calling thread: waking the pool costs
// more than it saves (stories260K's 64x64 matrices are ~4K).
constexpr int64_t kMinParallelWork = int64_t{1} << 18;
// Activation elements below which converting them is not worth a second thread. Split by
// columns, the threads are already awake for the matrix that follows: a lower bar (TinyLlama's
// q/k/v, o and gate/up inputs at B=16 are 32K elements, ~20 us on one thread).
constexpr int64_t kMinParallelPrepare = int64_t{1} << 16;
constexpr int64_t kMinParallelPrepareColumns = int64_t{1} << 14;
// A call with more than one token is cut in up to kBatchPartsPerThread parts per thread of
// whole 32-row chunks (the token-lane kernels' unit of reuse; see matmul_multi). Single-token
// decode gives each thread one range, taken in pieces of kDecodeRowGrain rows from its front
// (the row prefetch runs on into the next piece), and a thread done early takes pieces from
// the back of the other ranges (ThreadPool::parallel_for_ranges).
constexpr int kBatchPartsPerThread = 64;
constexpr int64_t kBatchRowGrain = 32;
constexpr int64_t kDecodeRowGrain = 16;

// A type matmul computes: a file's compute types and tova's own layouts made from them.
bool computes(GgmlType t) {
  const WeightTypeKernels* k = find_weight_type(t);
  return k != nullptr && k->is_weight_type;
}

}  // namespace

// The per-call entry points of matmul_internal.h: the weight type's unit, looked up once per
// call (each then dispatches to this CPU's Highway target).
namespace detail {

void plan_acts(GgmlType weight_type_id, int64_t n_in, int64_t n_tok, const float* x,
               ActBuffer* acts) {
  weight_type(weight_type_id).plan_acts(n_in, n_tok, x, acts);
}

void prepare_acts(const float* x, int64_t t_begin, int64_t t_end, ActBuffer* acts) {
  weight_type(acts->weight_type).prepare_acts(x, t_begin, t_end, 0, acts->n_in, acts);
}

void prepare_act_columns(const float* x, int64_t k_begin, int64_t k_end, ActBuffer* acts) {
  weight_type(acts->weight_type).prepare_acts(x, 0, acts->n_tok, k_begin, k_end, acts);
}

void matmul_rows(const WeightMatrix& w, const ActBuffer& acts, int64_t o_begin, int64_t o_end,
                 float* y) {
  weight_type(w.type).matmul_rows(w, acts, o_begin, o_end, y);
}

}  // namespace detail

void matmul_multi(std::span<const WeightMatrix* const> ws, const float* x, int64_t n_tok,
                  std::span<float* const> ys, ThreadPool& pool) {
  TOVA_CHECK(ws.size() == ys.size() && !ws.empty());
  int64_t total_rows = 0;
  for (const WeightMatrix* w : ws) {
    TOVA_CHECK(computes(w->type));
    TOVA_CHECK(w->n_in % type_traits(w->type).block_size == 0);
    total_rows += w->n_out;
  }
  const WeightMatrix& w0 = *ws[0];
  for (const WeightMatrix* w : ws) {
    TOVA_CHECK(w->n_in == w0.n_in);
    if (w->type != w0.type) {  // activations converted differently: one call each
      for (size_t i = 0; i < ws.size(); ++i) matmul_multi({&ws[i], 1}, x, n_tok, {&ys[i], 1}, pool);
      return;
    }
  }
  if (n_tok <= 0 || total_rows <= 0) return;
  // Reused across calls. Named through a reference because inside the lambdas below, run on
  // pool threads, the thread_local's own name would mean each worker's (empty) instance.
  thread_local detail::ActBuffer acts_storage;
  detail::ActBuffer& acts = acts_storage;
  detail::plan_acts(w0.type, w0.n_in, n_tok, x, &acts);
  const bool parallel = pool.size() > 1 && total_rows * w0.n_in * n_tok >= kMinParallelWork;
  if (acts.layout != detail::ActLayout::kFloatRows) {
    if (parallel && n_tok >= 2 * acts.lanes && n_tok * w0.n_in >= kMinParallelPrepare) {
      pool.parallel_for(n_tok, acts.lanes,
                        [&](int64_t t0, int64_t t1) { detail::prepare_acts(x, t0, t1, &acts); });
    } else if (parallel && acts.lanes > 1 && n_tok * w0.n_in >= kMinParallelPrepareColumns &&
               w0.n_in >= 2 * detail::kActColumnGrain) {
      // One group of token lanes (a batched decode step of 12-31 sequences) is split by
      // columns: converted by the calling thread alone it was 1.5 % of a TinyLlama B=16 step on
      // two threads, and the idle thread fell asleep before the FFN down matrix.
      pool.parallel_for(w0.n_in, detail::kActColumnGrain, [&](int64_t k0, int64_t k1) {
        detail::prepare_act_columns(x, k0, k1, &acts);
      });
    } else {
      detail::prepare_acts(x, 0, n_tok, &acts);
    }
  }
  // Rows [r0, r1) of the matrices stacked in order; each row's result does not depend on how
  // the rows are split, so this gives the same bits as one call per matrix.
  auto rows = [&](int64_t r0, int64_t r1) {
    int64_t base = 0;
    for (size_t i = 0; i < ws.size(); ++i) {
      const int64_t lo = std::max(r0, base), hi = std::min(r1, base + ws[i]->n_out);
      if (lo < hi) detail::matmul_rows(*ws[i], acts, lo - base, hi - base, ys[i]);
      base += ws[i]->n_out;
    }
  };
  if (!parallel) {
    rows(0, total_rows);
    return;
  }
  // Row ranges in multiples of 16 keep the kernels' 4-row tiles and 16-row chunks whole. With
  // several tokens, a call is cut in many small parts taken by whichever thread is free: with
  // one equal range per thread, the two threads of a batched decode step (TinyLlama B=16 and
  // B=64, -t 2) sat idle for 3-4 % of the step inside the matrix products, waiting for the
  // other's range; 8 parts per thread halved that, 64 per thread left ~1 % (a part is then
  // 1-6 chunks of 32 rows: each claim costs one atomic add).
  if (n_tok > 1) {
    pool.parallel_for(total_rows, kBatchRowGrain, rows, kBatchPartsPerThread);
  } else {
    pool.parallel_for_ranges(total_rows, kDecodeRowGrain, rows);
  }
}

void matmul_grouped(std::span<const MatmulJob> jobs, ThreadPool& pool) {
  if (jobs.empty()) return;
  const WeightMatrix& w0 = *jobs[0].w;
  int64_t total_rows = 0, work = 0, act_elems = 0, max_tok = 0;
  for (const MatmulJob& j : jobs) {
    TOVA_CHECK(computes(j.w->type));
    TOVA_CHECK(j.w->n_in % type_traits(j.w->type).block_size == 0);
    if (j.w->type != w0.type || j.w->n_in != w0.n_in) {  // converted differently: one call each
      for (const MatmulJob& k : jobs) {
        const WeightMatrix* ws[] = {k.w};
        float* ys[] = {k.y};
        matmul_multi(ws, k.x, k.n_tok, ys, pool);
      }
      return;
    }
    if (j.n_tok <= 0) continue;
    total_rows += j.w->n_out;
    work += j.w->n_out * j.w->n_in * j.n_tok;
    max_tok = std::max(max_tok, j.n_tok);
  }
  if (total_rows == 0) return;
  // The activation buffers, one per run of jobs over the same x: act_of[i] is job i's. Reused
  // across calls (named through a reference: see matmul_multi).
  thread_local std::vector<std::unique_ptr<detail::ActBuffer>> acts_storage;
  thread_local std::vector<int> act_of_storage;
  thread_local std::vector<const float*> act_x_storage;
  std::vector<std::unique_ptr<detail::ActBuffer>>& acts = acts_storage;
  std::vector<int>& act_of = act_of_storage;
  std::vector<const float*>& act_x = act_x_storage;
  act_of.assign(jobs.size(), -1);
  act_x.clear();
  for (size_t i = 0; i < jobs.size(); ++i) {
    const MatmulJob& j = jobs[i];
    if (j.n_tok <= 0) continue;
    const int prev = act_x.empty() ? -1 : static_cast<int>(act_x.size()) - 1;
    if (prev >= 0 && act_x[prev] == j.x && acts[prev]->n_tok == j.n_tok) {
      act_of[i] = prev;
      continue;
    }
    act_of[i] = static_cast<int>(act_x.size());
    act_x.push_back(j.x);
    if (acts.size() < act_x.size()) acts.push_back(std::make_unique<detail::ActBuffer>());
    detail::plan_acts(w0.type, w0.n_in, j.n_tok, j.x, acts[act_of[i]].get());
    act_elems += j.n_tok * w0.n_in;
  }
  const int64_t n_acts = static_cast<int64_t>(act_x.size());
  const bool parallel = pool.size() > 1 && work >= kMinParallelWork;
  auto prepare = [&](int64_t a) {
    detail::ActBuffer& b = *acts[a];
    if (b.layout != detail::ActLayout::kFloatRows) detail::prepare_acts(act_x[a], 0, b.n_tok, &b);
  };
  if (parallel && n_acts > 1 && act_elems >= kMinParallelPrepareColumns) {
    pool.for_each_dynamic(n_acts, [&](int64_t a, int) { prepare(a); });
  } else {
    for (int64_t a = 0; a < n_acts; ++a) prepare(a);
  }
  // Rows [r0, r1) of the jobs' matrices stacked in order (as matmul_multi).
  auto rows = [&](int64_t r0, int64_t r1) {
    int64_t base = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (act_of[i] < 0) continue;
      const int64_t n_out = jobs[i].w->n_out;
      const int64_t lo = std::max(r0, base), hi = std::min(r1, base + n_out);
      if (lo < hi) detail::matmul_rows(*jobs[i].w, *acts[act_of[i]], lo - base, hi - base, jobs[i].y);
      base += n_out;
      if (base >= r1) break;
    }
  };
  if (!parallel) {
    rows(0, total_rows);
  } else if (max_tok > 1) {
    pool.parallel_for(total_rows, kBatchRowGrain, rows, kBatchPartsPerThread);
  } else {
    pool.parallel_for_ranges(total_rows, kDecodeRowGrain, rows);
  }
}

void matmul(const WeightMatrix& w, const float* x, int64_t n_tok, float* y, ThreadPool& pool) {
  const WeightMatrix* ws[] = {&w};
  float* ys[] = {y};
  matmul_multi(ws, x, n_tok, ys, pool);
}

void matmul_ref(const WeightMatrix& w, const float* x, int64_t n_tok, float* y) {
  TOVA_CHECK(computes(w.type));
  // An interleaved layout's reference is its base type's, row by row.
  const WeightTypeKernels& k = weight_type(w.type);
  const GgmlType row_type = k.group_rows > 0 ? k.base_type : w.type;
  std::vector<uint8_t> row(k.group_rows > 0 ? w.row_bytes : 0);
  const GgmlType act_type = vec_dot_type(row_type);
  const TypeTraits& at = type_traits(act_type);
  std::vector<uint8_t> act(static_cast<size_t>(w.n_in / at.block_size * at.type_size));
  for (int64_t t = 0; t < n_tok; ++t) {
    quantize_row_ref(act_type, x + t * w.n_in, act.data(), w.n_in);
    for (int64_t o = 0; o < w.n_out; ++o) {
      const uint8_t* r = w.data + o * w.row_bytes;
      if (k.group_rows > 0) {
        k.row_of(w.data, w.n_in, o, row.data());
        r = row.data();
      }
      y[t * w.n_out + o] = vec_dot_ref(row_type, w.n_in, r, act.data());
    }
  }
}

}  // namespace tova::kernels
