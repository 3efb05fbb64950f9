#include "eval/aggregate.h"

#include <dirent.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/file_util.h"
#include "eval/stats.h"
#include "sieve/error.h"

namespace sieve::eval {
namespace {

using nlohmann::json;

// nlohmann's is_number() is already false for booleans, which must not be averaged as 0/1.
bool all_numbers(const std::vector<const json*>& values) {
  return std::all_of(values.begin(), values.end(), [](const json* v) { return v->is_number(); });
}

json numeric_leaf(const std::vector<const json*>& values) {
  std::vector<double> xs;
  json raw = json::array();
  for (const json* v : values) {
    xs.push_back(v->get<double>());
    raw.push_back(*v);  // as written, so integer counts stay integers
  }
  const MeanStd ms = mean_std(xs);
  return json{{"mean", ms.mean},
              {"std", ms.std},
              {"min", *std::min_element(xs.begin(), xs.end())},
              {"max", *std::max_element(xs.begin(), xs.end())},
              {"count", xs.size()},
              {"values", std::move(raw)}};
}

// True when every value is an array of numbers and all have the same length.
bool numeric_arrays_of_one_length(const std::vector<const json*>& values) {
  const size_t n = values.front()->is_array() ? values.front()->size() : 0;
  for (const json* v : values) {
    if (!v->is_array() || v->size() != n) return false;
    for (const json& x : *v)
      if (!x.is_number()) return false;
  }
  return true;
}

// `values` holds the value of one path in every run that has it (at least one).
json aggregate_values(const std::vector<const json*>& values) {
  if (all_numbers(values)) return numeric_leaf(values);
  if (numeric_arrays_of_one_length(values)) {
    json out = json::array();
    for (size_t i = 0; i < values.front()->size(); ++i) {
      std::vector<const json*> column;
      for (const json* v : values) column.push_back(&(*v)[i]);
      out.push_back(numeric_leaf(column));
    }
    return out;
  }
  const bool all_objects =
      std::all_of(values.begin(), values.end(), [](const json* v) { return v->is_object(); });
  if (all_objects) {
    std::set<std::string> keys;
    for (const json* v : values)
      for (const auto& item : v->items()) keys.insert(item.key());
    json out = json::object();
    for (const std::string& key : keys) {
      std::vector<const json*> present;
      for (const json* v : values) {
        auto it = v->find(key);
        if (it != v->end()) present.push_back(&*it);
      }
      out[key] = aggregate_values(present);
    }
    return out;
  }
  return *values.front();
}

// The n of a `seed_<n>` folder name; false for any other name ("seed_x", "seed_", "seed_+1").
bool parse_seed(const std::string& name, long long* seed) {
  static const std::string prefix = "seed_";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return false;
  const char* first = name.data() + prefix.size();
  const char* last = name.data() + name.size();
  const auto [ptr, ec] = std::from_chars(first, last, *seed);
  return ec == std::errc() && ptr == last;
}

// (seed, folder name) of every seed folder of `dir` holding `file_name`, sorted by seed.
std::vector<std::pair<long long, std::string>> list_seeds(const std::string& dir,
                                                          const std::string& file_name) {
  SIEVE_THROW_IF_NOT(is_dir(dir), "seed aggregation: '" << dir << "' is not a directory");
  DIR* d = ::opendir(dir.c_str());
  SIEVE_THROW_IF_NOT(d != nullptr, "seed aggregation: cannot list '" << dir << "'");
  std::vector<std::pair<long long, std::string>> seeds;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    long long seed = 0;
    if (!parse_seed(name, &seed)) continue;
    const std::string sub = path_join(dir, name);
    // A seed still running (or that failed) has no result file yet: skip it rather than fail.
    if (is_dir(sub) && is_file(path_join(sub, file_name))) seeds.emplace_back(seed, name);
  }
  ::closedir(d);
  std::sort(seeds.begin(), seeds.end());
  for (size_t i = 1; i < seeds.size(); ++i)
    SIEVE_THROW_IF_NOT(seeds[i].first != seeds[i - 1].first,
                       "seed aggregation: '" << seeds[i - 1].second << "' and '" << seeds[i].second
                                             << "' in '" << dir << "' are the same seed");
  return seeds;
}

}  // namespace

json aggregate_runs(const std::vector<json>& runs) {
  SIEVE_THROW_IF_NOT(!runs.empty(), "aggregate_runs needs at least one run");
  std::vector<const json*> values;
  for (const json& r : runs) values.push_back(&r);
  return aggregate_values(values);
}

std::vector<std::string> seed_dirs(const std::string& dir, const std::string& file_name) {
  std::vector<std::string> out;
  for (const auto& [seed, name] : list_seeds(dir, file_name)) out.push_back(path_join(dir, name));
  return out;
}

json aggregate_seed_dirs(const std::string& dir, const std::string& file_name) {
  const auto seeds = list_seeds(dir, file_name);
  SIEVE_THROW_IF_NOT(!seeds.empty(),
                     "seed aggregation: no seed_<n> folder with '" << file_name << "' in '" << dir << "'");
  std::vector<json> runs;
  json seed_numbers = json::array();
  for (const auto& [seed, name] : seeds) {
    const std::string path = path_join(path_join(dir, name), file_name);
    json doc;
    try {
      doc = json::parse(read_file(path));
    } catch (const json::exception& e) {
      SIEVE_THROW("'" << path << "' is not valid JSON: " << e.what());
    }
    // The result gets a "seeds" key, which only an object can carry.
    SIEVE_THROW_IF_NOT(doc.is_object(), "'" << path << "' must hold a JSON object");
    runs.push_back(std::move(doc));
    seed_numbers.push_back(seed);
  }
  json out = aggregate_runs(runs);
  out["seeds"] = std::move(seed_numbers);
  return out;
}

}  // namespace sieve::eval
