// Data for the experiments: near-miss pairs generated from WordNet's example sentences (split by
// sentence into a training and a test part, so no test sentence is ever trained on), training
// files written for the trainers, and small result-file helpers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/train_data.h"

namespace sieve::experiment {

/// The structural kinds of the paper (negation, role swap, binding swap, spatial flip).
extern const std::vector<std::string> kStructuralKinds;
/// Every near-miss kind the generator makes (the paper's four first, then antonym and
/// passive_role_swap): Model B's training negatives.
extern const std::vector<std::string> kNearMissKinds;
/// Every meaning-preserving kind the generator makes (synonym, passive, ...): the test positives.
extern const std::vector<std::string> kPositiveKinds;

struct GeneratedNearMisses {
  std::string train_pairs;  ///< sentence1,sentence2,category: near-misses of the training sentences
  std::string test_pairs;   ///< near-misses and positives (synonym, passive) of the test sentences
  size_t train_rows = 0, test_rows = 0;
};

/// Generates (or reuses, when both files exist) OUT_DIR/nearmiss_train.csv (every kind of
/// kNearMissKinds) and OUT_DIR/nearmiss_test.csv (those and kPositiveKinds) from WordNet's example
/// sentences: a sentence goes to the test part when a hash of it falls in the last `test_share`;
/// at most `max_train` / `max_test` rows (0 = all), kept round-robin over the categories. Throws sieve::Error when WordNet is not installed.
GeneratedNearMisses generate_nearmiss_data(const std::string& out_dir, uint64_t seed, size_t max_train,
                                           size_t max_test, double test_share = 0.1);

/// Writes training rows as JSON lines {"anchor", "positive", "negative": [...], "category"}
/// (the trainers' reader takes them back unchanged), atomically.
void write_training_jsonl(const std::string& path, const std::vector<train::TrainExample>& rows);

/// Keeps at most `max_rows` rows (0 = all), taken round-robin over the categories so that a cap
/// keeps every category; the kept rows stay in input order.
void cap_by_category(std::vector<train::TrainExample>& rows, size_t max_rows);

/// Identity triplets from near-miss pairs (anchor = positive = sentence1, negative = sentence2):
/// how the paper turns structural negatives into Model B's training rows.
std::vector<train::TrainExample> identity_triplets(const std::string& pairs_path, size_t max_rows = 0);

/// Guards resuming: the first run writes `options` (everything that changes a result, seeds
/// excepted) to OUT/options.json; a later run into the same folder with other options is refused
/// with sieve::Error, so outputs made under other settings are never mixed in.
void check_options(const std::string& out_dir, const nlohmann::json& options);

/// Aggregates OUT/seed_<s>/results.json over exactly `seeds` (eval::aggregate_runs), with "seeds".
nlohmann::json aggregate_seed_results(const std::string& out_dir, const std::vector<uint64_t>& seeds);

/// Reads a JSON file; sieve::Error naming it when it is not valid JSON.
nlohmann::json read_json(const std::string& path);
/// Writes pretty JSON atomically (creating the folder).
void write_json(const std::string& path, const nlohmann::json& j);
/// Writes text atomically (creating the folder).
void write_text(const std::string& path, const std::string& text);

/// "42,43,44" -> {42, 43, 44}; sieve::Error naming `what` on anything else.
std::vector<uint64_t> parse_uint_list(const std::string& list, const std::string& what = "seeds");

}  // namespace sieve::experiment
