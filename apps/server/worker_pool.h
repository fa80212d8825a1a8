// The threads that serve HTTP connections (cpp-httplib's TaskQueue). A thread is made when a
// connection finds none idle (up to a maximum; past it connections wait in order), and the
// most recently idle thread takes the next connection: the threads in use, and the stack pages
// they touch, follow the peak number of concurrent connections. httplib's own pool starts every
// thread at once and wakes them in turn, so over time each of its parallel + queue + 8 stacks is
// touched: the soak's RSS grew from 43 to 58 MB over eight minutes that way, at a flat load.
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tova::server {

class WorkerPool : public httplib::TaskQueue {
 public:
  explicit WorkerPool(size_t max_threads);
  ~WorkerPool() override;
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void enqueue(std::function<void()> fn) override;
  // Runs what is queued, then joins every thread.
  void shutdown() override;

  size_t threads() const;  // made so far
  size_t idle() const;     // waiting for a connection

 private:
  struct Worker {
    std::thread thread;
    std::condition_variable cv;
    std::function<void()> job;
  };
  void run(Worker* w);

  const size_t max_threads_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<Worker*> idle_;  // the most recently idle last
  std::deque<std::function<void()>> waiting_;
  bool shutdown_ = false;
};

}  // namespace tova::server
