// Sentence-pair and training files on arbitrary bytes: TSV (with Python csv quoting), CSV
// (RFC 4180), JSON lines; pairs for scoring and calibration, triplets and pairs for training.
#include "eval/pairs.h"
#include "fuzz_target.h"
#include "train/train_data.h"

SIEVE_FUZZ_TARGET(pairs) {
  for (const char* name : {"p.tsv", "p.csv", "p.jsonl"}) {
    const std::string path = sieve::fuzz::input_file(data, size, name);
    sieve::fuzz::expect_only_sieve_errors([&] { sieve::eval::read_pairs(path); });
    sieve::fuzz::expect_only_sieve_errors([&] { sieve::train::read_training_file(path); });
    sieve::fuzz::expect_only_sieve_errors([&] { sieve::train::read_training_file(path, true); });
  }
  return 0;
}
