// BM25 at a shard set's shards when they are served elsewhere and answer it themselves
// (LexicalRemote, sieve's shard servers): the router asks every shard for its statistics of the
// queries' terms, sums them (the statistics of one database holding every document), and has
// every shard rank its own documents with those sums; the lists merge as the one search over
// every shard's database merges them, so the answers equal one index's (docs/formats.md, "The
// shard protocol").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "index/fan_out.h"
#include "index/shard_set.h"

namespace sieve::index {

/// The set's BM25 statistics of the terms asked so far, for one snapshot of a set (whose shard
/// copies do not change): a query whose terms are all known skips the statistics round trip.
/// Bounded (cleared past kTermsKept terms); safe to call from several threads.
class SetBm25Stats {
 public:
  static constexpr size_t kTermsKept = size_t{1} << 20;
  /// The sums for `terms`; `ask(missing)` returns every shard's statistics of the terms not known
  /// yet (an empty list: the documents and total length only), one entry a shard.
  Bm25Stats get(const std::vector<std::string>& terms,
                const std::function<std::vector<Bm25Stats>(std::shared_ptr<const std::vector<std::string>>)>& ask);

 private:
  std::mutex mu_;
  std::unordered_map<std::string, uint64_t> df_;
  uint64_t documents_ = 0, length_ = 0;
  bool totals_ = false;
};

/// Each query's best `depth` documents of the set `m` by BM25, from its shards through `lr`
/// (`keep`: what owns `lr`, held by the calls under way), all shards at once on `pool`, until
/// p.deadline; p.filter and p.now apply at the shards. Ids are the set's; a shard's answer that
/// cannot be is its failure (ShardUnavailable).
std::vector<Ranked> remote_bm25(const LexicalRemote& lr, std::shared_ptr<const ShardRemote> keep, ShardCallPool& pool,
                                const ShardSetManifest& m, SetBm25Stats& stats, const std::vector<std::string>& queries,
                                size_t depth, const SearchParams& p);

}  // namespace sieve::index
