// negation_cue_ids and voice_cue_ids (sieve/verify.h): the vocabulary ids of negation cue words
// (F4's cue channel, the cue penalty) and of the passive's agent marker (the order penalty).
#include <algorithm>

#include "sieve/tokenizer.h"
#include "sieve/verify.h"

namespace sieve {

std::vector<int32_t> negation_cue_ids(const Tokenizer& tokenizer) {
  // Words that negate on their own (CondaQA's and the generator's cues), each kept when the
  // tokenizer reads it as a single piece; and the piece that ends a contracted "n't".
  static const char* const kWords[] = {"not",  "no",      "never",   "nothing", "none",   "nobody",
                                       "neither", "nor", "without", "nowhere", "cannot"};
  std::vector<int32_t> ids;
  for (const char* w : kWords) {
    const auto pieces = tokenizer.tokenize(w);
    if (pieces.size() == 1) ids.push_back(pieces[0].id);
  }
  // "isn't": WordPiece ends it with "'" "t", byte-level BPE with "'t" or "n't".
  const auto pieces = tokenizer.tokenize("isn't");
  if (pieces.size() >= 2) {
    const std::string& last = pieces.back().token;
    if (last == "t" || last == "'t" || last == "n't" || last == "Ġ't") ids.push_back(pieces.back().id);
  }
  const int32_t unk = tokenizer.special_tokens().unk;
  ids.erase(std::remove(ids.begin(), ids.end(), unk), ids.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::vector<int32_t> voice_cue_ids(const Tokenizer& tokenizer) {
  std::vector<int32_t> ids;
  for (const char* w : {"by"}) {
    const auto pieces = tokenizer.tokenize(w);
    if (pieces.size() == 1 && pieces[0].id != tokenizer.special_tokens().unk) ids.push_back(pieces[0].id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace sieve
