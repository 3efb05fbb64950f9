// sieve's native shard path over HTTP (serve/shard_http.h).
#include "serve/shard_http.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "core/log.h"
#include "index/shard_set.h"
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

void check_replicas(const ShardReplicas& replicas) {
  SIEVE_THROW_IF_NOT(!replicas.empty(), "no shard addresses");
  for (size_t s = 0; s < replicas.size(); ++s) {
    SIEVE_THROW_IF_NOT(!replicas[s].empty(), "shard " << s << " has no address");
    for (const std::string& u : replicas[s])
      SIEVE_THROW_IF_NOT(u.rfind("http://", 0) == 0 && u.size() > 7,
                         "a shard address is http://HOST:PORT, not '" << u << "' (shard " << s << ")");
  }
}

ShardReplicas one_each(const std::vector<std::string>& urls) {
  ShardReplicas out;
  for (const std::string& u : urls) out.push_back({u});
  return out;
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

ShardReplicas parse_shard_urls(const std::vector<std::string>& values) {
  ShardReplicas out;
  for (const std::string& v : values) {
    std::vector<std::string> urls;
    size_t from = 0;
    while (from <= v.size()) {
      const size_t comma = std::min(v.find(',', from), v.size());
      urls.push_back(v.substr(from, comma - from));
      from = comma + 1;
    }
    out.push_back(std::move(urls));
  }
  check_replicas(out);
  return out;
}

ShardReplicas read_shard_membership(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  SIEVE_THROW_IF_NOT(in, "cannot read the shard membership file '" << path << "'");
  std::stringstream ss;
  ss << in.rdbuf();
  ShardReplicas out;
  try {
    const nlohmann::json j = nlohmann::json::parse(ss.str());
    SIEVE_THROW_IF_NOT(j.is_object() && j.contains("shards") && j.at("shards").is_array(),
                       "not {\"shards\": [[URL, ...], ...]}");
    for (const auto& shard : j.at("shards")) {
      SIEVE_THROW_IF_NOT(shard.is_array(), "each shard is a list of addresses");
      std::vector<std::string> urls;
      for (const auto& u : shard) {
        SIEVE_THROW_IF_NOT(u.is_string(), "an address is a string");
        urls.push_back(u.get<std::string>());
      }
      out.push_back(std::move(urls));
    }
    check_replicas(out);
  } catch (const nlohmann::json::exception& e) {
    throw Error("the shard membership file '" + path + "' is not JSON: " + e.what());
  } catch (const Error& e) {
    throw Error("the shard membership file '" + path + "': " + e.what());
  }
  return out;
}

std::shared_ptr<HttpShardRemote> open_shard_remote(const std::string& set_dir, const std::vector<std::string>& urls,
                                                   const std::string& membership_file) {
  SIEVE_THROW_IF_NOT(urls.empty() || membership_file.empty(), "give the shards' addresses once: --shard-url or "
                                                             "--shard-membership, not both");
  SIEVE_THROW_IF_NOT(!set_dir.empty() && is_shard_set(set_dir),
                     "shard addresses (--shard-url, --shard-membership) need --index SET, a shard set (its shards are what the addresses serve)");
  ShardReplicas replicas = membership_file.empty() ? parse_shard_urls(urls) : read_shard_membership(membership_file);
  const size_t shards = index::read_shard_set_manifest(set_dir).shards.size();
  SIEVE_THROW_IF_NOT(replicas.size() == shards, "the set '" << set_dir << "' has " << shards
                                                  << " shards: give the addresses of each, in order, not of "
                                                  << replicas.size());
  return std::make_shared<HttpShardRemote>(std::move(replicas));
}

std::string reload_shard_membership(HttpShardRemote& remote, const std::string& membership_file) {
  if (membership_file.empty()) return "no --shard-membership file to re-read";
  try {
    ShardReplicas replicas = read_shard_membership(membership_file);
    size_t n = 0;
    for (const auto& r : replicas) n += r.size();
    const uint64_t generation = remote.set_replicas(std::move(replicas));
    return "shard membership " + std::to_string(generation) + ": " + std::to_string(n) + " replica(s) of " +
           std::to_string(remote.shards()) + " shard(s) read from " + membership_file;
  } catch (const std::exception& e) {
    return std::string("the shard membership stays: ") + e.what();
  }
}

struct HttpShardRemote::Replica {
  explicit Replica(std::string u) : url(std::move(u)) {}
  const std::string url;
  std::atomic<bool> down{false};
  std::atomic<uint64_t> calls{0}, failures{0};
  std::mutex mu;  // idle, last_error
  std::vector<std::unique_ptr<httplib::Client>> idle;
  std::string last_error;

  // A kept-alive client (`*reused` set), or a new one (always when `fresh`).
  std::unique_ptr<httplib::Client> client(bool* reused, bool fresh) {
    if (!fresh) {
      std::lock_guard<std::mutex> lock(mu);
      if (!idle.empty()) {
        auto c = std::move(idle.back());
        idle.pop_back();
        *reused = true;
        return c;
      }
    }
    *reused = false;
    auto c = std::make_unique<httplib::Client>(url);
    c->set_keep_alive(true);
    c->set_tcp_nodelay(true);
    return c;
  }
  void give_back(std::unique_ptr<httplib::Client> c) {
    std::lock_guard<std::mutex> lock(mu);
    idle.push_back(std::move(c));
  }
  void failed(const std::string& why) {
    down = true;
    ++failures;
    std::lock_guard<std::mutex> lock(mu);
    last_error = why;
    idle.clear();  // a replica that failed may have restarted elsewhere on its port: new connections
  }
};

struct HttpShardRemote::Membership {
  uint64_t generation = 1;
  std::vector<std::vector<std::shared_ptr<Replica>>> shards;
  std::unique_ptr<std::atomic<size_t>[]> next;  // round robin, per shard
};

HttpShardRemote::HttpShardRemote(ShardReplicas replicas, int timeout_ms) : timeout_ms_(timeout_ms) {
  check_replicas(replicas);
  auto m = std::make_shared<Membership>();
  m->next = std::make_unique<std::atomic<size_t>[]>(replicas.size());
  for (auto& urls : replicas) {
    std::vector<std::shared_ptr<Replica>> reps;
    for (auto& u : urls) reps.push_back(std::make_shared<Replica>(std::move(u)));
    m->shards.push_back(std::move(reps));
  }
  m_ = std::move(m);
}

HttpShardRemote::HttpShardRemote(const std::vector<std::string>& urls, int timeout_ms)
    : HttpShardRemote(one_each(urls), timeout_ms) {}

HttpShardRemote::~HttpShardRemote() = default;

std::shared_ptr<HttpShardRemote::Membership> HttpShardRemote::membership() const {
  std::lock_guard<std::mutex> lock(mu_);
  return m_;
}

size_t HttpShardRemote::shards() const { return membership()->shards.size(); }

uint64_t HttpShardRemote::set_replicas(ShardReplicas replicas) {
  check_replicas(replicas);
  std::lock_guard<std::mutex> lock(mu_);
  SIEVE_THROW_IF_NOT(replicas.size() == m_->shards.size(), "a membership of " << replicas.size()
                                                               << " shards for a set of " << m_->shards.size());
  auto m = std::make_shared<Membership>();
  m->generation = m_->generation + 1;
  m->next = std::make_unique<std::atomic<size_t>[]>(replicas.size());
  for (size_t s = 0; s < replicas.size(); ++s) {
    std::vector<std::shared_ptr<Replica>> reps;
    for (auto& u : replicas[s]) {
      std::shared_ptr<Replica> kept;  // a replica listed before keeps its connections and counts
      for (const auto& r : m_->shards[s])
        if (r->url == u) kept = r;
      reps.push_back(kept ? kept : std::make_shared<Replica>(std::move(u)));
    }
    m->shards.push_back(std::move(reps));
    m->next[s] = m_->next[s].load();
  }
  m_ = std::move(m);
  return m_->generation;
}

std::vector<std::vector<ReplicaState>> HttpShardRemote::replica_states(uint64_t* generation) const {
  auto m = membership();
  if (generation) *generation = m->generation;
  std::vector<std::vector<ReplicaState>> out;
  for (const auto& reps : m->shards) {
    std::vector<ReplicaState> states;
    for (const auto& r : reps) {
      ReplicaState st;
      st.url = r->url;
      st.down = r->down;
      st.calls = r->calls;
      st.failures = r->failures;
      std::lock_guard<std::mutex> lock(r->mu);
      st.last_error = r->last_error;
      states.push_back(std::move(st));
    }
    out.push_back(std::move(states));
  }
  return out;
}

std::string HttpShardRemote::describe() const {
  uint64_t generation = 0;
  nlohmann::json shards = nlohmann::json::array();
  for (const auto& states : replica_states(&generation)) {
    nlohmann::json reps = nlohmann::json::array();
    for (const ReplicaState& st : states)
      reps.push_back({{"url", st.url}, {"down", st.down}, {"calls", st.calls}, {"failures", st.failures},
                      {"last_error", st.last_error}});
    shards.push_back(std::move(reps));
  }
  return nlohmann::json{{"generation", generation}, {"shards", std::move(shards)}}.dump();
}

bool HttpShardRemote::call_one(Replica& r, const std::string& who, const std::string& path,
                               const std::string& identity, const std::string& body,
                               std::chrono::steady_clock::time_point deadline, bool has_deadline, std::string* out,
                               bool* retry) const {
  auto ms = std::chrono::milliseconds(timeout_ms_);
  if (has_deadline) ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  if (ms.count() <= 0) throw ShardTimeout(who + " was not asked: the request's deadline had passed");
  bool reused = false;
  std::unique_ptr<httplib::Client> c = r.client(&reused, false);
  const auto sec = static_cast<time_t>(ms.count() / 1000), usec = static_cast<time_t>((ms.count() % 1000) * 1000);
  const httplib::Headers headers = {{kIdentityHeader, identity}};
  const auto post = [&] {
    c->set_connection_timeout(sec, usec);
    c->set_read_timeout(sec, usec);
    c->set_write_timeout(sec, usec);
    return c->Post(path.c_str(), headers, body, kBinary);
  };
  httplib::Result res = post();
  if (!res && reused && std::chrono::steady_clock::now() < deadline) {
    // A kept-alive connection the server has closed since (idle past its keep-alive timeout):
    // once more on a new one. Every shard call only reads, so asking twice changes nothing.
    c = r.client(&reused, /*fresh=*/true);
    res = post();
  }
  if (!res) {
    const std::string why = httplib::to_string(res.error());
    if (has_deadline && std::chrono::steady_clock::now() >= deadline - std::chrono::milliseconds(20))
      throw ShardTimeout(who + " had not answered when the request's deadline passed (" + why + ")");
    *out = who + " did not answer: " + why;  // the connection is not given back
    *retry = true;
    return false;
  }
  if (res->status != 200) {
    *out = who + " refused (" + std::to_string(res->status) + "): " + res->body;
    // 409: another copy of the shard (a replica not yet at the set's latest write, or another
    // set's); 5xx: the replica's own failure. 400: the request itself, refused by any replica.
    *retry = res->status != 400;
    if (*retry) return false;
    throw ShardUnavailable(*out);
  }
  *out = std::move(res->body);
  r.give_back(std::move(c));
  return true;
}

std::string HttpShardRemote::call(size_t shard, const std::string& path, const std::string& identity,
                                  const std::string& body, std::chrono::steady_clock::time_point deadline) const {
  const std::shared_ptr<Membership> m = membership();
  SIEVE_THROW_IF_NOT(shard < m->shards.size(), "shard " << shard << " of a set of " << m->shards.size() << " shards");
  const auto& reps = m->shards[shard];
  const size_t n = reps.size(), first = m->next[shard].fetch_add(1) % n;
  // In turn from `first`: the replicas whose last call succeeded, then the others.
  std::vector<Replica*> order;
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < n; ++i) {
      Replica* r = reps[(first + i) % n].get();
      if (r->down.load() == (pass == 1)) order.push_back(r);
    }
  const bool has_deadline = deadline != std::chrono::steady_clock::time_point::max();
  std::string failures;
  for (Replica* r : order) {
    const std::string who = "shard " + std::to_string(shard) + " at " + r->url;
    std::string out;
    bool retry = false;
    if (call_one(*r, who, path, identity, body, deadline, has_deadline, &out, &retry)) {
      r->down = false;
      ++r->calls;
      return out;
    }
    r->failed(out);
    failures += (failures.empty() ? "" : "; ") + out;
  }
  if (n > 1) failures = "no replica of shard " + std::to_string(shard) + " answered: " + failures;
  throw ShardUnavailable(failures);
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

index::Bm25Stats HttpShardRemote::bm25_stats(size_t shard, const std::string& identity,
                                             const std::vector<std::string>& terms,
                                             std::chrono::steady_clock::time_point deadline) const {
  index::Bm25Stats st = shard_wire::decode_bm25_stats(
      call(shard, "/shard/v1/bm25/stats", identity, shard_wire::encode_terms(terms), deadline));
  if (st.termfreqs.size() != terms.size())
    throw ShardUnavailable("shard " + std::to_string(shard) + " answered the statistics of " +
                           std::to_string(st.termfreqs.size()) + " terms for " + std::to_string(terms.size()));
  return st;
}

std::vector<std::vector<std::pair<uint32_t, double>>> HttpShardRemote::bm25_lists(
    size_t shard, const std::string& identity, const std::vector<index::Bm25Query>& queries, uint64_t documents,
    uint64_t total_length, size_t depth, const SearchParams& p) const {
  shard_wire::Bm25Request r;
  r.depth = static_cast<uint32_t>(std::min<size_t>(depth, UINT32_MAX));
  r.now = p.now;
  r.filter = p.filter.empty() ? "" : p.filter.to_json();
  r.documents = documents;
  r.total_length = total_length;
  r.queries = queries;
  return shard_wire::decode_lists(call(shard, "/shard/v1/bm25", identity, shard_wire::encode(r), p.deadline));
}

namespace {
// A JSON answer of a shard (a malformed one is the shard's failure).
template <class T>
T json_answer(const std::string& body, size_t shard) {
  try {
    return nlohmann::json::parse(body).get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw ShardUnavailable("shard " + std::to_string(shard) + " answered what cannot be: " + e.what());
  }
}
}  // namespace

std::vector<Document> HttpShardRemote::documents(size_t shard, const std::string& identity,
                                                 const std::vector<uint32_t>& docs,
                                                 std::chrono::steady_clock::time_point deadline) const {
  const std::string body = call(shard, "/shard/v1/documents", identity, nlohmann::json{{"docs", docs}}.dump(), deadline);
  std::vector<Document> out;
  try {
    out = shard_wire::decode_documents(body);
  } catch (const Error& e) {
    throw ShardUnavailable("shard " + std::to_string(shard) + ": " + e.what());
  }
  if (out.size() != docs.size())
    throw ShardUnavailable("shard " + std::to_string(shard) + " answered " + std::to_string(out.size()) +
                           " documents for " + std::to_string(docs.size()));
  return out;
}

std::vector<int64_t> HttpShardRemote::find(size_t shard, const std::string& identity, const std::vector<std::string>& ids,
                                           std::chrono::steady_clock::time_point deadline) const {
  auto out = json_answer<std::vector<int64_t>>(
      call(shard, "/shard/v1/find", identity, nlohmann::json{{"ids", ids}}.dump(), deadline), shard);
  if (out.size() != ids.size()) throw ShardUnavailable("shard " + std::to_string(shard) + " answered another count of ids");
  return out;
}

std::vector<bool> HttpShardRemote::live(size_t shard, const std::string& identity, const std::vector<uint32_t>& docs,
                                        double now, std::chrono::steady_clock::time_point deadline) const {
  auto out = json_answer<std::vector<bool>>(
      call(shard, "/shard/v1/live", identity, nlohmann::json{{"docs", docs}, {"now", now}}.dump(), deadline), shard);
  if (out.size() != docs.size()) throw ShardUnavailable("shard " + std::to_string(shard) + " answered another count of states");
  return out;
}

std::vector<uint32_t> HttpShardRemote::matching(size_t shard, const std::string& identity, const Filter& filter,
                                                double now, std::chrono::steady_clock::time_point deadline) const {
  const nlohmann::json f = filter.empty() ? nlohmann::json(nullptr) : nlohmann::json::parse(filter.to_json());
  return json_answer<std::vector<uint32_t>>(
      call(shard, "/shard/v1/matching", identity, nlohmann::json{{"filter", f}, {"now", now}}.dump(), deadline), shard);
}

IndexStats HttpShardRemote::shard_stats(size_t shard, const std::string& identity,
                                        std::chrono::steady_clock::time_point deadline) const {
  const std::string body = call(shard, "/shard/v1/stats", identity, "{}", deadline);
  try {
    return shard_wire::decode_stats(body);
  } catch (const Error& e) {
    throw ShardUnavailable("shard " + std::to_string(shard) + ": " + e.what());
  }
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
