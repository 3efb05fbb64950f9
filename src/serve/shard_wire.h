// The bodies of sieve's shard protocol (issue 61): the ShardRemote and LexicalRemote calls between a router
// and `sieve shard serve`, over HTTP/1.1 with keep-alive (docs/formats.md, "The shard protocol").
// Binary, little-endian, every body opening with the magic "SSW1" (version 1): floats travel as
// they are, with no text round trip, so that a remote shard answers bit for bit what a local one
// does. Decoding checks every length against the body and refuses trailing bytes (sieve::Error).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "index/lexical_index.h"
#include "sieve/encoder.h"
#include "sieve/index.h"

namespace sieve::serve::shard_wire {

constexpr uint32_t kMagic = 0x31575353u;  // "SSW1"

using Lists = std::vector<std::vector<std::pair<uint32_t, double>>>;

/// POST /shard/v1/dense: `n` pooled keys of width `dim`, the depth, HNSW's ef_search, IVF's
/// nprobe, the expiry clock and the filter (its JSON, empty for none).
struct DenseRequest {
  uint32_t n = 0, dim = 0, depth = 0;
  int32_t ef_search = 0, nprobe = 0;
  double now = 0;
  std::string filter;
  std::vector<float> pooled;
};
std::string encode(const DenseRequest& r);
DenseRequest decode_dense_request(const std::string& body);
std::string encode_lists(const Lists& lists);
Lists decode_lists(const std::string& body);

/// POST /shard/v1/tokens (the first `max_rows` rows of each) and /shard/v1/keys (max_rows unused).
struct DocsRequest {
  uint32_t max_rows = 0;
  std::vector<uint32_t> docs;
};
std::string encode(const DocsRequest& r);
DocsRequest decode_docs_request(const std::string& body);
/// Token states of width `dim` (ids not carried: the router reads them itself).
std::string encode_states(const std::vector<TokenStates>& states, uint32_t dim);
std::vector<TokenStates> decode_states(const std::string& body);
/// A flat float answer (keys: docs x dim; scores: one per document).
std::string encode_floats(const std::vector<float>& values);
std::vector<float> decode_floats(const std::string& body);

/// POST /shard/v1/scores: the verifier's key, the query's token states (with their ids when the
/// verifier reads them) and the documents.
struct ScoresRequest {
  std::string verifier;
  uint32_t dim = 0;
  TokenStates query;
  std::vector<uint32_t> docs;
};
std::string encode(const ScoresRequest& r);
ScoresRequest decode_scores_request(const std::string& body);

/// POST /shard/v1/bm25/stats: terms whose statistics the router sums; the answer is the shard's
/// Bm25Stats (documents, total length, one document count a term).
std::string encode_terms(const std::vector<std::string>& terms);
std::vector<std::string> decode_terms(const std::string& body);
std::string encode(const index::Bm25Stats& s);
index::Bm25Stats decode_bm25_stats(const std::string& body);

/// POST /shard/v1/bm25: queries (terms in byte order, their counts and the set's document count of
/// each), the set's documents and total length, the depth, the expiry clock and the filter; the
/// answer is one list a query (encode_lists).
struct Bm25Request {
  uint32_t depth = 0;
  double now = 0;
  std::string filter;
  uint64_t documents = 0, total_length = 0;
  std::vector<index::Bm25Query> queries;
};
std::string encode(const Bm25Request& r);
Bm25Request decode_bm25_request(const std::string& body);

/// The calls of a router that holds only the set's manifest (index::ShardReader), in JSON:
/// POST /shard/v1/documents {"docs": [...]}, /shard/v1/find {"ids": [...]}, /shard/v1/live
/// {"docs": [...], "now": t}, /shard/v1/matching {"filter": F or null, "now": t} and
/// /shard/v1/stats {}. Documents carry their metadata as the string stored (not re-serialised).
std::string documents_json(const std::vector<Document>& docs);
std::vector<Document> decode_documents(const std::string& body);
std::string stats_json(const IndexStats& s);
IndexStats decode_stats(const std::string& body);

}  // namespace sieve::serve::shard_wire
