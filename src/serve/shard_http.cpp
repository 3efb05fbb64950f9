// sieve's shard server over HTTP (serve/shard_http.h): `sieve shard serve`'s endpoint.
#include "serve/shard_http.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>

#include "core/log.h"
#include "serve/shard_wire.h"
#include "sieve/error.h"

namespace sieve::serve {
namespace {


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
  } catch (const nlohmann::json::exception& e) {
    res.status = 400;
    res.set_content(e.what(), "text/plain");
  } catch (const std::exception& e) {
    res.status = 500;
    res.set_content(e.what(), "text/plain");
  }
}

std::string identity_of(const httplib::Request& req) { return req.get_header_value(kIdentityHeader); }

// A JSON request body (a malformed one: sieve::Error, the 400).
nlohmann::json json_body(const std::string& body) {
  try {
    return nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("not JSON: ") + e.what());
  }
}

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
  svr_->Post("/shard/v1/bm25/stats", [&s](const httplib::Request& req, httplib::Response& res) {
    answer(res, [&] { return shard_wire::encode(s.bm25_stats(identity_of(req), shard_wire::decode_terms(req.body))); });
  });
  svr_->Post("/shard/v1/bm25", [&s](const httplib::Request& req, httplib::Response& res) {
    answer(res, [&] {
      const shard_wire::Bm25Request r = shard_wire::decode_bm25_request(req.body);
      SearchParams p;
      p.now = r.now;
      if (!r.filter.empty()) p.filter = Filter::parse(r.filter);
      return shard_wire::encode_lists(
          s.bm25_lists(identity_of(req), r.queries, r.documents, r.total_length, r.depth, p));
    });
  });
  // A router that holds only the set's manifest reads documents, ids, states and statistics here.
  svr_->Post("/shard/v1/documents", [&s](const httplib::Request& req, httplib::Response& res) {
    answer(res, [&] {
      const auto j = json_body(req.body);
      return shard_wire::documents_json(s.documents(identity_of(req), j.at("docs").get<std::vector<uint32_t>>()));
    });
  });
  svr_->Post("/shard/v1/find", [&s](const httplib::Request& req, httplib::Response& res) {
    answer(res, [&] {
      const auto j = json_body(req.body);
      return nlohmann::json(s.find(identity_of(req), j.at("ids").get<std::vector<std::string>>())).dump();
    });
  });
  svr_->Post("/shard/v1/live", [&s](const httplib::Request& req, httplib::Response& res) {
    answer(res, [&] {
      const auto j = json_body(req.body);
      return nlohmann::json(s.live(identity_of(req), j.at("docs").get<std::vector<uint32_t>>(), j.at("now").get<double>()))
          .dump();
    });
  });
  svr_->Post("/shard/v1/matching", [&s](const httplib::Request& req, httplib::Response& res) {
    answer(res, [&] {
      const auto j = json_body(req.body);
      const Filter f = j.at("filter").is_null() ? Filter{} : Filter::parse(j.at("filter").dump());
      return nlohmann::json(s.matching(identity_of(req), f, j.at("now").get<double>())).dump();
    });
  });
  svr_->Post("/shard/v1/stats", [&s](const httplib::Request& req, httplib::Response& res) {
    answer(res, [&] { return shard_wire::stats_json(s.stats(identity_of(req))); });
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
  auto ended = std::make_shared<std::atomic<bool>>(false);
  thread_ = std::thread([this, ended] {
    svr_->listen_after_bind();
    *ended = true;
  });
  // httplib's stop() does nothing until the listening loop has begun: a stop() right after
  // start() would leave the loop running and the join waiting. The loop begins at once.
  while (!svr_->is_running() && !*ended) std::this_thread::yield();
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

}  // namespace sieve::serve
