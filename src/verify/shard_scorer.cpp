// Stage 2 at a shard (sieve/shard_scorer.h) and the candidates' stored token states.
#include "sieve/shard_scorer.h"

#include <algorithm>

#include "core/omp_threads.h"
#include "sieve/encoder.h"
#include "sieve/error.h"

namespace sieve {

std::vector<TokenStates> stored_candidates(const Index& index, const VerifierConfig& config,
                                           const std::vector<uint32_t>& docs,
                                           std::chrono::steady_clock::time_point deadline) {
  // Index::tokens_of decodes on OpenMP's team (or asks each remote shard once).
  std::vector<TokenStates> cands = index.tokens_of(docs, config.max_tokens, deadline);  // the rows it reads
  if (reads_token_ids(config))
    omp_ranges(cands.size(), compute_threads(), [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) {
        cands[i].ids = index.token_ids(docs[i]);
        cands[i].ids.resize(std::min(cands[i].ids.size(), cands[i].length));
      }
    });
  return cands;
}

ShardScorer::ShardScorer(std::shared_ptr<const Index> shard, const std::vector<std::string>& specs,
                         const VerifierContext& context)
    : shard_(std::move(shard)) {
  std::vector<std::string> all;
  for (const std::string& spec : specs) all.push_back(shard_verifier_spec(spec, context));
  for (const char* builtin : {"F0", "F1", "F2"}) all.emplace_back(builtin);
  for (const std::string& spec : all) {
    if (spec.empty()) continue;  // the cosine and the cross-encoder are not scored here
    ResolvedVerifier r = resolve_verifier(spec, context);
    if (!r.verifier) continue;
    const std::string key = shard_verifier_key(r, context);
    verifiers_.emplace(key, std::shared_ptr<const Verifier>(std::move(r.verifier)));
  }
}

std::vector<std::string> ShardScorer::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : verifiers_) out.push_back(k);
  return out;
}

std::vector<float> ShardScorer::score(const std::string& key, const TokenStates& query,
                                      const std::vector<uint32_t>& docs) const {
  auto it = verifiers_.find(key);
  if (it == verifiers_.end()) {
    std::string held;
    for (const auto& k : keys()) held += (held.empty() ? "" : ", ") + k;
    SIEVE_THROW("this shard holds no verifier " << key << " (it holds " << held
                                                << "): start its replicas with the router's verifier");
  }
  for (uint32_t d : docs) SIEVE_THROW_IF_NOT(d < shard_->size(), "document " << d << " is not in this shard");
  const Verifier& v = *it->second;
  std::vector<TokenStates> cands = stored_candidates(*shard_, v.config(), docs);
  std::vector<const TokenStates*> ptrs;
  for (const auto& c : cands) ptrs.push_back(&c);
  return v.score(query, ptrs);
}

}  // namespace sieve
