// The token store: every document's final-layer token states, L2-normalised and compressed with a
// FAISS codec, one record of the "tokens" log per document.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "index/manifest.h"
#include "index/record_log.h"
#include "index/token_codec.h"
#include "sieve/encoder.h"

namespace sieve::index {

/// Random access to decoded token states.
class TokenStore {
 public:
  TokenStore(const std::string& dir, const Manifest& m);
  /// The same store grown since `prev` was opened: shares its codec, checks only what was added.
  TokenStore(const std::string& dir, const Manifest& m, const TokenStore& prev);
  size_t size() const { return log_.size(); }
  size_t code_size() const { return codec_->code_size(); }
  /// Decodes document `doc`'s token states (the first `max_rows` of them); rows are
  /// re-normalised to unit length.
  TokenStates get(size_t doc, size_t max_rows = SIZE_MAX) const;
  /// Number of token rows stored for document `doc` (without decoding them).
  size_t length(size_t doc) const;
  void verify() const { log_.verify_data(); }
  const TokenCodec& codec() const { return *codec_; }

 private:
  std::shared_ptr<const TokenCodec> codec_;
  RecordLogReader log_;
  size_t dim_;
};

/// L2-normalises `rows` rows of `dim` floats in place (zero rows stay zero).
void normalize_rows(float* x, size_t rows, size_t dim);

}  // namespace sieve::index
