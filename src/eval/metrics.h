// Retrieval metrics with the BEIR / pytrec_eval definitions: linear-gain nDCG, recall, precision,
// reciprocal rank and average precision at a cutoff k. A doc is relevant when its grade is > 0;
// docs absent from the qrels count as non-relevant. A doc id repeated in a ranked list counts only
// at its first position (later copies occupy their rank with gain 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
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

}  // namespace sieve::eval
