// sieve._sieve.Index: builds, opens, searches, adds to and deletes from an index (the wrappers
// only; python/sieve/__init__.py holds the Python-facing API and its docstrings).
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "index/doc_state.h"
#include "index/document_json.h"
#include "index/shard_set.h"
#include "index/token_store.h"
#include "sieve/encoder.h"
#include "sieve/error.h"
#include "sieve/filter.h"
#include "sieve/index.h"
#include "sieve/model.h"
#include "sieve/pipeline.h"
#include "sieve/verify.h"

namespace sieve_py {

SearchParams search_params(size_t k, const std::string& mode, const SearchRecommendation& rec,
                           const std::string& filter) {
  if (k == 0) throw py::value_error("k must be positive");
  SearchParams p;
  rec.apply(p);
  p.k = k;
  try {
    if (!mode.empty()) p.mode = search_mode_from_name(mode);
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
  p.filter = Filter::parse(filter);  // sieve.Error naming the place in the filter
  return p;
}

// A dict (or None) as JSON text, through Python's json module.
std::string json_text(const py::handle& v) {
  if (v.is_none()) return "";
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  return py::str(py::module_::import("json").attr("dumps")(v));
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
    // Optional metadata (a dict) and expiry (expires_at: RFC 3339 or seconds since 1970; ttl_s),
    // read as the corpus reader and the server read them.
    py::dict extras;
    for (const char* key : {"metadata", "expires_at", "ttl_s"})
      if (d.contains(key)) extras[key] = d[key];
    if (!extras.empty()) {
      try {
        index::read_document_extras(nlohmann::json::parse(json_text(extras)), doc, index::clock_or(0));
      } catch (const Error& e) {
        SIEVE_THROW("document " << i << " ('" << doc.id << "'): " << e.what());
      }
    }
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

py::dict compact_dict(const CompactReport& r) {
  py::dict d;
  d["documents_before"] = r.documents_before;
  d["documents"] = r.documents;
  d["removed"] = r.removed;
  d["bytes_before"] = r.bytes_before;
  d["bytes_after"] = r.bytes_after;
  d["seconds"] = r.seconds;
  return d;
}

py::dict report_dict(const BuildReport& r) {
  py::dict d;
  d["documents"] = r.documents;
  d["added"] = r.added;
  d["replaced"] = r.replaced;
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

// A stored document's title, text, metadata (a dict, when it has any) and expiry (when set), as
// Index.document and hits with_text give them.
void put_stored(py::dict& out, const Document& d) {
  out["title"] = d.title;
  out["text"] = d.text;
  if (!d.metadata.empty()) out["metadata"] = py::module_::import("json").attr("loads")(d.metadata);
  if (d.expires_at != 0) out["expires_at"] = d.expires_at;
}

void bind_index(py::module_& m) {
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
      .def("__len__",
           [](const PyIndex& i) {
             const auto ix = i.snapshot();
             return ix->size() - ix->stats().deleted;  // expired ones count until a compaction
           })
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
             d["deleted"] = s.deleted;
             return d;
           })
      .def("search",
           [](const PyIndex& i, const std::vector<std::string>& queries, size_t k, const std::string& mode,
              const std::string& filter, bool with_text) {
             const auto ix = i.snapshot();
             const std::vector<SearchResult> res = search_all(*ix, queries, search_params(k, mode, i.rec, filter));
             py::list out;
             for (const auto& r : res) {
               py::list hits;
               for (size_t j = 0; j < r.hits.size(); ++j) {
                 py::dict h = hit_dict(r.hits[j], j + 1);
                 if (with_text) put_stored(h, ix->document(r.hits[j].doc));  // the snapshot searched
                 hits.append(h);
               }
               out.append(hits);
             }
             return out;
           },
           py::arg("queries"), py::arg("k") = 10, py::arg("mode") = "", py::arg("filter") = "",
           py::arg("with_text") = false)
      // For bench/bench_filter.py: stage 1's dense lists of query keys given as float32 [n, dim]
      // (as FAISS and hnswlib take them), with a filter and a planner choice ("auto", "scan",
      // "walk"); (ids int64 [n, k] (-1: none), scores float32 [n, k]), GIL released.
      .def("_dense_lists",
           [](const PyIndex& i, py::array_t<float, py::array::c_style | py::array::forcecast> pooled, size_t k,
              const std::string& filter, const std::string& plan, int ef) {
             const auto ix = i.snapshot();
             if (pooled.ndim() != 2 || static_cast<size_t>(pooled.shape(1)) != ix->stats().dim)
               throw py::value_error("pooled must be float32 [n, dim]");
             SearchParams p = search_params(k, "dense", SearchRecommendation{}, filter);
             p.filter_plan = plan == "scan" ? FilterPlan::Scan : plan == "walk" ? FilterPlan::Walk : FilterPlan::Auto;
             if (ef > 0) p.ef_search = ef;
             const size_t n = static_cast<size_t>(pooled.shape(0));
             std::vector<index::Ranked> lists;
             {
               py::gil_scoped_release release;
               lists = index::dense_lists(*ix, n, pooled.data(), k, p);
             }
             std::vector<int64_t> I(n * k, -1);
             std::vector<float> D(n * k, -std::numeric_limits<float>::infinity());
             for (size_t q = 0; q < n; ++q)
               for (size_t j = 0; j < lists[q].size() && j < k; ++j) {
                 I[q * k + j] = lists[q][j].first;
                 D[q * k + j] = static_cast<float>(lists[q][j].second);
               }
             const std::vector<py::ssize_t> shape = {static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(k)};
             return py::make_tuple(take(std::move(I), shape), take(std::move(D), shape));
           },
           py::arg("pooled"), py::arg("k") = 10, py::arg("filter") = "", py::arg("plan") = "auto", py::arg("ef") = 0)
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
           [](PyIndex& i, py::iterable documents, size_t batch_size, bool upsert) {
             const std::vector<Document> docs = documents_from(documents);
             if (docs.empty()) throw py::value_error("no documents to add");
             IndexBuildOptions opt;
             opt.batch_size = batch_size;
             opt.upsert = upsert;
             BuildReport rep = interruptible(opt, [&] { return i.writer_for_add().add(docs, opt); });
             return report_dict(rep);
           },
           py::arg("documents"), py::arg("batch_size") = 32, py::arg("upsert") = false)
      .def("compact",
           [](PyIndex& i) {
             IndexWriter& w = i.writer_for_add();
             CompactReport r;
             {
               py::gil_scoped_release release;
               r = w.compact();
             }
             return compact_dict(r);
           })
      .def("delete",
           [](PyIndex& i, const std::vector<std::string>& ids, const std::string& filter, bool missing_ok) {
             const Filter f = Filter::parse(filter);
             if (ids.empty() == f.empty()) throw py::value_error("give ids or a non-empty filter, not both and not neither");
             IndexWriter& w = i.writer_for_add();
             DeleteReport r;
             {
               py::gil_scoped_release release;
               r = ids.empty() ? w.remove_matching(f) : w.remove(ids, missing_ok);
             }
             py::dict d;
             d["deleted"] = r.deleted;
             d["missing"] = r.missing;
             d["documents"] = r.documents;
             return d;
           },
           py::arg("ids"), py::arg("filter") = "", py::arg("missing_ok") = false)
      .def("keys",
           [](const PyIndex& i, std::optional<std::vector<int64_t>> docs) {
             const auto ix = i.snapshot();
             const size_t dim = ix->stats().dim;
             std::vector<uint32_t> rows;
             if (docs) {
               for (int64_t d : *docs)
                 if (d < 0 || static_cast<size_t>(d) >= ix->size())
                   throw py::index_error("no document number " + std::to_string(d));
               rows.assign(docs->begin(), docs->end());
             } else {
               rows.resize(ix->size());
               for (size_t d = 0; d < rows.size(); ++d) rows[d] = static_cast<uint32_t>(d);
             }
             std::vector<float> all(rows.size() * dim);
             {
               py::gil_scoped_release release;
               for (size_t r = 0; r < rows.size(); ++r) {
                 const std::vector<float> k = ix->key(rows[r]);
                 std::copy(k.begin(), k.end(), all.begin() + static_cast<std::ptrdiff_t>(r * dim));
               }
             }
             return take(std::move(all), {static_cast<py::ssize_t>(rows.size()), static_cast<py::ssize_t>(dim)});
           },
           py::arg("docs") = py::none())
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
      // The live documents' ids (neither deleted, replaced nor expired) whose metadata passes
      // `filter` (empty: all), in internal order.
      .def("ids",
           [](const PyIndex& i, const std::string& filter) {
             const auto ix = i.snapshot();
             const Filter f = Filter::parse(filter);
             std::vector<std::string> out;
             {
               py::gil_scoped_release release;
               for (uint32_t d : ix->matching(f, 0)) out.push_back(ix->document(d).id);
             }
             return out;
           },
           py::arg("filter") = "")
      // Stage 1's dense search for query vectors given (float32 [n, dim], normalised here): the
      // index's own planner, filter, deletions and expiry; hits {"rank", "id", "doc", "score"}
      // (and the stored fields with `with_text`).
      .def("search_by_vector",
           [](const PyIndex& i, py::array_t<float, py::array::c_style | py::array::forcecast> vectors, size_t k,
              const std::string& filter, bool with_text) {
             const auto ix = i.snapshot();
             const size_t dim = ix->stats().dim;
             if (vectors.ndim() != 2 || static_cast<size_t>(vectors.shape(1)) != dim)
               throw py::value_error("vectors must be float32 [n, " + std::to_string(dim) + "] (the index's keys' dimension)");
             if (is_shard_set(i.path)) throw py::value_error("search_by_vector searches one index, not a shard set");
             const SearchParams p = search_params(k, "dense", i.rec, filter);
             const size_t n = static_cast<size_t>(vectors.shape(0));
             std::vector<float> unit(vectors.data(), vectors.data() + n * dim);
             index::normalize_rows(unit.data(), n, dim);
             std::vector<index::Ranked> lists;
             {
               py::gil_scoped_release release;
               lists = index::dense_lists(*ix, n, unit.data(), k, p);
             }
             py::list out;
             for (const auto& list : lists) {
               py::list hits;
               for (size_t j = 0; j < list.size(); ++j) {
                 const Document d = ix->document(list[j].first);
                 py::dict h;
                 h["rank"] = j + 1;
                 h["id"] = d.id;
                 h["doc"] = list[j].first;
                 h["score"] = list[j].second;
                 if (with_text) put_stored(h, d);
                 hits.append(h);
               }
               out.append(hits);
             }
             return out;
           },
           py::arg("vectors"), py::arg("k") = 10, py::arg("filter") = "", py::arg("with_text") = false)
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
             put_stored(out, d);
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
}

}  // namespace sieve_py
