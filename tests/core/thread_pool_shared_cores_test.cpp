// The pool on a machine with fewer free cores than threads: every loop still covers its work
// exactly once and every barrier still orders its phases when all threads share one core (the
// waits then end in sleeping, not spinning), and idle workers sleep instead of spinning (what
// keeps `serve` and `chat` at ~0 % CPU between requests). None of these tests is timed: a hang
// is caught by ctest's timeout.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/spin_barrier.h"
#include "core/thread_pool.h"

namespace tova {
namespace {

// Pins the calling thread (and so every thread it starts afterwards) to one CPU for the scope.
class OneCpu {
 public:
  OneCpu() {
    sched_getaffinity(0, sizeof(old_), &old_);
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &old_)) {
        CPU_SET(c, &one);
        break;
      }
    }
    sched_setaffinity(0, sizeof(one), &one);
  }
  ~OneCpu() { sched_setaffinity(0, sizeof(old_), &old_); }

 private:
  cpu_set_t old_;
};

TEST(ThreadPoolSharedCores, LoopsCoverTheirWorkOnceWithEightThreadsOnOneCore) {
  OneCpu pin;
  ThreadPool pool(8);
  std::vector<int64_t> data(1000, 0);
  std::atomic<int64_t> run_sum{0};
  for (int round = 0; round < 300; ++round) {
    // Each round reads what the previous one wrote, through three kinds of loop.
    pool.parallel_for(
        static_cast<int64_t>(data.size()), 7,
        [&](int64_t b, int64_t e) {
          for (int64_t j = b; j < e; ++j) data[static_cast<size_t>(j)] += j;
        },
        /*parts_per_thread=*/round % 5);
    pool.for_each_dynamic(static_cast<int64_t>(data.size()),
                          [&](int64_t i, int) { data[static_cast<size_t>(i)] += 1; });
    pool.run([&](int t) { run_sum.fetch_add(t); });
  }
  for (size_t j = 0; j < data.size(); ++j) ASSERT_EQ(data[j], 300 * (static_cast<int64_t>(j) + 1));
  EXPECT_EQ(run_sum.load(), 300 * (0 + 1 + 2 + 3 + 4 + 5 + 6 + 7));
}

TEST(ThreadPoolSharedCores, BarrierPhasesHoldWithSixThreadsOnOneCore) {
  OneCpu pin;
  constexpr int kThreads = 6, kPhases = 300;
  ThreadPool pool(kThreads);
  SpinBarrier barrier(kThreads);
  std::vector<std::atomic<int>> written(kThreads);
  std::atomic<int> misses{0};
  pool.run([&](int t) {
    for (int p = 1; p <= kPhases; ++p) {
      written[t].store(p, std::memory_order_relaxed);
      barrier.arrive_and_wait();
      for (int u = 0; u < kThreads; ++u) {
        if (written[u].load(std::memory_order_relaxed) != p) misses.fetch_add(1);
      }
      barrier.arrive_and_wait();
    }
  });
  EXPECT_EQ(misses.load(), 0);
}

TEST(ThreadPoolSharedCores, MorePartsThanThreadsCoverEachIndexOnceInGrains) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int ppt : {1, 2, 4, 8}) {
      for (int64_t n : {1, 5, 16, 100, 1000}) {
        for (int64_t grain : {1, 4, 16}) {
          SCOPED_TRACE(::testing::Message() << threads << " threads, " << ppt << " parts each, n "
                                            << n << ", grain " << grain);
          std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
          std::mutex mu;
          std::vector<std::pair<int64_t, int64_t>> ranges;
          pool.parallel_for(
              n, grain,
              [&](int64_t b, int64_t e) {
                for (int64_t j = b; j < e; ++j) hits[static_cast<size_t>(j)].fetch_add(1);
                std::lock_guard<std::mutex> lock(mu);
                ranges.emplace_back(b, e);
              },
              ppt);
          for (int64_t j = 0; j < n; ++j) ASSERT_EQ(hits[static_cast<size_t>(j)].load(), 1);
          EXPECT_LE(static_cast<int64_t>(ranges.size()), int64_t{threads} * ppt);
          for (const auto& [b, e] : ranges) {
            EXPECT_EQ(b % grain, 0);
            if (e != n) EXPECT_EQ(e % grain, 0);
          }
          const int64_t grains = (n + grain - 1) / grain;
          if (threads > 1 && grains >= int64_t{threads} * ppt) {
            EXPECT_EQ(static_cast<int64_t>(ranges.size()), int64_t{threads} * ppt);
          }
        }
      }
    }
  }
}

// State letter of every thread of this process but the calling one ('R' running, 'S' sleeping).
std::vector<char> other_thread_states() {
  std::vector<char> states;
  const std::string self = std::to_string(syscall(SYS_gettid));
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    if (task.path().filename() == self) continue;
    std::ifstream stat(task.path() / "stat");
    const std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');
    if (close != std::string::npos && close + 2 < text.size()) states.push_back(text[close + 2]);
  }
  return states;
}

TEST(ThreadPoolSharedCores, IdleWorkersSleep) {
  ThreadPool pool(3);
  std::atomic<int> c{0};
  pool.run([&](int) { c.fetch_add(1); });
  ASSERT_EQ(c.load(), 3);
  // Workers spin for tens of microseconds after a job, then sleep; give them up to 10 s (a
  // loaded machine may not schedule them at once) to be seen asleep together.
  bool asleep = false;
  std::vector<char> states;
  for (int i = 0; i < 1000 && !asleep; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    states = other_thread_states();
    asleep = states.size() >= 2;
    for (char s : states) asleep = asleep && s == 'S';
  }
  EXPECT_TRUE(asleep) << std::string(states.begin(), states.end());
  // And they wake for the next job.
  pool.run([&](int) { c.fetch_add(1); });
  EXPECT_EQ(c.load(), 6);
}

}  // namespace
}  // namespace tova
