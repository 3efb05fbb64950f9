#include "index/faiss_io.h"

#include <faiss/index_factory.h>
#include <faiss/index_io.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace sieve::index {

std::unique_ptr<faiss::Index> faiss_read_file(const std::string& path) {
  std::unique_ptr<faiss::Index> idx;
  try {
    idx.reset(faiss::read_index(path.c_str()));
  } catch (const std::exception& e) {  // FAISS throws FaissException, std::bad_alloc on junk sizes
    SIEVE_THROW("'" << path << "' is not a readable FAISS index (damaged?): " << e.what());
  }
  return idx;
}

void faiss_write_file(const faiss::Index& index, const std::string& path) {
  std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  SIEVE_THROW_IF_NOT(f != nullptr, "cannot create '" << tmp << "': " << std::strerror(errno));
  try {
    faiss_call("cannot write '" + tmp + "'", [&] { faiss::write_index(&index, f); });
  } catch (...) {
    std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
  bool ok = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  ok = std::fclose(f) == 0 && ok;
  SIEVE_THROW_IF_NOT(ok && std::rename(tmp.c_str(), path.c_str()) == 0,
                     "cannot write '" << path << "': " << std::strerror(errno));
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
