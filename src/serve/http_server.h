// `sieve serve`'s HTTP layer (cpp-httplib from Debian): binds, loads the Service in the
// background (503 until loaded), checks the API key, limits the body, answers every route
// through Service::handle, and stops gracefully (in-flight requests finish).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "serve/service.h"

namespace httplib {
class Server;
}

namespace sieve::serve {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                  ///< 0: any free port (see HttpServer::port)
  size_t max_body = 16u << 20;      ///< request bodies over this many bytes: 413
  std::string api_key;              ///< non-empty: every route but /health needs "Authorization: Bearer KEY"
  size_t connection_threads = 96;   ///< requests served at once (each open connection holds one)
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
  /// True once the service is loaded.
  bool ready() const { return ready_.load(); }
  int port() const { return port_; }

 private:
  HttpOptions opt_;
  std::function<std::unique_ptr<Service>()> load_;
  std::unique_ptr<httplib::Server> svr_;
  std::shared_ptr<Service> service_;
  std::atomic<bool> ready_{false}, stop_requested_{false}, in_run_{false};
  std::string load_error_;
  std::thread loader_;
  int port_ = 0;
};

/// cpp-httplib listens with a backlog of 5 connections (CPPHTTPLIB_LISTEN_BACKLOG, compiled into
/// Debian's library): 64 clients connecting at once overflow it, and each dropped SYN is retried
/// by the client after 1 s, then 3 s (p99 of 3 s in bench/bench_http.sh). Calling listen() again
/// on the bound socket raises the backlog to SOMAXCONN (Linux). Returns the sockets widened.
int widen_listen_backlog(int port);

/// Constant-time comparison of two strings (same length and bytes), for API keys.
bool equal_constant_time(const std::string& a, const std::string& b);

}  // namespace sieve::serve
