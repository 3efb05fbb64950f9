// Who may ask what, how often, and with how large a body: API keys and their scopes, per-client
// rate and concurrency limits (429 with Retry-After, the refusal held a while for clients that
// ignore it), and the body cap (413). One implementation for every face that serves the JSON API:
// `sieve serve`'s HTTP layer (http_server.cpp) and Ray Serve's router (python/sieve/ray_serve.py,
// through _sieve.Admission). docs/server.md, "Keys" and "Limits".
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "serve/limits.h"
#include "serve/service.h"

namespace sieve::serve {

/// What an API key may do: `read` searches, embeds, reranks, verifies, explains and reads
/// documents; `write` also adds documents; `admin` does everything, /metrics and /v1/info included.
enum class KeyScope { Read = 0, Write = 1, Admin = 2 };

struct ApiKey {
  std::string key;
  KeyScope scope = KeyScope::Admin;
  /// This key's own limits (rate=, burst=, concurrent= on its line); unset: the server's.
  std::optional<double> rate, burst;
  std::optional<size_t> concurrent;
  /// The server's limits with this key's own in their place.
  ClientLimits limits(const ClientLimits& server) const;
};

/// The client's address in a proxy's header (`--client-address-header`): the rightmost of its
/// comma-separated addresses, trimmed; "" when it holds none. X-Forwarded-For grows by one address
/// at each proxy, appended on the right, and a client may send the header with any addresses of
/// its own in it: only the rightmost was written by the (trusted) proxy in front of the server.
/// X-Real-IP's single address is itself. A request carrying the header twice is read at its last.
std::string client_address_from_header(const std::string& value);

/// The address a request's limits count: the trusted proxy header's (`header_last`: its last
/// instance's value, client_address_from_header) when the face reads one and it holds an address,
/// else the peer's. One rule for `sieve serve` and Ray Serve's router.
std::string client_address(const std::string& peer, const std::optional<std::string>& header_last);

/// Reads an API key file: one `KEY [SCOPE] [rate=R] [burst=B] [concurrent=N]` a line (SCOPE read,
/// write or admin; a key with no scope keeps the old meaning, everything; a limit given replaces
/// the server's for that key, 0 lifts it); blank lines and lines starting with # are skipped.
/// sieve::Error naming the file and line for an unknown scope or word, a bad number, a repeated
/// key, or a file with no key.
std::vector<ApiKey> read_api_keys(const std::string& path);

/// The scope a request needs; nullopt for the open routes (/health, / and /openapi.json); admin
/// for /metrics, /v1/info and Ray Serve's router's /router/stats.
std::optional<KeyScope> scope_needed(const std::string& method, const std::string& path);

/// Constant-time comparison of two strings (same length and bytes), for API keys.
bool equal_constant_time(const std::string& a, const std::string& b);

/// The settings of admission (`sieve serve --api-key-file --rate-limit ...`, the router's alike).
struct AdmissionOptions {
  size_t max_body = 16u << 20;      ///< request bodies over this many bytes: 413
  std::string api_key;              ///< non-empty: one admin key (as a key file's line with no scope)
  std::vector<ApiKey> api_keys;     ///< scoped keys; with api_key, every route but the open ones needs one
  /// Every client's limits (a key's own, from its line, replace them): per key when the server has
  /// keys, else per client address. /health, / and /openapi.json are never limited.
  ClientLimits limits;
  /// A 429 is answered after min(this, Retry-After) ms, up to refusals_held at once per client
  /// (more are answered at once and their connection closed): a client that ignores Retry-After
  /// then cannot make the server spend its cores refusing it. 0: at once.
  size_t refusal_delay_ms = 1000;
  size_t refusals_held = 16;
  /// Refusals held at once by all clients together; 0: half the face's request threads (so that
  /// held 429s can never take every thread from the requests that are admitted).
  size_t refusals_held_total = 0;
};

/// Who asks (its key, or its address) and under which limits, or why it is refused before its
/// request is served: 401 without a known key, 403 for a key whose scope does not cover the route.
struct Caller {
  std::optional<Response> refusal;
  std::string client;      ///< "key KEY" or "address ADDR": what the limits count
  ClientLimits limits;
  bool limited = false;    ///< a limit applies (not an open route, and a rate or concurrency limit set)
};

class Admission;

/// An admitted request's place in flight under a concurrency limit, given back when it ends
/// (destroyed or end()). Empty when no concurrency limit applies.
class AdmissionTicket {
 public:
  AdmissionTicket() = default;
  AdmissionTicket(Admission* a, std::string client) : a_(a), client_(std::move(client)) {}
  AdmissionTicket(AdmissionTicket&& o) noexcept : a_(o.a_), client_(std::move(o.client_)) { o.a_ = nullptr; }
  AdmissionTicket& operator=(AdmissionTicket&& o) noexcept;
  AdmissionTicket(const AdmissionTicket&) = delete;
  AdmissionTicket& operator=(const AdmissionTicket&) = delete;
  ~AdmissionTicket() { end(); }
  void end();
  /// Whether it holds a place in flight.
  bool held() const { return a_ != nullptr; }
  /// Hands the place to the caller, who gives it back with Admission::release(client) (a face
  /// whose request outlives this object, such as the Python router's).
  void hand_over() { a_ = nullptr; }

 private:
  Admission* a_ = nullptr;
  std::string client_;
};

/// The answer to one request's admission (Admission::admit).
struct AdmissionVerdict {
  std::optional<Response> refusal;  ///< 401, 403 or 429 (with Retry-After); none: admitted
  /// A 429 to answer after this many seconds (a hold taken: end_hold(client) once answered).
  double hold_seconds = 0;
  /// A 429 past the refusals held: answer at once and close the connection.
  bool close = false;
  std::string client;
  AdmissionTicket ticket;  ///< admitted under a concurrency limit: its place in flight
};

/// Admission for one face. Thread-safe; the keys may be replaced while requests are served.
class Admission {
 public:
  /// `request_threads`: the face's threads that answer requests (refusals_held_total's default
  /// is half of them). sieve::Error for limits that cannot be served (check_client_limits).
  Admission(AdmissionOptions opt, size_t request_threads);
  const AdmissionOptions& options() const { return opt_; }
  /// Replaces the API keys (SIGHUP in `sieve serve`); an empty list leaves every route open.
  void set_api_keys(std::vector<ApiKey> keys);
  /// 413 when a body of `bytes` is larger than max_body.
  std::optional<Response> body_refusal(size_t bytes) const;
  /// Who the request is: `authorization` is its Authorization header's value, `address` the
  /// client's address (the proxy header's, client_address_from_header, when trusted).
  Caller identify(const std::string& method, const std::string& path, const std::string& authorization,
                  const std::string& address) const;
  /// identify(), then the caller's limits: admitted (with a ticket when a concurrency limit
  /// applies) or refused, and for a 429 how long to hold its answer.
  AdmissionVerdict admit(const std::string& method, const std::string& path, const std::string& authorization,
                         const std::string& address);
  /// The same for a caller identify() gave.
  AdmissionVerdict admit(Caller caller);
  /// Ends a hold that admit() took (hold_seconds > 0), once the refusal is answered.
  void end_hold(const std::string& client) { limiter_.end_hold(client); }
  /// Requests of `client` in flight under a concurrency limit.
  size_t in_flight(const std::string& client) const { return limiter_.in_flight(client); }
  void release(const std::string& client) { limiter_.release(client); }

 private:
  AdmissionOptions opt_;
  size_t held_total_cap_ = 1;
  mutable std::mutex keys_mu_;
  std::shared_ptr<const std::vector<ApiKey>> keys_;  ///< null or empty: no key needed
  ClientLimiter limiter_;
};

}  // namespace sieve::serve
