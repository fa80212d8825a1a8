#include "core/thread_pool.h"

#include <algorithm>

#include "core/check.h"
#include "core/spin_wait.h"

namespace tova {

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(std::max(1, n_threads)), ranges_(std::make_unique<RangeSlot[]>(n_threads_)) {
  workers_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

namespace {
constexpr uint64_t kClosed = uint64_t{1} << 31;
constexpr uint64_t kInsideMask = kClosed - 1;
uint64_t gate_tag(uint32_t generation) { return uint64_t{generation} << 32; }
}  // namespace

void ThreadPool::worker_loop(int index) {
  uint32_t seen = 0;
  for (;;) {
    spin_then_wait(generation_,
                   [&] { return generation_.load(std::memory_order_acquire) != seen; });
    const uint32_t gen = generation_.load(std::memory_order_acquire);
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
    left_.fetch_add(1, std::memory_order_acq_rel);
    left_.notify_all();  // a system call only when the caller sleeps
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
  const uint32_t gen = generation_.load(std::memory_order_relaxed) + 1;
  gate_.store(gate_tag(gen), std::memory_order_release);
  generation_.store(gen, std::memory_order_release);
  generation_.notify_all();  // a system call only when some worker sleeps
  fn(0);
  if (wait_all) {
    spin_then_wait(left_, [&] {
      return completed_.load(std::memory_order_acquire) == n_threads_ - 1;
    });
  }
  gate_.fetch_or(kClosed, std::memory_order_acq_rel);
  spin_then_wait(left_, [&] {
    return (gate_.load(std::memory_order_acquire) & kInsideMask) == 0;
  });
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
                              const std::function<void(int64_t, int64_t)>& fn,
                              int parts_per_thread) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t n_grains = (n + grain - 1) / grain;
  const int64_t n_parts =
      std::min<int64_t>(int64_t{n_threads_} * std::max(1, parts_per_thread), n_grains);
  if (n_parts <= 1 || n_threads_ == 1) {
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
  // Parts go to whoever claims them first, the caller included.
  std::atomic<int64_t> next{0};
  dispatch(
      [&](int) {
        for (int64_t t = next.fetch_add(1, std::memory_order_relaxed); t < n_parts;
             t = next.fetch_add(1, std::memory_order_relaxed)) {
          part(t);
        }
      },
      /*wait_all=*/false);
}

namespace {
// A range's pieces [front, back) packed as back << 32 | front.
uint64_t pack_pieces(uint64_t front, uint64_t back) { return back << 32 | front; }
uint64_t front_of(uint64_t v) { return v & 0xFFFFFFFFu; }
uint64_t back_of(uint64_t v) { return v >> 32; }

// Takes the front (from_back false) or back piece of a range; returns false if none is left.
bool take_piece(std::atomic<uint64_t>& pieces, bool from_back, int64_t* piece) {
  uint64_t v = pieces.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t f = front_of(v), b = back_of(v);
    if (f >= b) return false;
    const uint64_t next = from_back ? pack_pieces(f, b - 1) : pack_pieces(f + 1, b);
    if (pieces.compare_exchange_weak(v, next, std::memory_order_relaxed)) {
      *piece = static_cast<int64_t>(from_back ? b - 1 : f);
      return true;
    }
  }
}
}  // namespace

void ThreadPool::parallel_for_ranges(int64_t n, int64_t grain,
                                     const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t n_pieces = (n + grain - 1) / grain;
  if (n_threads_ == 1 || n_pieces <= 1) {
    fn(0, n);
    return;
  }
  TOVA_CHECK(n_pieces < (int64_t{1} << 32));
  for (int i = 0; i < n_threads_; ++i) {
    const auto f = static_cast<uint64_t>(n_pieces * i / n_threads_);
    const auto b = static_cast<uint64_t>(n_pieces * (i + 1) / n_threads_);
    ranges_[i].pieces.store(pack_pieces(f, b), std::memory_order_relaxed);
  }
  auto piece = [&](int64_t p) { fn(p * grain, std::min(n, (p + 1) * grain)); };
  // dispatch publishes the slots above (release) before any worker reads them.
  dispatch(
      [&](int self) {
        int64_t p = 0;
        while (take_piece(ranges_[self].pieces, /*from_back=*/false, &p)) piece(p);
        for (int k = 1; k < n_threads_; ++k) {
          std::atomic<uint64_t>& other = ranges_[(self + k) % n_threads_].pieces;
          while (take_piece(other, /*from_back=*/true, &p)) piece(p);
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
