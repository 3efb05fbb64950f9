// sieve._sieve: the Python binding over the C++ library (NumPy in and out). The Python-facing API
// and its docstrings are in python/sieve/__init__.py; this module holds the thin wrappers. Long
// calls release the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "sieve/encoder.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "sieve/model.h"
#include "sieve/pipeline.h"
#include "sieve/verify.h"

namespace py = pybind11;
using namespace sieve;

namespace {

py::array_t<float> matrix(const float* data, size_t rows, size_t cols) {
  py::array_t<float> a({rows, cols});
  if (rows * cols) std::memcpy(a.mutable_data(), data, rows * cols * sizeof(float));
  return a;
}

// pooled [n, dim] (normalised or not) and, when asked, the token states of each text.
py::object encode(const Encoder& enc, const std::vector<std::string>& texts, size_t batch_size, bool normalize,
                  const std::string& output) {
  if (output != "pooled" && output != "tokens" && output != "both")
    throw py::value_error("output must be 'pooled', 'tokens' or 'both'");
  if (batch_size == 0) throw py::value_error("batch_size must be positive");
  EncodeCall call;
  call.batch_size = batch_size;
  call.token_states = output != "pooled" || !normalize;
  Embeddings e;
  {
    py::gil_scoped_release release;
    e = enc.encode(texts, call);
    if (!normalize)
      for (size_t i = 0; i < texts.size(); ++i) pool_states(e.tokens[i], e.dim, enc.pooling(), &e.pooled[i * e.dim]);
  }
  py::array_t<float> pooled = matrix(e.pooled.data(), texts.size(), e.dim);
  if (output == "pooled") return pooled;
  py::list tokens;
  for (const auto& t : e.tokens) tokens.append(matrix(t.values.data(), t.length, e.dim));
  if (output == "tokens") return tokens;
  return py::make_tuple(pooled, tokens);
}

SearchParams search_params(size_t k, const std::string& mode, const SearchRecommendation& rec) {
  if (k == 0) throw py::value_error("k must be positive");
  SearchParams p;
  p.k = k;
  p.mode = mode.empty() ? rec.mode : search_mode_from_name(mode);
  p.fusion = rec.fusion;
  p.rrf_k = rec.rrf_k;
  p.dense_weight = rec.dense_weight;
  return p;
}

// An index with the search defaults its model folder recommends.
struct PyIndex {
  std::unique_ptr<Index> index;
  SearchRecommendation rec;
};

// A verifier with the encoder that makes its token states.
struct PyVerifier {
  std::unique_ptr<Encoder> encoder;
  std::unique_ptr<Verifier> verifier;
};

}  // namespace

PYBIND11_MODULE(_sieve, m) {
  m.doc() = "sieve's C++ library (use the `sieve` package)";
  static py::exception<Error> error(m, "Error");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      error(e.what());
    }
  });

  py::class_<Encoder, std::shared_ptr<Encoder>>(m, "Encoder")
      .def_static(
          "load",
          [](const std::string& path, const std::string& device, int threads) {
            EncoderOptions eo;
            eo.device = device;
            eo.threads = threads;
            std::string dir = resolve_model_dir(path);
            py::gil_scoped_release release;
            return std::shared_ptr<Encoder>(Encoder::load(dir, eo));
          },
          py::arg("path") = "", py::arg("device") = "cpu", py::arg("threads") = 0)
      .def_property_readonly("dim", &Encoder::dim)
      .def_property_readonly("max_length", &Encoder::max_length)
      .def_property_readonly("path", [](const Encoder& e) { return e.info().dir; })
      .def("encode", &encode, py::arg("texts"), py::arg("batch_size") = 32, py::arg("normalize") = true,
           py::arg("output") = "pooled")
      .def("tokenize", [](const Encoder& e, const std::vector<std::string>& texts) {
        py::list out;
        EncodeOptions eo;
        eo.max_length = e.max_length();
        for (const auto& t : texts) {
          Encoding en = e.tokenizer().encode(t, eo);
          py::list offs;
          for (auto& [b, f] : en.offsets) offs.append(py::make_tuple(b, f));
          py::dict d;
          d["ids"] = en.ids;
          d["tokens"] = en.tokens;
          d["offsets"] = offs;
          out.append(d);
        }
        return out;
      });

  py::class_<PyIndex>(m, "Index")
      .def_static(
          "open",
          [](const std::string& path, const std::string& model, bool encoder) {
            IndexOpenOptions oo;
            oo.model_dir = model;
            oo.load_encoder = encoder;
            auto p = std::make_unique<PyIndex>();
            py::gil_scoped_release release;
            p->index = Index::open(path, oo);
            p->rec = recommended_search_for_index(path, model);
            return p;
          },
          py::arg("path"), py::arg("model") = "", py::arg("encoder") = true)
      .def("__len__", [](const PyIndex& i) { return i.index->size(); })
      .def("search",
           [](const PyIndex& i, const std::vector<std::string>& queries, size_t k, const std::string& mode) {
             SearchParams p = search_params(k, mode, i.rec);
             std::vector<SearchResult> res;
             {
               py::gil_scoped_release release;
               res = i.index->search_batch(queries, p);
             }
             py::list out;
             for (const auto& r : res) {
               py::list hits;
               for (size_t j = 0; j < r.hits.size(); ++j) {
                 const Hit& h = r.hits[j];
                 py::dict d;
                 d["rank"] = j + 1;
                 d["id"] = h.id;
                 d["doc"] = h.doc;
                 d["score"] = h.score;
                 d["dense"] = std::isnan(h.dense_score) ? py::object(py::none()) : py::object(py::float_(h.dense_score));
                 d["bm25"] = std::isnan(h.bm25_score) ? py::object(py::none()) : py::object(py::float_(h.bm25_score));
                 hits.append(d);
               }
               out.append(hits);
             }
             return out;
           },
           py::arg("queries"), py::arg("k") = 10, py::arg("mode") = "")
      .def("search_arrays",
           [](const PyIndex& i, const std::vector<std::string>& queries, size_t k, const std::string& mode) {
             SearchParams p = search_params(k, mode, i.rec);
             std::vector<SearchResult> res;
             {
               py::gil_scoped_release release;
               res = i.index->search_batch(queries, p);
             }
             py::array_t<float> D({queries.size(), k});
             py::array_t<int64_t> I({queries.size(), k});
             auto d = D.mutable_unchecked<2>();
             auto ix = I.mutable_unchecked<2>();
             for (size_t q = 0; q < res.size(); ++q)
               for (size_t j = 0; j < k; ++j) {
                 const bool has = j < res[q].hits.size();
                 d(q, j) = has ? static_cast<float>(res[q].hits[j].score) : -std::numeric_limits<float>::infinity();
                 ix(q, j) = has ? static_cast<int64_t>(res[q].hits[j].doc) : -1;
               }
             return py::make_tuple(D, I);
           },
           py::arg("queries"), py::arg("k") = 10, py::arg("mode") = "")
      .def("document",
           [](const PyIndex& i, const std::string& id) {
             const int64_t doc = i.index->find(id);
             if (doc < 0) throw py::key_error(id);
             Document d = i.index->document(static_cast<uint32_t>(doc));
             py::dict out;
             out["_id"] = d.id;
             out["title"] = d.title;
             out["text"] = d.text;
             return out;
           })
      .def("tokens", [](const PyIndex& i, const std::string& id) {
        const int64_t doc = i.index->find(id);
        if (doc < 0) throw py::key_error(id);
        TokenStates t = i.index->tokens(static_cast<uint32_t>(doc));
        return matrix(t.values.data(), t.length, i.index->stats().dim);
      });

  py::class_<PyVerifier>(m, "Verifier")
      .def_static(
          "load",
          [](const std::string& name, const std::string& model, int threads) {
            auto v = std::make_unique<PyVerifier>();
            const std::string dir = resolve_model_dir(model);
            const std::string file = name.empty() || name == "default" ? default_verifier(model, "F1") : name;
            EncoderOptions eo;
            eo.threads = threads;
            py::gil_scoped_release release;
            v->encoder = Encoder::load(dir, eo);
            v->verifier = Verifier::load(file, model_identity(dir));
            return v;
          },
          py::arg("path_or_name") = "default", py::arg("model") = "", py::arg("threads") = 0)
      .def_property_readonly("kind", [](const PyVerifier& v) { return std::string(verifier_kind_name(v.verifier->config().kind)); })
      .def_property_readonly("threshold", [](const PyVerifier& v) -> py::object {
        const double t = v.verifier->config().threshold;
        return std::isnan(t) ? py::object(py::none()) : py::object(py::float_(t));
      })
      .def("score", [](const PyVerifier& v, const std::vector<std::pair<std::string, std::string>>& pairs) {
        std::vector<float> out(pairs.size());
        {
          py::gil_scoped_release release;
          std::vector<std::string> texts;
          for (const auto& [q, c] : pairs) {
            texts.push_back(q);
            texts.push_back(c);
          }
          EncodeCall call;
          call.token_states = true;
          out = score_pairs(*v.verifier, v.encoder->encode(texts, call).tokens);
        }
        py::array_t<float> a(out.size());
        if (!out.empty()) std::memcpy(a.mutable_data(), out.data(), out.size() * sizeof(float));
        return a;
      });
}
