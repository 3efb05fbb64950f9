#include "index/vector_index.h"
#include "core/multiversion.h"

#include <faiss/IndexFlat.h>
#include <faiss/IndexHNSW.h>
#include <faiss/utils/distances.h>
#include <faiss/IndexIVF.h>
#include <faiss/IndexPreTransform.h>

#include <faiss/impl/DistanceComputer.h>
#include <faiss/impl/IDSelector.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <typeinfo>

#include "core/file_util.h"
#include "core/vec_math.h"
#include "index/faiss_io.h"
#include "index/filtered_hnsw.h"

namespace sieve::index {
namespace {

// Finds the HNSW or IVF layer inside wrappers such as a pre-transform (OPQ, PCA).
faiss::Index* core_of(faiss::Index* idx) {
  while (auto* pt = dynamic_cast<faiss::IndexPreTransform*>(idx)) idx = pt->index;
  return idx;
}

// Inner product of two keys for HNSW's distance: 32 running sums (two AVX-512 registers, four
// AVX2 ones, eight SSE ones), so the adds do not wait on one another; every clone sums in the same
// order, so all give the same bits. Compiled for the x86-64 baseline, x86-64-v3 (AVX2, FMA) and
// x86-64-v4 (AVX-512: 11 % less HNSW32 construction time on 153k WordNet keys of 384 dimensions,
// bench/bench_hnsw.cpp); the library's CPU probe picks the one this CPU runs (core/multiversion.h).
SIEVE_VARIANT_BODY float key_dot_body(const float* x, const float* y, size_t n) {
  float acc[32] = {};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (size_t k = 0; k < 32; ++k) acc[k] += x[i + k] * y[i + k];
  for (size_t k = 0; k < 16; ++k) acc[k] += acc[k + 16];
  for (size_t k = 0; k < 8; ++k) acc[k] += acc[k + 8];
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < n; ++i) s += x[i] * y[i];
  return s;
}
SIEVE_VARIANTS_ARCH(float, key_dot, (const float* x, const float* y, size_t n), (x, y, n))

// HNSW's flat storage with a vectorised distance. Debian's FAISS is built for the generic x86-64
// target, where fvec_inner_product is its scalar reference loop (one dependent add per component);
// HNSW construction and search spend most of their time there. This is the same IndexFlat (FAISS
// writes it as one, so the file format does not change) whose distance computer uses key_dot.
struct FastFlatIP final : faiss::IndexFlat {
  explicit FastFlatIP(faiss::Index::idx_t d) : faiss::IndexFlat(d, faiss::METRIC_INNER_PRODUCT) {}

  struct Distance final : faiss::FlatCodesDistanceComputer {
    explicit Distance(const FastFlatIP& s)
        : faiss::FlatCodesDistanceComputer(s.codes.data(), s.code_size), base(s.get_xb()), dim(s.d) {}
    void set_query(const float* x) override { query = x; }
    float distance_to_code(const uint8_t* code) override {
      return key_dot(query, reinterpret_cast<const float*>(code), dim);
    }
    float symmetric_dis(faiss::Index::idx_t i, faiss::Index::idx_t j) override {
      return key_dot(base + i * dim, base + j * dim, dim);
    }
    const float* base;
    size_t dim;
    const float* query = nullptr;
  };

  faiss::FlatCodesDistanceComputer* get_FlatCodesDistanceComputer() const override { return new Distance(*this); }
};

// Gives an HNSW index over exact inner-product storage the FastFlatIP storage (the vectors move,
// nothing is copied). Other indexes are left as they are.
void use_fast_storage(faiss::Index* index) {
  auto* h = dynamic_cast<faiss::IndexHNSW*>(core_of(index));
  if (h == nullptr || h->storage == nullptr || !h->own_fields) return;
  const faiss::Index& st = *h->storage;
  if (typeid(st) != typeid(faiss::IndexFlat) && typeid(st) != typeid(faiss::IndexFlatIP)) return;
  auto* flat = static_cast<faiss::IndexFlat*>(h->storage);
  if (flat->metric_type != faiss::METRIC_INNER_PRODUCT) return;
  auto fast = std::make_unique<FastFlatIP>(flat->d);
  fast->codes = std::move(flat->codes);
  fast->ntotal = flat->ntotal;
  delete h->storage;
  h->storage = fast.release();
}

}  // namespace

// key_dot, as HNSW's distance (FastFlatIP) computes it: a scanned or rescored key scores the bits
// the graph search gives it (Debian's FAISS's fvec_inner_product is its scalar reference loop).
float inner_product(const float* x, const float* y, size_t dim) { return key_dot(x, y, dim); }

std::string resolve_vector_factory(const std::string& factory, size_t n, size_t hnsw_threshold) {
  if (factory != "auto") return factory;
  return n < hnsw_threshold ? "Flat" : "HNSW32";
}

FaissVectorIndex::FaissVectorIndex(const std::string& factory, size_t dim, int ef_construction)
    : index_(faiss_from_factory(factory, dim)), factory_(factory) {
  use_fast_storage(index_.get());
  if (auto* h = dynamic_cast<faiss::IndexHNSW*>(core_of(index_.get()))) h->hnsw.efConstruction = ef_construction;
}

FaissVectorIndex::FaissVectorIndex(const std::string& path, size_t dim) : index_(faiss_read_file(path)) {
  SIEVE_THROW_IF_NOT(static_cast<size_t>(index_->d) == dim,
                     "'" << path << "' holds vectors of dimension " << index_->d << ", expected " << dim);
  SIEVE_THROW_IF_NOT(index_->metric_type == faiss::METRIC_INNER_PRODUCT,
                     "'" << path << "' does not use inner product (not a sieve vector index)");
  use_fast_storage(index_.get());
}

FaissVectorIndex::~FaissVectorIndex() = default;

size_t FaissVectorIndex::dim() const { return static_cast<size_t>(index_->d); }
size_t FaissVectorIndex::size() const { return static_cast<size_t>(index_->ntotal); }
bool FaissVectorIndex::needs_training() const { return !index_->is_trained; }
bool FaissVectorIndex::is_graph() const { return dynamic_cast<faiss::IndexHNSW*>(core_of(index_.get())) != nullptr; }

void FaissVectorIndex::train(size_t n, const float* x) {
  if (index_->is_trained) return;
  faiss_call("cannot train vector index '" + factory_ + "' on " + std::to_string(n) +
                 " vectors (IVF needs at least as many vectors as lists; choose fewer lists or Flat)",
             [&] { index_->train(static_cast<int64_t>(n), x); });
  if (auto* ivf = dynamic_cast<faiss::IndexIVF*>(core_of(index_.get()))) {
    // FAISS starts at nprobe 1; probe about 1/16 of the lists by default for usable recall.
    ivf->nprobe = std::max<size_t>(1, std::min<size_t>(ivf->nlist, std::max<size_t>(8, ivf->nlist / 16)));
  }
}

void FaissVectorIndex::add(size_t n, const float* x) {
  faiss_call("cannot add to vector index '" + factory_ + "'", [&] { index_->add(static_cast<int64_t>(n), x); });
}

namespace {

// Exact inner-product search over `count` rows: the top k of each query, best first, ties by the
// lower label; missing places are (-1, -inf) as FAISS leaves them.
void exact_inner_product(const float* base, size_t count, size_t dim, const float* queries, size_t n, size_t k,
                         int64_t* labels, float* scores) {
  std::vector<std::pair<float, int64_t>> all(count);
  auto better = [](const std::pair<float, int64_t>& a, const std::pair<float, int64_t>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  for (size_t q = 0; q < n; ++q) {
    const float* x = queries + q * dim;
    for (size_t i = 0; i < count; ++i) all[i] = {dot8(x, base + i * dim, dim), static_cast<int64_t>(i)};
    const size_t top = std::min(k, count);
    std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(top), all.end(), better);
    for (size_t j = 0; j < k; ++j) {
      labels[q * k + j] = j < top ? all[j].second : -1;
      scores[q * k + j] = j < top ? all[j].first : -std::numeric_limits<float>::infinity();
    }
  }
}

}  // namespace

void FaissVectorIndex::search(size_t n, const float* queries, const VectorSearchParams& p, int64_t* labels,
                              float* scores) const {
  // A few queries against a Flat index: FAISS (Debian's generic build) scores them with its scalar
  // reference loop below distance_compute_blas_threshold (20 queries), ~1 ms for one query over
  // 5,000 keys of 256 dimensions; the vectorised loop here takes a fifth of that. Larger batches
  // stay with FAISS, which hands them to BLAS.
  std::unique_ptr<faiss::IDSelectorBitmap> sel;
  if (p.allowed != nullptr) sel = std::make_unique<faiss::IDSelectorBitmap>(p.allowed_bits, p.allowed);
  if (const auto* flat = dynamic_cast<const faiss::IndexFlat*>(index_.get());
      sel == nullptr && flat != nullptr && flat->metric_type == faiss::METRIC_INNER_PRODUCT &&
      n < static_cast<size_t>(faiss::distance_compute_blas_threshold)) {
    exact_inner_product(flat->get_xb(), static_cast<size_t>(flat->ntotal), static_cast<size_t>(flat->d), queries, n,
                        p.k, labels, scores);
    return;
  }
  faiss::Index* core = core_of(index_.get());
  const int base_ef = p.ef_search > 0 ? p.ef_search : static_cast<int>(std::min<size_t>(std::max<size_t>(64, p.k), INT32_MAX));
  if (auto* h = dynamic_cast<faiss::IndexHNSW*>(core); h != nullptr && sel != nullptr && core == index_.get()) {
    if (const float* keys = stored_key(0)) {
      // Counting only allowed keys, ef 2k (at least 20) held recall@10 at 0.97 to 0.99 from 50 %
      // down to 6 % of 100,000 keys passing, as fast as hnswlib's ef 16 (bench/bench_filter.py).
      const size_t ef = p.ef_search > 0 ? static_cast<size_t>(p.ef_search) : std::max<size_t>(20, 2 * p.k);
      for (size_t q = 0; q < n; ++q)
        filtered_hnsw_search(h->hnsw, keys, dim(), queries + q * dim(), p.allowed, p.allowed_bits, ef, p.k,
                             labels + q * p.k, scores + q * p.k);
      return;
    }
  }
  if (auto* h = dynamic_cast<faiss::IndexHNSW*>(core)) {
    // FAISS 1.7.3 ignores SearchParametersHNSW::efSearch (measured: recall did not move with it),
    // so the per-call value is set on the index under a lock; callers wanting the value in place
    // search concurrently under a shared lock, one wanting another value sets it and searches
    // under the exclusive lock (so it cannot be changed under it).
    int ef = base_ef;
    if (sel != nullptr && p.allowed_count > 0 && p.allowed_count < size())
      ef = static_cast<int>(std::min(
          static_cast<double>(ef) * std::pow(static_cast<double>(size()) / static_cast<double>(p.allowed_count), 0.6),
          16384.0));
    faiss::SearchParametersHNSW hp;
    hp.efSearch = ef;
    hp.sel = sel.get();
    faiss::SearchParametersPreTransform hpp;
    faiss::SearchParameters* hparams = nullptr;
    if (sel) {
      hparams = &hp;
      if (core != index_.get()) {
        hpp.index_params = &hp;
        hparams = &hpp;
      }
    }
    auto run = [&] {
      faiss_call("vector search failed", [&] {
        index_->search(static_cast<int64_t>(n), queries, static_cast<int64_t>(p.k), scores, labels, hparams);
      });
    };
    {
      std::shared_lock<std::shared_mutex> lock(ef_mu_);
      if (h->hnsw.efSearch == ef) return run();
    }
    std::unique_lock<std::shared_mutex> lock(ef_mu_);
    h->hnsw.efSearch = ef;
    return run();
  }
  faiss::SearchParametersIVF ip;
  faiss::SearchParameters plain;
  faiss::SearchParameters* params = nullptr;
  if (auto* ivf = dynamic_cast<faiss::IndexIVF*>(core)) {
    ip.nprobe = p.nprobe > 0 ? static_cast<size_t>(p.nprobe) : ivf->nprobe;
    ip.sel = sel.get();
    params = &ip;
  } else if (sel) {
    plain.sel = sel.get();
    params = &plain;
  }
  faiss::SearchParametersPreTransform pp;
  if (params != nullptr && core != index_.get()) {
    pp.index_params = params;
    params = &pp;
  }
  faiss_call("vector search failed", [&] {
    index_->search(static_cast<int64_t>(n), queries, static_cast<int64_t>(p.k), scores, labels, params);
  });
}

bool FaissVectorIndex::holds_exact_keys() const {
  const faiss::Index* storage = index_.get();
  if (const auto* h = dynamic_cast<const faiss::IndexHNSW*>(storage)) storage = h->storage;
  const auto* flat = dynamic_cast<const faiss::IndexFlat*>(storage);
  return flat != nullptr && flat->metric_type == faiss::METRIC_INNER_PRODUCT;
}

const float* FaissVectorIndex::stored_key(size_t i) const {
  const faiss::Index* storage = index_.get();
  if (const auto* h = dynamic_cast<const faiss::IndexHNSW*>(storage)) storage = h->storage;
  const auto* flat = dynamic_cast<const faiss::IndexFlat*>(storage);
  if (flat == nullptr || i >= static_cast<size_t>(flat->ntotal)) return nullptr;
  return flat->get_xb() + i * static_cast<size_t>(flat->d);
}

void FaissVectorIndex::reconstruct(size_t i, float* out) const {
  SIEVE_THROW_IF_NOT(i < size(), "key " << i << " is out of range (" << size() << " vectors)");
  faiss_call("cannot read key " + std::to_string(i) + " from the vector index '" + factory_ + "'",
             [&] { index_->reconstruct(static_cast<int64_t>(i), out); });
}

void FaissVectorIndex::save(const std::string& path) const { faiss_write_file(*index_, path); }

}  // namespace sieve::index
