// Near-miss generator measurements (prints one JSON object; docs/nearmiss.md):
//  - per kind: sentences/s, yield, and the intended-edit rate by check_edit over up to --pairs
//    generated pairs from WordNet's example sentences, with --show examples from a fixed seed;
//  - with --sugarcrepe FILE: per SugarCrepe category with a matching kind (swap_obj -> role_swap,
//    swap_att -> binding_swap, replace_rel -> spatial_flip and antonym), how often sieve makes a
//    near-miss of that kind from the original caption and how often it equals SugarCrepe's.
// Usage: bench_nearmiss [--pairs 1000] [--show 30] [--seed 42] [--sugarcrepe ../shared/data/nearmiss/sugarcrepe.tsv]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "nearmiss/generate.h"
#include "train/train_data.h"

using namespace sieve;
using namespace sieve::nearmiss;

namespace {

std::string norm(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  while (!s.empty() && (s.back() == '.' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sieve near-miss generator benchmark"};
  size_t pairs = 1000, show = 30;
  uint64_t seed = 42;
  std::string sugarcrepe;
  app.add_option("--pairs", pairs);
  app.add_option("--show", show);
  app.add_option("--seed", seed);
  app.add_option("--sugarcrepe", sugarcrepe);
  CLI11_PARSE(app, argc, argv);
  if (!Lexicon::available()) {
    std::fprintf(stderr, "WordNet not installed (apt install wordnet-base)\n");
    return 1;
  }
  auto t0 = std::chrono::steady_clock::now();
  auto lex = Lexicon::load();
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<std::string> sentences = lex->example_sentences();
  std::mt19937_64 shuffle_rng(seed);
  std::shuffle(sentences.begin(), sentences.end(), shuffle_rng);
  Perturber perturber(*lex);
  nlohmann::json out = {{"lexicon_load_s", load_s}, {"source", "WordNet 3.0 example sentences (shuffled)"}};
  for (Kind k : {Kind::Negation, Kind::RoleSwap, Kind::BindingSwap, Kind::SpatialFlip, Kind::Antonym, Kind::Synonym,
                 Kind::Passive, Kind::Contraction, Kind::Coordination, Kind::Possessive, Kind::AdverbMove}) {
    size_t tried = 0, made = 0, intended = 0;
    nlohmann::json examples = nlohmann::json::array(), shapes = nlohmann::json::object();
    auto s0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < sentences.size() && made < pairs; ++i) {
      ++tried;
      std::seed_seq seq{seed, static_cast<uint64_t>(i), static_cast<uint64_t>(k)};
      std::mt19937_64 rng(seq);
      auto p = perturber.apply(sentences[i], k, rng);
      if (!p) continue;
      ++made;
      DiffCheck d = check_edit(sentences[i], *p, k, *lex);
      intended += d.intended;
      shapes[d.shape] = shapes.value(d.shape, 0) + 1;
      if (examples.size() < show) examples.push_back({sentences[i], *p});
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
    out["kinds"][kind_name(k)] = {{"sentences_tried", tried},
                                  {"pairs", made},
                                  {"yield", made / std::max(1.0, double(tried))},
                                  {"intended_rate", intended / std::max(1.0, double(made))},
                                  {"shapes", shapes},
                                  {"sentences_per_second", tried / std::max(1e-9, secs)},
                                  {"examples", examples}};
    std::fprintf(stderr, "%s: %zu pairs from %zu sentences\n", kind_name(k), made, tried);
  }
  if (!sugarcrepe.empty()) {
    auto rows = train::read_training_file(sugarcrepe);
    const std::vector<std::pair<std::string, std::vector<Kind>>> match = {
        {"swap_obj", {Kind::RoleSwap}},
        {"swap_att", {Kind::BindingSwap}},
        {"replace_rel", {Kind::SpatialFlip, Kind::Antonym}}};
    for (const auto& [category, kinds] : match) {
      size_t n = 0, produced = 0, exact = 0;
      for (size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].category != category) continue;
        ++n;
        bool any = false, same = false;
        for (Kind k : kinds) {
          std::seed_seq seq{seed, static_cast<uint64_t>(i), static_cast<uint64_t>(k)};
          std::mt19937_64 rng(seq);
          auto p = perturber.apply(rows[i].anchor, k, rng);
          if (!p) continue;
          any = true;
          same = same || norm(*p) == norm(rows[i].positive);
        }
        produced += any;
        exact += same;
      }
      std::string names;
      for (Kind k : kinds) names += std::string(names.empty() ? "" : "+") + kind_name(k);
      out["sugarcrepe"][category] = {{"sieve_kinds", names},
                                     {"captions", n},
                                     {"sieve_made_a_near_miss", produced},
                                     {"equal_to_sugarcrepe", exact}};
    }
  }
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
