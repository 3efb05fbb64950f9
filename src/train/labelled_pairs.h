// Labelled pairs for the trainers that judge one pair at a time (the verifier's pairs objective,
// the cross-encoder): one reader, one rule.
#pragma once

#include <string>
#include <vector>

#include "train/train_data.h"

namespace sieve::train {

/// Reads `path` as labelled pairs (sentence1, sentence2, label: 1/0, same/different, ...; every
/// pair needs a label) or, when no row has a label, as triplets, each row giving (anchor,
/// positive, 1) and (anchor, negative, 0) for every negative. Examples come back as anchor =
/// first text, positive = second text, label 0 or 1, no negatives. Throws sieve::Error naming the
/// file for a partly labelled file or a row with neither a label nor a negative.
std::vector<TrainExample> read_labelled_pairs(const std::string& path);

}  // namespace sieve::train
