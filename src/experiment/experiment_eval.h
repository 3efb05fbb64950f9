// Evaluation steps the two experiments share: a model's dense retrieval on several BEIR folders,
// and reading mean +- std cells out of seed-aggregated results.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/stats.h"
#include "experiment/retrieval_eval.h"

namespace sieve::experiment {

/// A BEIR folder loaded once for many evaluations.
struct EvalSet {
  BeirFolder folder;
  std::vector<eval::Query> queries;
  eval::Qrels qrels;
};
std::vector<EvalSet> load_eval_sets(const std::vector<std::string>& dirs, const std::string& split);

/// The measures the experiment tables show.
extern const std::vector<std::string> kTableMeasures;  // ndcg@10, mrr@10, acc@1, acc@10, recall@100

/// Evaluates `model` on every set: the index is built in `index_cache` (with token states when
/// `verifier` is set) and removed afterwards unless `keep_index`. Returns {"<set>": {measure: v},
/// "mean": {measure: mean over sets}} with the kTableMeasures and "queries_per_second".
/// With a verifier, each set also gets "encoder" (stage 1 alone) next to the reranked values.
/// With `run_dir`, each set's run is also written there as a TREC file, <set>.trec.
nlohmann::json evaluate_on_sets(const std::string& model, const std::vector<EvalSet>& sets,
                                const std::string& index_cache, const RetrievalEvalOptions& ro,
                                bool keep_index, const EncoderOptions& enc, const std::string& run_dir = "");

/// {"mean": m, "std": s} leaves of aggregate_runs() -> MeanStd (NaN when absent; n = count).
eval::MeanStd cell(const nlohmann::json& agg, const std::vector<std::string>& path);

}  // namespace sieve::experiment
