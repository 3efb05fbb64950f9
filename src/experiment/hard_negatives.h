// Hard negatives for BEIR training queries (Model A's triplets): for each judged (query, positive
// passage) pair, the best-ranked passages that the query's judgements do not call relevant, taken
// from each retriever (BM25 and the dense model), as sentence-transformers' mining does for MNRL.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "eval/beir.h"
#include "sieve/encoder.h"
#include "sieve/index.h"
#include "train/train_data.h"

namespace sieve::experiment {

/// Ranks corpus document ids for a query text, best first, at most k of them.
using Ranker = std::function<std::vector<std::string>(const std::string& query, size_t k)>;

struct HardNegativeOptions {
  size_t per_ranker = 1;  ///< negatives taken from each ranker's list
  size_t depth = 50;      ///< how far down each list to look for non-relevant passages
};

/// What mining found, for the data report.
struct MiningReport {
  size_t queries = 0, rows = 0, negatives = 0;
  std::map<std::string, size_t> per_ranker;  ///< ranker name -> negatives it contributed
  size_t rows_without_negative = 0;          ///< every listed passage was judged (kept as pairs)
};

/// One triplet row per judged (query, positive) pair of `qrels` (grade > 0): anchor = the query's
/// text, positive = the passage's, negatives = for each ranker in order, the first
/// `per_ranker` documents of its top `depth` that the query's judgements do not list at any
/// grade and whose text is neither a judged document's nor an earlier negative's (a corpus may
/// hold the same passage under two ids). Texts come from `text_of(doc id)`. Rows come ordered by query id, then document id; category = `category`.
std::vector<train::TrainExample> mine_hard_negatives(
    const std::vector<eval::Query>& queries, const eval::Qrels& qrels,
    const std::vector<std::pair<std::string, Ranker>>& rankers,
    const std::function<std::string(const std::string&)>& text_of, const HardNegativeOptions& opt,
    const std::string& category, MiningReport* report = nullptr);

/// A ranker searching `index` in `mode` (dense or BM25).
Ranker index_ranker(const Index& index, SearchMode mode);

/// Model A's rows of a BEIR folder: the (query, positive) pairs of qrels/<split>.tsv with hard
/// negatives mined by BM25 and by `model_dir` (dense) from an index of the folder's corpus built in
/// `cache_dir` (kept there for reuse). Category "<folder name>_triplet".
std::vector<train::TrainExample> beir_triplets(const std::string& dir, const std::string& split,
                                               const std::string& model_dir, const std::string& cache_dir,
                                               const HardNegativeOptions& opt, const EncoderOptions& enc,
                                               MiningReport* report = nullptr);

}  // namespace sieve::experiment
