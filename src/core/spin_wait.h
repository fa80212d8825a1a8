// Waiting for another thread on a machine that may be shared: spin briefly (the common case on
// idle cores, where the other thread answers within microseconds), then sleep in the kernel
// (std::atomic::wait, a futex on Linux) until the awaited word changes. A thread that kept
// spinning, or only yielded, would hold a core that the thread it waits for, or another
// program, needs: with more threads than free cores it competed with them and a run could
// stall for seconds. Sleeping also lets an idle core pull the awaited thread over from a busy one.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

namespace tova {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(_M_X64)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// How long a waiting thread spins before it sleeps. Long enough to cover the gap between two
// parallel loops of one decode step (a few to tens of microseconds), short against a
// scheduler's time slice (milliseconds), which is what a thread waiting on a descheduled one
// would otherwise burn.
inline constexpr std::chrono::microseconds kSpinBeforeSleep{50};

// Returns once done() is true. Whoever makes done() true must change `word` afterwards and
// call word.notify_all(): the word is read before done() is tested, so a change in between
// makes the wait return at once.
template <typename Done>
void spin_then_wait(const std::atomic<uint32_t>& word, Done&& done,
                    std::chrono::microseconds spin = kSpinBeforeSleep) {
  std::chrono::steady_clock::time_point deadline{};
  bool sleep = false;
  for (uint32_t i = 0;; ++i) {
    const uint32_t seen = word.load(std::memory_order_acquire);
    if (done()) return;
    if (sleep) {
      word.wait(seen, std::memory_order_acquire);
      continue;
    }
    if (i % 64 == 0) {  // read the clock now and then: it costs more than a pause
      const auto now = std::chrono::steady_clock::now();
      if (i == 0) deadline = now + spin;
      sleep = i > 0 && now >= deadline;
    }
    cpu_relax();
  }
}

}  // namespace tova
