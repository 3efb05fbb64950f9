// Retrieval evaluation on BEIR-layout data: stage 1 (dense, BM25, hybrid) or stage 1 + a verifier
// reranking the top K, as a TREC run evaluated with trec_eval's conventions (eval/metrics.h).
#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/beir.h"
#include "eval/metrics.h"
#include "sieve/index.h"
#include "sieve/pipeline.h"

namespace sieve::experiment {

/// A BEIR folder's evaluation files (corpus.jsonl, queries.jsonl, qrels/<split>.tsv).
struct BeirFolder {
  std::string dir, name;  ///< name: the folder's base name ("scifact")
  std::string corpus, queries, qrels;
};

/// Locates the files of a BEIR folder; throws sieve::Error naming the first one missing.
BeirFolder beir_folder(const std::string& dir, const std::string& split = "test");

/// An index of `corpus` built with `model_dir` in `cache_dir`/<corpus name>-<model identity>,
/// reused when a complete one is already there (a model with other weights gets another folder).
std::string cached_index(const std::string& model_dir, const std::string& corpus, const std::string& cache_dir,
                         const IndexBuildOptions& build = {}, const EncoderOptions& enc = {});

struct RetrievalEvalOptions {
  SearchParams search;          ///< stage-1 mode and knobs (k is replaced by `depth` / `candidates`)
  size_t depth = 100;           ///< results kept per query in the evaluated run
  std::string verifier;         ///< "": stage 1 only; else a resolve_verifier spec ("cosine", "default", F0-F2, a file) reranking the top K
  size_t candidates = 100;      ///< K of the rerank
  bool rerank = true;           ///< with a verifier: order the K by its score (false: keep stage 1's order)
  bool gate = false;            ///< with a verifier: drop the candidates it rejects (score < threshold)
  double threshold = std::numeric_limits<double>::quiet_NaN();  ///< the gate's; NaN = the verifier file's
  std::vector<size_t> ks = {1, 3, 5, 10, 100};
  size_t max_queries = 0;       ///< > 0: only the first N judged queries (by id), qrels cut to match
  size_t batch_size = 64;       ///< queries encoded per batch (stage 1 only)
};

struct RetrievalEvalResult {
  eval::RunEvaluation evaluation;
  eval::Run run;                ///< the run as evaluated (in trec_eval order)
  eval::Qrels qrels;            ///< the judgements it was evaluated against (after max_queries)
  size_t queries = 0;           ///< queries searched
  double seconds = 0;           ///< wall time of searching (and reranking), encoding included
  Stage2Timing stage2;          ///< summed over queries (rerank only)
  /// What the gate dropped (opt.gate only): stage-1 candidates, and those judged relevant (grade > 0).
  struct GateCount {
    double threshold = std::numeric_limits<double>::quiet_NaN();
    size_t candidates = 0, dropped = 0, relevant = 0, relevant_dropped = 0;
  };
  std::optional<GateCount> gate;
  std::string system;           ///< "dense", "bm25", "hybrid-rrf(k=60)", "hybrid-weighted(dense=0.5)", "dense+F4", ...
  SearchParams search;          ///< the stage-1 settings that ran (mode, fusion and its knobs)
};

/// Searches every judged query of `qrels` that has a text in `queries` and evaluates the run.
/// Queries without text are reported and skipped (they still count as 0 in the means, as
/// trec_eval -c counts them).
RetrievalEvalResult evaluate_retrieval(const Index& index, const std::vector<eval::Query>& queries,
                                       const eval::Qrels& qrels, const RetrievalEvalOptions& opt);

/// The means (keys "ndcg@10", "mrr@10", "acc@1", "recall@100", "map", ...) with "queries",
/// "seconds", "queries_per_second" and "system"; with a gate "gate": {"threshold", "candidates",
/// "dropped", "relevant", "relevant_dropped"}; for hybrid search "fusion": {"method": "rrf",
/// "k": 60} or {"method": "weighted", "dense_weight": 0.5}; per query under "per_query" when asked.
nlohmann::json retrieval_json(const RetrievalEvalResult& r, bool per_query = false);

}  // namespace sieve::experiment
