#include "worker_pool.h"

#include <algorithm>

namespace tova::server {

WorkerPool::WorkerPool(size_t max_threads) : max_threads_(std::max<size_t>(1, max_threads)) {}

WorkerPool::~WorkerPool() { shutdown(); }

void WorkerPool::enqueue(std::function<void()> fn) {
  std::unique_lock<std::mutex> l(mu_);
  if (!idle_.empty()) {
    Worker* w = idle_.back();
    idle_.pop_back();
    w->job = std::move(fn);
    l.unlock();
    w->cv.notify_one();
    return;
  }
  if (workers_.size() < max_threads_ && !shutdown_) {
    auto w = std::make_unique<Worker>();
    w->job = std::move(fn);
    Worker* raw = w.get();
    workers_.push_back(std::move(w));
    raw->thread = std::thread([this, raw] { run(raw); });
    return;
  }
  waiting_.push_back(std::move(fn));
}

void WorkerPool::run(Worker* w) {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    if (w->job) {
      std::function<void()> job = std::move(w->job);
      w->job = nullptr;
      l.unlock();
      job();
      l.lock();
      continue;
    }
    if (!waiting_.empty()) {
      w->job = std::move(waiting_.front());
      waiting_.pop_front();
      continue;
    }
    if (shutdown_) return;
    idle_.push_back(w);
    w->cv.wait(l, [&] { return w->job != nullptr || shutdown_; });
    // Woken by shutdown while idle: off the idle list (a job handed over removed it already).
    if (!w->job) idle_.erase(std::remove(idle_.begin(), idle_.end(), w), idle_.end());
  }
}

void WorkerPool::shutdown() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (shutdown_ && workers_.empty()) return;
    shutdown_ = true;
  }
  // No thread is made after shutdown_, so the list is final: wake and join each.
  for (auto& w : workers_) w->cv.notify_all();
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
  }
  std::lock_guard<std::mutex> l(mu_);
  workers_.clear();
  idle_.clear();
}

size_t WorkerPool::threads() const {
  std::lock_guard<std::mutex> l(mu_);
  return workers_.size();
}

size_t WorkerPool::idle() const {
  std::lock_guard<std::mutex> l(mu_);
  return idle_.size();
}

}  // namespace tova::server
