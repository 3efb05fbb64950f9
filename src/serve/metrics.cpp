#include "serve/metrics.h"

#include <sstream>

namespace sieve::serve {

namespace {

const std::vector<double> kLatencyBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

// The endpoint label of a path (unknown paths share one label, so that metrics stay bounded).
std::string endpoint_label(const std::string& path) {
  static const char* const kKnown[] = {"/health", "/v1/info",   "/metrics",   "/v1/embeddings", "/embed",
                                       "/rerank", "/v1/verify", "/v1/search", "/v1/documents",  "/",
                                       "/v1/explain", "/v1/explain.svg"};
  for (const char* k : kKnown)
    if (path == k) return k;
  if (path.rfind("/v1/documents/", 0) == 0) return "/v1/documents/{id}";
  return "other";
}

}  // namespace

std::string prometheus_histogram(const std::string& name, const std::string& labels, const std::vector<double>& bounds,
                                 const std::vector<size_t>& counts, double sum) {
  std::ostringstream o;
  const std::string sep = labels.empty() ? "" : ",";
  size_t cum = 0;
  for (size_t b = 0; b < counts.size(); ++b) {
    cum += counts[b];
    o << name << "_bucket{" << labels << sep << "le=\"";
    if (b < bounds.size()) o << bounds[b];
    else o << "+Inf";
    o << "\"} " << cum << "\n";
  }
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  o << name << "_sum" << braces << " " << sum << "\n" << name << "_count" << braces << " " << cum << "\n";
  return o.str();
}

void RequestMetrics::count(const std::string& path, int status, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  Endpoint& e = endpoints_[endpoint_label(path)];
  if (e.latency.empty()) e.latency.assign(kLatencyBuckets.size() + 1, 0);
  ++e.by_status[status];
  size_t b = 0;
  while (b < kLatencyBuckets.size() && seconds > kLatencyBuckets[b]) ++b;
  ++e.latency[b];
  e.seconds += seconds;
  ++e.count;
}

std::string RequestMetrics::prometheus() const {
  std::map<std::string, Endpoint> eps;
  {
    std::lock_guard<std::mutex> lock(mu_);
    eps = endpoints_;
  }
  std::ostringstream o;
  o << "# HELP sieve_requests_total Requests answered, by endpoint and status.\n"
    << "# TYPE sieve_requests_total counter\n";
  for (const auto& [name, e] : eps)
    for (const auto& [status, n] : e.by_status)
      o << "sieve_requests_total{endpoint=\"" << name << "\",status=\"" << status << "\"} " << n << "\n";
  o << "# HELP sieve_request_duration_seconds Time to answer a request, by endpoint.\n"
    << "# TYPE sieve_request_duration_seconds histogram\n";
  for (const auto& [name, e] : eps)
    o << prometheus_histogram("sieve_request_duration_seconds", "endpoint=\"" + name + "\"", kLatencyBuckets, e.latency,
                              e.seconds);
  return o.str();
}

}  // namespace sieve::serve
