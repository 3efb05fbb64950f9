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

bool equal_constant_time(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

std::string client_address_from_header(const std::string& value) {
  const size_t comma = value.rfind(',');
  std::string last = comma == std::string::npos ? value : value.substr(comma + 1);
  const size_t b = last.find_first_not_of(" \t"), e = last.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : last.substr(b, e - b + 1);
}

ClientLimits ApiKey::limits(const ClientLimits& server) const {
  ClientLimits l = server;
  if (rate) l.rate = *rate;
  if (burst) l.burst = *burst;
  if (concurrent) l.concurrent = *concurrent;
  return l;
}

std::vector<ApiKey> read_api_keys(const std::string& path) {
  std::ifstream f(path);
  SIEVE_THROW_IF_NOT(f.good(), "cannot read the API key file '" << path << "'");
  std::vector<ApiKey> keys;
  std::string line;
  for (size_t n = 1; std::getline(f, line); ++n) {
    std::istringstream words(line);
    std::string key, word;
    words >> key;
    if (key.empty() || key[0] == '#') continue;
    ApiKey k;
    k.key = key;
    bool scoped = false;
    while (words >> word) {
      const size_t eq = word.find('=');
      if (eq == std::string::npos) {
        SIEVE_THROW_IF_NOT(!scoped, "'" << path << "' line " << n << ": two scopes ('" << word << "')");
        scoped = true;
        if (word == "read") k.scope = KeyScope::Read;
        else if (word == "write") k.scope = KeyScope::Write;
        else if (word == "admin") k.scope = KeyScope::Admin;
        else SIEVE_THROW("'" << path << "' line " << n << ": unknown scope '" << word << "' (read, write or admin)");
        continue;
      }
      const std::string name = word.substr(0, eq), value = word.substr(eq + 1);
      char* end = nullptr;
      const double x = std::strtod(value.c_str(), &end);
      SIEVE_THROW_IF_NOT(!value.empty() && end && *end == '\0' && std::isfinite(x) && x >= 0,
                         "'" << path << "' line " << n << ": '" << word << "' needs a number >= 0");
      if (name == "rate") k.rate = x;
      else if (name == "burst") {
        SIEVE_THROW_IF_NOT(x == 0 || x >= 1, "'" << path << "' line " << n << ": burst= must be 0 (the rate) or at least "
                                                 "1 (a bucket below one request would refuse the key forever)");
        k.burst = x;
      }
      else if (name == "concurrent") {
        SIEVE_THROW_IF_NOT(x == std::floor(x), "'" << path << "' line " << n << ": concurrent= takes a whole number");
        k.concurrent = static_cast<size_t>(x);
      } else
        SIEVE_THROW("'" << path << "' line " << n << ": unknown limit '" << name << "' (rate=, burst=, concurrent=)");
    }
    for (const ApiKey& other : keys)
      SIEVE_THROW_IF_NOT(other.key != k.key, "'" << path << "' line " << n << ": a key given twice");
    keys.push_back(std::move(k));
  }
  SIEVE_THROW_IF_NOT(!keys.empty(), "the API key file '" << path << "' holds no key");
  return keys;
}

std::optional<KeyScope> scope_needed(const std::string& method, const std::string& path) {
  if (path == "/health" || (path == "/" && method == "GET") || path == "/openapi.json") return std::nullopt;
  if (path == "/metrics" || path == "/v1/info") return KeyScope::Admin;
  if (path == "/v1/documents" && method == "POST") return KeyScope::Write;
  return KeyScope::Read;
}

void HttpServer::set_api_keys(std::vector<ApiKey> keys) {
  auto next = std::make_shared<const std::vector<ApiKey>>(std::move(keys));
  std::lock_guard<std::mutex> lock(keys_mu_);
  keys_ = std::move(next);
}

HttpServer::Caller HttpServer::identify(const httplib::Request& req) const {
  Caller c;
  if (!std::atomic_load(&service_)) {
    const std::string failed = load_error();
    Response r = error_response(503, "unavailable", failed.empty() ? "the model is loading" : "loading failed: " + failed);
    r.headers.emplace_back("Retry-After", "5");
    c.refusal = std::move(r);
    return c;
  }
  // The page and the spec hold no data (the page asks for the key and sends it with every call).
  std::shared_ptr<const std::vector<ApiKey>> keys;
  {
    std::lock_guard<std::mutex> lock(keys_mu_);
    keys = keys_;
  }
  const std::optional<KeyScope> needed = scope_needed(req.method, req.path);
  // Who the request is, for its limits: its key when the server has keys, else its address.
  c.client = "address " + req.remote_addr;
  if (!opt_.client_header.empty() && req.has_header(opt_.client_header.c_str())) {
    // The last instance of the header, its rightmost address: what the proxy itself added.
    const size_t n = req.get_header_value_count(opt_.client_header.c_str());
    const std::string address = client_address_from_header(req.get_header_value(opt_.client_header.c_str(), n - 1));
    if (!address.empty()) c.client = "address " + address;
  }
  c.limits = opt_.limits;
  if (!keys || keys->empty() || !needed) return c;
  const std::string auth = req.get_header_value("Authorization");
  // Every key is compared, in constant time each: the time says nothing of which matched.
  const ApiKey* found = nullptr;
  for (const ApiKey& k : *keys)
    if (equal_constant_time(auth, "Bearer " + k.key)) found = &k;
  if (!found) {
    Response r = error_response(401, "unauthorized", "missing or wrong API key (Authorization: Bearer KEY)");
    r.headers.emplace_back("WWW-Authenticate", "Bearer");
    c.refusal = std::move(r);
  } else if (found->scope < *needed) {
    static const char* const kNames[] = {"read", "write", "admin"};
    c.refusal = error_response(403, "forbidden", req.method + " " + req.path + " needs a key of scope '" +
                                                     kNames[static_cast<int>(*needed)] + "'; this key's is '" +
                                                     kNames[static_cast<int>(found->scope)] + "'");
  } else {
    c.client = "key " + found->key;
    c.limits = found->limits(opt_.limits);
  }
  return c;
}

HttpServer::HttpServer(HttpOptions opt, std::function<std::unique_ptr<Service>()> load)
    : opt_(std::move(opt)), load_(std::move(load)), svr_(std::make_unique<httplib::Server>()) {
  check_client_limits(opt_.limits, "the server's limits (--rate-limit, --burst)");
  for (const ApiKey& k : opt_.api_keys) check_client_limits(k.limits(opt_.limits), "an API key's limits");
  held_total_cap_ = opt_.refusals_held_total > 0 ? opt_.refusals_held_total
                                                 : std::max<size_t>(1, std::max<size_t>(4, opt_.connection_threads) / 2);
  std::vector<ApiKey> keys = opt_.api_keys;
  if (!opt_.api_key.empty()) {
    ApiKey k;
    k.key = opt_.api_key;
    keys.push_back(std::move(k));
  }
  set_api_keys(std::move(keys));
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
    const std::string length = req.get_header_value("Content-Length");
    // Up to twice --max-body, httplib reads the body and answers 413 itself (error handler).
    if (declared / 2 > opt_.max_body) {
      Response r = error_response(413, "payload_too_large", "the request body (" + length + " bytes) is larger than " +
                                                                std::to_string(opt_.max_body) + " bytes (--max-body)");
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
    const std::optional<KeyScope> needed = scope_needed(req.method, req.path);
    const std::string& client = c.client;
    const ClientLimits& limits = c.limits;
    // The open routes (health probes, the page, the spec) are never limited.
    const bool limited = needed.has_value() && (limits.rate > 0 || limits.concurrent > 0);
    if (limited) {
      const ClientLimiter::Verdict v = limiter_.admit(client, limits);
      if (!v.admitted) {
        Response r = error_response(429, "rate_limited", v.why);
        r.headers.emplace_back("Retry-After", std::to_string(retry_after_header(v.retry_after)));
        if (opt_.refusal_delay_ms > 0) {
          if (limiter_.begin_hold(client, opt_.refusals_held, held_total_cap_)) {
            const double ms = std::min<double>(static_cast<double>(opt_.refusal_delay_ms), 1000 * v.retry_after);
            std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(ms * 1000)));
            limiter_.end_hold(client);
          } else {
            r.headers.emplace_back("Connection", "close");  // past the refusals held: no more of its requests here
          }
        }
        send(res, r, req);
        s->count(req.path, 429, seconds());
        return;
      }
    }
    struct InFlight {
      ClientLimiter* limiter;
      const std::string& client;
      ~InFlight() {
        if (limiter) limiter->release(client);
      }
    } in_flight{limited && limits.concurrent > 0 ? &limiter_ : nullptr, client};
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
