// Seed aggregation: results of several seeds (one JSON document each) merged into one document
// whose numeric leaves are {mean, std, min, max, count, values}.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sieve::eval {

/// Merges per-seed result documents of the same shape. Every numeric leaf (bools are not numeric)
/// becomes {"mean", "std" (population, ddof 0), "min", "max", "count", "values"}; arrays of
/// numbers with the same length in every run are aggregated element-wise (an array of such
/// objects); objects recurse over the union of their keys (a key missing in some runs aggregates
/// the runs that have it); any other value (string, bool, null, mixed) keeps the first run's.
/// Throws sieve::Error when `runs` is empty.
nlohmann::json aggregate_runs(const std::vector<nlohmann::json>& runs);

/// The `seed_<integer>` sub-folders of `dir` that hold `file_name`, sorted by seed number.
std::vector<std::string> seed_dirs(const std::string& dir, const std::string& file_name);

/// Reads DIR/seed_<n>/`file_name` for every seed folder and aggregates them; the result also
/// carries "seeds": [n, ...]. Throws sieve::Error naming the file when one is not valid JSON, and
/// when there is no seed folder.
nlohmann::json aggregate_seed_dirs(const std::string& dir, const std::string& file_name);

}  // namespace sieve::eval
