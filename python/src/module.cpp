// sieve._sieve: the Python binding over the C++ library (NumPy in and out). The Python-facing API
// and its docstrings are in python/sieve/*.py; this module holds the thin wrappers: argument and
// array conversion only. Long calls release the GIL and look for Ctrl-C between chunks of work;
// large results are handed to NumPy without a copy (the array owns the library's buffer).
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/log.h"
#include "eval/metrics.h"
#include "nearmiss/generate.h"
#include "nearmiss/lexicon.h"
#include "sieve/encoder.h"
#include "sieve/error.h"
#include "sieve/filter.h"
#include "sieve/index.h"
#include "sieve/model.h"
#include "sieve/pipeline.h"
#include "sieve/verify.h"

namespace py = pybind11;
using namespace sieve;

void bind_serving(py::module_& m);  // python/src/serve_bindings.cpp

namespace {

// A NumPy array that owns `v` (no copy): the buffer is freed when the array is.
template <class T>
py::array_t<T> take(std::vector<T>&& v, std::vector<py::ssize_t> shape) {
  auto* owner = new std::vector<T>(std::move(v));
  py::capsule free_when_done(owner, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(shape, owner->data(), free_when_done);
}

// Raises KeyboardInterrupt (or whatever a signal handler raised) between chunks; GIL held.
void check_signals() {
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

py::object none_if_nan(double v) { return std::isnan(v) ? py::object(py::none()) : py::object(py::float_(v)); }

// Encodes `texts` in one library call (sorted by length over all of them, as `sieve embed` does)
// with the GIL released; between forward passes it takes the GIL to look for Ctrl-C and report
// progress. pooled [n, dim] (unit rows when `normalize`, else the raw pool) and, when asked, the
// token states of each text, all handed to NumPy without a copy.
py::object encode(const Encoder& enc, const std::vector<std::string>& texts, size_t batch_size, bool normalize,
                  const std::string& output, const std::function<void(size_t, size_t)>& progress) {
  if (output != "pooled" && output != "tokens" && output != "both")
    throw py::value_error("output must be 'pooled', 'tokens' or 'both'");
  if (batch_size == 0) throw py::value_error("batch_size must be positive");
  const size_t n = texts.size(), dim = enc.dim();
  EncodeCall call;
  call.batch_size = batch_size;
  call.token_states = output != "pooled" || !normalize;
  bool interrupted = false;
  call.progress = [&](size_t done, size_t total) {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      interrupted = true;  // the Python error stays set
      return false;
    }
    if (progress) progress(done, total);
    return true;
  };
  Embeddings e;
  try {
    py::gil_scoped_release release;
    e = enc.encode(texts, call);
    if (!normalize)
      for (size_t i = 0; i < n; ++i) pool_states(e.tokens[i], dim, enc.pooling(), &e.pooled[i * dim]);
  } catch (const Error&) {
    if (interrupted) throw py::error_already_set();
    throw;
  }
  if (n == 0 && progress) progress(0, 0);
  py::array_t<float> P = take(std::move(e.pooled), {static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(dim)});
  if (output == "pooled") return P;
  py::list T;
  for (auto& t : e.tokens) {
    const auto len = static_cast<py::ssize_t>(t.length);
    T.append(take(std::move(t.values), {len, static_cast<py::ssize_t>(dim)}));
  }
  if (output == "tokens") return T;
  return py::make_tuple(P, T);
}

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

// A verifier with the encoder that makes its token states.
struct PyVerifier {
  std::unique_ptr<Encoder> encoder;
  ResolvedVerifier verifier;
};

SearchParams search_params(size_t k, const std::string& mode, const SearchRecommendation& rec) {
  if (k == 0) throw py::value_error("k must be positive");
  SearchParams p;
  rec.apply(p);
  p.k = k;
  try {
    if (!mode.empty()) p.mode = search_mode_from_name(mode);
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
  return p;
}

// Searches in chunks of 256 queries (Ctrl-C between them), GIL released.
std::vector<SearchResult> search_all(const Index& ix, const std::vector<std::string>& queries, const SearchParams& p) {
  if (queries.size() == 1) {  // one query: Index::search itself, without the batch's set-up
    py::gil_scoped_release release;
    return {ix.search(queries[0], p)};
  }
  std::vector<SearchResult> out;
  out.reserve(queries.size());
  for (size_t at = 0; at < queries.size(); at += 256) {
    const size_t end = std::min(queries.size(), at + 256);
    {
      py::gil_scoped_release release;
      std::vector<std::string> part(queries.begin() + static_cast<std::ptrdiff_t>(at),
                                    queries.begin() + static_cast<std::ptrdiff_t>(end));
      for (auto& r : ix.search_batch(part, p)) out.push_back(std::move(r));
    }
    check_signals();
  }
  return out;
}

// A hit with hit_json's keys (HitKeys), plus "doc" (the row number) and None where JSON omits.
py::dict hit_dict(const Hit& h, size_t rank) {
  // The keys are made once (interned): building them per hit was a third of a search's overhead.
  static const py::str k_rank(HitKeys::rank), k_id(HitKeys::id), k_doc("doc"), k_score(HitKeys::score),
      k_dense(HitKeys::dense), k_bm25(HitKeys::bm25), k_dense_rank(HitKeys::dense_rank), k_bm25_rank(HitKeys::bm25_rank);
  py::dict d;
  d[k_rank] = rank;
  d[k_id] = h.id;
  d[k_doc] = h.doc;
  d[k_score] = h.score;
  d[k_dense] = none_if_nan(h.dense_score);
  d[k_bm25] = none_if_nan(h.bm25_score);
  d[k_dense_rank] = h.dense_rank > 0 ? py::object(py::int_(h.dense_rank)) : py::object(py::none());
  d[k_bm25_rank] = h.bm25_rank > 0 ? py::object(py::int_(h.bm25_rank)) : py::object(py::none());
  return d;
}

// {"_id" or "id", "title", "text"} dicts (any iterable) as documents; ValueError names the bad one.
std::vector<Document> documents_from(const py::iterable& items) {
  std::vector<Document> docs;
  size_t i = 0;
  for (py::handle item : items) {
    if (!py::isinstance<py::dict>(item))
      throw py::value_error("document " + std::to_string(i) + " is not a dict with \"_id\" and \"text\"");
    py::dict d = py::reinterpret_borrow<py::dict>(item);
    Document doc;
    py::object id = py::none();
    if (d.contains("_id"))
      id = d["_id"];
    else if (d.contains("id"))
      id = d["id"];
    if (id.is_none()) throw py::value_error("document " + std::to_string(i) + " has no \"_id\"");
    doc.id = py::str(id);
    if (doc.id.empty()) throw py::value_error("document " + std::to_string(i) + " has an empty \"_id\"");
    if (!d.contains("text") || !py::isinstance<py::str>(d["text"]))
      throw py::value_error("document " + std::to_string(i) + " ('" + doc.id + "') needs a \"text\" string");
    doc.text = d["text"].cast<std::string>();
    if (d.contains("title") && !d["title"].is_none()) doc.title = py::str(d["title"]);
    docs.push_back(std::move(doc));
    ++i;
  }
  return docs;
}

// Runs a build or add with the GIL released; Ctrl-C stops it after the chunk in progress.
template <class F>
BuildReport interruptible(IndexBuildOptions& opt, F&& run) {
  std::atomic<bool> interrupted{false};
  opt.interrupted = [&interrupted] {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) interrupted = true;  // the Python error stays set
    return interrupted.load();
  };
  try {
    py::gil_scoped_release release;
    return run();
  } catch (const Error&) {
    if (interrupted) throw py::error_already_set();
    throw;
  }
}

py::dict report_dict(const BuildReport& r) {
  py::dict d;
  d["documents"] = r.documents;
  d["added"] = r.added;
  d["resumed_from"] = r.resumed_from;
  d["truncated"] = r.truncated;
  d["encode_seconds"] = r.encode_seconds;
  d["validate_seconds"] = r.validate_seconds;
  d["store_seconds"] = r.store_seconds;
  d["lexical_seconds"] = r.lexical_seconds;
  d["vectors_seconds"] = r.vectors_seconds;
  d["total_seconds"] = r.total_seconds;
  d["note"] = r.note;
  return d;
}

std::unique_ptr<PyIndex> open_index(const std::string& path, const std::string& model, bool encoder,
                                    std::shared_ptr<const Encoder> share = nullptr,
                                    Precision precision = Precision::Fp32) {
  IndexOpenOptions oo;
  oo.model_dir = model;
  oo.encoder.precision = precision;
  oo.load_encoder = encoder;
  oo.encoder_instance = std::move(share);
  auto p = std::make_unique<PyIndex>();
  p->path = path;
  p->model = model;
  p->precision = precision;
  py::gil_scoped_release release;
  if (encoder) p->writer = std::make_unique<IndexWriter>(path, oo);
  else p->index = Index::open(path, oo);
  p->rec = recommended_search_for_index(path, model);
  return p;
}

// A run as {query: [doc ids, best first]} or {query: {doc: score}} (ranked as trec_eval does).
eval::Run run_from(const py::dict& run) {
  eval::Run r;
  for (auto [q, v] : run) {
    auto& entries = r[py::str(q)];
    if (py::isinstance<py::dict>(v)) {
      for (auto [doc, score] : py::reinterpret_borrow<py::dict>(v))
        entries.push_back({py::str(doc), score.cast<double>()});
    } else {
      const auto ids = v.cast<std::vector<std::string>>();
      for (size_t i = 0; i < ids.size(); ++i) entries.push_back({ids[i], static_cast<double>(ids.size() - i)});
    }
  }
  return eval::trec_eval_order(r);
}

const nearmiss::Lexicon& lexicon(const std::string& dir) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<nearmiss::Lexicon>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[dir];
  if (!slot) {
    SIEVE_THROW_IF_NOT(nearmiss::Lexicon::available(dir), "WordNet is not installed in '" << dir
                                                                                       << "' (apt install wordnet-base)");
    slot = nearmiss::Lexicon::load(dir);
  }
  return *slot;
}

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
          [](const std::string& path, const std::string& device, int threads, size_t max_length,
             const std::string& precision, const std::string& engine) {
            EncoderOptions eo;
            eo.device = device;
            eo.threads = threads;
            eo.max_length = max_length;
            eo.precision = precision_from_name(precision);
            eo.engine = engine_from_name(engine);
            std::string dir = resolve_model_dir(path);
            py::gil_scoped_release release;
            return std::shared_ptr<Encoder>(Encoder::load(dir, eo));
          },
          py::arg("path") = "", py::arg("device") = "cpu", py::arg("threads") = 0, py::arg("max_length") = 0,
          py::arg("precision") = "fp32", py::arg("engine") = "auto")
      .def_property_readonly("dim", &Encoder::dim)
      .def_property_readonly("max_length", &Encoder::max_length)
      .def_property_readonly("path", [](const Encoder& e) { return e.info().dir; })
      .def("encode", &encode, py::arg("texts"), py::arg("batch_size") = 32, py::arg("normalize") = true,
           py::arg("output") = "pooled", py::arg("progress") = nullptr)
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
          [](const std::string& path, const std::string& model, bool encoder, const std::string& precision) {
            return open_index(path, model, encoder, nullptr, precision_from_name(precision));
          },
          py::arg("path"), py::arg("model") = "", py::arg("encoder") = true, py::arg("precision") = "fp32")
      .def_static(
          "build",
          [](py::object corpus, const std::string& out, const std::string& model, const std::string& vector_factory,
             const std::string& token_codec, bool store_tokens, size_t batch_size, size_t chunk_docs, bool force,
             bool restart, int threads, const std::string& precision, size_t shards) {
            IndexBuildOptions opt;
            opt.vector_factory = vector_factory;
            opt.token_codec = token_codec;
            opt.store_tokens = store_tokens;
            opt.batch_size = batch_size;
            opt.chunk_docs = chunk_docs;
            opt.force = force;
            opt.restart = restart;
            if (batch_size == 0 || chunk_docs == 0) throw py::value_error("batch_size and chunk_docs must be positive");
            EncoderOptions eo;
            eo.threads = threads;
            eo.precision = precision_from_name(precision);
            const std::string dir = resolve_model_dir(model);
            BuildReport rep;
            if (shards == 0) throw py::value_error("shards must be positive");
            if (py::isinstance<py::str>(corpus) || py::hasattr(corpus, "__fspath__")) {
              const std::string path = py::str(py::module_::import("os").attr("fspath")(corpus));
              if (shards > 1)
                rep = interruptible(opt, [&] { return build_shard_set(dir, path, out, shards, opt, eo); });
              else
                rep = interruptible(opt, [&] { return build_index(dir, path, out, opt, eo); });
            } else {
              if (shards > 1) throw py::value_error("a shard set is built from a corpus file (shards > 1)");
              const std::vector<Document> docs = documents_from(corpus);
              if (docs.empty()) throw py::value_error("no documents to index");
              rep = interruptible(opt, [&] { return build_index_from_documents(dir, docs, out, opt, eo); });
            }
            return report_dict(rep);
          },
          py::arg("corpus"), py::arg("out"), py::arg("model") = "", py::arg("vector_factory") = "auto",
          py::arg("token_codec") = "sq8", py::arg("store_tokens") = true, py::arg("batch_size") = 32,
          py::arg("chunk_docs") = 512, py::arg("force") = false, py::arg("restart") = false, py::arg("threads") = 0,
          py::arg("precision") = "fp32", py::arg("shards") = 1)
      .def_property_readonly("path", [](const PyIndex& i) { return i.path; })
      .def("__len__", [](const PyIndex& i) { return i.snapshot()->size(); })
      .def("stats",
           [](const PyIndex& i) {
             const IndexStats& s = i.snapshot()->stats();
             py::dict d;
             d["documents"] = s.documents;
             d["dim"] = s.dim;
             d["tokens"] = s.tokens;
             d["model_identity"] = s.model_identity;
             d["vector_factory"] = s.vector_factory;
             d["token_codec"] = s.token_codec;
             d["shards"] = s.shards;
             return d;
           })
      .def("search",
           [](const PyIndex& i, const std::vector<std::string>& queries, size_t k, const std::string& mode) {
             const auto ix = i.snapshot();
             const std::vector<SearchResult> res = search_all(*ix, queries, search_params(k, mode, i.rec));
             py::list out;
             for (const auto& r : res) {
               py::list hits;
               for (size_t j = 0; j < r.hits.size(); ++j) hits.append(hit_dict(r.hits[j], j + 1));
               out.append(hits);
             }
             return out;
           },
           py::arg("queries"), py::arg("k") = 10, py::arg("mode") = "")
      .def("search_arrays",
           [](const PyIndex& i, const std::vector<std::string>& queries, size_t k, const std::string& mode) {
             const auto ix = i.snapshot();
             const std::vector<SearchResult> res = search_all(*ix, queries, search_params(k, mode, i.rec));
             std::vector<float> D(queries.size() * k, -std::numeric_limits<float>::infinity());
             std::vector<int64_t> I(queries.size() * k, -1);
             for (size_t q = 0; q < res.size(); ++q)
               for (size_t j = 0; j < std::min(k, res[q].hits.size()); ++j) {
                 D[q * k + j] = static_cast<float>(res[q].hits[j].score);
                 I[q * k + j] = static_cast<int64_t>(res[q].hits[j].doc);
               }
             const std::vector<py::ssize_t> shape = {static_cast<py::ssize_t>(queries.size()), static_cast<py::ssize_t>(k)};
             return py::make_tuple(take(std::move(D), shape), take(std::move(I), shape));
           },
           py::arg("queries"), py::arg("k") = 10, py::arg("mode") = "")
      .def("add",
           [](PyIndex& i, py::iterable documents, size_t batch_size) {
             const std::vector<Document> docs = documents_from(documents);
             if (docs.empty()) throw py::value_error("no documents to add");
             IndexBuildOptions opt;
             opt.batch_size = batch_size;
             BuildReport rep = interruptible(opt, [&] { return i.writer_for_add().add(docs, opt); });
             return report_dict(rep);
           },
           py::arg("documents"), py::arg("batch_size") = 32)
      .def("keys",
           [](const PyIndex& i) {
             const auto ix = i.snapshot();
             const size_t n = ix->size(), dim = ix->stats().dim;
             std::vector<float> all(n * dim);
             {
               py::gil_scoped_release release;
               for (size_t d = 0; d < n; ++d) {
                 const std::vector<float> k = ix->key(static_cast<uint32_t>(d));
                 std::copy(k.begin(), k.end(), all.begin() + static_cast<std::ptrdiff_t>(d * dim));
               }
             }
             return take(std::move(all), {static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(dim)});
           })
      // For bench/bench_python.py: the seconds of Encoder::encode over `texts`, timed in C++.
      .def("_time_encode",
           [](const PyIndex& i, const std::vector<std::string>& texts, size_t batch_size) {
             const auto ix = i.snapshot();
             if (ix->encoder() == nullptr) throw py::value_error("the index was opened without its encoder");
             EncodeCall call;
             call.batch_size = batch_size;
             py::gil_scoped_release release;
             const auto t0 = std::chrono::steady_clock::now();
             const Embeddings e = ix->encoder()->encode(texts, call);
             return e.pooled.empty() && !texts.empty()
                        ? -1.0
                        : std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
           })
      // For bench/bench_python.py: the mean seconds of one Index::search call over `queries`
      // (each once, in order) measured in C++, the reference for the binding's own overhead.
      .def("_time_search",
           [](const PyIndex& i, const std::vector<std::string>& queries, size_t k, const std::string& mode) {
             const auto ix = i.snapshot();
             const SearchParams p = search_params(k, mode, i.rec);
             py::gil_scoped_release release;
             const auto t0 = std::chrono::steady_clock::now();
             size_t hits = 0;
             for (const auto& q : queries) hits += ix->search(q, p).hits.size();
             const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
             return queries.empty() || hits == SIZE_MAX ? 0.0 : s / static_cast<double>(queries.size());
           })
      .def("document_id", [](const PyIndex& i, int64_t doc) {
        const auto ix = i.snapshot();
        if (doc < 0 || static_cast<size_t>(doc) >= ix->size()) throw py::index_error("no document number " + std::to_string(doc));
        return ix->document(static_cast<uint32_t>(doc)).id;
      })
      .def("document",
           [](const PyIndex& i, const std::string& id) {
             const auto ix = i.snapshot();
             const int64_t doc = ix->find(id);
             if (doc < 0) throw py::key_error(id);
             Document d = ix->document(static_cast<uint32_t>(doc));
             py::dict out;
             out["_id"] = d.id;
             out["title"] = d.title;
             out["text"] = d.text;
             return out;
           })
      .def("tokens", [](const PyIndex& i, const std::string& id) {
        const auto ix = i.snapshot();
        const int64_t doc = ix->find(id);
        if (doc < 0) throw py::key_error(id);
        TokenStates t = ix->tokens(static_cast<uint32_t>(doc));
        const auto len = static_cast<py::ssize_t>(t.length);
        return take(std::move(t.values), {len, static_cast<py::ssize_t>(ix->stats().dim)});
      });

  py::class_<PyVerifier>(m, "Verifier")
      .def_static(
          "load",
          [](const std::string& name, const std::string& model, int threads, const std::string& gate_mode,
             const std::string& cross) {
            auto v = std::make_unique<PyVerifier>();
            const std::string dir = resolve_model_dir(model);
            EncoderOptions eo;
            eo.threads = threads;
            // "default" is the parameter's default: with a gate mode it means "none named".
            const std::string named = !gate_mode.empty() && name == "default" ? "" : name;
            try {
              check_stage2_choice(named, gate_mode, cross);
            } catch (const Error& e) {
              throw py::value_error(e.what());
            }
            py::gil_scoped_release release;
            const std::string spec = gate_mode.empty() ? name : stage2_choice(named, gate_mode, cross, dir).gate;
            v->verifier = resolve_verifier(spec, {dir, ""});
            // A cross-encoder reads texts; a cascade's fast tier reads token states.
            if (!v->verifier.cross || v->verifier.cascade()) v->encoder = Encoder::load(dir, eo);
            return v;
          },
          py::arg("path_or_name") = "default", py::arg("model") = "", py::arg("threads") = 0,
          py::arg("gate_mode") = "", py::arg("cross") = "")
      .def_property_readonly("kind", [](const PyVerifier& v) { return v.verifier.kind(); })
      .def_property_readonly("threshold", [](const PyVerifier& v) { return none_if_nan(v.verifier.threshold()); })
      .def("score", [](const PyVerifier& v, const std::vector<std::pair<std::string, std::string>>& pairs) {
        std::vector<float> out;
        {
          py::gil_scoped_release release;
          out = score_text_pairs(v.encoder.get(), v.verifier, pairs);
        }
        return take(std::move(out), {static_cast<py::ssize_t>(pairs.size())});
      });

  m.def(
      "search_verified",
      [](const PyIndex& i, const PyVerifier& v, const std::string& query, size_t k, size_t candidates,
         const std::string& mode, bool gate, bool rerank, py::object threshold) {
        PipelineParams pp;
        pp.stage1 = search_params(std::max(k, candidates), mode, i.rec);
        pp.k = k;
        pp.candidates = candidates;
        pp.gate = gate;
        pp.rerank = rerank;
        if (!threshold.is_none()) pp.threshold = threshold.cast<double>();
        if (candidates == 0) throw py::value_error("candidates must be positive");
        const auto ix = i.snapshot();
        std::vector<VerifiedHit> hits;
        {
          py::gil_scoped_release release;
          hits = search_verified(*ix, v.verifier, query, pp);
        }
        py::list out;
        for (size_t j = 0; j < hits.size(); ++j) {
          // hit_json's keys for a verified hit; "score" (= stage1_score) stays for compatibility.
          py::dict d = hit_dict(hits[j].hit, j + 1);
          d[HitKeys::stage1_rank] = hits[j].stage1_rank;
          d[HitKeys::stage1_score] = d[HitKeys::score];
          d[HitKeys::verifier_score] = hits[j].verifier_score;
          d[HitKeys::accepted] = hits[j].accepted;
          out.append(d);
        }
        return out;
      },
      py::arg("index"), py::arg("verifier"), py::arg("query"), py::arg("k") = 10, py::arg("candidates") = 100,
      py::arg("mode") = "", py::arg("gate") = false, py::arg("rerank") = false, py::arg("threshold") = py::none());

  m.def(
      "explain",
      [](const PyVerifier& v, const std::string& query, const std::string& candidate, py::object threshold) {
        const double t = threshold.is_none() ? std::numeric_limits<double>::quiet_NaN() : threshold.cast<double>();
        Explanation e;
        std::string svg;
        {
          if (v.verifier.cross) throw py::value_error("a cross-encoder reads the texts: there is no token map to explain");
          py::gil_scoped_release release;
          e = explain_pair(*v.encoder, v.verifier.verifier.get(), query, candidate, t);
          svg = explanation_svg(e);
        }
        py::dict d;
        d["query_tokens"] = e.query_tokens;
        d["candidate_tokens"] = e.candidate_tokens;
        d["map"] = take(std::move(e.map.values), {static_cast<py::ssize_t>(e.map.m), static_cast<py::ssize_t>(e.map.n)});
        d["stage1_cosine"] = e.stage1_cosine;
        d["verifier"] = e.verifier;
        d["score"] = e.score;
        d["threshold"] = none_if_nan(e.threshold);
        d["decision"] = e.decision;
        d["svg"] = svg;
        return d;
      },
      py::arg("verifier"), py::arg("query"), py::arg("candidate"), py::arg("threshold") = py::none());

  m.def(
      "nearmiss_generate",
      [](const std::vector<std::string>& sentences, const std::vector<std::string>& kinds, uint64_t seed,
         const std::string& wordnet) {
        std::vector<nearmiss::Kind> ks;
        try {
          for (const auto& k : kinds) ks.push_back(nearmiss::kind_from_name(k));
        } catch (const Error& e) {
          throw py::value_error(e.what());
        }
        if (ks.empty()) ks = nearmiss::default_kinds();
        std::vector<nearmiss::NearMiss> rows;
        {
          py::gil_scoped_release release;
          rows = nearmiss::generate(sentences, ks, seed, lexicon(wordnet.empty() ? nearmiss::Lexicon::kDefaultDir : wordnet));
        }
        py::list out;
        for (const auto& r : rows) {
          py::dict d;
          d["source"] = r.source;
          d["perturbed"] = r.perturbed;
          d["kind"] = nearmiss::row_category(r);
          d["positive"] = nearmiss::row_positive(r);
          out.append(d);
        }
        return out;
      },
      py::arg("sentences"), py::arg("kinds") = std::vector<std::string>{}, py::arg("seed") = 42,
      py::arg("wordnet") = "");

  m.def(
      "evaluate",
      [](const py::dict& run, const std::map<std::string, std::map<std::string, int>>& qrels,
         const std::vector<size_t>& ks, bool per_query) -> py::object {
        if (ks.empty() || std::find(ks.begin(), ks.end(), size_t{0}) != ks.end())
          throw py::value_error("ks must be positive cutoffs");
        const eval::RunEvaluation r = eval::evaluate_run(run_from(run), qrels, ks);
        if (!per_query) return py::cast(r.mean);
        std::map<std::string, std::map<std::string, double>> q;
        for (const auto& m : r.per_query) q[m.query_id] = m.values;
        return py::cast(q);
      },
      py::arg("run"), py::arg("qrels"), py::arg("ks"), py::arg("per_query") = false);

  m.def("default_model_dir", [] { return resolve_model_dir(""); });
  m.def("resolve_model", [](const std::string& name) { return resolve_model_dir(name); }, py::arg("name"));
  m.def("model_identity", [](const std::string& dir) { return model_identity(dir); }, py::arg("model_dir"),
        "The identity indexes record for a model folder (a SHA-256 of its weights, config and tokenizer).");
  m.def("corpus_fingerprint", [](const std::string& path) { return corpus_fingerprint(path); }, py::arg("path"),
        "Path, size, modification time and CRC-32 of a corpus file (or of every file of a folder): what an "
        "interrupted build compares before it resumes.");
  m.def("models", [] {
    py::list out;
    for (const InstalledModel& im : installed_models()) {
      py::dict d;
      d["name"] = im.name;
      d["folder"] = im.dir;
      d["family"] = im.family;
      d["dim"] = im.dim;
      d["pooling"] = im.pooling;
      d["max_length"] = im.max_seq_length;
      d["verifier"] = im.verifier.empty() ? py::object(py::none()) : py::object(py::str(im.verifier));
      out.append(d);
    }
    return out;
  });
  // A library call is quiet unless asked: the log level starts at "warn" in Python (the CLI's is
  // "info"); SIEVE_LOG or sieve.set_log_level() change it.
  if (std::getenv("SIEVE_LOG") == nullptr) set_log_level(LogLevel::Warn);
  m.def(
      "set_log_level",
      [](const std::string& name) {
        LogLevel level;
        if (!log_level_from_name(name, &level)) throw py::value_error("log level must be quiet, warn, info or debug");
        set_log_level(level);
      },
      py::arg("level"));
  // Shard sets, for distributed builds (sieve.ray): where to cut, and the all-or-nothing commit.
  m.def("shard_bounds", [](size_t total, size_t shards, size_t align) { return shard_bounds(total, shards, align); },
        py::arg("total"), py::arg("shards"), py::arg("align") = 1);
  m.def("shard_dir_name", [](size_t shard) { return shard_dir_name(shard); }, py::arg("shard"));
  m.def(
      "commit_shard_set",
      [](const std::string& staging, const std::string& out, size_t shards, bool force, bool verify) {
        py::gil_scoped_release release;
        commit_shard_set(staging, out, shards, force, verify);
      },
      py::arg("staging"), py::arg("out"), py::arg("shards"), py::arg("force") = false, py::arg("verify") = true);
  m.def(
      "build_shard",
      [](const std::string& model, const std::string& corpus, const std::string& staging, size_t shard,
         size_t documents, const std::string& vector_factory, const std::string& token_codec, bool store_tokens,
         size_t batch_size, size_t chunk_docs, int threads) {
        IndexBuildOptions o;
        o.vector_factory = vector_factory;
        o.token_codec = token_codec;
        o.store_tokens = store_tokens;
        o.batch_size = batch_size;
        o.chunk_docs = chunk_docs;
        o.format = CorpusFormat::Jsonl;
        EncoderOptions eo;
        eo.threads = threads;
        const IndexBuildOptions so = shard_build_options(o, documents);  // "auto" from the whole corpus
        const std::string dir = resolve_model_dir(model);
        BuildReport rep;
        {
          py::gil_scoped_release release;
          rep = build_shard(dir, corpus, staging, shard, so, eo);
        }
        return report_dict(rep);
      },
      py::arg("model"), py::arg("corpus"), py::arg("staging"), py::arg("shard"), py::arg("documents"),
      py::arg("vector_factory") = "auto", py::arg("token_codec") = "sq8", py::arg("store_tokens") = true,
      py::arg("batch_size") = 32, py::arg("chunk_docs") = 512, py::arg("threads") = 0);
  m.def("is_shard_set", [](const std::string& dir) { return is_shard_set(dir); }, py::arg("path"));
  // Metadata filters (sieve/filter.h): the library's one parser, for Python's faces.
  py::class_<Filter>(m, "Filter")
      .def_static("parse", &Filter::parse, py::arg("json"))
      .def("matches", &Filter::matches, py::arg("metadata_json"))
      .def("fields", &Filter::fields)
      .def("to_json", &Filter::to_json)
      .def_property_readonly("empty", &Filter::empty);
  m.def("check_metadata", [](const std::string& json) { return check_metadata(json); }, py::arg("json"));
  m.def("set_threads", [](int n) { set_compute_threads(n); }, py::arg("threads"));
  m.def("threads", [] { return compute_threads(); });
  bind_serving(m);
}
