#include "serve/http_server.h"

#include <dirent.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "sieve/error.h"

namespace sieve::serve {

int widen_listen_backlog(int port) {
  int widened = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  while (const dirent* e = ::readdir(d)) {
    const int fd = std::atoi(e->d_name);
    if (fd <= 2 || fd == ::dirfd(d)) continue;
    int listening = 0;
    socklen_t len = sizeof listening;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening == 0) continue;
    sockaddr_storage addr{};
    socklen_t alen = sizeof addr;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &alen) != 0) continue;
    int p = -1;
    if (addr.ss_family == AF_INET) p = ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
    if (addr.ss_family == AF_INET6) p = ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
    if (p == port && ::listen(fd, SOMAXCONN) == 0) ++widened;
  }
  ::closedir(d);
  return widened;
}

namespace {

// httplib (0.11) keeps a connection open whatever the answer's Connection header says, and reads
// the next request from it: after a refusal whose body was not read, that is the body's bytes (a
// client streaming 64 MB after its 413 had them all read as one request line). Shutting the
// socket for reading once the answer is written (before, httplib would not write it: it sees the
// socket as dead) ends the connection. The socket is found by its peer's address and port among
// this process's descriptors.
void stop_reading(const httplib::Request& req) {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    const int fd = std::atoi(e->d_name);
    if (fd <= 2 || fd == ::dirfd(d)) continue;
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;
    char host[NI_MAXHOST], port[NI_MAXSERV];
    if (::getnameinfo(reinterpret_cast<sockaddr*>(&peer), len, host, sizeof host, port, sizeof port,
                      NI_NUMERICHOST | NI_NUMERICSERV) != 0)
      continue;
    if (req.remote_addr == host && std::to_string(req.remote_port) == port) {
      ::shutdown(fd, SHUT_RD);
      break;
    }
  }
  ::closedir(d);
}

// Bytes of the request's declared body that were not read (its Content-Length past the body
// read; SIZE_MAX for a length that is not a number).
size_t unread_bytes(const httplib::Request& req) {
  const std::string length = req.get_header_value("Content-Length");
  if (length.empty()) return 0;
  if (length.find_first_not_of("0123456789") != std::string::npos || length.size() >= 19) return SIZE_MAX;
  const size_t n = std::stoull(length);
  return n > req.body.size() ? n - req.body.size() : 0;
}

// A refusal is answered before the body is read only when reading it would cost: below this,
// the body is read (and dropped) as usual, so that every client reads its answer (one that
// writes its whole body before reading meets a reset when the server stops reading first).
constexpr size_t kEarlyRefusalBytes = 1u << 20;

void send(httplib::Response& res, const Response& r) {
  res.status = r.status;
  for (const auto& [k, v] : r.headers) res.set_header(k, v);
  res.set_content(r.body, r.content_type.c_str());
}

// httplib reads no body for some methods (a GET or an OPTIONS with Content-Length), nor for a
// request refused before its body: the bytes left would be read as the next request on the
// connection, so such a connection closes.
void send(httplib::Response& res, const Response& r, const httplib::Request& req) {
  send(res, r);
  bool closing = unread_bytes(req) > 0;
  for (const auto& [k, v] : r.headers) closing = closing || (k == "Connection" && v == "close");
  if (closing) res.set_header("Connection", "close");  // the logger below ends the connection
}

const char* error_type(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "unauthorized";
    case 404: return "not_found";
    case 405: return "method_not_allowed";
    case 413: return "payload_too_large";
    case 503: return "unavailable";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

}  // namespace

void HttpServer::set_api_keys(std::vector<ApiKey> keys) { admission_.set_api_keys(std::move(keys)); }

std::string HttpServer::address_of(const httplib::Request& req) const {
  std::optional<std::string> last;  // the header's last instance: what the proxy itself added
  if (!opt_.client_header.empty() && req.has_header(opt_.client_header.c_str()))
    last = req.get_header_value(opt_.client_header.c_str(), req.get_header_value_count(opt_.client_header.c_str()) - 1);
  return client_address(req.remote_addr, last);
}

Caller HttpServer::identify(const httplib::Request& req) const {
  if (!std::atomic_load(&service_)) {
    Caller c;
    const std::string failed = load_error();
    Response r = error_response(503, "unavailable", failed.empty() ? "the model is loading" : "loading failed: " + failed);
    r.headers.emplace_back("Retry-After", "5");
    c.refusal = std::move(r);
    return c;
  }
  // The page and the spec hold no data (the page asks for the key and sends it with every call).
  return admission_.identify(req.method, req.path, req.get_header_value("Authorization"), address_of(req));
}

namespace {

AdmissionOptions admission_options(const HttpOptions& o) {
  AdmissionOptions a;
  a.max_body = o.max_body;
  a.api_key = o.api_key;
  a.api_keys = o.api_keys;
  a.limits = o.limits;
  a.refusal_delay_ms = o.refusal_delay_ms;
  a.refusals_held = o.refusals_held;
  a.refusals_held_total = o.refusals_held_total;
  return a;
}

}  // namespace

HttpServer::HttpServer(HttpOptions opt, std::function<std::unique_ptr<Service>()> load)
    : opt_(std::move(opt)),
      load_(std::move(load)),
      svr_(std::make_unique<httplib::Server>()),
      admission_(admission_options(opt_), opt_.connection_threads) {
  const size_t threads = std::max<size_t>(4, opt_.connection_threads);
  svr_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  svr_->set_payload_max_length(opt_.max_body);
  svr_->set_keep_alive_max_count(100000);
  // Small JSON answers must leave at once: with Nagle's algorithm every answer waited for the
  // client's delayed ACK (a flat 40 ms per request in bench/bench_serve.sh).
  svr_->set_tcp_nodelay(true);
  // What can be refused before a large body (1 MB or more) is read is refused then, and the
  // connection closed without reading the body: a body declared over twice --max-body (httplib
  // would read and drop all of it first), a request while loading, a missing or wrong key, a key
  // without the scope.
  svr_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const size_t declared = unread_bytes(req);  // nothing of the body is read yet
    if (declared < kEarlyRefusalBytes) return httplib::Server::HandlerResponse::Unhandled;
    // Up to twice --max-body, httplib reads the body and answers 413 itself (error handler).
    if (declared / 2 > opt_.max_body) {
      Response r = *admission_.body_refusal(declared);
      send(res, r, req);
      if (auto s = std::atomic_load(&service_)) s->count(req.path, 413, 0);
      return httplib::Server::HandlerResponse::Handled;
    }
    const Caller c = identify(req);
    if (!c.refusal) return httplib::Server::HandlerResponse::Unhandled;
    send(res, *c.refusal, req);
    if (auto s = std::atomic_load(&service_)) s->count(req.path, c.refusal->status, 0);
    return httplib::Server::HandlerResponse::Handled;
  });
  auto handler = [this](const httplib::Request& req, httplib::Response& res) {
    const auto t0 = std::chrono::steady_clock::now();
    std::shared_ptr<Service> s = std::atomic_load(&service_);
    auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    const Caller c = identify(req);  // again: the keys may have changed while the body was read
    if (c.refusal || !s) {
      send(res, c.refusal ? *c.refusal : error_response(503, "unavailable", "the model is loading"), req);
      if (s) s->count(req.path, c.refusal->status, seconds());
      return;
    }
    // The limits; an admitted request keeps its place in flight (`admitted.ticket`) until answered.
    AdmissionVerdict admitted = admission_.admit(c);
    if (admitted.refusal) {  // a 429 (the keys were checked just above)
      if (admitted.hold_seconds > 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(admitted.hold_seconds * 1e6)));
        admission_.end_hold(admitted.client);
      }
      send(res, *admitted.refusal, req);
      s->count(req.path, admitted.refusal->status, seconds());
      return;
    }
    std::map<std::string, std::string> query;
    for (const auto& [k, v] : req.params) query[k] = v;
    send(res, s->handle(req.method, req.path, req.body, query, t0), req);
  };
  // httplib calls its logger once an answer is written: an answer that says Connection: close
  // ends its connection there.
  svr_->set_logger([](const httplib::Request& req, const httplib::Response& res) {
    if (res.get_header_value("Connection") == "close" && unread_bytes(req) >= kEarlyRefusalBytes) stop_reading(req);
  });
  svr_->Get(".*", handler);
  svr_->Post(".*", handler);
  svr_->Put(".*", handler);
  svr_->Delete(".*", handler);
  svr_->Patch(".*", handler);
  svr_->Options(".*", handler);  // answered 405 by the service (no route takes OPTIONS)
  // Errors httplib answers itself (413 for a body over the limit, 400 for a bad request line).
  svr_->set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    // A method httplib does not route (TRACE, CONNECT, ...) is a 405 like any other wrong method.
    static const char* const kRouted[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
    // (Only a method-shaped word: bytes httplib left unread, such as an OPTIONS request's body,
    // can be parsed as the next request line; that stays a 400.)
    const bool method_word = !req.method.empty() && std::all_of(req.method.begin(), req.method.end(), [](char c) {
      return c >= 'A' && c <= 'Z';
    });
    if (res.status == 400 && method_word &&
        (std::find(std::begin(kRouted), std::end(kRouted), req.method) == std::end(kRouted) ||
         !Service::allows(req.path, req.method)))  // e.g. a GET with a body on a POST route
      res.status = 405;
    std::string msg = res.status == 413   ? "the request body is larger than " + std::to_string(opt_.max_body) + " bytes"
                      : res.status == 405 ? req.method + " is not a method this server answers"
                                          : "request rejected (HTTP " + std::to_string(res.status) + ")";
    Response r = error_response(res.status, error_type(res.status), msg);
    if (res.status == 405) r.headers.emplace_back("Allow", Service::allowed_method(req.path));
    // httplib rejected the request before reading its body: the connection closes, or the body's
    // bytes would be read as the next request.
    r.headers.emplace_back("Connection", "close");
    send(res, r, req);
    if (auto s = std::atomic_load(&service_)) s->count(req.path, res.status, 0);
  });
}

HttpServer::~HttpServer() {
  stop();
  if (loader_.joinable()) loader_.join();
}

int HttpServer::bind() {
  if (opt_.port == 0) {
    port_ = svr_->bind_to_any_port(opt_.host);
    SIEVE_THROW_IF_NOT(port_ > 0, "cannot bind to " << opt_.host << " (any port)");
  } else {
    SIEVE_THROW_IF_NOT(svr_->bind_to_port(opt_.host, opt_.port),
                       "cannot bind to " << opt_.host << ":" << opt_.port << " (in use, or not a local address?)");
    port_ = opt_.port;
  }
  widen_listen_backlog(port_);
  return port_;
}

void HttpServer::run() {
  loader_ = std::thread([this] {
    try {
      std::shared_ptr<Service> s(load_());
      std::atomic_store(&service_, s);
      ready_ = true;
    } catch (const std::exception& e) {
      {
        std::lock_guard<std::mutex> lock(load_mu_);
        load_error_ = e.what();
      }
      stop();
    }
  });
  in_run_ = true;
  if (!stop_requested_) svr_->listen_after_bind();
  in_run_ = false;
  loader_.join();
  const std::string failed = load_error();
  SIEVE_THROW_IF_NOT(failed.empty(), failed);
}

std::string HttpServer::load_error() const {
  std::lock_guard<std::mutex> lock(load_mu_);
  return load_error_;
}

void HttpServer::stop() {
  stop_requested_ = true;
  if (!svr_) return;
  // httplib's stop() does nothing before its listener runs: a stop that comes while run() is
  // starting waits (briefly) for the listener.
  for (int i = 0; i < 300 && in_run_ && !svr_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  svr_->stop();
}

}  // namespace sieve::serve
