// Timing helpers shared by the end-to-end benchmarks.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include <nlohmann/json.hpp>

#include "sieve/model.h"

namespace sieve::bench {

using Clock = std::chrono::steady_clock;

inline double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// The p-th percentile (nearest rank) of `v`; 0 when empty.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(p / 100.0 * v.size()));
  return v[std::min(i == 0 ? 0 : i - 1, v.size() - 1)];
}

/// p50, p99 (ms) and sequential QPS of per-query latencies in seconds.
inline nlohmann::json latency_json(const std::vector<double>& secs) {
  double total = 0;
  for (double s : secs) total += s;
  return {{"queries", secs.size()},
          {"p50_ms", percentile(secs, 50) * 1e3},
          {"p99_ms", percentile(secs, 99) * 1e3},
          {"qps_sequential", total > 0 ? secs.size() / total : 0.0}};
}

/// A random model of all-MiniLM-L6-v2's shape: 6 layers, hidden 384, 12 heads, FFN 1536, vocab
/// 30522, weights at a scale that keeps activations O(1).
inline FixtureModelOptions minilm_fixture_options(size_t max_seq_length) {
  FixtureModelOptions f;
  f.config.hidden_size = 384;
  f.config.num_hidden_layers = 6;
  f.config.num_attention_heads = 12;
  f.config.intermediate_size = 1536;
  f.config.vocab_size = 30522;
  f.config.max_position_embeddings = 512;
  f.max_seq_length = max_seq_length;
  f.init_std = 0.02f * 8;
  return f;
}

}  // namespace sieve::bench
