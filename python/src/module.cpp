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

#include "bindings.h"
#include "core/log.h"
#include "eval/metrics.h"
#include "index/shard_set.h"
#include "nearmiss/generate.h"
#include "nearmiss/lexicon.h"
#include "sieve/encoder.h"
#include "sieve/error.h"
#include "sieve/filter.h"
#include "sieve/index.h"
#include "sieve/model.h"
#include "sieve/pipeline.h"
#include "sieve/verify.h"

using namespace sieve_py;

namespace {

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


// A verifier with the encoder that makes its token states.
struct PyVerifier {
  std::unique_ptr<Encoder> encoder;
  ResolvedVerifier verifier;
};


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

  bind_index(m);

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
         const std::string& mode, bool gate, bool rerank, py::object threshold, const std::string& filter) {
        PipelineParams pp;
        pp.stage1 = search_params(std::max(k, candidates), mode, i.rec, filter);
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
      py::arg("mode") = "", py::arg("gate") = false, py::arg("rerank") = false, py::arg("threshold") = py::none(),
      py::arg("filter") = "");

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
  bind_cache(m);
}
