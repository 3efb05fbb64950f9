#include "experiment/retrieval_eval.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>

#include "core/checksum.h"
#include "core/file_util.h"
#include "core/log.h"
#include "sieve/error.h"
#include "sieve/verify.h"

namespace sieve::experiment {
namespace {

std::string base_name(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The name a corpus file goes by: its folder's name for BEIR's fixed "corpus.jsonl", else its stem.
std::string corpus_name(const std::string& corpus) {
  std::string name = base_name(corpus);
  if (name == "corpus.jsonl") {
    const size_t slash = corpus.find_last_of('/');
    if (slash != std::string::npos && slash > 0) return base_name(corpus.substr(0, slash));
  }
  const size_t dot = name.find('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The stage-1 system with what tells two runs apart: hybrid search names its fusion and knob.
std::string stage1_system_name(const SearchParams& p) {
  std::string s = search_mode_name(p.mode);
  if (p.mode != SearchMode::Hybrid) return s;
  return fusion_uses_weight(p.fusion) ? s + "-" + fusion_name(p.fusion) + "(dense=" + number(p.dense_weight) +
                                            (p.weight_slope != 0 ? ",slope=" + number(p.weight_slope) : std::string()) + ")"
                                      : s + "-rrf(k=" + number(p.rrf_k) + ")";
}

}  // namespace

BeirFolder beir_folder(const std::string& dir, const std::string& split) {
  SIEVE_THROW_IF_NOT(is_dir(dir), "BEIR folder '" + dir + "' does not exist");
  BeirFolder f;
  f.dir = dir;
  f.name = base_name(dir);
  f.corpus = path_join(dir, "corpus.jsonl");
  f.queries = path_join(dir, "queries.jsonl");
  f.qrels = path_join(dir, "qrels/" + split + ".tsv");
  for (const std::string* p : {&f.corpus, &f.queries, &f.qrels})
    SIEVE_THROW_IF_NOT(is_file(*p), "BEIR folder '" + dir + "' has no " + p->substr(dir.size() + 1));
  return f;
}

std::string cached_index(const std::string& model_dir, const std::string& corpus, const std::string& cache_dir,
                         const IndexBuildOptions& build, const EncoderOptions& enc) {
  // The model identity names config, tokenizer and weights; the corpus is named by its path, size
  // and modification time. A checksum of both keeps the folder name short.
  std::error_code ec;
  const auto size = std::filesystem::file_size(corpus, ec);
  const auto mtime = std::filesystem::last_write_time(corpus, ec).time_since_epoch().count();
  const std::string id = model_identity(model_dir) + "|" + std::filesystem::absolute(corpus).string() + "|" +
                         std::to_string(size) + "|" + std::to_string(mtime);
  // An int8 encoder's keys are not fp32's: its index is a folder of its own.
  const std::string out = path_join(cache_dir, corpus_name(corpus) + "-" + crc32_hex(crc32(id.data(), id.size())) +
                                                   (build.store_tokens ? "" : "-keys") +
                                                   (enc.precision == Precision::Int8 ? "-int8" : "") +
                                                   (enc.max_length ? "-len" + std::to_string(enc.max_length) : ""));
  if (is_dir(out)) {  // builds are renamed into place only when complete
    log_info("using the index built earlier for " + corpus + " with this model: " + out);
    return out;
  }
  log_info("indexing " + corpus + " with " + model_dir + " into " + out);
  build_index(model_dir, corpus, out, build, enc);
  return out;
}

RetrievalEvalResult evaluate_retrieval(const Index& index, const std::vector<eval::Query>& queries,
                                       const eval::Qrels& qrels, const RetrievalEvalOptions& opt) {
  SIEVE_THROW_IF_NOT(opt.depth > 0, "the run depth must be at least 1");
  RetrievalEvalResult r;
  r.search = opt.search;
  r.system = stage1_system_name(opt.search);
  std::map<std::string, const eval::Query*> by_id;
  for (const auto& q : queries) by_id.emplace(q.id, &q);

  // Judged queries (a relevant doc), in id order, cut to max_queries.
  size_t without_text = 0;
  std::vector<const eval::Query*> todo;
  for (const auto& [qid, rels] : qrels) {
    bool judged = false;
    for (const auto& kv : rels) judged = judged || kv.second > 0;
    if (!judged) continue;
    if (opt.max_queries > 0 && r.qrels.size() >= opt.max_queries) break;
    r.qrels.emplace(qid, rels);
    auto it = by_id.find(qid);
    if (it == by_id.end()) {
      ++without_text;
      continue;
    }
    todo.push_back(it->second);
  }
  if (without_text > 0)
    log_warn(std::to_string(without_text) + " judged queries have no text in the queries file; they score 0");
  SIEVE_THROW_IF_NOT(!todo.empty(), "no judged query has a text: do the qrels and queries files belong together?");

  const auto t0 = std::chrono::steady_clock::now();
  Progress progress("queries", todo.size());
  if (opt.verifier.empty()) {
    SearchParams p = opt.search;
    p.k = opt.depth;
    for (size_t b = 0; b < todo.size(); b += opt.batch_size) {
      const size_t e = std::min(todo.size(), b + opt.batch_size);
      std::vector<std::string> texts;
      for (size_t i = b; i < e; ++i) texts.push_back(todo[i]->text);
      std::vector<SearchResult> res = index.search_batch(texts, p);
      for (size_t i = b; i < e; ++i) {
        auto& entries = r.run[todo[i]->id];
        for (const Hit& h : res[i - b].hits) entries.push_back({h.id, h.score});
      }
      progress.add(e - b);
    }
  } else {
    const ResolvedVerifier verifier =
        resolve_verifier(opt.verifier, {index.stats().model_path, index.stats().model_identity});
    r.system += "+" + verifier.kind();
    PipelineParams pp;
    pp.stage1 = opt.search;
    pp.candidates = opt.candidates;
    pp.k = opt.candidates;
    pp.rerank = opt.rerank;
    // The gate is applied here rather than in the pipeline, so that what it drops can be counted.
    pp.gate = false;
    pp.threshold = std::isnan(opt.threshold) ? verifier.threshold() : opt.threshold;
    if (opt.gate) {
      SIEVE_THROW_IF_NOT(!std::isnan(pp.threshold), "the gate needs a threshold: verifier '"
                                                        << verifier.name
                                                        << "' has none (calibrate it with sieve verify calibrate, or give one)");
      r.system += "-gate";
      r.gate = RetrievalEvalResult::GateCount();  // (clang 14 refuses emplace() of this nested struct)
      r.gate->threshold = pp.threshold;
    }
    if (opt.rerank && opt.gate) r.system += "-rerank";
    if (!opt.rerank && !opt.gate) r.system += "-scored";  // stage 1's order, the verifier's scores unused
    for (const eval::Query* q : todo) {
      Stage2Timing t;
      std::vector<VerifiedHit> hits = search_verified(index, verifier, q->text, pp, &t);
      r.stage2.decode += t.decode;
      r.stage2.map += t.map;
      r.stage2.verify += t.verify;
      auto& entries = r.run[q->id];
      const auto judged = r.qrels.find(q->id);
      for (const VerifiedHit& h : hits) {
        if (r.gate) {
          bool relevant = false;
          if (judged != r.qrels.end()) {
            const auto g = judged->second.find(h.hit.id);
            relevant = g != judged->second.end() && g->second > 0;
          }
          ++r.gate->candidates;
          r.gate->relevant += relevant;
          if (!h.accepted) {
            ++r.gate->dropped;
            r.gate->relevant_dropped += relevant;
            continue;
          }
        }
        if (entries.size() >= opt.depth) continue;
        // The run is sorted by score (trec_eval's rule): stage 1's score keeps stage 1's order.
        entries.push_back({h.hit.id, opt.rerank ? h.verifier_score : h.hit.score});
      }
      progress.add();
    }
  }
  progress.finish();
  r.seconds = seconds_since(t0);
  r.queries = todo.size();
  r.run = eval::trec_eval_order(r.run);
  r.evaluation = eval::evaluate_run(r.run, r.qrels, opt.ks);
  return r;
}

nlohmann::json retrieval_json(const RetrievalEvalResult& r, bool per_query) {
  nlohmann::json j;
  j["system"] = r.system;
  if (r.search.mode == SearchMode::Hybrid)
    j["fusion"] = fusion_uses_weight(r.search.fusion)
                      ? nlohmann::json{{"method", fusion_name(r.search.fusion)},
                                       {"dense_weight", r.search.dense_weight},
                                       {"dense_weight_slope", r.search.weight_slope}}
                      : nlohmann::json{{"method", fusion_name(r.search.fusion)}, {"k", r.search.rrf_k}};
  for (const auto& [k, v] : r.evaluation.mean) j[k] = v;
  j["queries"] = r.evaluation.queries;
  j["queries_searched"] = r.queries;
  j["seconds"] = r.seconds;
  j["queries_per_second"] = r.seconds > 0 ? r.queries / r.seconds : 0.0;
  if (r.stage2.decode + r.stage2.map + r.stage2.verify > 0 && r.queries > 0) {
    const double n = static_cast<double>(r.queries);
    j["stage2_ms_per_query"] = {{"decode", 1e3 * r.stage2.decode / n},
                                {"map", 1e3 * r.stage2.map / n},
                                {"verify", 1e3 * r.stage2.verify / n}};
  }
  if (r.gate)
    j["gate"] = {{"threshold", r.gate->threshold},
                 {"candidates", r.gate->candidates},
                 {"dropped", r.gate->dropped},
                 {"relevant", r.gate->relevant},
                 {"relevant_dropped", r.gate->relevant_dropped}};
  if (per_query) {
    nlohmann::json pq = nlohmann::json::object();
    for (const auto& q : r.evaluation.per_query) pq[q.query_id] = q.values;
    j["per_query"] = std::move(pq);
  }
  return j;
}

}  // namespace sieve::experiment
