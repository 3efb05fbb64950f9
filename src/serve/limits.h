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

/// Throws sieve::Error (naming `what`, e.g. "--burst" or a key file's line) unless `l` can be
/// served: finite, non-negative, and a burst of 0 (the rate, at least 1) or at least 1; a burst
/// between 0 and 1 never holds a whole request, so its client would be refused forever while
/// told to retry.
void check_client_limits(const ClientLimits& l, const std::string& what);

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
  /// than `most` held already and all clients together fewer than `most_total`: true, and
  /// end_hold() must follow. Holding the 429 keeps a client that ignores Retry-After from making
  /// the server spend its cores refusing it; the total cap keeps a few clients from holding every
  /// connection thread.
  bool begin_hold(const std::string& client, size_t most, size_t most_total);
  void end_hold(const std::string& client);
  /// Clients tracked now. Past 4,096 of them, idle ones with full buckets are forgotten when the
  /// map has doubled since the last scan or a second has passed (an admit scans the map rarely,
  /// never every time); at kMaxClients a new client is refused when none could be forgotten.
  size_t clients() const;
  /// How many times the map has been scanned for idle clients (for tests).
  size_t idle_scans() const;
  /// Requests of `client` admitted and not yet released (0 for a client it does not track).
  size_t in_flight(const std::string& client) const;
  static constexpr size_t kMaxClients = 65536;

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
  size_t scan_at_ = 4096;  ///< the map size past which the next admit forgets idle clients
  Clock::time_point last_scan_{};
  size_t scans_ = 0;
  size_t held_total_ = 0;
};

/// Retry-After's value: whole seconds, rounded up, at least 1.
long retry_after_header(double seconds);

}  // namespace sieve::serve
