#include "index/token_codec.h"

#include <algorithm>
#include <cctype>
#include <typeinfo>

#include <faiss/IndexFlat.h>
#include <faiss/IndexFlatCodes.h>
#include <faiss/IndexPQ.h>
#include <faiss/IndexScalarQuantizer.h>
#include <faiss/IndexPreTransform.h>

#include "core/multiversion.h"
#include "core/file_util.h"
#include "core/log.h"
#include "core/omp_threads.h"
#include "index/faiss_io.h"
#include "index/residual_codec.h"

namespace sieve::index {

namespace {

// What makes two codecs of one size the same kind: the quantizer and its parameters (a flat
// index reads back as IndexFlat or IndexFlatIP, which are the same codec).
std::string codec_kind(const faiss::Index& index) {
  const faiss::Index* core = &index;
  std::string kind;
  while (auto* pt = dynamic_cast<const faiss::IndexPreTransform*>(core)) {
    kind += "pretransform/";
    core = pt->index;
  }
  if (auto* sq = dynamic_cast<const faiss::IndexScalarQuantizer*>(core)) return kind + "sq" + std::to_string(sq->sq.qtype);
  if (auto* pq = dynamic_cast<const faiss::IndexPQ*>(core))
    return kind + "pq" + std::to_string(pq->pq.M) + "x" + std::to_string(pq->pq.nbits);
  if (dynamic_cast<const faiss::IndexFlat*>(core)) return kind + "flat";
  if (auto* res = dynamic_cast<const ResidualCodecIndex*>(core))
    return kind + "res/" + std::to_string(res->bits());  // k is the trained count, up to the factory's
  return kind + typeid(*core).name();
}

}  // namespace

std::string TokenCodec::factory_for(const std::string& codec, size_t dim) {
  std::string c = codec;
  std::transform(c.begin(), c.end(), c.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (c == "fp32" || c == "flat") return "Flat";
  if (c == "fp16") return "SQfp16";
  if (c == "sq8") return "SQ8";
  if (c == "sq4") return "SQ4";
  if (c == "res1" || c == "res2") return "RES4096x" + c.substr(3);  // ColBERTv2-style residuals
  if (c == "pq32" || c == "pq64") return "PQ" + c.substr(2);
  if (c == "pq") {
    SIEVE_THROW_IF_NOT(dim % 4 == 0, "codec pq needs a dimension divisible by 4 (have " << dim
                                         << "); give a FAISS string such as PQ16");
    return "PQ" + std::to_string(dim / 4);
  }
  return codec;  // a FAISS factory string
}

std::unique_ptr<TokenCodec> TokenCodec::create(const std::string& factory, size_t dim) {
  std::unique_ptr<TokenCodec> c(new TokenCodec);
  c->factory_ = factory;
  if (auto res = ResidualCodecIndex::from_factory(factory, dim)) {
    c->index_ = std::move(res);
    return c;
  }
  c->index_ = faiss_from_factory(factory, dim);
  // A codec is a flat array of codes (Flat, SQ, PQ, additive quantizers), possibly after a
  // transform (OPQ); graph and inverted-list indexes are not codecs.
  faiss::Index* core = c->index_.get();
  while (auto* pt = dynamic_cast<faiss::IndexPreTransform*>(core)) core = pt->index;
  SIEVE_THROW_IF_NOT(dynamic_cast<faiss::IndexFlatCodes*>(core) != nullptr,
                     "'" << factory << "' is not a FAISS codec (use fp32, fp16, sq8, sq4, pq, SQ6, PQ48, ...)");
  // The factory turns on polysemous training for "PQn": a code reordering for Hamming search that
  // sieve never uses and that took minutes for PQ96 here.
  if (auto* pq = dynamic_cast<faiss::IndexPQ*>(core)) pq->do_polysemous_training = false;
  // SQ learns each dimension's range from a sample; values outside it are clamped. Widening the
  // range by a margin keeps later documents' outliers in range at a small cost in resolution.
  // Measured on 384-wide token states trained on a 4,000-token sample (tests/unit/index): SQ8 max
  // cosine error 0.0083 -> 0.0042 with a 10% margin; SQ4, whose steps are coarse, did best at 2%.
  if (auto* sq = dynamic_cast<faiss::IndexScalarQuantizer*>(core)) {
    sq->sq.rangestat = faiss::ScalarQuantizer::RS_minmax;
    sq->sq.rangestat_arg = sq->sq.qtype == faiss::ScalarQuantizer::QT_8bit ? 0.1f : 0.02f;
  }
  return c;
}

std::unique_ptr<TokenCodec> TokenCodec::load(const std::string& path, size_t dim, const std::string& factory) {
  std::unique_ptr<TokenCodec> c(new TokenCodec);
  if (ResidualCodecIndex::is_file(path))
    c->index_ = ResidualCodecIndex::load(path);
  else
    c->index_ = faiss_read_file(path);
  SIEVE_THROW_IF_NOT(static_cast<size_t>(c->index_->d) == dim && c->index_->is_trained,
                     "'" << path << "' is not a trained codec of dimension " << dim << " (damaged)");
  if (!factory.empty()) {
    auto want = create(factory, dim);
    SIEVE_THROW_IF_NOT(codec_kind(*c->index_) == codec_kind(*want->index_) && c->code_size() == want->code_size(),
                       "'" << path << "' is not a " << factory << " codec (" << c->code_size()
                           << " bytes per token, " << want->code_size() << " expected)");
    c->factory_ = factory;
  }
  return c;
}

TokenCodec::~TokenCodec() = default;

bool TokenCodec::trained() const { return index_->is_trained; }
size_t TokenCodec::dim() const { return static_cast<size_t>(index_->d); }
size_t TokenCodec::code_size() const { return index_->sa_code_size(); }

void TokenCodec::train(size_t n, const float* x) {
  if (index_->is_trained) return;
  // A scalar quantizer's range per dimension comes from the sample. From a handful of documents (a
  // cache created by its first entry, an index by its first small add) it is far too narrow, and
  // every later document would be clamped into it: all-MiniLM-L6-v2's token states of a second
  // short question then lost up to 0.19 a component, and the gate misjudged them. The rows are
  // unit vectors (components in [-1, 1]), so below kRangeSample rows the range spans at least that.
  std::vector<float> widened;
  if (dynamic_cast<faiss::IndexScalarQuantizer*>(index_.get()) != nullptr && n < kRangeSample) {
    const size_t d = dim();
    widened.assign(x, x + n * d);
    widened.resize((n + 2) * d, 1.0f);
    std::fill(widened.end() - static_cast<std::ptrdiff_t>(d), widened.end(), -1.0f);
    x = widened.data();
    n += 2;
  }
  // FAISS's k-means on PQ's 4-dimensional sub-vectors ran 2-3x slower with two OpenMP threads
  // than with one (the parallel regions are too small), so training runs single-threaded.
  ScopedOmpThreads one_thread(1);
  faiss_call("cannot train token codec '" + factory_ + "' on " + std::to_string(n) +
                 " token vectors (a PQ codec needs at least 256; use sq8 for small corpora)",
             [&] { index_->train(static_cast<int64_t>(n), x); });
}

void TokenCodec::encode(size_t n, const float* x, uint8_t* codes) const {
  index_->sa_encode(static_cast<int64_t>(n), x, codes);
}

namespace {

// The SQ8 decode as FAISS computes it (the same floats: the division stays a division), in one flat
// loop built for AVX-512 and AVX2 as well, picked at load by the CPU.
SIEVE_VARIANT_BODY void decode_sq8_body(size_t n, size_t d, const float* vmin,
                                                                               const float* vdiff, const uint8_t* codes,
                                                                               float* x) {
  for (size_t r = 0; r < n; ++r) {
    const uint8_t* c = codes + r * d;
    float* o = x + r * d;
#pragma omp simd
    for (size_t i = 0; i < d; ++i) o[i] = vmin[i] + ((static_cast<float>(c[i]) + 0.5f) / 255.0f) * vdiff[i];
  }
}
SIEVE_VARIANTS(void, decode_sq8, (size_t n, size_t d, const float* vmin, const float* vdiff, const uint8_t* codes, float* x), (n, d, vmin, vdiff, codes, x))

}  // namespace

void TokenCodec::decode(size_t n, const uint8_t* codes, float* x) const {
  // SQ8 is the default codec and decoding is on stage 2's critical path; FAISS's generic build
  // (no AVX2 here) decodes component by component through a per-vector virtual call. The same
  // arithmetic in one flat loop vectorises and gives identical floats (tests/unit/index).
  if (auto* sq = dynamic_cast<const faiss::IndexScalarQuantizer*>(index_.get());
      sq != nullptr && sq->sq.qtype == faiss::ScalarQuantizer::QT_8bit) {
    const float* vmin = sq->sq.trained.data();
    decode_sq8(n, dim(), vmin, vmin + dim(), codes, x);
    return;
  }
  decode_with_faiss(n, codes, x);
}

void TokenCodec::decode_with_faiss(size_t n, const uint8_t* codes, float* x) const {
  index_->sa_decode(static_cast<int64_t>(n), codes, x);
}

void TokenCodec::save(const std::string& path) const {
  if (auto* res = dynamic_cast<const ResidualCodecIndex*>(index_.get()))
    res->save(path);
  else
    faiss_write_file(*index_, path);
}

void train_token_codec(TokenCodec& codec, const std::vector<TokenStates>& toks, size_t dim, size_t budget) {
  size_t total = 0;
  for (const auto& t : toks) total += t.length;
  const size_t stride = std::max<size_t>(1, (total + budget - 1) / budget);
  std::vector<float> sample;
  size_t row = 0;
  for (const auto& t : toks)
    for (size_t r = 0; r < t.length; ++r, ++row)
      if (row % stride == 0) sample.insert(sample.end(), t.values.begin() + r * dim, t.values.begin() + (r + 1) * dim);
  log_info("training token codec " + codec.factory() + " on " + std::to_string(sample.size() / dim) + " token states");
  codec.train(sample.size() / dim, sample.data());
}

}  // namespace sieve::index
