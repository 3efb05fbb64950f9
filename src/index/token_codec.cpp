#include "index/token_codec.h"

#include <algorithm>
#include <cctype>

#include "core/file_util.h"
#include "index/faiss_io.h"

namespace sieve::index {

std::string TokenCodec::factory_for(const std::string& codec, size_t dim) {
  std::string c = codec;
  std::transform(c.begin(), c.end(), c.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (c == "fp32" || c == "flat") return "Flat";
  if (c == "fp16") return "SQfp16";
  if (c == "sq8") return "SQ8";
  if (c == "sq4") return "SQ4";
  if (c == "pq") {
    SIEVE_THROW_IF_NOT(dim % 4 == 0, "codec pq needs a dimension divisible by 4 (have " << dim
                                         << "); give a FAISS string such as PQ16");
    return "PQ" + std::to_string(dim / 4);
  }
  return codec;  // a FAISS factory string
}

std::unique_ptr<TokenCodec> TokenCodec::create(const std::string& factory, size_t dim) {
  std::unique_ptr<TokenCodec> c(new TokenCodec);
  c->index_ = faiss_from_factory(factory, dim);
  c->factory_ = factory;
  size_t code = faiss_call("codec '" + factory + "'", [&] { return c->index_->sa_code_size(); });
  SIEVE_THROW_IF_NOT(code > 0, "'" << factory << "' is not a standalone codec");
  return c;
}

std::unique_ptr<TokenCodec> TokenCodec::load(const std::string& path, size_t dim) {
  std::unique_ptr<TokenCodec> c(new TokenCodec);
  c->index_ = faiss_from_bytes(read_file(path), "'" + path + "'");
  SIEVE_THROW_IF_NOT(static_cast<size_t>(c->index_->d) == dim && c->index_->is_trained,
                     "'" << path << "' is not a trained codec of dimension " << dim << " (damaged)");
  return c;
}

TokenCodec::~TokenCodec() = default;

bool TokenCodec::trained() const { return index_->is_trained; }
size_t TokenCodec::dim() const { return static_cast<size_t>(index_->d); }
size_t TokenCodec::code_size() const { return index_->sa_code_size(); }

void TokenCodec::train(size_t n, const float* x) {
  if (index_->is_trained) return;
  faiss_call("cannot train token codec '" + factory_ + "' on " + std::to_string(n) +
                 " token vectors (a PQ codec needs at least 256; use sq8 for small corpora)",
             [&] { index_->train(static_cast<int64_t>(n), x); });
}

void TokenCodec::encode(size_t n, const float* x, uint8_t* codes) const {
  index_->sa_encode(static_cast<int64_t>(n), x, codes);
}

void TokenCodec::decode(size_t n, const uint8_t* codes, float* x) const {
  index_->sa_decode(static_cast<int64_t>(n), codes, x);
}

void TokenCodec::save(const std::string& path) const { write_file_atomic(path, faiss_to_bytes(*index_)); }

}  // namespace sieve::index
