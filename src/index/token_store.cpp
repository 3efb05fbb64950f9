#include "index/token_store.h"

#include <algorithm>
#include <cmath>

#include "core/multiversion.h"
#include "core/file_util.h"
#include "core/vec_math.h"
#include "sieve/error.h"

namespace sieve::index {

SIEVE_VARIANT_BODY void normalize_rows_body(float* x, size_t rows, size_t dim) {
  for (size_t r = 0; r < rows; ++r) {
    float* v = x + r * dim;
    const double ss = dot8(v, v, dim);
    if (ss <= 0) continue;
    float inv = static_cast<float>(1.0 / std::sqrt(ss));
    for (size_t k = 0; k < dim; ++k) v[k] *= inv;
  }
}
SIEVE_VARIANTS(void, normalize_rows, (float* x, size_t rows, size_t dim), (x, rows, dim))

TokenStore::TokenStore(const std::string& dir, const Manifest& m) : dim_(m.dim) {
  check_file(dir, m.codec);
  codec_ = TokenCodec::load(path_join(dir, m.codec.file), m.dim, m.token_codec);
  SIEVE_THROW_IF_NOT(codec_->code_size() == m.token_code_bytes,
                     "the token codec has " << codec_->code_size() << "-byte codes, the manifest says "
                                            << m.token_code_bytes << " (damaged index)");
  log_ = RecordLogReader(dir, "tokens", "TOKN", static_cast<uint32_t>(m.token_code_bytes), m.token_log);
}

TokenStore::TokenStore(const std::string& dir, const Manifest& m, const TokenStore& prev)
    : codec_(prev.codec_), dim_(m.dim) {
  SIEVE_THROW_IF_NOT(codec_->code_size() == m.token_code_bytes && dim_ == prev.dim_,
                     "the token store changed its codec (damaged index)");
  log_ = RecordLogReader(dir, "tokens", "TOKN", static_cast<uint32_t>(m.token_code_bytes), m.token_log, prev.log_);
}

size_t TokenStore::length(size_t doc) const {
  auto r = log_.record(doc);
  SIEVE_THROW_IF_NOT(r.size % codec_->code_size() == 0, "token record " << doc << " is not a whole number of codes (damaged)");
  return r.size / codec_->code_size();
}

TokenStates TokenStore::get(size_t doc, size_t max_rows) const {
  auto r = log_.record(doc);
  size_t cs = codec_->code_size();
  SIEVE_THROW_IF_NOT(r.size % cs == 0, "token record " << doc << " is not a whole number of codes (damaged)");
  TokenStates t;
  t.length = std::min(r.size / cs, max_rows);
  t.values.resize(t.length * dim_);
  codec_->decode(t.length, r.data, t.values.data());
  normalize_rows(t.values.data(), t.length, dim_);
  return t;
}

}  // namespace sieve::index
