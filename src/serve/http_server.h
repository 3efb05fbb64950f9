// `sieve serve`'s HTTP layer (cpp-httplib from Debian): binds, loads the Service in the
// background (503 until loaded), checks the API key, limits the body, answers every route
// through Service::handle, and stops gracefully (in-flight requests finish).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "serve/limits.h"
#include "serve/service.h"

namespace httplib {
class Server;
struct Request;
}

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

/// Reads an API key file: one `KEY [SCOPE] [rate=R] [burst=B] [concurrent=N]` a line (SCOPE read,
/// write or admin; a key with no scope keeps the old meaning, everything; a limit given replaces
/// the server's for that key, 0 lifts it); blank lines and lines starting with # are skipped.
/// sieve::Error naming the file and line for an unknown scope or word, a bad number, a repeated
/// key, or a file with no key.
std::vector<ApiKey> read_api_keys(const std::string& path);

/// The scope a request needs; nullopt for the open routes (/health, / and /openapi.json).
std::optional<KeyScope> scope_needed(const std::string& method, const std::string& path);

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                  ///< 0: any free port (see HttpServer::port)
  size_t max_body = 16u << 20;      ///< request bodies over this many bytes: 413
  std::string api_key;              ///< non-empty: one admin key (as a key file's line with no scope)
  std::vector<ApiKey> api_keys;     ///< scoped keys; with api_key, every route but the open ones needs one
  size_t connection_threads = 96;   ///< requests served at once (each open connection holds one)
  /// Every client's limits (a key's own, from its line, replace them): per key when the server has
  /// keys, else per client address. /health, / and /openapi.json are never limited.
  ClientLimits limits;
  /// Behind a reverse proxy every request comes from the proxy's address: name the header in which
  /// the (trusted) proxy puts the client's, e.g. X-Real-IP, and per-address limits read it there.
  std::string client_header;
  /// A 429 is answered after min(this, Retry-After) ms, up to refusals_held at once per client
  /// (more are answered at once and their connection closed): a client that ignores Retry-After
  /// then cannot make the server spend its cores refusing it. 0: at once.
  size_t refusal_delay_ms = 1000;
  size_t refusals_held = 16;
  /// Refusals held at once by all clients together; 0: half the connection threads (so that held
  /// 429s can never take every thread from the requests that are admitted).
  size_t refusals_held_total = 0;
};

class HttpServer {
 public:
  /// `load` builds the service; it runs in the background once the socket is bound.
  HttpServer(HttpOptions opt, std::function<std::unique_ptr<Service>()> load);
  ~HttpServer();

  /// Binds the socket; sieve::Error when the address is taken or invalid. Returns the port.
  int bind();
  /// Serves until stop(); rethrows a failure to load the service after stopping.
  void run();
  /// Stops accepting and returns from run() once in-flight requests are answered. Thread-safe.
  void stop();
  /// Replaces the API keys (SIGHUP in `sieve serve`): requests from now on are checked against
  /// `keys`; an empty list leaves every route open. Thread-safe.
  void set_api_keys(std::vector<ApiKey> keys);
  /// True once the service is loaded.
  bool ready() const { return ready_.load(); }
  /// Requests of `client` (as the limiter names it: "address ADDR", or "key ..." for an API key) being answered under a concurrency limit.
  size_t in_flight(const std::string& client) const { return limiter_.in_flight(client); }
  int port() const { return port_; }

 private:
  /// Who asks (its key, or its address) and under which limits, or why it is refused before its
  /// request is served: 503 while loading, 401 without a known key, 403 for a key whose scope
  /// does not cover the route.
  struct Caller {
    std::optional<Response> refusal;
    std::string client;
    ClientLimits limits;
  };
  Caller identify(const httplib::Request& req) const;
  HttpOptions opt_;
  std::function<std::unique_ptr<Service>()> load_;
  std::unique_ptr<httplib::Server> svr_;
  std::shared_ptr<Service> service_;
  std::atomic<bool> ready_{false}, stop_requested_{false}, in_run_{false};
  /// Why loading failed: written by the loader thread, read by request threads (load_mu_).
  std::string load_error() const;
  mutable std::mutex load_mu_;
  std::string load_error_;
  std::thread loader_;
  mutable std::mutex keys_mu_;
  std::shared_ptr<const std::vector<ApiKey>> keys_;  ///< null or empty: no key needed
  int port_ = 0;
  ClientLimiter limiter_;
  size_t held_total_cap_ = 0;  ///< refusals_held_total, resolved
};

/// cpp-httplib listens with a backlog of 5 connections (CPPHTTPLIB_LISTEN_BACKLOG, compiled into
/// Debian's library): 64 clients connecting at once overflow it, and each dropped SYN is retried
/// by the client after 1 s, then 3 s (p99 of 3 s in bench/bench_http.sh). Calling listen() again
/// on the bound socket raises the backlog to SOMAXCONN (Linux). Returns the sockets widened.
int widen_listen_backlog(int port);

/// Constant-time comparison of two strings (same length and bytes), for API keys.
bool equal_constant_time(const std::string& a, const std::string& b);

}  // namespace sieve::serve
