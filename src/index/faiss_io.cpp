#include "index/faiss_io.h"

#include <faiss/impl/io.h>
#include <faiss/index_factory.h>
#include <faiss/index_io.h>

namespace sieve::index {

std::string faiss_to_bytes(const faiss::Index& index) {
  faiss::VectorIOWriter w;
  faiss_call("cannot serialise the FAISS index", [&] { faiss::write_index(&index, &w); });
  return std::string(w.data.begin(), w.data.end());
}

std::unique_ptr<faiss::Index> faiss_from_bytes(const std::string& bytes, const std::string& what) {
  faiss::VectorIOReader r;
  r.data.assign(bytes.begin(), bytes.end());
  std::unique_ptr<faiss::Index> idx;
  try {
    idx.reset(faiss::read_index(&r));
  } catch (const std::exception& e) {  // FAISS throws FaissException, std::bad_alloc on junk sizes
    SIEVE_THROW(what << " is not a readable FAISS index (damaged?): " << e.what());
  }
  SIEVE_THROW_IF_NOT(r.rp == r.data.size(), what << " has trailing bytes (damaged)");
  return idx;
}

std::unique_ptr<faiss::Index> faiss_from_factory(const std::string& factory, size_t dim) {
  std::unique_ptr<faiss::Index> idx;
  try {
    idx.reset(faiss::index_factory(static_cast<int>(dim), factory.c_str(), faiss::METRIC_INNER_PRODUCT));
  } catch (const std::exception& e) {
    SIEVE_THROW("invalid FAISS factory string '" << factory << "' for dimension " << dim << ": " << e.what());
  }
  return idx;
}

}  // namespace sieve::index
