#include "core/thread_pool.h"

#include <algorithm>

#include "core/check.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define TOVA_PAUSE() _mm_pause()
#else
#define TOVA_PAUSE() std::this_thread::yield()
#endif

namespace tova {

namespace {
// About 50-100 microseconds of spinning before a worker sleeps.
constexpr int kSpinIterations = 20000;
}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  workers_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

namespace {
constexpr uint64_t kClosed = uint64_t{1} << 31;
constexpr uint64_t kInsideMask = kClosed - 1;
uint64_t gate_tag(uint64_t generation) { return (generation & 0xffffffffu) << 32; }
}  // namespace

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen && spin < kSpinIterations; ++spin) {
      TOVA_PAUSE();
      gen = generation_.load(std::memory_order_acquire);
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stop_.load()) return;
    // Join the job unless it is closed or already replaced by a newer one.
    uint64_t g = gate_.load(std::memory_order_acquire);
    bool joined = false;
    while ((g & ~kInsideMask & ~kClosed) == gate_tag(gen) && (g & kClosed) == 0) {
      if (gate_.compare_exchange_weak(g, g + 1, std::memory_order_acq_rel)) {
        joined = true;
        break;
      }
    }
    if (!joined) continue;
    (*job_)(index);
    if (wait_all_) completed_.fetch_add(1, std::memory_order_acq_rel);
    gate_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::dispatch(const std::function<void(int)>& fn, bool wait_all) {
  // The pool has one job slot: a second caller (another thread, or a job calling back into the
  // pool) would overwrite the job in flight. That is a programmer error; say so loudly.
  const bool was_busy = busy_.exchange(true, std::memory_order_acq_rel);
  TOVA_CHECK(!was_busy && "ThreadPool: one caller at a time (see thread_pool.h)");
  job_ = &fn;
  wait_all_ = wait_all;
  completed_.store(0, std::memory_order_relaxed);
  const uint64_t gen = generation_.load(std::memory_order_relaxed) + 1;
  gate_.store(gate_tag(gen), std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.store(gen, std::memory_order_release);
  }
  cv_.notify_all();
  fn(0);
  // Spin first (the common case: workers finish within microseconds), then yield, so an
  // oversubscribed machine still makes progress.
  auto wait = [](auto&& done) {
    for (int spin = 0; !done(); ++spin) {
      if (spin < kSpinIterations) {
        TOVA_PAUSE();
      } else {
        std::this_thread::yield();
      }
    }
  };
  if (wait_all) {
    wait([&] { return completed_.load(std::memory_order_acquire) == n_threads_ - 1; });
  }
  gate_.fetch_or(kClosed, std::memory_order_acq_rel);
  wait([&] { return (gate_.load(std::memory_order_acquire) & kInsideMask) == 0; });
  job_ = nullptr;
  busy_.store(false, std::memory_order_release);
}

void ThreadPool::run(const std::function<void(int)>& fn) {
  if (n_threads_ == 1) {
    fn(0);
    return;
  }
  dispatch(fn, /*wait_all=*/true);
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t n_grains = (n + grain - 1) / grain;
  const int64_t n_parts = std::min<int64_t>(n_threads_, n_grains);
  if (n_parts <= 1) {
    fn(0, n);
    return;
  }
  auto part = [&](int64_t t) {
    const int64_t g0 = n_grains * t / n_parts;
    const int64_t g1 = n_grains * (t + 1) / n_parts;
    const int64_t begin = g0 * grain;
    const int64_t end = std::min(n, g1 * grain);
    if (begin < end) fn(begin, end);
  };
  // The caller takes the first part; the others go to whoever claims them first.
  std::atomic<int64_t> next{1};
  dispatch(
      [&](int thread) {
        if (thread == 0) part(0);
        for (int64_t t = next.fetch_add(1, std::memory_order_relaxed); t < n_parts;
             t = next.fetch_add(1, std::memory_order_relaxed)) {
          part(t);
        }
      },
      /*wait_all=*/false);
}

void ThreadPool::for_each_dynamic(int64_t n, const std::function<void(int64_t, int)>& fn) {
  if (n <= 0) return;
  if (n_threads_ == 1 || n == 1) {
    for (int64_t i = 0; i < n; ++i) fn(i, 0);
    return;
  }
  std::atomic<int64_t> next{0};
  dispatch(
      [&](int thread) {
        for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < n;
             i = next.fetch_add(1, std::memory_order_relaxed)) {
          fn(i, thread);
        }
      },
      /*wait_all=*/false);
}

}  // namespace tova
