// One shard served to a remote router (serve/shard_service.h).
#include "serve/shard_service.h"

#include <algorithm>

#include "sieve/error.h"

namespace sieve::serve {

ShardService::ShardService(const std::string& dir, const std::vector<std::string>& verifiers, const std::string& model)
    : dir_(dir), verifiers_(verifiers), model_(model),
      copies_(dir, [this](const std::string& id, const index::RecordedShard& at) { return open_copy(id, at); }) {
  // Before it serves: the copy its set records (a rebuilt shard under an old set is refused).
  const std::string identity = index::check_shard_in_its_set(dir);
  copies_.get(identity);
  SIEVE_THROW_IF_NOT(index::find_shard_copy(dir, identity), "shard '" << dir << "' changed while it was opened; start it again");
}

std::shared_ptr<const ShardService::Copy> ShardService::open_copy(const std::string& identity,
                                                                  const index::RecordedShard& at) const {
  auto c = std::make_shared<Copy>();
  IndexOpenOptions o;
  o.load_encoder = false;
  c->identity = identity;
  c->index = index::open_shard_copy(at, o);
  SIEVE_THROW_IF_NOT(c->index->stats().shards == 1, "'" << dir_ << "' is a shard set, not one shard of it");
  c->scorer = std::make_unique<ShardScorer>(
      c->index, verifiers_,
      VerifierContext{model_.empty() ? c->index->stats().model_path : model_, c->index->stats().model_identity});
  return c;
}

std::shared_ptr<const ShardService::Copy> ShardService::copy(const std::string& identity) const {
  try {
    return copies_.get(identity);
  } catch (const ShardUnavailable&) {
    throw;
  } catch (const Error& e) {
    throw ShardUnavailable(e.what());
  }
}

std::vector<std::vector<std::pair<uint32_t, double>>> ShardService::dense_lists(const std::string& identity, size_t n,
                                                                                const float* pooled, size_t depth,
                                                                                const SearchParams& p) const {
  const auto c = copy(identity);
  return index::dense_lists(*c->index, n, pooled, std::min<size_t>(depth, c->index->size()), p);
}

index::Bm25Stats ShardService::bm25_stats(const std::string& identity, const std::vector<std::string>& terms) const {
  return index::bm25_stats(*copy(identity)->index, terms);
}

std::vector<std::vector<std::pair<uint32_t, double>>> ShardService::bm25_lists(
    const std::string& identity, const std::vector<index::Bm25Query>& queries, uint64_t documents,
    uint64_t total_length, size_t depth, const SearchParams& p) const {
  const auto c = copy(identity);
  return index::bm25_lists(*c->index, queries, documents, total_length, std::min<size_t>(depth, c->index->size()), p);
}

std::vector<Document> ShardService::documents(const std::string& identity, const std::vector<uint32_t>& docs) const {
  const auto c = copy(identity);
  std::vector<Document> out;
  for (uint32_t d : docs) {
    SIEVE_THROW_IF_NOT(d < c->index->size(), "document " << d << " is not in this shard");
    out.push_back(c->index->document(d));
  }
  return out;
}

std::vector<int64_t> ShardService::find(const std::string& identity, const std::vector<std::string>& ids) const {
  const auto c = copy(identity);
  std::vector<int64_t> out;
  for (const std::string& id : ids) out.push_back(c->index->find(id));
  return out;
}

std::vector<bool> ShardService::live(const std::string& identity, const std::vector<uint32_t>& docs, double now) const {
  const auto c = copy(identity);
  std::vector<bool> out;
  for (uint32_t d : docs) out.push_back(c->index->live(d, now));
  return out;
}

std::vector<uint32_t> ShardService::matching(const std::string& identity, const Filter& filter, double now) const {
  return copy(identity)->index->matching(filter, now);
}

IndexStats ShardService::stats(const std::string& identity) const { return copy(identity)->index->stats(); }

std::vector<TokenStates> ShardService::tokens(const std::string& identity, const std::vector<uint32_t>& docs,
                                              size_t max_rows) const {
  const auto c = copy(identity);
  for (uint32_t d : docs) SIEVE_THROW_IF_NOT(d < c->index->size(), "document " << d << " is not in this shard");
  return c->index->tokens_of(docs, max_rows);
}

std::vector<float> ShardService::keys(const std::string& identity, const std::vector<uint32_t>& docs) const {
  const auto c = copy(identity);
  const size_t dim = c->index->stats().dim;
  std::vector<float> out(docs.size() * dim);
  for (size_t i = 0; i < docs.size(); ++i) {
    SIEVE_THROW_IF_NOT(docs[i] < c->index->size(), "document " << docs[i] << " is not in this shard");
    const std::vector<float> k = c->index->key(docs[i]);
    std::copy(k.begin(), k.end(), out.begin() + static_cast<std::ptrdiff_t>(i * dim));
  }
  return out;
}

std::vector<float> ShardService::scores(const std::string& identity, const std::string& verifier,
                                        const TokenStates& query, const std::vector<uint32_t>& docs) const {
  const auto c = copy(identity);
  const std::vector<std::string> held = c->scorer->keys();
  if (std::find(held.begin(), held.end(), verifier) == held.end()) {
    std::string list;
    for (const auto& k : held) list += (list.empty() ? "" : ", ") + k;
    // ShardRemote's contract: a shard holding another verifier refuses, never scores with another.
    throw ShardUnavailable("this shard holds no verifier " + verifier + " (it holds " + list +
                           "): start it with the router's verifier");
  }
  return c->scorer->score(verifier, query, docs);
}

size_t ShardService::size(const std::string& identity) const { return copy(identity)->index->size(); }
size_t ShardService::dim() const { return copy("")->index->stats().dim; }
std::vector<std::string> ShardService::verifier_keys() const { return copy("")->scorer->keys(); }

}  // namespace sieve::serve
