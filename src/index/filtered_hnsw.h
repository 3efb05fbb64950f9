// A best-first search of a FAISS HNSW graph that keeps only allowed labels and counts only them
// against ef (hnswlib's rule for filtered searches), over exact inner-product keys. Internal:
// FaissVectorIndex::search uses it for a filtered search of an HNSW index over flat storage.
#pragma once

#include <cstddef>
#include <cstdint>

namespace faiss {
struct HNSW;
}

namespace sieve::index {

/// The best `k` allowed labels for `query` (inner product with the keys at `base`, `dim` floats
/// each), best first, ties by the lower label; missing places (-1, -inf). `allowed`: bit i of
/// byte i / 8 for label i < allowed_bits (labels past them are not allowed). The search stops
/// when `ef` allowed labels are held and the best unexpanded node scores below the worst of them.
void filtered_hnsw_search(const faiss::HNSW& hnsw, const float* base, size_t dim, const float* query,
                          const uint8_t* allowed, size_t allowed_bits, size_t ef, size_t k, int64_t* labels,
                          float* scores);

}  // namespace sieve::index
