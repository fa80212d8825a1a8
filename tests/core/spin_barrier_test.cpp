#include "core/spin_barrier.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "core/thread_pool.h"

namespace tova {
namespace {

// Every thread writes its slot of phase p, passes the barrier, and then must see every
// thread's phase-p write (and no later one: nobody writes phase p + 1 before everybody has
// passed the second barrier). Reused for many phases in one run() call; more threads than cores
// exercise the waits that yield.
TEST(SpinBarrier, EveryWriteBeforeTheBarrierIsSeenAfterIt) {
  for (int n : {1, 2, 3, 4}) {
    ThreadPool pool(n);
    const int n_phase = n <= 2 ? 2000 : 200;
    std::vector<std::atomic<int>> written(n);
    std::atomic<int> misses{0};
    SpinBarrier barrier(n);
    pool.run([&](int t) {
      for (int p = 1; p <= n_phase; ++p) {
        written[t].store(p, std::memory_order_relaxed);
        barrier.arrive_and_wait();
        for (int u = 0; u < n; ++u) {
          if (written[u].load(std::memory_order_relaxed) != p) misses.fetch_add(1);
        }
        barrier.arrive_and_wait();
      }
    });
    EXPECT_EQ(misses.load(), 0) << n << " threads";
    for (int t = 0; t < n; ++t) EXPECT_EQ(written[t].load(), n_phase);
  }
}

}  // namespace
}  // namespace tova
