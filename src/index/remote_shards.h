// A shard set's documents, ids, deletions and statistics read from its shards (ShardReader), for
// a router that holds only the set's manifest: each call fans out to the shards that hold what it
// asks, and the documents read are kept (bounded) for the snapshot's later calls, since a
// search's hits are read again for their JSON.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "index/fan_out.h"
#include "index/shard_set.h"

namespace sieve::index {

class RemoteShardData {
 public:
  static constexpr size_t kDocumentsKept = 100000;
  /// `keep` owns `reader` (held by the calls under way); `pool` runs the calls.
  RemoteShardData(const ShardReader& reader, std::shared_ptr<const ShardRemote> keep, ShardCallPool& pool,
                  const ShardSetManifest& m);
  /// Every shard's statistics, checked against the set's manifest (documents, model identity).
  std::vector<IndexStats> shard_stats() const;
  /// Document `doc` of the set (kept once read).
  Document document(uint32_t doc) const;
  /// Reads the documents of `docs` (the set's ids) not kept yet, one call per shard at once.
  void prefetch(const std::vector<uint32_t>& docs) const;
  /// Index::find over the set: the lowest shard that has the id.
  int64_t find(const std::string& id) const;
  bool live(uint32_t doc, double now) const;
  std::vector<uint32_t> matching(const Filter& filter, double now) const;

 private:
  std::pair<size_t, uint32_t> locate(uint32_t doc) const;
  std::vector<std::string> identities() const;
  std::function<std::string(size_t)> name_of() const;

  const ShardReader* reader_;
  std::shared_ptr<const ShardRemote> keep_;
  ShardCallPool* pool_;
  const ShardSetManifest* m_;
  mutable std::mutex mu_;
  mutable std::unordered_map<uint32_t, Document> kept_;
};

}  // namespace sieve::index
