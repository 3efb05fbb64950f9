// FAISS glue shared by the vector index and the token codec: serialisation and error mapping.
#pragma once

#include <faiss/Index.h>
#include <faiss/impl/FaissException.h>

#include <memory>
#include <string>

#include "sieve/error.h"

namespace sieve::index {

/// Runs `fn`, turning FAISS's exceptions into sieve::Error prefixed with `what`.
template <class Fn>
auto faiss_call(const std::string& what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const faiss::FaissException& e) {
    SIEVE_THROW(what << ": " << e.msg);
  }
}

/// Reads a FAISS index file; throws sieve::Error naming the file when it does not parse.
std::unique_ptr<faiss::Index> faiss_read_file(const std::string& path);
/// Writes a FAISS index file atomically (temp file, fsync, rename), without an in-memory copy.
void faiss_write_file(const faiss::Index& index, const std::string& path);
/// Builds an index from a factory string under inner product; sieve::Error on a bad string.
std::unique_ptr<faiss::Index> faiss_from_factory(const std::string& factory, size_t dim);

}  // namespace sieve::index
