#include "experiment/experiment_data.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "core/checksum.h"
#include "core/file_util.h"
#include "core/log.h"
#include "eval/aggregate.h"
#include "nearmiss/generate.h"
#include "nearmiss/lexicon.h"
#include "sieve/error.h"

namespace sieve::experiment {

const std::vector<std::string> kStructuralKinds = {"negation", "role_swap", "binding_swap", "spatial_flip"};
const std::vector<std::string> kNearMissKinds = {"negation",     "role_swap", "binding_swap",
                                                 "spatial_flip", "antonym",   "passive_role_swap"};
const std::vector<std::string> kPositiveKinds = {"synonym",     "passive",    "contraction", "coordination",
                                                 "possessive",  "adverb_move", "determiner", "negated_antonym"};

namespace {


std::vector<nearmiss::Kind> kinds_of(const std::vector<std::string>& names) {
  std::vector<nearmiss::Kind> out;
  for (const auto& n : names) out.push_back(nearmiss::kind_from_name(n));
  return out;
}

// Keeps at most `max_rows` rows (0 = all), taken round-robin over the categories so that a cap does
// not keep only the kinds that come first; the kept rows stay in input order.
template <class T, class Key>
void stratified_cap(std::vector<T>& rows, size_t max_rows, Key key) {
  if (max_rows == 0 || rows.size() <= max_rows) return;
  std::map<std::string, std::vector<size_t>> by_cat;
  for (size_t i = 0; i < rows.size(); ++i) by_cat[key(rows[i])].push_back(i);
  std::vector<size_t> keep;
  for (size_t round = 0; keep.size() < max_rows; ++round)
    for (const auto& [cat, idx] : by_cat)
      if (round < idx.size() && keep.size() < max_rows) keep.push_back(idx[round]);
  std::sort(keep.begin(), keep.end());
  std::vector<T> out;
  for (size_t i : keep) out.push_back(std::move(rows[i]));
  rows = std::move(out);
}

void cap(std::vector<nearmiss::NearMiss>& rows, size_t max_rows) {
  stratified_cap(rows, max_rows, [](const nearmiss::NearMiss& r) { return std::string(nearmiss::kind_name(r.kind)); });
}

}  // namespace

GeneratedNearMisses generate_nearmiss_data(const std::string& out_dir, uint64_t seed, size_t max_train,
                                           size_t max_test, double test_share) {
  GeneratedNearMisses g;
  g.train_pairs = path_join(out_dir, "nearmiss_train.csv");
  g.test_pairs = path_join(out_dir, "nearmiss_test.csv");
  if (is_file(g.train_pairs) && is_file(g.test_pairs)) return g;
  SIEVE_THROW_IF_NOT(nearmiss::Lexicon::available(nearmiss::Lexicon::kDefaultDir),
                     std::string("WordNet is not installed at ") + nearmiss::Lexicon::kDefaultDir +
                         " (apt-get install wordnet-base), and no near-miss file was given");
  auto lex = nearmiss::Lexicon::load(nearmiss::Lexicon::kDefaultDir);
  std::vector<std::string> train_s, test_s;
  const uint64_t cut = static_cast<uint64_t>((1.0 - test_share) * 18446744073709551615.0);
  for (auto& s : lex->example_sentences()) (fnv1a(s) >= cut ? test_s : train_s).push_back(std::move(s));

  std::vector<nearmiss::NearMiss> train = nearmiss::generate(train_s, kinds_of(kNearMissKinds), seed, *lex);
  std::vector<std::string> test_kinds = kNearMissKinds;
  test_kinds.insert(test_kinds.end(), kPositiveKinds.begin(), kPositiveKinds.end());
  std::vector<nearmiss::NearMiss> test = nearmiss::generate(test_s, kinds_of(test_kinds), seed, *lex);
  cap(train, max_train);
  cap(test, max_test);
  std::filesystem::create_directories(out_dir);
  nearmiss::write_nearmisses(g.train_pairs, train, nearmiss::Layout::Pairs);
  nearmiss::write_nearmisses(g.test_pairs, test, nearmiss::Layout::Pairs);
  g.train_rows = train.size();
  g.test_rows = test.size();
  log_info("near-misses from WordNet examples: " + std::to_string(train.size()) + " training pairs (" +
           std::to_string(train_s.size()) + " sentences), " + std::to_string(test.size()) + " test pairs (" +
           std::to_string(test_s.size()) + " held-apart sentences)");
  return g;
}

void write_training_jsonl(const std::string& path, const std::vector<train::TrainExample>& rows) {
  std::string out;
  for (const auto& r : rows) {
    nlohmann::json j = {{"anchor", r.anchor}, {"positive", r.positive}};
    if (!r.negatives.empty()) j["negative"] = r.negatives;
    if (!r.category.empty()) j["category"] = r.category;
    out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    out += '\n';
  }
  write_text(path, out);
}

void cap_by_category(std::vector<train::TrainExample>& rows, size_t max_rows) {
  stratified_cap(rows, max_rows, [](const train::TrainExample& r) { return r.category; });
}

std::vector<train::TrainExample> identity_triplets(const std::string& pairs_path, size_t max_rows) {
  std::vector<train::TrainExample> rows = train::read_training_file(pairs_path, /*identity=*/true);
  stratified_cap(rows, max_rows, [](const train::TrainExample& r) { return r.category; });
  return rows;
}

void check_options(const std::string& out_dir, const nlohmann::json& options) {
  const std::string path = path_join(out_dir, "options.json");
  if (!is_file(path)) {
    write_json(path, options);
    return;
  }
  const nlohmann::json before = read_json(path);
  if (before == options) return;
  std::string diff;
  for (const auto& [k, v] : options.items())
    if (!before.contains(k) || before[k] != v) diff += (diff.empty() ? "" : ", ") + k;
  throw Error(out_dir + " holds results made with other options (" + (diff.empty() ? "removed keys" : diff) +
              " differ; see " + path + "): give another --out, or remove the folder to start over");
}

nlohmann::json aggregate_seed_results(const std::string& out_dir, const std::vector<uint64_t>& seeds) {
  std::vector<nlohmann::json> runs;
  for (uint64_t s : seeds) runs.push_back(read_json(path_join(out_dir, "seed_" + std::to_string(s) + "/results.json")));
  nlohmann::json agg = eval::aggregate_runs(runs);
  agg["seeds"] = seeds;
  return agg;
}

nlohmann::json read_json(const std::string& path) {
  const std::string text = read_file(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not valid JSON (" + e.what() + ")");
  }
}

void write_text(const std::string& path, const std::string& text) {
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  write_file_atomic(path, text);
}

void write_json(const std::string& path, const nlohmann::json& j) {
  write_text(path, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

std::vector<uint64_t> parse_uint_list(const std::string& list, const std::string& what) {
  std::vector<uint64_t> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    SIEVE_THROW_IF_NOT(!item.empty() && item.find_first_not_of("0123456789") == std::string::npos,
                       what + " must be a comma-separated list of integers, got '" + list + "'");
    out.push_back(std::stoull(item));
  }
  SIEVE_THROW_IF_NOT(!out.empty(), "no " + what + " given");
  return out;
}

}  // namespace sieve::experiment
