// Retrieval metrics with the BEIR / pytrec_eval definitions: linear-gain nDCG, recall, precision,
// reciprocal rank and average precision at a cutoff k. A doc is relevant when its grade is > 0;
// docs absent from the qrels count as non-relevant. A doc id repeated in a ranked list counts only
// at its first position (later copies occupy their rank with gain 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "eval/beir.h"

namespace sieve::eval {

/// nDCG@k: sum of rel / log2(rank + 1) over the top k, divided by the same sum for the ideal
/// ordering of all judged grades > 0; 0 when no doc is relevant. Throws when k is 0.
double ndcg_at_k(const std::vector<std::string>& ranked_doc_ids, const std::map<std::string, int>& rels,
                 size_t k);

/// Recall@k: relevant docs in the top k over all relevant docs; 0 when none is relevant.
double recall_at_k(const std::vector<std::string>& ranked_doc_ids, const std::map<std::string, int>& rels,
                   size_t k);

/// P@k: relevant docs in the top k over k, also when fewer than k were retrieved (pytrec_eval P_k).
double precision_at_k(const std::vector<std::string>& ranked_doc_ids, const std::map<std::string, int>& rels,
                      size_t k);

/// RR@k: 1 / rank of the first relevant doc within the top k, else 0.
double reciprocal_rank_at_k(const std::vector<std::string>& ranked_doc_ids,
                            const std::map<std::string, int>& rels, size_t k);

/// AP@k (pytrec_eval `map_cut`): sum of P@rank at each relevant rank <= k, over all relevant docs.
double average_precision_at_k(const std::vector<std::string>& ranked_doc_ids,
                              const std::map<std::string, int>& rels, size_t k);

/// Acc@k (hit rate): 1 when a relevant doc is within the top k, else 0.
double hit_at_k(const std::vector<std::string>& ranked_doc_ids, const std::map<std::string, int>& rels,
                size_t k);

/// The headline means reported for a run.
struct Metrics {
  double ndcg10 = 0.0;
  double recall100 = 0.0;
  double mrr10 = 0.0;
  double map100 = 0.0;
  double p10 = 0.0;
  size_t queries = 0;  // queries averaged: those with at least one relevant doc in the qrels
};

/// Means over the qrels' queries with a relevant doc; a query missing from the run scores 0, run
/// queries without qrels are ignored. Each ranked list is first cut to `per_query_limit` entries.
Metrics evaluate(const Run& run, const Qrels& qrels, size_t per_query_limit = SIZE_MAX);

/// Same averaging for each k in `ks`: keys "ndcg@k", "recall@k", "mrr@k", "map@k", "p@k".
std::map<std::string, double> evaluate_cutoffs(const Run& run, const Qrels& qrels,
                                               const std::vector<size_t>& ks);

/// One query's measures (same keys as RunEvaluation::mean).
struct QueryMeasures {
  std::string query_id;
  std::map<std::string, double> values;
};

/// A run's evaluation: the means and every judged query's values.
struct RunEvaluation {
  /// "ndcg@k", "mrr@k", "acc@k", "recall@k", "p@k" for each k, and "map"
  std::map<std::string, double> mean;
  std::vector<QueryMeasures> per_query;  ///< judged queries (>= 1 relevant doc), in query-id order
  size_t queries = 0;                    ///< judged queries averaged (== per_query.size())
};

/// Evaluates `run` as `trec_eval -c` does over the qrels' judged queries (a query with a relevant
/// doc that the run lacks scores 0; run queries without qrels are ignored). "map" is AP over the
/// whole list (trec_eval `map`). Ranks are the entries' order: call trec_eval_order() first to get
/// trec_eval's tie handling. Throws sieve::Error when a k is 0 or ks is empty.
RunEvaluation evaluate_run(const Run& run, const Qrels& qrels, const std::vector<size_t>& ks);

/// Each query's entries re-sorted as trec_eval ranks them: score descending, ties by doc id
/// descending (byte-wise), whatever the order or rank column they came in. Throws sieve::Error on a
/// NaN score.
Run trec_eval_order(const Run& run);

/// Writes qrels as TREC lines `qid 0 docid grade`, in qrels order; throws sieve::Error on an empty
/// id or one with whitespace.
void write_trec_qrels(std::ostream& out, const Qrels& qrels);

}  // namespace sieve::eval
