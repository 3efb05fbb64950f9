// What keeps `sieve serve` up under clients that ask too much: per-client request rates and
// requests in flight (429 with Retry-After), and request deadlines (504, or a search's stage-1
// hits with a flag). docs/server.md, "Limits".
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace sieve::serve {

/// A client's limits; a zero field is no limit.
struct ClientLimits {
  double rate = 0;         ///< requests per second it may sustain (a token bucket)
  double burst = 0;        ///< requests it may send at once after idling; 0: max(1, rate)
  size_t concurrent = 0;   ///< its requests in flight at once
};

/// Thrown when a request's deadline passed before its work began (the service answers 504).
struct DeadlineExceeded : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Per-client token buckets and in-flight counts. A client is whatever string names it (an API
/// key, or a client address when the server has no keys). Thread-safe.
class ClientLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  struct Verdict {
    bool admitted = true;
    double retry_after = 0;  ///< seconds until a refused request would be admitted (rate), or 1 (in flight)
    std::string why;         ///< for the 429's message; never names the client
  };

  /// Admits one request of `client` under `limits` at `now`, or says why not. An admitted request
  /// takes a token and, when `limits.concurrent` is set, a place in flight that release() gives
  /// back; a refused one takes nothing.
  Verdict admit(const std::string& client, const ClientLimits& limits, Clock::time_point now = Clock::now());
  /// Ends an admitted request of a client with a `concurrent` limit.
  void release(const std::string& client);
  /// A refused request of `client` may be held (its answer delayed) when the client has fewer
  /// than `most` held already: true, and end_hold() must follow. Holding the 429 keeps a client
  /// that ignores Retry-After from making the server spend its cores refusing it.
  bool begin_hold(const std::string& client, size_t most);
  void end_hold(const std::string& client);
  /// Clients tracked now (idle ones with full buckets are forgotten past 4,096 clients).
  size_t clients() const;

 private:
  struct State {
    double tokens = 0;
    Clock::time_point refilled{};
    size_t in_flight = 0;
    size_t held = 0;  ///< refusals being held (begin_hold)
    double rate = 0, burst = 0;  ///< of its last request (to tell when its bucket is full again)
  };
  void forget_idle(Clock::time_point now);
  mutable std::mutex mu_;
  std::unordered_map<std::string, State> clients_;
};

/// Retry-After's value: whole seconds, rounded up, at least 1.
long retry_after_header(double seconds);

}  // namespace sieve::serve
