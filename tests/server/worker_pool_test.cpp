// The connection threads: the most recently idle thread takes the next connection (one at a
// time: one thread, however many connections came), threads are made only when none is idle
// and never past the maximum (beyond it connections wait their turn), and shutdown runs what
// waits before joining.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "worker_pool.h"

namespace tova::server {
namespace {

TEST(WorkerPool, ConnectionsOneAfterAnotherUseOneThread) {
  WorkerPool pool(64);
  std::set<std::thread::id> ids;
  for (int i = 0; i < 200; ++i) {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    pool.enqueue([&] {
      std::lock_guard<std::mutex> l(mu);
      ids.insert(std::this_thread::get_id());
      done = true;
      cv.notify_one();
    });
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return done; });
    // The next connection comes once the thread is idle again (as a client's next request
    // does, after reading the answer).
    l.unlock();
    while (pool.idle() != 1) std::this_thread::yield();
  }
  EXPECT_EQ(pool.threads(), 1u);
  EXPECT_EQ(ids.size(), 1u);
}

TEST(WorkerPool, ConcurrentConnectionsGetThreadsUpToTheMaximumThenWait) {
  WorkerPool pool(4);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> running{0};
  std::atomic<int> finished{0};
  for (int i = 0; i < 10; ++i) {
    pool.enqueue([&] {
      ++running;
      std::unique_lock<std::mutex> l(mu);
      cv.wait(l, [&] { return release; });
      ++finished;
    });
  }
  for (int i = 0; i < 2000 && running < 4; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(running.load(), 4);  // the other six wait for a thread
  EXPECT_EQ(pool.threads(), 4u);
  {
    std::lock_guard<std::mutex> l(mu);
    release = true;
  }
  cv.notify_all();
  pool.shutdown();  // runs the six that waited, then joins
  EXPECT_EQ(finished.load(), 10);
  EXPECT_EQ(pool.threads(), 0u);
}

}  // namespace
}  // namespace tova::server
