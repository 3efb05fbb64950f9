// sieve's native shard path over HTTP (serve/shard_http.h).
#include "serve/shard_http.h"

#include <httplib.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/log.h"
#include "serve/shard_wire.h"
#include "sieve/error.h"

namespace sieve::serve {
namespace {

constexpr const char* kIdentityHeader = "X-Sieve-Shard-Identity";
constexpr const char* kBinary = "application/octet-stream";

// Runs one shard call; its errors become the status the client reads (see the header).
template <class Fn>
void answer(httplib::Response& res, Fn&& fn) {
  try {
    res.set_content(fn(), kBinary);
  } catch (const ShardUnavailable& e) {
    res.status = 409;
    res.set_content(e.what(), "text/plain");
  } catch (const Error& e) {
    res.status = 400;
    res.set_content(e.what(), "text/plain");
  } catch (const std::exception& e) {
    res.status = 500;
    res.set_content(e.what(), "text/plain");
  }
}

std::string identity_of(const httplib::Request& req) { return req.get_header_value(kIdentityHeader); }

}  // namespace

ShardHttpServer::ShardHttpServer(std::shared_ptr<const ShardService> service, const std::string& host, int port,
                                 size_t threads)
    : service_(std::move(service)), host_(host), port_(port), svr_(std::make_unique<httplib::Server>()) {
  svr_->new_task_queue = [threads] { return new httplib::ThreadPool(std::max<size_t>(1, threads)); };
  svr_->set_keep_alive_max_count(1000000);
  svr_->set_tcp_nodelay(true);  // small answers: no Nagle wait against the router's delayed ACK (40 ms)
  svr_->set_keep_alive_timeout(2);  // an idle connection is closed (and stop() waits) after 2 s
  const ShardService& s = *service_;
  svr_->Get("/health", [&s](const httplib::Request&, httplib::Response& res) {
    nlohmann::json j = {{"status", "ok"}, {"shard", s.dir()}, {"identity", s.identity()}, {"documents", s.size()},
                        {"dim", s.dim()}, {"verifiers", s.verifier_keys()}};
    res.set_content(j.dump(), "application/json");
  });
  svr_->Post("/shard/v1/dense", [&s](const httplib::Request& req, httplib::Response& res) {
    answer(res, [&] {
      const shard_wire::DenseRequest r = shard_wire::decode_dense_request(req.body);
      SIEVE_THROW_IF_NOT(r.n == 0 || r.dim == s.dim(), "keys of width " << r.dim << " for a shard of width " << s.dim());
      SearchParams p;
      p.ef_search = r.ef_search;
      p.nprobe = r.nprobe;
      p.now = r.now;
      if (!r.filter.empty()) p.filter = Filter::parse(r.filter);
      return shard_wire::encode_lists(s.dense_lists(identity_of(req), r.n, r.pooled.data(), r.depth, p));
    });
  });
  svr_->Post("/shard/v1/tokens", [&s](const httplib::Request& req, httplib::Response& res) {
    answer(res, [&] {
      const shard_wire::DocsRequest r = shard_wire::decode_docs_request(req.body);
      return shard_wire::encode_states(s.tokens(identity_of(req), r.docs, r.max_rows), static_cast<uint32_t>(s.dim()));
    });
  });
  svr_->Post("/shard/v1/keys", [&s](const httplib::Request& req, httplib::Response& res) {
    answer(res, [&] {
      const shard_wire::DocsRequest r = shard_wire::decode_docs_request(req.body);
      return shard_wire::encode_floats(s.keys(identity_of(req), r.docs));
    });
  });
  svr_->Post("/shard/v1/scores", [&s](const httplib::Request& req, httplib::Response& res) {
    answer(res, [&] {
      const shard_wire::ScoresRequest r = shard_wire::decode_scores_request(req.body);
      SIEVE_THROW_IF_NOT(r.dim == s.dim(), "token states of width " << r.dim << " for a shard of width " << s.dim());
      return shard_wire::encode_floats(s.scores(identity_of(req), r.verifier, r.query, r.docs));
    });
  });
}

ShardHttpServer::~ShardHttpServer() { stop(); }

void ShardHttpServer::bind() {
  if (port_ == 0) {
    port_ = svr_->bind_to_any_port(host_);
    SIEVE_THROW_IF_NOT(port_ > 0, "cannot bind a port on " << host_);
  } else {
    SIEVE_THROW_IF_NOT(svr_->bind_to_port(host_, port_), "cannot bind " << host_ << ":" << port_);
  }
}

void ShardHttpServer::start() {
  bind();
  thread_ = std::thread([this] { svr_->listen_after_bind(); });
}

void ShardHttpServer::run() {
  bind();
  log_info("serving shard " + service_->dir() + " (" + service_->identity() + ") on http://" + host_ + ":" +
           std::to_string(port_) + " ready");
  svr_->listen_after_bind();
}

void ShardHttpServer::stop() {
  if (svr_) svr_->stop();
  if (thread_.joinable()) thread_.join();
}

HttpShardRemote::HttpShardRemote(std::vector<std::string> urls, int timeout_ms)
    : urls_(std::move(urls)), timeout_ms_(timeout_ms), idle_(urls_.size()) {
  SIEVE_THROW_IF_NOT(!urls_.empty(), "no shard addresses");
  for (const std::string& u : urls_)
    SIEVE_THROW_IF_NOT(u.rfind("http://", 0) == 0, "a shard address is http://HOST:PORT, not '" << u << "'");
}

HttpShardRemote::~HttpShardRemote() = default;

std::unique_ptr<httplib::Client> HttpShardRemote::client(size_t shard, bool* reused, bool fresh) const {
  if (!fresh) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& idle = idle_[shard];
    if (!idle.empty()) {
      auto c = std::move(idle.back());
      idle.pop_back();
      if (reused) *reused = true;
      return c;
    }
  }
  auto c = std::make_unique<httplib::Client>(urls_[shard]);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);
  return c;
}

void HttpShardRemote::give_back(size_t shard, std::unique_ptr<httplib::Client> c) const {
  std::lock_guard<std::mutex> lock(mu_);
  idle_[shard].push_back(std::move(c));
}

std::string HttpShardRemote::call(size_t shard, const std::string& path, const std::string& identity,
                                  const std::string& body, std::chrono::steady_clock::time_point deadline) const {
  SIEVE_THROW_IF_NOT(shard < urls_.size(), "shard " << shard << " of a set served at " << urls_.size() << " addresses");
  const std::string who = "shard " + std::to_string(shard) + " at " + urls_[shard];
  auto ms = std::chrono::milliseconds(timeout_ms_);
  const bool has_deadline = deadline != std::chrono::steady_clock::time_point::max();
  if (has_deadline) {
    ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (ms.count() <= 0) throw ShardTimeout(who + " was not asked: the request's deadline had passed");
  }
  bool reused = false;
  std::unique_ptr<httplib::Client> c = client(shard, &reused);
  const auto sec = static_cast<time_t>(ms.count() / 1000), usec = static_cast<time_t>((ms.count() % 1000) * 1000);
  const httplib::Headers headers = {{kIdentityHeader, identity}};
  const auto post = [&] {
    c->set_connection_timeout(sec, usec);
    c->set_read_timeout(sec, usec);
    c->set_write_timeout(sec, usec);
    return c->Post(path.c_str(), headers, body, kBinary);
  };
  httplib::Result r = post();
  if (!r && reused && std::chrono::steady_clock::now() < deadline) {
    // A kept-alive connection the server has closed since (idle past its keep-alive timeout):
    // once more on a new one. Every shard call only reads, so asking twice changes nothing.
    c = client(shard, nullptr, /*fresh=*/true);
    r = post();
  }
  if (!r) {
    const bool late = has_deadline && std::chrono::steady_clock::now() >= deadline - std::chrono::milliseconds(20);
    const std::string why = httplib::to_string(r.error());
    if (late) throw ShardTimeout(who + " had not answered when the request's deadline passed (" + why + ")");
    throw ShardUnavailable(who + " did not answer: " + why);  // the connection is not given back
  }
  if (r->status != 200)
    throw ShardUnavailable(who + " refused (" + std::to_string(r->status) + "): " + r->body);
  std::string out = std::move(r->body);
  give_back(shard, std::move(c));
  return out;
}

std::vector<std::vector<std::pair<uint32_t, double>>> HttpShardRemote::dense_lists(size_t shard,
                                                                                   const std::string& identity,
                                                                                   size_t n, size_t dim,
                                                                                   const float* pooled, size_t depth,
                                                                                   const SearchParams& p) const {
  shard_wire::DenseRequest r;
  r.n = static_cast<uint32_t>(n);
  r.dim = static_cast<uint32_t>(dim);
  r.depth = static_cast<uint32_t>(std::min<size_t>(depth, UINT32_MAX));
  r.ef_search = p.ef_search;
  r.nprobe = p.nprobe;
  r.now = p.now;
  r.filter = p.filter.empty() ? "" : p.filter.to_json();
  r.pooled.assign(pooled, pooled + n * dim);
  auto lists = shard_wire::decode_lists(call(shard, "/shard/v1/dense", identity, shard_wire::encode(r), p.deadline));
  if (lists.size() != n)
    throw ShardUnavailable("shard " + std::to_string(shard) + " answered " + std::to_string(lists.size()) +
                           " lists for " + std::to_string(n) + " queries");
  for (const auto& l : lists)
    for (const auto& [id, score] : l)
      if (!std::isfinite(score))  // the merge sorts by score: NaN breaks its ordering
        throw ShardUnavailable("shard " + std::to_string(shard) + " answered a non-finite score");
  return lists;
}

std::vector<TokenStates> HttpShardRemote::tokens(size_t shard, const std::string& identity,
                                                 const std::vector<uint32_t>& docs, size_t max_rows,
                                                 std::chrono::steady_clock::time_point deadline) const {
  shard_wire::DocsRequest r;
  r.max_rows = static_cast<uint32_t>(std::min<size_t>(max_rows, UINT32_MAX));
  r.docs = docs;
  auto out = shard_wire::decode_states(call(shard, "/shard/v1/tokens", identity, shard_wire::encode(r), deadline));
  if (out.size() != docs.size())
    throw ShardUnavailable("shard " + std::to_string(shard) + " answered the token states of " +
                           std::to_string(out.size()) + " documents for " + std::to_string(docs.size()));
  return out;
}

std::vector<float> HttpShardRemote::keys(size_t shard, const std::string& identity, const std::vector<uint32_t>& docs,
                                         std::chrono::steady_clock::time_point deadline) const {
  shard_wire::DocsRequest r;
  r.docs = docs;
  return shard_wire::decode_floats(call(shard, "/shard/v1/keys", identity, shard_wire::encode(r), deadline));
}

std::vector<float> HttpShardRemote::scores(size_t shard, const std::string& identity, const std::string& verifier,
                                           const TokenStates& query, const std::vector<uint32_t>& docs,
                                           std::chrono::steady_clock::time_point deadline) const {
  shard_wire::ScoresRequest r;
  r.verifier = verifier;
  r.dim = static_cast<uint32_t>(query.length ? query.values.size() / query.length : 0);
  r.query = query;
  r.docs = docs;
  auto out = shard_wire::decode_floats(call(shard, "/shard/v1/scores", identity, shard_wire::encode(r), deadline));
  if (out.size() != docs.size())
    throw ShardUnavailable("shard " + std::to_string(shard) + " answered " + std::to_string(out.size()) +
                           " scores for " + std::to_string(docs.size()) + " documents");
  return out;
}

}  // namespace sieve::serve
