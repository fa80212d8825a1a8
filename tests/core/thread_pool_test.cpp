// ThreadPool: parallel_for partitions [0, n) exactly, run reaches every thread, and the pool
// survives many back-to-back jobs (the decode loop issues thousands per second).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace tova {
namespace {

// Sleeps 1 ms at a time until count reaches target; false if it has not after 20 s. For tests
// where one piece of work waits for all the others, which another thread must take over.
bool WaitForCount(const std::atomic<int>& count, int target) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (count.load() < target) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(ThreadPool, SizeIsAtLeastOne) {
  EXPECT_EQ(ThreadPool(0).size(), 1);
  EXPECT_EQ(ThreadPool(-3).size(), 1);
  EXPECT_EQ(ThreadPool(3).size(), 3);
}

TEST(ThreadPool, ParallelForCoversEachIndexOnce) {
  for (int threads : {1, 2, 3, 4, 7}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 3, 5, 7, 16, 33, 100, 1000, 4097}) {
      for (int64_t grain : {0, 1, 2, 3, 7, 32, 1000, 5000}) {
        SCOPED_TRACE(::testing::Message()
                     << "threads " << threads << " n " << n << " grain " << grain);
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::mutex mu;
        std::vector<std::pair<int64_t, int64_t>> ranges;
        pool.parallel_for(n, grain, [&](int64_t begin, int64_t end) {
          for (int64_t j = begin; j < end; ++j) hits[static_cast<size_t>(j)].fetch_add(1);
          std::lock_guard<std::mutex> lock(mu);
          ranges.emplace_back(begin, end);
        });
        for (int64_t j = 0; j < n; ++j) ASSERT_EQ(hits[static_cast<size_t>(j)].load(), 1) << j;
        EXPECT_LE(static_cast<int>(ranges.size()), threads);  // one part per thread by default
        const int64_t g = std::max<int64_t>(grain, 1);
        for (const auto& [begin, end] : ranges) {
          EXPECT_LT(begin, end);
          EXPECT_EQ(begin % g, 0) << begin;
          if (end != n) {
            EXPECT_EQ(end % g, 0) << end;
          }
        }
        // Work is spread: with enough grains, every thread gets a range.
        if (n >= g * threads) {
          EXPECT_EQ(static_cast<int>(ranges.size()), threads);
        }
      }
    }
  }
}

TEST(ThreadPool, ParallelForRangesCoversEachIndexOnceInGrainPieces) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 15, 16, 17, 100, 1000, 4097}) {
      for (int64_t grain : {0, 1, 3, 16, 5000}) {
        SCOPED_TRACE(::testing::Message()
                     << "threads " << threads << " n " << n << " grain " << grain);
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::atomic<int> bad{0};
        const int64_t g = std::max<int64_t>(grain, 1);
        pool.parallel_for_ranges(n, grain, [&](int64_t begin, int64_t end) {
          // One piece, or the whole loop when it is a single piece or the pool one thread.
          const bool whole = begin == 0 && end == n;
          if (!whole && (begin % g != 0 || (end != n && end != begin + g) ||
                         (end == n && end - begin > g))) {
            bad.fetch_add(1);
          }
          for (int64_t j = begin; j < end; ++j) hits[static_cast<size_t>(j)].fetch_add(1);
        });
        EXPECT_EQ(bad.load(), 0);
        for (int64_t j = 0; j < n; ++j) ASSERT_EQ(hits[static_cast<size_t>(j)].load(), 1) << j;
      }
    }
  }
}

TEST(ThreadPool, ParallelForRangesFinishesWhenAThreadIsHeldUp) {
  // The first piece blocks until every other piece is done: only a pool whose threads take the
  // pieces left in another thread's range (rather than a fixed range each) gets there.
  ThreadPool pool(2);
  constexpr int kPieces = 40;
  std::atomic<int> others_done{0};
  std::atomic<bool> waited_out{false};
  pool.parallel_for_ranges(kPieces, 1, [&](int64_t begin, int64_t) {
    if (begin != 0) {
      others_done.fetch_add(1);
      return;
    }
    if (!WaitForCount(others_done, kPieces - 1)) waited_out.store(true);
  });
  EXPECT_FALSE(waited_out.load());
  EXPECT_EQ(others_done.load(), kPieces - 1);
}

TEST(ThreadPool, ForEachDynamicCoversEachIndexOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 3, 7, 64, 1001}) {
      SCOPED_TRACE(::testing::Message() << "threads " << threads << " n " << n);
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      // A thread index is in range and never inside fn on two threads at once.
      std::vector<std::atomic<int>> inside(static_cast<size_t>(threads));
      std::atomic<int> bad_thread{0};
      pool.for_each_dynamic(n, [&](int64_t i, int thread) {
        if (thread < 0 || thread >= threads || inside[thread].fetch_add(1) != 0) {
          bad_thread.fetch_add(1);
          return;
        }
        hits[static_cast<size_t>(i)].fetch_add(1);
        inside[thread].fetch_sub(1);
      });
      EXPECT_EQ(bad_thread.load(), 0);
      for (int64_t j = 0; j < n; ++j) ASSERT_EQ(hits[static_cast<size_t>(j)].load(), 1) << j;
    }
  }
}

TEST(ThreadPool, ForEachDynamicBalancesUnevenItems) {
  // Item 0 blocks until every other item is done: only a pool that hands the remaining items to
  // the other thread (rather than a fixed half to each) finishes before the deadline.
  ThreadPool pool(2);
  constexpr int kN = 20;
  std::atomic<int> others_done{0};
  std::atomic<bool> waited_out{false};
  pool.for_each_dynamic(kN, [&](int64_t i, int) {
    if (i != 0) {
      others_done.fetch_add(1);
      return;
    }
    if (!WaitForCount(others_done, kN - 1)) waited_out.store(true);
  });
  EXPECT_FALSE(waited_out.load());
  EXPECT_EQ(others_done.load(), kN - 1);
}

TEST(ThreadPool, RunCallsEveryIndexOnce) {
  for (int threads : {1, 2, 4, 6}) {
    ThreadPool pool(threads);
    for (int rep = 0; rep < 50; ++rep) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(threads));
      std::atomic<int> out_of_range{0};
      pool.run([&](int t) {
        if (t < 0 || t >= threads) {
          out_of_range.fetch_add(1);
          return;
        }
        hits[static_cast<size_t>(t)].fetch_add(1);
      });
      EXPECT_EQ(out_of_range.load(), 0);
      for (int t = 0; t < threads; ++t) ASSERT_EQ(hits[static_cast<size_t>(t)].load(), 1) << t;
    }
  }
}

TEST(ThreadPool, RepeatedUse) {
  ThreadPool pool(2);
  constexpr int kRounds = 1000;
  constexpr int64_t kN = 97;
  std::vector<int64_t> data(kN, 0);
  for (int round = 0; round < kRounds; ++round) {
    // Each round reads what the previous round wrote: a missing barrier would show up here.
    pool.parallel_for(kN, 8, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j) data[static_cast<size_t>(j)] += j + 1;
    });
  }
  for (int64_t j = 0; j < kN; ++j) ASSERT_EQ(data[static_cast<size_t>(j)], kRounds * (j + 1));
  // Alternate job kinds on the same pool.
  std::atomic<int64_t> total{0};
  for (int round = 0; round < 500; ++round) {
    pool.run([&](int t) { total.fetch_add(t + 1); });
    pool.parallel_for(10, 1, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
  }
  EXPECT_EQ(total.load(), 500 * (1 + 2) + 500 * 10);
}

TEST(ThreadPool, ManyPoolsCreatedAndDestroyed) {
  // Destruction must wake sleeping and spinning workers alike.
  for (int k = 0; k < 50; ++k) {
    auto pool = std::make_unique<ThreadPool>(1 + k % 4);
    if (k % 2 == 0) {
      std::atomic<int> c{0};
      pool->run([&](int) { c.fetch_add(1); });
      EXPECT_EQ(c.load(), pool->size());
    }
  }
}

}  // namespace
}  // namespace tova

namespace tova {
namespace {

// The pool has one job slot: a second caller while a job runs (here, a job calling back into
// its own pool) is a programmer error that must stop the program, not corrupt the job.
TEST(ThreadPoolDeathTest, SecondConcurrentCallerFailsTheCheck) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        ThreadPool pool(2);
        pool.run([&](int t) {
          if (t == 0) pool.run([](int) {});
        });
      },
      "one caller at a time");
}

}  // namespace
}  // namespace tova
