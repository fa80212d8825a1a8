// A fixed pool of worker threads for data-parallel loops. The calling thread takes part, so a
// pool of n threads starts n-1 workers.
//
// Waiting threads (idle workers, a caller waiting for the last part, threads at a SpinBarrier)
// spin briefly and then sleep (core/spin_wait.h): decode issues many small parallel loops per
// token, and waking a sleeping thread costs more than a small loop, but on a machine with fewer
// free cores than threads a spinning thread takes the core the others need.
//
// Loops hand out their pieces to whichever thread claims them first, and a worker that has not
// joined by the time every piece is taken stays out: on a busy machine, where a worker may not
// be scheduled for milliseconds, the caller does the work itself instead of waiting for it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace tova {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(thread_index) once on each of the pool's threads and waits for all of them.
  void run(const std::function<void(int)>& fn);

  // Splits [0, n) into contiguous ranges, at most parts_per_thread per thread, each a multiple
  // of `grain` (but the last), and calls fn(begin, end) for each non-empty range, on whichever
  // thread claims it first. More parts than threads let the threads that run take over the
  // parts of one that is not scheduled (a busy machine), at the cost of more claims.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn,
                    int parts_per_thread = 1);

  // Splits [0, n) into one contiguous range per thread and calls fn(begin, end) on pieces of
  // `grain` (the last may be shorter): each thread takes the pieces of its own range from its
  // front, in order, then takes pieces from the back of the ranges of threads that are behind.
  // For loops that stream memory (single-token decode): a thread reads one ascending run of
  // addresses, so prefetching past a piece's end fetches what it reads next, and the threads
  // still end together when one starts late or runs slower. Pieces of one range are called in
  // ascending order on its thread; taken ones from the other end, one at a time.
  void parallel_for_ranges(int64_t n, int64_t grain,
                           const std::function<void(int64_t, int64_t)>& fn);

  // Calls fn(i, thread) for every i in [0, n), handing out one index at a time to whichever
  // thread is free: for items of uneven cost (list the costliest first). thread (0 .. size()-1)
  // is the calling thread's index, never used by two threads at once: per-thread buffers.
  void for_each_dynamic(int64_t n, const std::function<void(int64_t i, int thread)>& fn);

 private:
  void worker_loop(int index);
  // Publishes fn to the workers, calls fn(0), and returns once no worker is inside fn. With
  // wait_all every worker calls fn once; otherwise workers that have not joined by the time
  // fn(0) returns stay out (fn must then hand out its work to whoever calls it).
  void dispatch(const std::function<void(int)>& fn, bool wait_all);

  int n_threads_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* job_ = nullptr;
  // Each on a cache line of its own: idle workers spin, then sleep, on generation_.
  alignas(64) std::atomic<uint32_t> generation_{0};
  // The current job's gate: [generation (32 bits) | closed (1 bit) | workers inside (31 bits)].
  // A worker joins by incrementing it while it still shows its generation and is open.
  alignas(64) std::atomic<uint64_t> gate_{0};
  // Bumped by every worker that leaves a job (after it left the gate, and after counting
  // itself in completed_): what a caller waiting for the workers sleeps on.
  alignas(64) std::atomic<uint32_t> left_{0};
  alignas(64) std::atomic<int> completed_{0};  // workers done with the current job (wait_all)
  // parallel_for_ranges: per thread, [back (32 bits) | front (32 bits)] of the pieces of its
  // range still to take, each on a cache line of its own.
  struct alignas(64) RangeSlot {
    std::atomic<uint64_t> pieces{0};
  };
  std::unique_ptr<RangeSlot[]> ranges_;
  bool wait_all_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<bool> busy_{false};  // a caller is inside dispatch (the one-caller contract)
};

}  // namespace tova
