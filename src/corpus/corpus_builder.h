// `sieve corpus build`: clean English text and contrastive training pairs from the dictionaries
// Debian installs (WordNet, GCIDE, FOLDOC), so that sieve can train its small default model
// offline. Outputs (docs/corpus.md):
//
//   sentences.txt  one sentence per line, a blank line after each document (one dictionary entry),
//                  exact duplicates removed: the MLM pretraining text (`sieve train mlm --text`)
//   examples.txt   real example sentences only (WordNet examples, GCIDE usage examples that are
//                  full clauses, quotations), one per line, deduplicated: near-miss generator input
//   pairs.jsonl    {"anchor", "positive", "category"} pairs: headword_definition, gloss_example,
//                  definition_definition, synonym; deduplicated, in a fixed order
//   report.json    the CorpusReport
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "corpus/sources.h"
#include "nearmiss/lexicon.h"

namespace sieve::corpus {

struct CorpusOptions {
  std::string out_dir;
  /// Sources to read; empty = every installed one (a missing one is reported and skipped). A
  /// source named here that is not installed is an error.
  std::vector<Source> sources;
  /// Entries read per source (articles for GCIDE/FOLDOC, synsets for WordNet); 0 = all.
  size_t max_entries = 0;
  std::string wordnet_dir = nearmiss::Lexicon::kDefaultDir;
  std::string dictd_dir = "/usr/share/dictd";
};

struct SourceReport {
  Source source = Source::WordNet;
  bool available = false;
  std::string missing;    ///< why it was skipped, when not available
  size_t entries = 0;     ///< articles / synsets read
  size_t documents = 0;   ///< entries that kept at least one sentence
  size_t sentences = 0;   ///< kept (after deduplication)
  size_t words = 0;       ///< in the kept sentences
  size_t bytes = 0;       ///< of the kept sentences, newlines included
  size_t duplicates = 0;  ///< sentences dropped as exact duplicates of earlier ones
  size_t dropped = 0;     ///< sentences dropped as too short (< 3 words) or markup
  size_t examples = 0;    ///< lines it added to examples.txt
  double seconds = 0;
};

struct CorpusReport {
  std::string out_dir;
  std::vector<SourceReport> sources;
  std::map<std::string, size_t> pairs;                                   ///< per category
  std::map<std::string, std::map<std::string, size_t>> pairs_by_source;  ///< source(s) -> category -> n
  size_t example_duplicates = 0;
  double seconds = 0;
  nlohmann::ordered_json to_json() const;
};

/// One training pair. `source` ("wordnet", "gcide", "gcide+wordnet", ...) is for the report only.
struct Pair {
  std::string anchor, positive, category, source;
};

/// The pair categories, in the order pairs.jsonl lists them.
const std::vector<std::string>& pair_categories();

/// The sentences.txt lines of one entry: its paragraphs split into sentences, those under 3 words
/// or with markup left ('{', '}', '\\', mostly non-letters) dropped (counted in `dropped`).
/// No deduplication (that is corpus-wide).
std::vector<std::string> entry_sentences(const Entry& e, size_t* dropped = nullptr);

/// The examples.txt lines of one entry: WordNet examples; GCIDE usage examples that are full
/// clauses (checked with `lex`; none when it is null), as sentences; quotations split into
/// sentences. Each has at least 3 words.
std::vector<std::string> entry_examples(const Entry& e, const nearmiss::Lexicon* lex);

/// Mines the pairs of `entries` (any mix of sources, in the order given):
///  - headword_definition: "headword (pos)" (or the headword when the pos is unknown, or a run-on
///    phrase) <-> each definition that is not a bare cross-reference ("See Weir.");
///  - gloss_example: a WordNet gloss <-> each of its examples (2+ words); a GCIDE definition <->
///    each of its usage examples that is a full clause (with `lex`);
///  - definition_definition: for a headword and part of speech defined by two sources (FOLDOC
///    counts as nouns; GCIDE articles copied from WordNet 1.5 are left out), the definitions are
///    matched one-to-one, most shared content words first; a match needs one shared content word
///    other than the headword;
///  - synonym: a single word <-> each single-word synonym (WordNet synset lemmas, GCIDE "Syn:"),
///    each unordered pair once.
/// Pairs are unique per category, never have equal sides (ignoring case), and come in category
/// order, then entry order.
std::vector<Pair> mine_pairs(const std::vector<Entry>& entries, const nearmiss::Lexicon* lex);

/// Reads the sources, writes the four files into options.out_dir (created when missing) and
/// returns the report. Throws sieve::Error for a named source that is not installed or a file it
/// cannot write.
CorpusReport build_corpus(const CorpusOptions& options);

}  // namespace sieve::corpus
