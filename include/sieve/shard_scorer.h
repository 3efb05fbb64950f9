// sieve: stage 2 where the documents live. A shard of a set served elsewhere (ShardRemote::scores,
// Ray Serve's shard replicas) holds the verifiers its router may ask for, by key, and scores its
// own candidates' stored token states against the query's.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sieve/index.h"
#include "sieve/verify.h"

namespace sieve {

/// The stored token states of `docs` as `config`'s verifier reads them: the first max_tokens rows
/// of each, with their token ids when it reads ids (reads_token_ids); decoded on OpenMP's team.
/// search_verified's candidates and a shard's are read by this one function. A remote shard set's
/// are fetched until `deadline` (ShardTimeout after it).
std::vector<TokenStates> stored_candidates(const Index& index, const VerifierConfig& config,
                                           const std::vector<uint32_t>& docs,
                                           std::chrono::steady_clock::time_point deadline =
                                               std::chrono::steady_clock::time_point::max());

/// The verifiers one shard holds. Immutable once built; score() may run on several threads.
class ShardScorer {
 public:
  /// Holds the token-map verifier of each of `specs` (shard_verifier_spec: the router's stage-2
  /// specs) and the built-ins F0-F2, each by its shard_verifier_key; sieve::Error for a file
  /// recorded for another encoder than `context`'s.
  ShardScorer(std::shared_ptr<const Index> shard, const std::vector<std::string>& specs, const VerifierContext& context);
  /// The scores of the verifier of key `key` for `query` (L2-normalised rows, with ids when the
  /// verifier reads them) against each of `docs` (the shard's own ids). sieve::Error naming the
  /// keys held for a key it does not hold, or for a document outside the shard.
  std::vector<float> score(const std::string& key, const TokenStates& query, const std::vector<uint32_t>& docs) const;
  /// The keys held, in order.
  std::vector<std::string> keys() const;

 private:
  std::shared_ptr<const Index> shard_;
  std::map<std::string, std::shared_ptr<const Verifier>> verifiers_;
};

}  // namespace sieve
