// Sentence-pair files (for verifier scoring and calibration): TSV or CSV with a header row.
#pragma once

#include <string>
#include <vector>

namespace sieve::eval {

/// One pair. `label` is the gold column when the file has one (label, score, is_same), else "".
struct SentencePair {
  std::string sentence1, sentence2, category, label;
};

/// Categories that mark a positive (meaning-preserving) pair when a command is not told otherwise:
/// the near-miss generator's rewrite kinds (synonym, passive, contraction, coordination,
/// possessive, adverb_move, determiner, negated_antonym), the paraphrase sets' positives (paws_paraphrase, mrpc_paraphrase,
/// sts_paraphrase) and the generic paraphrase, positive, entailment.
const std::vector<std::string>& default_positive_categories();
/// The same, comma-separated (for option defaults).
std::string default_positive_categories_list();

/// Python's csv writer (which wrote the shared TSV files) quotes a field that holds a quote or a
/// tab: "A sign reads ""Pub""." Such a field is unquoted in place; one with a lone quote inside,
/// or a quote at one end only, is text and stays as it is.
void unquote_tsv_field(std::string& f);

/// Reads pairs from a file with a header row: `.csv` is comma-separated with RFC 4180 quoting
/// (on one line), `.jsonl` one JSON object per line (no header; keys as the column names),
/// anything else tab-separated (fields quoted as Python's csv writer quotes them are unquoted). Column names: sentence1 (or premise, anchor, query, original),
/// sentence2 (or hypothesis, candidate, near_miss, negative, text2, and last positive: a triplet
/// file gives its negative), optional category, optional label (or score, is_same). Throws
/// sieve::Error naming the file and line at fault.
std::vector<SentencePair> read_pairs(const std::string& path);

/// Splits one CSV line (RFC 4180 quotes, doubled quotes inside quoted fields); throws
/// sieve::Error on an unterminated quote.
std::vector<std::string> split_csv_line(const std::string& line);

}  // namespace sieve::eval
