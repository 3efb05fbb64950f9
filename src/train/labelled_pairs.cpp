// read_labelled_pairs (labelled_pairs.h).
#include "train/labelled_pairs.h"

#include <algorithm>

#include "eval/pairs.h"
#include "sieve/error.h"
#include "sieve/pipeline.h"

namespace sieve::train {

std::vector<TrainExample> read_labelled_pairs(const std::string& path) {
  const std::vector<eval::SentencePair> pairs = eval::read_pairs(path);
  const auto labelled = static_cast<size_t>(
      std::count_if(pairs.begin(), pairs.end(), [](const eval::SentencePair& p) { return !p.label.empty(); }));
  std::vector<TrainExample> out;
  if (labelled > 0) {
    SIEVE_THROW_IF_NOT(labelled == pairs.size(), "'" << path << "': " << pairs.size() - labelled << " of " << pairs.size()
                                                     << " pairs have no label (every pair needs one: 1/0, same/different, ...)");
    for (const auto& p : pairs)
      if (!p.sentence1.empty() && !p.sentence2.empty())
        out.push_back({p.sentence1, p.sentence2, {}, p.category, parse_identity_label(p.label) ? 1 : 0});
    return out;
  }
  const std::vector<TrainExample> rows = read_training_file(path);
  for (size_t i = 0; i < rows.size(); ++i) {
    SIEVE_THROW_IF_NOT(!rows[i].negatives.empty(), "'" << path << "': row " << i + 1
                                                       << " has neither a label nor a negative (give sentence1, "
                                                          "sentence2, label pairs or anchor, positive, negative triplets)");
    out.push_back({rows[i].anchor, rows[i].positive, {}, rows[i].category, 1});
    for (const auto& n : rows[i].negatives) out.push_back({rows[i].anchor, n, {}, rows[i].category, 0});
  }
  return out;
}

}  // namespace sieve::train
