// sieve._sieve.Cache: the library's SemanticCache (sieve/cache.h) for sieve.Cache
// (python/sieve/cache.py). Conversions only: scopes are dicts of strings, lookups dicts.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "sieve/cache.h"

using namespace sieve_py;

namespace {

py::dict lookup_dict(const sieve::CacheLookup& r) {
  py::dict d;
  d["hit"] = r.hit;
  d["id"] = r.hit ? py::object(py::str(r.id)) : py::object(py::none());
  d["prompt"] = r.hit ? py::object(py::str(r.prompt)) : py::object(py::none());
  d["answer"] = r.hit ? py::object(py::str(r.answer)) : py::object(py::none());
  d["score"] = none_if_nan(r.score);
  d["stage1_score"] = none_if_nan(r.stage1_score);
  d["threshold"] = none_if_nan(r.threshold);
  d["candidates"] = r.candidates;
  return d;
}

}  // namespace

void bind_cache(py::module_& m) {
  py::class_<sieve::SemanticCache>(m, "Cache")
      .def(py::init([](const std::string& path, const std::string& model, const std::string& verifier,
                       py::object threshold, size_t candidates, std::vector<std::string> scope_fields, int threads) {
             sieve::CacheOptions o;
             o.model_dir = model;
             o.verifier = verifier;
             if (!threshold.is_none()) o.threshold = threshold.cast<double>();
             o.candidates = candidates;
             if (!scope_fields.empty()) o.scope_fields = std::move(scope_fields);
             o.encoder.threads = threads;
             py::gil_scoped_release nogil;
             return sieve::SemanticCache::open(path, o);
           }),
           py::arg("path"), py::arg("model") = "", py::arg("verifier") = "default", py::arg("threshold") = py::none(),
           py::arg("candidates") = 8, py::arg("scope_fields") = std::vector<std::string>{}, py::arg("threads") = 0)
      .def(
          "store",
          [](sieve::SemanticCache& c, const std::string& prompt, const std::string& answer,
             const sieve::CacheScope& scope, double ttl_s) {
            py::gil_scoped_release nogil;
            return c.store(prompt, answer, scope, ttl_s);
          },
          py::arg("prompt"), py::arg("answer"), py::arg("scope") = sieve::CacheScope{}, py::arg("ttl_s") = 0.0)
      .def(
          "lookup",
          [](const sieve::SemanticCache& c, const std::string& prompt, const sieve::CacheScope& scope) {
            sieve::CacheLookup r;
            {
              py::gil_scoped_release nogil;
              r = c.lookup(prompt, scope);
            }
            return lookup_dict(r);
          },
          py::arg("prompt"), py::arg("scope") = sieve::CacheScope{})
      .def(
          "get",
          [](const sieve::SemanticCache& c, const std::string& id) -> py::object {
            sieve::CacheEntry e;
            if (!c.get(id, &e)) return py::none();
            py::dict d;
            d["id"] = e.id;
            d["prompt"] = e.prompt;
            d["answer"] = e.answer;
            d["scope"] = e.scope;
            d["expires_at"] = e.expires_at > 0 ? py::object(py::float_(e.expires_at)) : py::object(py::none());
            return d;
          },
          py::arg("id"))
      .def(
          "invalidate",
          [](sieve::SemanticCache& c, const std::vector<std::string>& ids) {
            py::gil_scoped_release nogil;
            return c.invalidate(ids);
          },
          py::arg("ids"))
      .def(
          "invalidate_scope",
          [](sieve::SemanticCache& c, const sieve::CacheScope& scope) {
            py::gil_scoped_release nogil;
            return c.invalidate_scope(scope);
          },
          py::arg("scope"))
      .def("compact",
           [](sieve::SemanticCache& c) {
             sieve::CompactReport r;
             {
               py::gil_scoped_release nogil;
               r = c.compact();
             }
             return compact_dict(r);
           })
      .def("__len__", &sieve::SemanticCache::size)
      .def_property_readonly("dead", &sieve::SemanticCache::dead)
      .def_property_readonly("threshold", &sieve::SemanticCache::threshold);
  m.def("cache_entry_id", &sieve::cache_entry_id, py::arg("prompt"), py::arg("scope") = sieve::CacheScope{});
}
