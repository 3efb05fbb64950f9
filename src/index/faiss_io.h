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

/// Serialises a FAISS index to bytes.
std::string faiss_to_bytes(const faiss::Index& index);
/// Reads a FAISS index from bytes; throws sieve::Error naming `what` when they do not parse.
std::unique_ptr<faiss::Index> faiss_from_bytes(const std::string& bytes, const std::string& what);
/// Builds an index from a factory string under inner product; sieve::Error on a bad string.
std::unique_ptr<faiss::Index> faiss_from_factory(const std::string& factory, size_t dim);

}  // namespace sieve::index
