// A barrier for the threads of one ThreadPool::run() call. Phases are short (one token's
// attention in one layer: tens of microseconds), so a waiting thread spins first; past
// kSpinBeforeSleep it sleeps (core/spin_wait.h), so that on a machine with fewer free cores
// than threads it does not hold the core the late thread needs.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/spin_wait.h"

namespace tova {

class SpinBarrier {
 public:
  explicit SpinBarrier(int n_threads) : n_threads_(n_threads) {}
  SpinBarrier(const SpinBarrier&) = delete;
  SpinBarrier& operator=(const SpinBarrier&) = delete;

  // Returns once all n_threads threads have called it (for the same phase). Reusable: the
  // last thread to arrive opens the next phase.
  void arrive_and_wait() {
    const uint32_t phase = phase_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_threads_) {
      arrived_.store(0, std::memory_order_relaxed);
      phase_.store(phase + 1, std::memory_order_release);
      phase_.notify_all();
      return;
    }
    spin_then_wait(phase_, [&] { return phase_.load(std::memory_order_acquire) != phase; });
  }

 private:
  const int n_threads_;
  alignas(64) std::atomic<int> arrived_{0};
  alignas(64) std::atomic<uint32_t> phase_{0};
};

}  // namespace tova
