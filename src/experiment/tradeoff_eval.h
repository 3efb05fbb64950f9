// The trade-off experiment's near-miss side and its reports: pooled-space separation of a model on
// several pair sets (per category: mean +- std of the cosine and ROC-AUC against paraphrase
// positives), the tables that put backbone, Model A and Model B side by side with the paper's
// reference means, the training-data table, and the nDCG@10-against-AUC scatter plot.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/pairs.h"
#include "sieve/encoder.h"

namespace sieve::experiment {

/// Pairs scored together. A set without positive pairs of its own (SugarCrepe, CANNOT) borrows the
/// positives of the generated test set, so that its AUC still compares near-misses with paraphrases.
struct PairSet {
  std::string name;                       ///< "generated", or a file's stem ("sugarcrepe")
  std::vector<eval::SentencePair> pairs;
  bool borrowed_positives = false;
};

/// The generated held-apart test pairs as "generated", then each file (capped at `max_pairs`
/// pairs, kept round-robin over categories, when > 0). Throws sieve::Error for a bad file.
std::vector<PairSet> load_pair_sets(const std::string& generated_test, const std::vector<std::string>& files,
                                    size_t max_pairs);

/// {set: {"positives": {n, cos_mean, cos_std}, "categories": {cat: {n, cos_mean, cos_std, auc}},
/// "overall": {n, cos_mean, cos_std, auc}}} for the pooled cosine of `model`.
nlohmann::json separation_json(const std::string& model, const std::vector<PairSet>& sets, const EncoderOptions& enc);

/// Markdown: what Model A and Model B were trained on (rows per source and category).
std::string render_data_table(const nlohmann::json& data_report);

/// Markdown, one table per pair set: per category, the cosine (mean +- std; over seeds, the mean
/// of the per-seed means) and AUC of the backbone, Model A and Model B; the generated set's table
/// also carries the paper's reference means (gte-small).
std::string render_separation_tables(const nlohmann::json& backbone, const nlohmann::json& agg,
                                     const std::vector<PairSet>& sets);

/// SVG scatter: mean nDCG@10 over the evaluation sets against the generated set's overall
/// near-miss AUC, one point for the backbone and one per seed for Model A and Model B.
void write_tradeoff_scatter(const std::string& out_dir, const nlohmann::json& backbone,
                            const std::vector<uint64_t>& seeds, const std::string& path);

}  // namespace sieve::experiment
