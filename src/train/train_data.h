// Training data: triplets and pairs from CSV/TSV/JSON lines, BEIR train qrels as (query,
// positive passage) pairs, identity triplets, and the batch sampler that never repeats a text
// inside a batch. No torch here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace sieve::train {

/// One training row. Pairs have no negative; triplets one (more are allowed: every negative
/// becomes an extra column of the loss).
struct TrainExample {
  std::string anchor, positive;
  std::vector<std::string> negatives;
  std::string category;  ///< kept for reporting; never used by the losses
  int label = -1;        ///< labelled pairs (the verifier's pairs objective): 1 same meaning, 0 not; else -1
};

/// Reads training rows from `path` by extension: `.csv` (RFC 4180 quoting, header row), `.jsonl`
/// (one object per line), anything else TSV with a header row. Columns (JSON keys):
///  - triplets: anchor, positive[, negative, negative_2, ...][, category] (no negative: a pair);
///  - pairs: sentence1, sentence2[, category] (aliases as eval::read_pairs: premise/hypothesis,
///    query/candidate, original/near_miss, text1/text2).
/// When `identity` is true, pairs become identity triplets as the paper builds Model B's data:
/// anchor = positive = sentence1, negative = sentence2. Otherwise a pair is (anchor = sentence1,
/// positive = sentence2) without negative. Rows with an empty required field are skipped and
/// counted in *skipped (when given). Throws sieve::Error naming the file and 1-based line for a
/// missing file, a header without the needed columns, or a malformed line.
std::vector<TrainExample> read_training_file(const std::string& path, bool identity = false,
                                             size_t* skipped = nullptr);

/// BEIR folder -> (query text, positive passage text) pairs from qrels/<split>.tsv (score > 0),
/// queries.jsonl and corpus.jsonl (passage = title + " " + text when a title exists, as
/// sieve's index does). Throws sieve::Error when a file is missing or a qrel names an unknown id.
std::vector<TrainExample> read_beir_train_pairs(const std::string& dir, const std::string& split = "train");

/// Reads `path` as a BEIR folder (when it is a directory; `identity` must then be false) or as a
/// training file. BEIR pairs come ordered by query id, then document id.
std::vector<TrainExample> read_training_data(const std::string& path, bool identity = false);

/// Deterministic epoch-by-epoch batches of example indices. No text is shared between two rows
/// of a batch (anchor, positive and negatives compared as exact strings; a row may repeat its own
/// text, as identity triplets do), so in-batch negatives are never copies of a positive. Rows
/// that would share a text are deferred to a later batch of the same epoch; a row that fits no
/// batch of the epoch waits for the next one. Keeps a pointer to `data`, which must outlive it.
/// epoch() is 0-based: the epoch the latest rows came from (a batch can span two).
class BatchSampler {
 public:
  /// Throws sieve::Error when batch_size is 0, there are fewer examples than batch_size, or no
  /// batch without shared texts exists.
  BatchSampler(const std::vector<TrainExample>& data, size_t batch_size, uint64_t seed);
  /// The next full batch (always batch_size indices); epochs reshuffle with the sampler's RNG.
  std::vector<size_t> next();
  size_t epoch() const { return epoch_; }
  /// The sampler's whole state as text (for resuming), and its inverse.
  std::string state() const;
  void restore(const std::string& state);

 private:
  void start_epoch();
  const std::vector<TrainExample>* data_;
  size_t batch_size_;
  std::mt19937_64 rng_;
  std::vector<size_t> order_;  // this epoch's remaining rows, in order
  size_t epoch_ = 0;
};

}  // namespace sieve::train
