// The router's side of the shard protocol (serve/shard_http.h): HttpShardRemote, the shards'
// replicas called over HTTP/1.1 keep-alive, each call tried on the next replica when one fails.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <nlohmann/json.hpp>

#include "serve/shard_http.h"
#include "serve/shard_wire.h"
#include "sieve/error.h"

namespace sieve::serve {
namespace {

ShardReplicas one_each(const std::vector<std::string>& urls) {
  ShardReplicas out;
  for (const std::string& u : urls) out.push_back({u});
  return out;
}

}  // namespace

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
  check_shard_replicas(replicas);
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
  check_shard_replicas(replicas);
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
