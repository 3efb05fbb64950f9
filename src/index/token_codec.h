// Compression of token states with a FAISS standalone codec (scalar or product quantizer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sieve/encoder.h"

namespace faiss {
struct Index;
}

namespace sieve::index {

/// A trained or untrained FAISS codec. encode/decode are const and thread-safe once trained.
class TokenCodec {
 public:
  /// Maps a --codec flag (fp32, fp16, sq8, sq4, pq, pq32, pq64, res1, res2) or a factory string to
  /// the factory string. "RES<k>x<bits>" is sieve's ColBERTv2-style residual codec (residual_codec.h);
  /// res1 and res2 are RES4096x1 and RES4096x2; every other string is FAISS's.
  static std::string factory_for(const std::string& codec, size_t dim);
  /// An untrained codec for `dim`-wide vectors; throws sieve::Error for a bad or non-codec factory.
  static std::unique_ptr<TokenCodec> create(const std::string& factory, size_t dim);
  /// Reads a codec written by save(); throws sieve::Error when the file is not one, or not one of
  /// the kind `factory` makes (the same FAISS type and code size) when `factory` is given.
  static std::unique_ptr<TokenCodec> load(const std::string& path, size_t dim, const std::string& factory = "");
  ~TokenCodec();

  bool trained() const;
  /// Trains on `n` vectors (throws sieve::Error when there are too few for this codec). A scalar
  /// quantizer trained on fewer than kRangeSample rows spans at least [-1, 1] in every dimension
  /// (the range of unit rows) instead of the sample's own narrow range.
  void train(size_t n, const float* x);
  static constexpr size_t kRangeSample = 1024;
  size_t dim() const;
  size_t code_size() const;
  void encode(size_t n, const float* x, uint8_t* codes) const;
  void decode(size_t n, const uint8_t* codes, float* x) const;
  /// decode() always through FAISS (decode() has its own loop for SQ8): the reference in tests.
  void decode_with_faiss(size_t n, const uint8_t* codes, float* x) const;
  /// Writes the codec atomically.
  void save(const std::string& path) const;
  const std::string& factory() const { return factory_; }

 private:
  TokenCodec() = default;
  std::unique_ptr<faiss::Index> index_;
  std::string factory_;
};

/// Trains `codec` on the token states `toks` (rows of `dim` floats), sampled evenly up to
/// `budget` rows: what a build does with its first chunk.
void train_token_codec(TokenCodec& codec, const std::vector<TokenStates>& toks, size_t dim, size_t budget);

}  // namespace sieve::index
