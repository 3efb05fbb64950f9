// Paraphrase-versus-near-miss evaluation sets built from public pair data (the BEIR-style
// `shared/data` folder): PAWS, MRPC, and a mixed set of STS-B paraphrases against SugarCrepe
// swaps/replacements and SNLI/MNLI contradictions that share most words with their premise.
// Every set is split once into training, development and evaluation parts, by connected component
// of the sentence graph (two pairs that share a sentence, compared case- and space-insensitively,
// land in the same part), so no sentence of an evaluation pair is ever seen in training.
// docs/evaluation.md describes the sets; scripts/eval-paraphrase.sh runs them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/pairs.h"

namespace sieve::eval {

struct ParaphraseSetOptions {
  std::string shared_data;            ///< folder holding pairs/ and nearmiss/ (../shared/data)
  /// Optional pairs file of generated rewrites and near-misses of held-apart sentences
  /// (`sieve nearmiss generate --layout pairs`); they join the mixed set's evaluation part only.
  std::string generated;
  /// Categories of `generated` that are meaning-preserving rewrites (label 1); others are near-misses.
  std::vector<std::string> generated_positive = {"synonym",    "passive",     "contraction",
                                                 "coordination", "possessive", "adverb_move",
                                                 "determiner", "negated_antonym"};
  double eval_fraction = 0.3;          ///< share of components that go to the evaluation part
  double dev_fraction = 0.1;           ///< share that goes to the development part (calibration, choices)
  uint64_t seed = 0;                   ///< mixed into the component hash (0 = the documented split)
  double sts_min_score = 4.6;          ///< STS-B pairs at or above this score are paraphrases
  double contradiction_min_overlap = 0.5;  ///< word-set Jaccard of an SNLI/MNLI contradiction with its premise
};

/// One output pair: category names the source and kind; label 1 = same meaning, 0 = near-miss.
struct LabelledPair {
  std::string sentence1, sentence2, category;
  int label = 0;
};

/// The sets: name -> (training, development and evaluation parts). Names: "paws", "mrpc", "mixed",
/// "condaqa" (CondaQA's negation edits), "cannot" (CANNOT's negations, near-misses only).
struct ParaphraseSets {
  std::map<std::string, std::vector<LabelledPair>> train, dev, eval;
  nlohmann::json report;  ///< counts per set, part and category, and the rules used
};

/// Reads the shared files and splits them. A missing pairs file is skipped and named in the
/// report's "missing"; throws sieve::Error when `shared_data` is not a folder or a file is malformed.
ParaphraseSets build_paraphrase_sets(const ParaphraseSetOptions& opt);

/// Writes OUT/<set>-train.tsv, OUT/<set>-dev.tsv and OUT/<set>-eval.tsv (sentence1, sentence2, category, label) and
/// OUT/report.json; creates OUT.
void write_paraphrase_sets(const ParaphraseSets& sets, const std::string& out_dir);

/// Lower-cased word tokens (runs of letters and digits) of a sentence.
std::vector<std::string> word_tokens(const std::string& s);

/// Jaccard overlap of the word sets of two sentences (0 when both are empty).
double word_jaccard(const std::string& a, const std::string& b);

/// Reads a TSV file whose fields may be quoted CSV-style (a field that starts with '"' runs to
/// the matching '"', with '""' for a quote), as Python's csv module writes tab-separated files.
/// Returns the header row and the data rows; blank lines are skipped.
std::pair<std::vector<std::string>, std::vector<std::vector<std::string>>> read_quoted_tsv(const std::string& path);

}  // namespace sieve::eval
