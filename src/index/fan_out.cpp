// The bounded pool of shard calls (index/fan_out.h).
#include "index/fan_out.h"

#include <algorithm>

namespace sieve::index {

ShardCallPool::ShardCallPool(size_t threads, size_t queue) : max_threads_(std::max<size_t>(1, threads)), max_queue_(queue) {}

ShardCallPool::~ShardCallPool() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stopping_ = true;
    queue_.clear();  // not started: never made
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();  // the calls under way end by their own deadlines
}

bool ShardCallPool::submit(std::function<void()> task, std::shared_ptr<const std::atomic<bool>> cancelled) {
  std::lock_guard<std::mutex> lock(m_);
  if (queue_.size() >= max_queue_)  // calls whose fan-out gave up hold no place
    queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                                [](const Job& j) { return j.cancelled && j.cancelled->load(); }),
                 queue_.end());
  if (stopping_ || queue_.size() >= max_queue_) return false;
  queue_.push_back({std::move(task), std::move(cancelled)});
  // A thread for it when none is idle, up to the bound (threads are made as calls need them).
  if (idle_ < queue_.size() && threads_.size() < max_threads_) threads_.emplace_back([this] { work(); });
  cv_.notify_one();
  return true;
}

void ShardCallPool::work() {
  std::unique_lock<std::mutex> lock(m_);
  for (;;) {
    ++idle_;
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) return;  // stopping
    Job job = std::move(queue_.front());
    queue_.pop_front();
    if (job.cancelled && job.cancelled->load()) continue;  // its fan-out gave up before it started
    ++running_;
    peak_ = std::max(peak_, running_);
    lock.unlock();
    job.task();  // never throws: fan_out's tasks keep their exceptions
    job = Job{};  // what the task owns goes here, outside the lock
    lock.lock();
    --running_;
  }
}

size_t ShardCallPool::threads_started() const {
  std::lock_guard<std::mutex> lock(m_);
  return threads_.size();
}

size_t ShardCallPool::peak_running() const {
  std::lock_guard<std::mutex> lock(m_);
  return peak_;
}

ShardWait& shard_wait() {
  thread_local ShardWait w;
  return w;
}

}  // namespace sieve::index
