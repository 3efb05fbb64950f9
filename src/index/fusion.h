// Merging of the dense and BM25 candidate lists: reciprocal rank fusion or weighted score fusion.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sieve/index.h"

namespace sieve::index {

/// A ranked list of (internal id, score), best first.
using Ranked = std::vector<std::pair<uint32_t, double>>;

/// Fuses the lists into at most `p.k` hits (ids left empty), best first; ties break by lower id.
/// Either list may be empty. Hits carry each list's score and 1-based rank where present.
std::vector<Hit> fuse(const Ranked& dense, const Ranked& bm25, const SearchParams& p);

/// Turns one list into hits (dense-only or BM25-only search).
std::vector<Hit> single_list_hits(const Ranked& list, bool dense, size_t k);

}  // namespace sieve::index
