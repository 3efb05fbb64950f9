// `sieve nearmiss generate`: typed structural near-misses of sentences (docs/nearmiss.md).
#include <array>
#include <fstream>
#include <set>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_common.h"
#include "eval/pairs.h"
#include "nearmiss/generate.h"
#include "sieve/error.h"

namespace sieve::cli {

void register_nearmiss(CLI::App& app) {
  auto* group = app.add_subcommand("nearmiss", "Rule-based structural near-misses from WordNet (negation, swaps, ...)");
  group->require_subcommand(1);
  struct Opts {
    std::string in, source, out, kinds, layout = "pairs";
    std::string wordnet = nearmiss::Lexicon::kDefaultDir;
    uint64_t seed = 42;
    size_t max_inputs = 0, max_per_category = 0;
    bool reversed = false;
    std::string paraphrases, paraphrase_category;
    double min_overlap = 0;
  };
  auto o = std::make_shared<Opts>();
  for (nearmiss::Kind k : nearmiss::default_kinds()) o->kinds += (o->kinds.empty() ? "" : ",") + std::string(nearmiss::kind_name(k));
  auto* cmd = group->add_subcommand("generate", "Perturb each input sentence by each kind; write pairs or identity triplets");
  cmd->add_option("-i,--in,--input", o->in, "Sentences, one per line ('-' = stdin)");
  cmd->add_option("--source", o->source, "Instead of --in: wordnet-examples or wordnet-glosses (installed with WordNet)")
      ->check(CLI::IsMember({"wordnet-examples", "wordnet-glosses"}));
  cmd->add_option("--paraphrases", o->paraphrases,
                  "Instead of --in: given paraphrase pairs (.jsonl anchor/positive/category as `sieve corpus build` "
                  "writes pairs.jsonl, .tsv or .csv sentence1/sentence2/category); each first sentence is perturbed and "
                  "the triplets pair its near-misses with its given paraphrases (category KIND+CATEGORY)");
  cmd->add_option("--paraphrase-category", o->paraphrase_category,
                  "With --paraphrases: keep only pairs of this category (e.g. definition_definition)");
  cmd->add_option("--min-overlap", o->min_overlap,
                  "With --paraphrases: keep only pairs sharing at least this share of their distinct words (Jaccard)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--kinds", o->kinds,
                  "Comma-separated: negation, role_swap, binding_swap, spatial_flip, antonym, passive_role_swap, entity_swap; questions (issue 57): question_negation, wh_swap, question_role_swap, number_change (any sentence); positives (meaning kept): synonym, passive, contraction, coordination, possessive, adverb_move, determiner, negated_antonym")
      ->capture_default_str();
  cmd->add_option("-o,--out", o->out, "Output: CSV (sentence1,sentence2,category), .tsv, or .jsonl")->required();
  cmd->add_option("--layout", o->layout, "pairs or triplets (anchor,positive,negative,category)")
      ->capture_default_str()
      ->check(CLI::IsMember({"pairs", "triplets"}));
  cmd->add_option("--seed", o->seed, "Seed of the choice among possible edits")->capture_default_str();
  cmd->add_option("--max-inputs", o->max_inputs, "Read at most this many sentences (0 = all)")->capture_default_str();
  cmd->add_option("--max-per-category", o->max_per_category,
                  "Write at most this many rows of each category, evenly spread over the input (0 = all)")
      ->capture_default_str();
  cmd->add_flag("--reversed", o->reversed,
                "Triplets: also each rewrite as the anchor, the sentence as its positive (category ..._reversed)");
  cmd->add_option("--wordnet", o->wordnet, "WordNet 3.0 database directory")->capture_default_str();
  on_run(cmd, [o] {
    SIEVE_THROW_IF_NOT(int(!o->in.empty()) + int(!o->source.empty()) + int(!o->paraphrases.empty()) == 1,
                       "give exactly one of --in FILE, --source NAME and --paraphrases FILE");
    SIEVE_THROW_IF_NOT(o->paraphrases.empty() || o->layout == "triplets",
                       "--paraphrases makes triplets: add --layout triplets");
    std::vector<nearmiss::Kind> kinds;
    std::stringstream ks(o->kinds);
    for (std::string k; std::getline(ks, k, ',');)
      if (!k.empty()) kinds.push_back(nearmiss::kind_from_name(k));
    SIEVE_THROW_IF_NOT(!kinds.empty(), "--kinds is empty");
    SIEVE_THROW_IF_NOT(nearmiss::Lexicon::available(o->wordnet),
                       "WordNet is not installed in '" << o->wordnet << "' (apt install wordnet-base)");
    auto lex = nearmiss::Lexicon::load(o->wordnet);
    std::vector<std::string> sentences;
    std::vector<std::array<std::string, 3>> given;
    if (!o->paraphrases.empty()) {
      std::set<std::string> kept;  // the first sentences read (at most --max-inputs of them)
      for (auto& p : eval::read_pairs(o->paraphrases)) {
        if (!o->paraphrase_category.empty() && p.category != o->paraphrase_category) continue;
        if (p.sentence1 == p.sentence2 || nearmiss::word_overlap(p.sentence1, p.sentence2) < o->min_overlap) continue;
        if (!kept.count(p.sentence1)) {
          if (o->max_inputs && sentences.size() >= o->max_inputs) continue;
          kept.insert(p.sentence1);
          sentences.push_back(p.sentence1);
        }
        given.push_back({p.sentence1, p.sentence2, p.category});
      }
      SIEVE_THROW_IF_NOT(!sentences.empty(), "'" << o->paraphrases << "' has no pair that passes the filters");
    } else if (!o->source.empty()) {
      sentences = o->source == "wordnet-examples" ? lex->example_sentences(o->max_inputs) : lex->glosses(o->max_inputs);
    } else {
      std::ifstream file;
      if (o->in != "-") {
        file.open(o->in, std::ios::binary);
        SIEVE_THROW_IF_NOT(file.is_open(), "cannot read '" << o->in << "'");
      }
      std::istream& in = o->in == "-" ? std::cin : file;
      for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        sentences.push_back(line);
        if (o->max_inputs && sentences.size() >= o->max_inputs) break;
      }
    }
    nearmiss::GenerateReport report;
    auto rows = nearmiss::generate(sentences, kinds, o->seed, *lex, &report);
    if (!given.empty()) rows = nearmiss::add_given_paraphrases(rows, given);
    const size_t written = nearmiss::write_nearmisses(
        o->out, rows, o->layout == "pairs" ? nearmiss::Layout::Pairs : nearmiss::Layout::Triplets, o->max_per_category,
        o->reversed);
    nlohmann::json j = {{"inputs", report.inputs}, {"no_pair", report.skipped}, {"pairs", rows.size()},
                        {"rows_written", written}, {"per_kind", report.yielded}, {"out", o->out}};
    std::printf("%s\n", j.dump().c_str());
  });
}

}  // namespace sieve::cli
