// Merging of the dense and BM25 candidate lists: reciprocal rank fusion or weighted score fusion.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sieve/encoder.h"
#include "sieve/index.h"

namespace sieve::index {

/// A ranked list of (internal id, score), best first.
using Ranked = std::vector<std::pair<uint32_t, double>>;

/// The dense weight of a weighted or zscore fusion of these two lists: p.dense_weight, moved by
/// p.weight_slope times the difference of the lists' top z-scores, clamped to [0, 1].
double query_dense_weight(const Ranked& dense, const Ranked& bm25, const SearchParams& p);

/// Fuses the lists into at most `p.k` hits (ids left empty), best first; ties break by lower id.
/// Either list may be empty. Hits carry each list's score and 1-based rank where present.
std::vector<Hit> fuse(const Ranked& dense, const Ranked& bm25, const SearchParams& p);

/// Turns one list into hits (dense-only or BM25-only search).
std::vector<Hit> single_list_hits(const Ranked& list, bool dense, size_t k);

// The steps of a stage-1 search that one index and a shard set share, so that both give the
// same results from the same lists.

/// What a search of `queries` needs before its lists: which lists, their length (no longer than
/// the index; hybrid: the fusion depth) and the queries' pooled keys (dense) and token states
/// (p.query_tokens). Throws sieve::Error for k = 0, or when encodings are needed and `encoder` is null.
struct SearchPlan {
  bool dense = false, lexical = false;
  size_t depth = 0;
  Embeddings queries;
};
SearchPlan plan_search(const Encoder* encoder, const std::vector<std::string>& queries, const SearchParams& p,
                       uint64_t documents);

/// Query `q`'s result from its lists: fused or one list's hits (ids left empty), and its
/// L2-normalised token states when p.query_tokens (moved out of `e`).
SearchResult result_from_lists(const Ranked& dense_list, const Ranked& bm25_list, const SearchParams& p,
                               Embeddings& e, size_t q);

}  // namespace sieve::index
