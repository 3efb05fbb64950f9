// Dynamic batching of encoder calls (as Hugging Face's Text Embeddings Inference does): texts of
// concurrent requests wait briefly in one bounded queue and are encoded together.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "serve/limits.h"
#include "sieve/encoder.h"

namespace sieve::serve {

struct BatcherOptions {
  size_t max_batch = 32;     ///< texts per forward pass (a request larger than this runs alone)
  /// How long the first waiting text waits for company; negative: 2 ms with one worker, 0 with
  /// several (an idle worker takes whatever is queued: texts gather while the others are busy).
  double max_wait_ms = -1;
  size_t max_queue = 1024;   ///< texts waiting; a request that would exceed it is refused
  size_t workers = 1;        ///< batches encoded at once, each by its own worker thread
};

/// Counters the service exports as metrics.
struct BatcherStats {
  size_t queued_texts = 0;   ///< texts waiting now
  size_t batches = 0;        ///< forward passes run
  size_t texts = 0;          ///< texts encoded
  size_t expired = 0;        ///< requests whose deadline passed in the queue (never encoded)
  double busy_seconds = 0;   ///< time spent inside the encoder
  std::vector<size_t> batch_sizes;  ///< histogram: texts per pass, buckets 1, 2, 4, ... 256, more
};

/// Thrown by EmbedBatcher::encode when the queue is full (the service answers 503).
struct QueueFull : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One worker thread runs the encoder over batches gathered from the queue. encode() may be
/// called from any number of threads; it blocks until its texts are done. Each request's
/// results are exactly what Encoder::encode gives for its texts alone (batching pads with masks).
class EmbedBatcher {
 public:
  EmbedBatcher(const Encoder& encoder, BatcherOptions opt);
  ~EmbedBatcher();
  EmbedBatcher(const EmbedBatcher&) = delete;
  EmbedBatcher& operator=(const EmbedBatcher&) = delete;

  using Clock = std::chrono::steady_clock;
  /// Encodes `texts` (with token states when asked); QueueFull when the queue cannot take them;
  /// DeadlineExceeded when `deadline` passes before a worker takes them (they are never encoded);
  /// sieve::Error from the encoder otherwise.
  Embeddings encode(const std::vector<std::string>& texts, bool token_states,
                    Clock::time_point deadline = Clock::time_point::max());
  /// The same for token-id lists (OpenAI's token-array input), used exactly as given: through
  /// the same queue and its limit, each such request in a pass of its own.
  Embeddings encode_ids(const std::vector<std::vector<int32_t>>& ids, Clock::time_point deadline = Clock::time_point::max());
  BatcherStats stats() const;

 private:
  struct Job {
    std::vector<std::string> texts;
    std::vector<std::vector<int32_t>> ids;  ///< a token-id job (texts empty)
    bool token_states = false;
    Clock::time_point deadline = Clock::time_point::max();
    std::promise<Embeddings> done;
    size_t size() const { return ids.empty() ? texts.size() : ids.size(); }
  };
  Embeddings submit(Job& job);
  void loop();
  void run(std::vector<Job*>& jobs);

  const Encoder& enc_;
  BatcherOptions opt_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job*> queue_;
  size_t queued_texts_ = 0;
  bool stop_ = false;
  BatcherStats stats_;
  std::vector<std::thread> workers_;
};

}  // namespace sieve::serve
