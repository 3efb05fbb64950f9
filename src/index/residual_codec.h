// A residual token codec in the style of ColBERTv2 (Santhanam et al. 2022): each token state is
// stored as the id of its nearest centroid (k-means over a training sample) plus its residual,
// every component cut to `bits` bits by global quantile buckets. A code is 2 bytes of centroid id
// and ceil(dim * bits / 8) bytes of buckets: 50 bytes a token at 384 dimensions and 1 bit, 98 at
// 2 bits. It is a FAISS index in form (train, sa_encode, sa_decode), so TokenCodec uses it as it
// uses FAISS's codecs; it is written in its own file format (below), not FAISS's.
#pragma once

#include <faiss/Index.h>
#include <faiss/IndexFlat.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sieve::index {

class ResidualCodecIndex : public faiss::Index {
 public:
  /// Parses "RES<k>x<bits>" (k centroids, at most 65,536; bits 1, 2 or 4); nullptr when `factory`
  /// is not of that form, sieve::Error when it is but the numbers are out of range.
  static std::unique_ptr<ResidualCodecIndex> from_factory(const std::string& factory, size_t dim);
  /// True when the file starts with this codec's magic.
  static bool is_file(const std::string& path);
  /// Reads a codec written by save(); sieve::Error when the file is damaged.
  static std::unique_ptr<ResidualCodecIndex> load(const std::string& path);

  ResidualCodecIndex(size_t dim, size_t centroids, int bits);

  /// k-means (at most `centroids`, fewer when the sample has under 16 vectors per centroid),
  /// then the bucket cut-offs and values from the quantiles of the residuals' components.
  void train(faiss::Index::idx_t n, const float* x) override;
  size_t sa_code_size() const override;
  void sa_encode(faiss::Index::idx_t n, const float* x, uint8_t* codes) const override;
  void sa_decode(faiss::Index::idx_t n, const uint8_t* codes, float* x) const override;
  void add(faiss::Index::idx_t n, const float* x) override;
  void search(faiss::Index::idx_t n, const float* x, faiss::Index::idx_t k, float* distances, faiss::Index::idx_t* labels,
              const faiss::SearchParameters* params = nullptr) const override;
  void reset() override;

  /// Writes the codec atomically: magic "SIEVERES", u32 version 1, u32 dim, u32 centroids in use,
  /// u32 bits, centroids (float32), 2^bits - 1 cut-offs, 2^bits bucket values, then a CRC-32 of
  /// everything before it (little-endian).
  void save(const std::string& path) const;

  size_t centroids() const { return k_; }
  const std::vector<float>& centroid_values() const { return centroids_; }  ///< k x dim
  const std::vector<float>& cutoffs() const { return cutoffs_; }
  const std::vector<float>& bucket_values() const { return values_; }
  int bits() const { return bits_; }
  size_t max_centroids() const { return max_k_; }

 private:
  size_t max_k_ = 0, k_ = 0;
  int bits_ = 1;
  std::vector<float> centroids_;  // k_ x d
  std::vector<float> cutoffs_;    // 2^bits - 1, ascending
  std::vector<float> values_;     // 2^bits, one per bucket
  faiss::IndexFlatL2 nearest_;    // over the centroids (the nearest leaves the smallest residual)
};

}  // namespace sieve::index
