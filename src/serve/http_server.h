// `sieve serve`'s HTTP layer (cpp-httplib from Debian): binds, loads the Service in the
// background (503 until loaded), admits requests (API keys, limits and the body cap: Admission,
// the library's, which Ray Serve's router uses too), answers every route through
// Service::handle, and stops gracefully (in-flight requests finish).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "serve/admission.h"
#include "serve/limits.h"
#include "serve/service.h"

namespace httplib {
class Server;
struct Request;
}

namespace sieve::serve {

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
  size_t in_flight(const std::string& client) const { return admission_.in_flight(client); }
  int port() const { return port_; }

 private:
  /// 503 while the service loads; then who asks and why it is refused (Admission::identify).
  Caller identify(const httplib::Request& req) const;
  /// The request's client address: the peer's, or the trusted proxy header's (client_header).
  std::string address_of(const httplib::Request& req) const;
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
  int port_ = 0;
  Admission admission_;
};

/// cpp-httplib listens with a backlog of 5 connections (CPPHTTPLIB_LISTEN_BACKLOG, compiled into
/// Debian's library): 64 clients connecting at once overflow it, and each dropped SYN is retried
/// by the client after 1 s, then 3 s (p99 of 3 s in bench/bench_http.sh). Calling listen() again
/// on the bound socket raises the backlog to SOMAXCONN (Linux). Returns the sockets widened.
int widen_listen_backlog(int port);


}  // namespace sieve::serve
