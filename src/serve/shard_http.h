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

/// The shards of a set at `urls` (one per shard, in the set's order: http://host:port).
class HttpShardRemote final : public ShardRemote {
 public:
  /// `timeout_ms`: a call's own limit when the request has no deadline.
  explicit HttpShardRemote(std::vector<std::string> urls, int timeout_ms = 30000);
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
  size_t shards() const { return urls_.size(); }

 private:
  // POSTs `body` to shard `shard`'s `path` and returns the answer's body (see the file comment).
  std::string call(size_t shard, const std::string& path, const std::string& identity, const std::string& body,
                   std::chrono::steady_clock::time_point deadline) const;
  // A kept-alive client (`*reused` set), or a new one (always when `fresh`).
  std::unique_ptr<httplib::Client> client(size_t shard, bool* reused, bool fresh = false) const;
  void give_back(size_t shard, std::unique_ptr<httplib::Client> c) const;

  std::vector<std::string> urls_;
  int timeout_ms_;
  mutable std::mutex mu_;
  mutable std::vector<std::vector<std::unique_ptr<httplib::Client>>> idle_;  // per shard
};

}  // namespace sieve::serve
