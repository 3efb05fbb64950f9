// sieve's native shard path (issue 61): a shard served over HTTP/1.1 with keep-alive
// (`sieve shard serve`), and the router's side of it, a ShardRemote that calls such servers
// (`sieve serve --index SET --shard-url URL ...`). The bodies are serve/shard_wire.h's; every call
// carries the shard copy it means in the header X-Sieve-Shard-Identity. A server answers 409 for
// a copy it does not hold (another set's, or a rebuilt shard), 400 for a malformed body, 500 else;
// the client turns each into ShardUnavailable naming the shard and its address, and a call cut by
// the request's deadline into ShardTimeout.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "index/shard_set.h"
#include "serve/shard_service.h"
#include "sieve/index.h"

namespace httplib {
class Server;
class Client;
}  // namespace httplib

namespace sieve::serve {

/// Serves one ShardService on host:port (port 0: any free one) on a pool of `threads`.
class ShardHttpServer {
 public:
  ShardHttpServer(std::shared_ptr<const ShardService> service, const std::string& host, int port, size_t threads = 16);
  ~ShardHttpServer();
  /// Binds and serves in the background; sieve::Error when the address cannot be bound.
  void start();
  /// Serves on this thread until stop() (binds first).
  void run();
  void stop();
  int port() const { return port_; }

 private:
  void bind();
  std::shared_ptr<const ShardService> service_;
  std::string host_;
  int port_;
  std::unique_ptr<httplib::Server> svr_;
  std::thread thread_;
};

/// Where a set's shards are served: for each shard, in the set's order, the addresses of its
/// replicas (http://HOST:PORT; any one of them may answer for the shard).
using ShardReplicas = std::vector<std::vector<std::string>>;

/// The header naming the shard copy a call means, and the binary bodies' content type.
inline constexpr const char* kIdentityHeader = "X-Sieve-Shard-Identity";
inline constexpr const char* kBinary = "application/octet-stream";

/// Throws sieve::Error for no shard, a shard with no address, or an address not http://HOST:PORT.
void check_shard_replicas(const ShardReplicas& replicas);

/// `--shard-url` values, one per shard, each "URL[,URL...]" (the shard's replicas). Throws
/// sieve::Error for an empty list or an address that is not http://HOST:PORT.
ShardReplicas parse_shard_urls(const std::vector<std::string>& values);
/// A membership file: {"shards": [["http://...", ...], ...]} (Ray's deployment writes it; sieve
/// serve re-reads it on SIGHUP). Throws sieve::Error naming the file for anything else.
ShardReplicas read_shard_membership(const std::string& path);

class HttpShardRemote;

/// The router's shards for the shard set at `set_dir`: the replicas of `urls` (--shard-url
/// values, parse_shard_urls) or, when `membership_file` is given, of that file (not both). Throws
/// sieve::Error for a folder that is not a set, or a number of shards other than the set's.
std::shared_ptr<HttpShardRemote> open_shard_remote(const std::string& set_dir, const std::vector<std::string>& urls,
                                                   const std::string& membership_file);
/// Reads the membership file again into `remote` (SIGHUP); a file that cannot be used leaves the
/// replicas as they were. Returns the line to log; never throws.
std::string reload_shard_membership(HttpShardRemote& remote, const std::string& membership_file);

/// What the router knows of one replica (HttpShardRemote::replica_states).
struct ReplicaState {
  std::string url;
  bool down = false;       ///< its last call failed (it is tried after the others until one succeeds)
  uint64_t calls = 0;      ///< calls answered
  uint64_t failures = 0;   ///< calls it did not answer (each then tried on another replica)
  std::string last_error;  ///< of the latest failure
};

/// The shards of a set served by `sieve shard serve` processes, each shard by one replica or
/// more. A call goes to the shard's replicas in turn (round robin, those whose last call failed
/// last); one that does not answer, answers for another copy (409) or fails (5xx) is left for the
/// next, within the request's deadline; a malformed request (400) is not tried again. The
/// replicas can be replaced while calls run (set_replicas: the membership Ray publishes).
class HttpShardRemote final : public ShardRemote, public index::LexicalRemote, public index::ShardReader {
 public:
  /// `timeout_ms`: a call's own limit when the request has no deadline.
  explicit HttpShardRemote(ShardReplicas replicas, int timeout_ms = 30000);
  /// One replica a shard.
  explicit HttpShardRemote(const std::vector<std::string>& urls, int timeout_ms = 30000);
  ~HttpShardRemote() override;
  std::vector<std::vector<std::pair<uint32_t, double>>> dense_lists(size_t shard, const std::string& identity, size_t n,
                                                                    size_t dim, const float* pooled, size_t depth,
                                                                    const SearchParams& p) const override;
  std::vector<TokenStates> tokens(size_t shard, const std::string& identity, const std::vector<uint32_t>& docs,
                                  size_t max_rows, std::chrono::steady_clock::time_point deadline) const override;
  std::vector<float> keys(size_t shard, const std::string& identity, const std::vector<uint32_t>& docs,
                          std::chrono::steady_clock::time_point deadline) const override;
  std::vector<float> scores(size_t shard, const std::string& identity, const std::string& verifier,
                            const TokenStates& query, const std::vector<uint32_t>& docs,
                            std::chrono::steady_clock::time_point deadline) const override;
  bool scores_at_shards() const override { return true; }
  index::Bm25Stats bm25_stats(size_t shard, const std::string& identity, const std::vector<std::string>& terms,
                              std::chrono::steady_clock::time_point deadline) const override;
  std::vector<std::vector<std::pair<uint32_t, double>>> bm25_lists(size_t shard, const std::string& identity,
                                                                   const std::vector<index::Bm25Query>& queries,
                                                                   uint64_t documents, uint64_t total_length,
                                                                   size_t depth, const SearchParams& p) const override;
  std::vector<Document> documents(size_t shard, const std::string& identity, const std::vector<uint32_t>& docs,
                                  std::chrono::steady_clock::time_point deadline) const override;
  std::vector<int64_t> find(size_t shard, const std::string& identity, const std::vector<std::string>& ids,
                            std::chrono::steady_clock::time_point deadline) const override;
  std::vector<bool> live(size_t shard, const std::string& identity, const std::vector<uint32_t>& docs, double now,
                         std::chrono::steady_clock::time_point deadline) const override;
  std::vector<uint32_t> matching(size_t shard, const std::string& identity, const Filter& filter, double now,
                                 std::chrono::steady_clock::time_point deadline) const override;
  IndexStats shard_stats(size_t shard, const std::string& identity,
                         std::chrono::steady_clock::time_point deadline) const override;
  size_t shards() const;
  /// New replicas for every shard (as many shards as before; sieve::Error else, and nothing
  /// changes). Calls under way finish on the replicas they chose; kept-alive connections to
  /// replicas no longer listed are closed. Returns the membership's generation (1 at start).
  uint64_t set_replicas(ShardReplicas replicas);
  /// Each shard's replicas as the router sees them, and the membership's generation.
  std::vector<std::vector<ReplicaState>> replica_states(uint64_t* generation = nullptr) const;
  /// replica_states as JSON ({"generation", "shards": [[{url, down, calls, failures, last_error}]]}).
  std::string describe() const;

 private:
  struct Replica;
  struct Membership;
  // POSTs `body` to `path` on one of shard `shard`'s replicas and returns the answer's body.
  std::string call(size_t shard, const std::string& path, const std::string& identity, const std::string& body,
                   std::chrono::steady_clock::time_point deadline) const;
  // One replica's answer: true with the body in `out`, or false with the reason in `out` and
  // `retry` saying whether another replica may answer.
  bool call_one(Replica& r, const std::string& who, const std::string& path, const std::string& identity,
                const std::string& body, std::chrono::steady_clock::time_point deadline, bool has_deadline,
                std::string* out, bool* retry) const;
  std::shared_ptr<Membership> membership() const;

  int timeout_ms_;
  mutable std::mutex mu_;
  std::shared_ptr<Membership> m_;
};

}  // namespace sieve::serve
