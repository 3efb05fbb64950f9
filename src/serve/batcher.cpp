#include "serve/batcher.h"

#include <algorithm>
#include <chrono>

namespace sieve::serve {

EmbedBatcher::EmbedBatcher(const Encoder& encoder, BatcherOptions opt) : enc_(encoder), opt_(opt) {
  if (opt_.max_batch == 0) opt_.max_batch = 1;
  opt_.workers = std::max<size_t>(1, opt_.workers);
  if (opt_.max_wait_ms < 0) opt_.max_wait_ms = opt_.workers == 1 ? 2.0 : 0.0;
  stats_.batch_sizes.assign(10, 0);
  for (size_t i = 0; i < opt_.workers; ++i) workers_.emplace_back([this] { loop(); });
}

EmbedBatcher::~EmbedBatcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
}

Embeddings EmbedBatcher::encode(const std::vector<std::string>& texts, bool token_states, Clock::time_point deadline) {
  if (texts.empty()) return enc_.encode({}, {});
  Job job;
  job.texts = texts;
  job.token_states = token_states;
  job.deadline = deadline;
  return submit(job);
}

Embeddings EmbedBatcher::encode_ids(const std::vector<std::vector<int32_t>>& ids, Clock::time_point deadline) {
  if (ids.empty()) return enc_.encode_ids({}, {});
  Job job;
  job.ids = ids;
  job.deadline = deadline;
  return submit(job);
}

Embeddings EmbedBatcher::submit(Job& job) {
  std::future<Embeddings> f = job.done.get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queued_texts_ > 0 && queued_texts_ + job.size() > opt_.max_queue)
      throw QueueFull("the encoder queue is full (" + std::to_string(queued_texts_) + " texts waiting)");
    queue_.push_back(&job);
    queued_texts_ += job.size();
  }
  cv_.notify_one();
  return f.get();
}

BatcherStats EmbedBatcher::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  BatcherStats s = stats_;
  s.queued_texts = queued_texts_;
  return s;
}

void EmbedBatcher::loop() {
  using Clock = std::chrono::steady_clock;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ and nothing left
    // The first job waits at most max_wait_ms for more texts, unless the batch is full already.
    if (opt_.max_wait_ms > 0) {
      const auto deadline = Clock::now() + std::chrono::microseconds(static_cast<int64_t>(opt_.max_wait_ms * 1000));
      cv_.wait_until(lock, deadline, [&] { return stop_ || queued_texts_ >= opt_.max_batch; });
    }
    // Requests whose deadline passed while they waited are answered so, and never encoded.
    const auto now = Clock::now();
    for (auto it = queue_.begin(); it != queue_.end();) {
      if ((*it)->deadline >= now) {
        ++it;
        continue;
      }
      queued_texts_ -= (*it)->size();
      ++stats_.expired;
      (*it)->done.set_exception(std::make_exception_ptr(
          DeadlineExceeded("the request's deadline passed while its texts waited for the encoder")));
      it = queue_.erase(it);
    }
    if (queue_.empty()) continue;  // another worker took them
    std::vector<Job*> jobs;
    size_t n = 0;
    // Texts gather into one pass; a token-id job runs alone.
    while (!queue_.empty() && (jobs.empty() || (jobs.front()->ids.empty() && queue_.front()->ids.empty() &&
                                                n + queue_.front()->size() <= opt_.max_batch))) {
      jobs.push_back(queue_.front());
      n += queue_.front()->size();
      queue_.pop_front();
    }
    queued_texts_ -= n;
    // Counted before the pass runs, so that a caller woken by its result sees its pass counted.
    ++stats_.batches;
    stats_.texts += n;
    size_t bucket = 0;
    while (bucket + 1 < stats_.batch_sizes.size() && (size_t{1} << bucket) < n) ++bucket;
    ++stats_.batch_sizes[bucket];
    lock.unlock();
    const auto t0 = Clock::now();
    run(jobs);
    const double busy = std::chrono::duration<double>(Clock::now() - t0).count();
    lock.lock();
    stats_.busy_seconds += busy;
  }
}

void EmbedBatcher::run(std::vector<Job*>& jobs) {
  if (!jobs.front()->ids.empty()) {  // alone (loop)
    try {
      EncodeCall call;
      call.batch_size = opt_.max_batch;
      jobs.front()->done.set_value(enc_.encode_ids(jobs.front()->ids, call));
    } catch (...) {
      jobs.front()->done.set_exception(std::current_exception());
    }
    return;
  }
  std::vector<std::string> texts;
  bool tokens = false;
  for (Job* j : jobs) {
    texts.insert(texts.end(), j->texts.begin(), j->texts.end());
    tokens = tokens || j->token_states;
  }
  EncodeCall call;
  call.batch_size = opt_.max_batch;
  call.token_states = tokens;
  Embeddings all;
  try {
    all = enc_.encode(texts, call);
  } catch (...) {
    for (Job* j : jobs) j->done.set_exception(std::current_exception());
    return;
  }
  // Hand each job its rows.
  size_t at = 0;
  for (Job* j : jobs) {
    const size_t k = j->texts.size();
    Embeddings e;
    e.dim = all.dim;
    e.pooled.assign(all.pooled.begin() + static_cast<std::ptrdiff_t>(at * all.dim),
                    all.pooled.begin() + static_cast<std::ptrdiff_t>((at + k) * all.dim));
    for (size_t i = at; i < at + k; ++i) {
      e.encodings.push_back(std::move(all.encodings[i]));
      if (e.encodings.back().truncated) ++e.truncated;
      if (j->token_states) e.tokens.push_back(std::move(all.tokens[i]));
    }
    at += k;
    j->done.set_value(std::move(e));
  }
}

}  // namespace sieve::serve
