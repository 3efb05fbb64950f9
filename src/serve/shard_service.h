// One shard of a set, served to a router in another process (issue 61): what a shard replica
// answers, whatever carries the calls (sieve's own HTTP shard server, `sieve shard serve`; Ray
// Serve's Python replicas). Every call names the copy of the shard it means (the router's snapshot
// records it, ShardRemote's `identity`; "" = the latest this service opened): after a write to the
// set the service opens the copy named the first time it is asked for, and keeps the copies it
// served last for searches still under way on an older snapshot (index::ShardCopies). A copy it
// cannot find is refused with ShardUnavailable, so that a router never merges answers of two sets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "index/shard_set.h"
#include "sieve/index.h"
#include "sieve/shard_scorer.h"

namespace sieve::serve {

class ShardService {
 public:
  /// The shard at `dir` (one index of a set, opened whole and without an encoder), checked against
  /// the set that records it (a rebuilt shard under an old set is refused: sieve::Error).
  /// `verifiers`: the router's stage-2 specs (ShardScorer holds their token-map verifiers);
  /// `model`: the encoder folder they are checked against (default: the shard's).
  ShardService(const std::string& dir, const std::vector<std::string>& verifiers, const std::string& model = "");

  /// ShardRemote::dense_lists: the shard's best `depth` documents for each of `n` pooled keys.
  std::vector<std::vector<std::pair<uint32_t, double>>> dense_lists(const std::string& identity, size_t n,
                                                                    const float* pooled, size_t depth,
                                                                    const SearchParams& p) const;
  /// ShardRemote::tokens: the first `max_rows` token states of each of `docs`.
  std::vector<TokenStates> tokens(const std::string& identity, const std::vector<uint32_t>& docs, size_t max_rows) const;
  /// ShardRemote::keys: docs.size() x dim floats.
  std::vector<float> keys(const std::string& identity, const std::vector<uint32_t>& docs) const;
  /// ShardRemote::scores: stage 2 here, by the verifier of key `verifier`.
  std::vector<float> scores(const std::string& identity, const std::string& verifier, const TokenStates& query,
                            const std::vector<uint32_t>& docs) const;

  /// LexicalRemote::bm25_stats: this shard's statistics of `terms`.
  index::Bm25Stats bm25_stats(const std::string& identity, const std::vector<std::string>& terms) const;
  /// LexicalRemote::bm25_lists: this shard's best `depth` for each query, with the set's statistics.
  std::vector<std::vector<std::pair<uint32_t, double>>> bm25_lists(const std::string& identity,
                                                                   const std::vector<index::Bm25Query>& queries,
                                                                   uint64_t documents, uint64_t total_length,
                                                                   size_t depth, const SearchParams& p) const;

  /// ShardReader's calls (a router that holds only the set's manifest): the shard's documents,
  /// Index::find of ids, Index::live, Index::matching and its statistics.
  std::vector<Document> documents(const std::string& identity, const std::vector<uint32_t>& docs) const;
  std::vector<int64_t> find(const std::string& identity, const std::vector<std::string>& ids) const;
  std::vector<bool> live(const std::string& identity, const std::vector<uint32_t>& docs, double now) const;
  std::vector<uint32_t> matching(const std::string& identity, const Filter& filter, double now) const;
  IndexStats stats(const std::string& identity) const;

  /// The identity of the latest copy opened.
  std::string identity() const { return copies_.latest(); }
  size_t size(const std::string& identity = "") const;
  size_t dim() const;
  std::vector<std::string> verifier_keys() const;
  const std::string& dir() const { return dir_; }

 private:
  struct Copy {
    std::string identity;
    std::shared_ptr<const Index> index;
    std::unique_ptr<ShardScorer> scorer;
  };
  std::shared_ptr<const Copy> open_copy(const std::string& identity, const index::RecordedShard& at) const;
  // The copy named (ShardUnavailable when it is neither held nor on disk).
  std::shared_ptr<const Copy> copy(const std::string& identity) const;

  std::string dir_;
  std::vector<std::string> verifiers_;
  std::string model_;
  mutable index::ShardCopies<Copy> copies_;  // declared last: its opener reads the members above
};

}  // namespace sieve::serve
