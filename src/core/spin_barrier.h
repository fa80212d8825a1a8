// A barrier for the threads of one ThreadPool::run() call: phases of a few tens of
// microseconds (one token's attention in one layer) cannot afford to put a thread to sleep
// between them, so waiting threads spin, and yield after a while so that an oversubscribed
// machine still makes progress (as the pool's own waits do).
#pragma once

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace tova {

class SpinBarrier {
 public:
  explicit SpinBarrier(int n_threads) : n_threads_(n_threads) {}
  SpinBarrier(const SpinBarrier&) = delete;
  SpinBarrier& operator=(const SpinBarrier&) = delete;

  // Returns once all n_threads threads have called it (for the same phase). Reusable: the
  // last thread to arrive opens the next phase.
  void arrive_and_wait() {
    const int phase = phase_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_threads_) {
      arrived_.store(0, std::memory_order_relaxed);
      phase_.store(phase + 1, std::memory_order_release);
      return;
    }
    for (int spin = 0; phase_.load(std::memory_order_acquire) == phase; ++spin) {
      if (spin < kSpinIterations) {
        pause();
      } else {
        std::this_thread::yield();
      }
    }
  }

 private:
  static constexpr int kSpinIterations = 20000;
  static void pause() {
#if defined(__x86_64__) || defined(_M_X64)
    _mm_pause();
#else
    std::this_thread::yield();
#endif
  }

  const int n_threads_;
  alignas(64) std::atomic<int> arrived_{0};
  alignas(64) std::atomic<int> phase_{0};
};

}  // namespace tova
