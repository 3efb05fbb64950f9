// The vector index over pooled unit keys (inner product = cosine), backed by FAISS.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

namespace faiss {
struct Index;
}

namespace sieve::index {

/// Per-call knobs of a vector search (0 = the index's own setting).
struct VectorSearchParams {
  size_t k = 10;
  int ef_search = 0;
  int nprobe = 0;
  /// Only these labels (bit i of byte i / 8; `allowed_bits` bits, labels past them excluded):
  /// FAISS's IDSelectorBitmap inside the search (HNSW, IVF). Null: every label.
  const uint8_t* allowed = nullptr;
  size_t allowed_bits = 0;
  /// How many labels `allowed` lets through (0: unknown). An HNSW index over exact keys walks its
  /// graph counting only allowed keys against ef_search (index/filtered_hnsw.h); others hand the
  /// bitmap to FAISS, whose search counts every visited node, with ef_search widened by
  /// (size / allowed_count)^0.6 to hold recall.
  size_t allowed_count = 0;
};

/// Interface of the dense recall stage: add unit vectors, search by inner product.
class VectorIndex {
 public:
  virtual ~VectorIndex() = default;
  virtual size_t dim() const = 0;
  virtual size_t size() const = 0;
  /// Searches `n` queries; fills n*k labels (-1 when fewer hits) and scores, best first.
  virtual void search(size_t n, const float* queries, const VectorSearchParams& p, int64_t* labels,
                      float* scores) const = 0;
};

/// A FAISS-backed vector index.
class FaissVectorIndex : public VectorIndex {
 public:
  /// An empty index from a factory string ("Flat", "HNSW32", "IVF256,Flat", ...).
  FaissVectorIndex(const std::string& factory, size_t dim, int ef_construction);
  /// Reads an index written by save().
  FaissVectorIndex(const std::string& path, size_t dim);
  ~FaissVectorIndex() override;

  size_t dim() const override;
  size_t size() const override;
  void search(size_t n, const float* queries, const VectorSearchParams& p, int64_t* labels,
              float* scores) const override;
  /// True when add() needs a prior train().
  bool needs_training() const;
  /// True for a graph index (HNSW): adding a key searches the keys already there, so adding all
  /// at once on every core costs less than adding them as they come beside the encoder.
  bool is_graph() const;
  /// Trains (IVF, PQ) on `n` vectors; with fewer than the index needs, throws sieve::Error.
  void train(size_t n, const float* x);
  /// Adds `n` vectors with labels size()..size()+n-1.
  void add(size_t n, const float* x);
  /// True when the index stores the keys exactly (Flat, HNSW over Flat), so that reconstruct()
  /// gives back what was added, bit for bit.
  bool holds_exact_keys() const;
  /// Key `i` in place when the index stores keys as plain floats (Flat, HNSW over Flat), else null.
  const float* stored_key(size_t i) const;
  /// Writes key `i` (dim floats) to `out`; with holds_exact_keys() false, an approximation or
  /// sieve::Error when the index cannot reconstruct.
  void reconstruct(size_t i, float* out) const;
  /// Writes the index atomically.
  void save(const std::string& path) const;

 private:
  std::unique_ptr<faiss::Index> index_;
  std::string factory_;
  mutable std::shared_mutex ef_mu_;  // guards the HNSW efSearch setting (see search())
};

/// x . y as FAISS's flat index computes it (for fewer than 20 queries at once), so that keys
/// searched outside the index score the same bits as inside it.
float inner_product(const float* x, const float* y, size_t dim);

/// Resolves "auto" to Flat or HNSW32 for `n` documents.
std::string resolve_vector_factory(const std::string& factory, size_t n, size_t hnsw_threshold);

}  // namespace sieve::index
