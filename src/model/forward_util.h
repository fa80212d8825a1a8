// Loops shared by the layer kinds of the forward pass (model.cpp, layer_*.cpp): per-token work
// over the pool only when there is enough of it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"

namespace tova::model {

// Grows v to at least n elements (scratch buffers keep their size across calls).
inline void resize(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

// Element counts below which the per-token work of a forward pass (norms, residual adds, RoPE,
// SiLU) stays on the calling thread: waking the pool costs a few microseconds, a norm of one
// 2048-wide row well under one. In a prompt of hundreds of tokens these parts, left serial,
// were what kept two threads from 2x (docs/PERFORMANCE.md).
inline constexpr int64_t kMinParallelElems = int64_t{1} << 15;

// fn(i) for every token i < n, over the pool when n tokens of `elems` floats each are enough.
template <typename Fn>
void for_tokens(ThreadPool& pool, int64_t n, int64_t elems, Fn&& fn) {
  if (pool.size() == 1 || n < 2 || n * elems < kMinParallelElems) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  pool.parallel_for(n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) fn(i);
  });
}

// fn(begin, end) over [0, n) elements, split over the pool in ranges of multiples of 64.
template <typename Fn>
void for_elems(ThreadPool& pool, int64_t n, Fn&& fn) {
  if (pool.size() == 1 || n < kMinParallelElems) {
    fn(int64_t{0}, n);
    return;
  }
  pool.parallel_for(n, 64, [&](int64_t b, int64_t e) { fn(b, e); });
}

}  // namespace tova::model
