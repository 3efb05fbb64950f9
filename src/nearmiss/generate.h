// Near-miss datasets: running the perturbations over many sentences, deterministically, and
// writing the pairs / identity triplets in the paper's formats (CSV as the paper, TSV, JSONL).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nearmiss/lexicon.h"
#include "nearmiss/perturb.h"

namespace sieve::nearmiss {

/// One generated pair: the source sentence, its perturbation and the perturbation's kind.
struct NearMiss {
  std::string source, perturbed;
  Kind kind = Kind::Negation;
  /// Non-empty: not a perturbation but a given paraphrase of `source` (e.g. a mined
  /// "definition_definition" pair), named so in the output; `kind` is then ignored.
  std::string given;
};

/// A row's category name (its kind's, or `given`) and whether it keeps the meaning.
std::string row_category(const NearMiss& r);
bool row_positive(const NearMiss& r);

/// Given paraphrase pairs (sentence, paraphrase, category) added to the rows of their sentences
/// as positives (NearMiss::given), so that to_triplets pairs them with the sentences' near-misses.
/// A sentence without rows of its own gains none (it has no near-miss). Order of `rows` is kept.
std::vector<NearMiss> add_given_paraphrases(const std::vector<NearMiss>& rows,
                                            const std::vector<std::array<std::string, 3>>& pairs);

/// Share of distinct lower-case words two texts have in common (Jaccard; 1 for two empty texts).
double word_overlap(const std::string& a, const std::string& b);

/// What a run did: inputs read, inputs that yielded no pair of any kind (unusable lines: empty,
/// markup, too long, mostly non-English; or no applicable edit), and per kind the pairs made.
struct GenerateReport {
  size_t inputs = 0;
  size_t skipped = 0;
  std::map<std::string, size_t> yielded;  ///< kind name -> pairs
};

/// Applies every kind in `kinds` to every sentence (at most one pair per sentence and kind). The
/// choice among possible edits depends only on (seed, sentence index, kind), so a run is
/// reproducible and adding a kind does not change the others' output. Pairs come in input order,
/// kinds in the order given.
std::vector<NearMiss> generate(const std::vector<std::string>& sentences, const std::vector<Kind>& kinds,
                               uint64_t seed, const Lexicon& lex, GenerateReport* report = nullptr);

/// The kinds `sieve nearmiss generate` makes when none are named: the paper's five structural
/// near-miss families (negation, role_swap, binding_swap, spatial_flip, antonym).
std::vector<Kind> default_kinds();

/// Output layouts: pairs `sentence1,sentence2,category`; triplets `anchor,positive,negative,category`
/// (see to_triplets).
enum class Layout { Pairs, Triplets };

/// One training row: an anchor, a text that means the same, and a structural near-miss of the anchor.
/// `category` is the negative's kind, or "NEGATIVE+POSITIVE" (e.g. "role_swap+synonym") when the
/// positive is a paraphrase rather than the anchor itself.
struct Triplet {
  std::string anchor, positive, negative, category;
};

/// The triplets of a run's rows, grouped by source sentence in input order. Every structural
/// near-miss (a non-positive kind) gives the identity triplet (source, source, near-miss) and, for
/// each meaning-preserving rewrite of the same source (synonym, passive, ...), the paraphrase
/// triplet (source, rewrite, near-miss) and, when `reversed`, its reverse (rewrite, source,
/// near-miss), category e.g. "role_swap+passive_reversed". A source with rewrites but no
/// near-miss gives no triplet (there is no negative).
std::vector<Triplet> to_triplets(const std::vector<NearMiss>& rows, bool reversed = false);

/// Writes rows with a header to `path` atomically: CSV (RFC 4180 quoting) by default, TSV when the
/// name ends in .tsv (tabs and newlines inside a field become spaces), JSON lines for .jsonl.
/// `max_per_category` > 0 keeps at most that many output rows of each category (pairs: the kind;
/// triplets: e.g. "role_swap+synonym"), evenly spread over the input (see spread_indices).
/// `reversed`: triplets also with each rewrite as the anchor (to_triplets). Returns the number of
/// rows written.
size_t write_nearmisses(const std::string& path, const std::vector<NearMiss>& rows, Layout layout,
                        size_t max_per_category = 0, bool reversed = false);

/// Which of `n` items to keep so that at most `max` remain, evenly spread: item i is kept when
/// floor(i * max / n) differs from floor((i - 1) * max / n) (all of them when n <= max or max is 0).
std::vector<bool> spread_indices(size_t n, size_t max);

/// The paper's category for a kind: negation -> "cannot_negation", binding_swap -> "binding_negation",
/// spatial_flip -> "spatial"; role_swap, antonym and synonym have none in the paper ("").
const char* paper_category(Kind k);

}  // namespace sieve::nearmiss
