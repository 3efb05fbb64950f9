// Request metrics of the service (Prometheus text format): counts by endpoint and status and a
// latency histogram per endpoint. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace sieve::serve {

class RequestMetrics {
 public:
  /// Counts one answer for `path` (unknown paths share the label "other").
  void count(const std::string& path, int status, double seconds);
  /// sieve_requests_total and sieve_request_duration_seconds, with their HELP and TYPE lines.
  std::string prometheus() const;

 private:
  struct Endpoint {
    std::map<int, size_t> by_status;
    std::vector<size_t> latency;  ///< histogram over the latency buckets, plus +Inf
    double seconds = 0;
    size_t count = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, Endpoint> endpoints_;
};

/// A Prometheus histogram from per-bucket counts (`bounds` ascending; counts has one more entry,
/// the +Inf bucket): the cumulative _bucket lines, then _sum and _count. `labels` is empty or
/// `key="value"` pairs joined by commas.
std::string prometheus_histogram(const std::string& name, const std::string& labels, const std::vector<double>& bounds,
                                 const std::vector<size_t>& counts, double sum);

}  // namespace sieve::serve
