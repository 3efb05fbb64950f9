// Calls to shards served elsewhere (ShardRemote), all at once, on a bounded pool of threads: the
// fan-out a shard set's search runs for each stage. The pool has at most kShardCallThreads calls
// under way and kShardCallQueue waiting; a fan-out that would queue past that is refused
// (ShardUnavailable: the server's 503), a fan-out that gives up (a failure, or its deadline)
// drops its calls not yet started, and the pool's owner waits, when it goes, for the calls under
// way (each bounded by its own deadline or the remote's timeout), so that no call outlives it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "sieve/index.h"

namespace sieve::index {

constexpr size_t kShardCallThreads = 64;  ///< calls under way at once (the Ray router's request threads)
constexpr size_t kShardCallQueue = 4096;  ///< calls waiting for a thread

/// A bounded pool of threads for shard calls (see the file comment).
class ShardCallPool {
 public:
  explicit ShardCallPool(size_t threads = kShardCallThreads, size_t queue = kShardCallQueue);
  /// Drops the calls not started and waits for those under way.
  ~ShardCallPool();
  ShardCallPool(const ShardCallPool&) = delete;
  ShardCallPool& operator=(const ShardCallPool&) = delete;

  /// Queues `task`, which runs on a pool thread unless `*cancelled` is set before it starts;
  /// false (nothing queued) when the queue is full or the pool is stopping.
  bool submit(std::function<void()> task, std::shared_ptr<const std::atomic<bool>> cancelled);
  size_t threads_started() const;  ///< threads made so far (they are made as calls need them)
  size_t peak_running() const;     ///< most calls under way at once so far

 private:
  struct Job {
    std::function<void()> task;
    std::shared_ptr<const std::atomic<bool>> cancelled;
  };
  void work();
  const size_t max_threads_, max_queue_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  std::vector<std::thread> threads_;
  size_t idle_ = 0, running_ = 0, peak_ = 0;
  bool stopping_ = false;
};

/// What this thread has waited for shard calls so far (every fan_out it ran): seconds and
/// fan-outs. The server reads it before and after a search for the answer's `shards_ms`.
struct ShardWait {
  double seconds = 0;
  size_t fanouts = 0;
};
ShardWait& shard_wait();

/// Adds the time from its making to its end (an answer or an exception) to shard_wait().
class ShardWaitTimer {
 public:
  ShardWaitTimer() : t0_(std::chrono::steady_clock::now()) {}
  ~ShardWaitTimer() {
    ShardWait& w = shard_wait();
    w.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    ++w.fanouts;
  }
  ShardWaitTimer(const ShardWaitTimer&) = delete;
  ShardWaitTimer& operator=(const ShardWaitTimer&) = delete;

 private:
  std::chrono::steady_clock::time_point t0_;
};

/// Runs call(shards[i]) for every i at once on `pool` and returns the answers in that order once
/// all are in; the first failure is rethrown as soon as it arrives. Past `deadline`, ShardTimeout
/// naming the shards still out (name_of(shard)); their calls finish on their own (or never start)
/// and their answers are dropped, so `call` must own what it reads (copies, shared pointers),
/// never the caller's stack. One shard and no deadline: called on this thread.
template <class T>
std::vector<T> fan_out(ShardCallPool& pool, const std::vector<size_t>& shards, std::chrono::steady_clock::time_point deadline,
                       std::function<T(size_t)> call, const std::function<std::string(size_t)>& name_of) {
  using Clock = std::chrono::steady_clock;
  const size_t n = shards.size();
  if (n == 0) return {};
  const ShardWaitTimer timer;
  if (Clock::now() >= deadline)
    throw ShardTimeout("the request's deadline passed before the shards were asked (give a larger timeout_ms)");
  if (n == 1 && deadline == Clock::time_point::max()) return {call(shards[0])};
  struct State {
    std::mutex m;
    std::condition_variable cv;
    size_t done = 0;
    std::vector<std::optional<T>> out;
    std::exception_ptr error;
  };
  auto st = std::make_shared<State>();
  st->out.resize(n);
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  const auto t0 = Clock::now();
  for (size_t i = 0; i < n; ++i) {
    const bool queued = pool.submit(
        [st, call, i, shard = shards[i]] {
          std::optional<T> v;
          std::exception_ptr e;
          try {
            v = call(shard);
          } catch (...) {
            e = std::current_exception();
          }
          std::lock_guard<std::mutex> lock(st->m);
          if (e && !st->error) st->error = e;
          st->out[i] = std::move(v);
          ++st->done;
          st->cv.notify_all();
        },
        cancelled);
    if (!queued) {
      cancelled->store(true);
      throw ShardUnavailable("too many shard calls under way (" + std::to_string(kShardCallThreads) + " running, " +
                             std::to_string(kShardCallQueue) + " waiting): the shards are slow or the server is "
                             "overloaded; retry later");
    }
  }
  std::unique_lock<std::mutex> lock(st->m);
  const bool in = st->cv.wait_until(lock, deadline, [&] { return st->done == n || st->error; });
  if (st->error) {
    cancelled->store(true);  // the calls not started yet are not made
    std::rethrow_exception(st->error);
  }
  if (!in) {
    cancelled->store(true);
    std::string late;
    for (size_t i = 0; i < n; ++i)
      if (!st->out[i]) late += (late.empty() ? "" : ", ") + name_of(shards[i]);
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    throw ShardTimeout("shard " + late + " had not answered when the request's deadline passed (" +
                       std::to_string(waited) + " ms after the call; give a larger timeout_ms)");
  }
  std::vector<T> out;
  out.reserve(n);
  for (auto& v : st->out) out.push_back(std::move(*v));
  return out;
}

}  // namespace sieve::index
