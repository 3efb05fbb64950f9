// What python/src/module.cpp and its companions (index_bindings.cpp, serve_bindings.cpp) share:
// NumPy hand-over, Ctrl-C checks, the Index wrapper and the conversions of searches and reports.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sieve/index.h"
#include "sieve/pipeline.h"

namespace sieve_py {

namespace py = pybind11;
using namespace sieve;

// A NumPy array that owns `v` (no copy): the buffer is freed when the array is.
template <class T>
py::array_t<T> take(std::vector<T>&& v, std::vector<py::ssize_t> shape) {
  auto* owner = new std::vector<T>(std::move(v));
  py::capsule free_when_done(owner, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(shape, owner->data(), free_when_done);
}

// Raises KeyboardInterrupt (or whatever a signal handler raised) between chunks; GIL held.
inline void check_signals() {
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

inline py::object none_if_nan(double v) { return std::isnan(v) ? py::object(py::none()) : py::object(py::float_(v)); }

// An index with the search defaults its model folder recommends. Opened with its encoder, it is
// an IndexWriter's (add() appends and swaps in a new snapshot, one add at a time); opened without,
// the first add() makes the writer (loading the encoder).
struct PyIndex {
  std::string path, model;
  Precision precision = Precision::Fp32;
  std::shared_ptr<const Index> index;   // without a writer
  std::unique_ptr<IndexWriter> writer;  // once there is one
  SearchRecommendation rec;
  mutable std::mutex mu;
  std::shared_ptr<const Index> snapshot() const {
    std::lock_guard<std::mutex> lock(mu);
    return writer ? writer->snapshot() : index;
  }
  // Called with the GIL released.
  IndexWriter& writer_for_add() {
    std::lock_guard<std::mutex> lock(mu);
    if (!writer) {
      IndexOpenOptions oo;
      oo.model_dir = model;
      oo.encoder.precision = precision;
      writer = std::make_unique<IndexWriter>(path, oo);
      index.reset();
    }
    return *writer;
  }
};

// Search parameters from Python's arguments (ValueError for a bad k or mode; sieve.Error naming
// the place of a bad filter).
SearchParams search_params(size_t k, const std::string& mode, const SearchRecommendation& rec,
                           const std::string& filter = "");
// A hit with hit_json's keys (HitKeys), plus "doc" (the row number) and None where JSON omits.
py::dict hit_dict(const Hit& h, size_t rank);
py::dict report_dict(const BuildReport& r);
py::dict compact_dict(const CompactReport& r);

void bind_index(py::module_& m);  // python/src/index_bindings.cpp

}  // namespace sieve_py

void bind_serving(pybind11::module_& m);  // python/src/serve_bindings.cpp
void bind_cache(pybind11::module_& m);  // python/src/cache_bindings.cpp
