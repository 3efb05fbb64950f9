// Trains a BERT-style WordPiece vocabulary (vocab.txt) from plain text, the way Hugging Face's
// WordPieceTrainer does: byte-pair-encoding merges over words split by BERT's basic tokenizer,
// with "##" marking the pieces that continue a word.
//
// Layout of the vocabulary (id = position = line of vocab.txt):
//   [PAD], [unused0] ... [unused<N-1>], [UNK], [CLS], [SEP], [MASK]   (N = num_unused, default 0,
//       so [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4, BERT's relative order)
//   every alphabet character as a word start ("a"), in code point order
//   every alphabet character as a continuation ("##a"), in code point order; punctuation and CJK
//       ideographs are left out since the tokenizer always makes them words of their own
//   the merged tokens in the order they were merged
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "text/bert_basic.h"
#include "text/utf8.h"

namespace sieve {

class Progress;

struct WordPieceTrainerOptions {
  /// Size of the whole vocabulary, specials and alphabet included. Reached exactly unless the
  /// corpus runs out of pairs that occur at least min_frequency times.
  size_t vocab_size = 16000;
  /// A character enters the alphabet, and a pair is merged, only when seen this often (in word
  /// occurrences).
  uint64_t min_frequency = 2;
  /// Lower-case and strip accents, as an uncased BERT tokenizer does (do_lower_case).
  bool lowercase = true;
  /// Keep at most this many characters, the most frequent (0 = no limit). Words with a character
  /// outside the alphabet become [UNK] when tokenized, so they do not take part in merges.
  size_t limit_alphabet = 1000;
  /// Stop adding new distinct words once this many are counted (0 = no cap); words already
  /// counted keep being counted. Bounds memory on huge inputs.
  size_t max_words = 0;
  /// Number of [unusedK] placeholders between [PAD] and [UNK] (BERT has 99 there).
  size_t num_unused = 0;
  /// Words longer than this (in characters) are not counted: the tokenizer turns them into one
  /// [UNK] whatever the vocabulary (WordPieceOptions::max_input_chars_per_word).
  size_t max_input_chars_per_word = 100;
  /// Report progress of reading and merging on stderr (sieve::Progress).
  bool progress = false;
};

/// Counts the words of text as BERT's basic tokenizer splits them (src/text/bert_basic.h):
/// lower-casing and accent stripping when uncased, whitespace, punctuation and CJK splitting.
/// Unlike the tokenizer, literal special tokens such as "[MASK]" in the text are not recognised
/// (Hugging Face's trainer does not either): they count as "[", "mask", "]".
class WordCounter {
 public:
  explicit WordCounter(const WordPieceTrainerOptions& opt = {});
  /// Counts the words of one text (any length; newlines are whitespace).
  void add_text(std::string_view text);
  /// Counts a text file line by line; throws sieve::Error naming the file when it cannot be read.
  /// `progress`, when given, advances by one per MiB read.
  void add_file(const std::string& path, Progress* progress = nullptr);

  /// Word (UTF-8, normalized) -> number of occurrences.
  const std::unordered_map<std::string, uint64_t>& counts() const { return counts_; }
  /// Occurrences of the words in counts().
  uint64_t words_counted() const { return counted_; }
  /// Occurrences left out: over max_input_chars_per_word, or new words past max_words.
  uint64_t words_skipped() const { return skipped_; }

 private:
  void flush_word();
  void count_word(const std::string& word);

  bool lowercase_;
  size_t max_words_;
  size_t max_chars_;
  std::unordered_map<std::string, uint64_t> counts_;
  uint64_t counted_ = 0;
  uint64_t skipped_ = 0;
  // Scratch reused across words so counting does not allocate per word.
  std::vector<CodePoint> cps_;
  std::vector<bert::NormChar> raw_, norm_;
  std::u32string decomp_;
  std::string word_;
};

/// A trained vocabulary and how it came about.
struct WordPieceVocab {
  std::vector<std::string> tokens;  ///< vocab.txt lines, id = index
  std::vector<std::pair<std::string, std::string>> merges;  ///< (left, right) in merge order
  size_t num_special = 0;       ///< [PAD], [unused*], [UNK], [CLS], [SEP], [MASK]
  size_t alphabet_size = 0;     ///< distinct characters kept
  size_t char_tokens = 0;       ///< single-character tokens ("a" and "##a" forms)
  uint64_t distinct_words = 0;  ///< words counted
  uint64_t words_counted = 0;   ///< their occurrences
  uint64_t unencodable_words = 0;  ///< distinct words left out of merging (character not kept)
};

/// The special tokens in vocabulary order: [PAD], [unused0..num_unused-1], [UNK], [CLS], [SEP], [MASK].
std::vector<std::string> wordpiece_special_tokens(size_t num_unused = 0);

/// Trains on counted words. Throws sieve::Error when vocab_size cannot even hold the specials and
/// the alphabet, or when there are no words.
WordPieceVocab train_wordpiece(const WordCounter& words, const WordPieceTrainerOptions& opt = {});

/// Counts the words of text files (one document or sentence per line, streamed) and trains.
WordPieceVocab train_wordpiece_files(const std::vector<std::string>& files,
                                     const WordPieceTrainerOptions& opt = {});

/// The vocab.txt content of `tokens`: one token per line, each line ended by '\n'.
std::string vocab_txt(const std::vector<std::string>& tokens);

}  // namespace sieve
