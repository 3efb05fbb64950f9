// negation_cues, voice_cue_ids and conjunction_ids (sieve/verify.h): the negation cue words of a
// vocabulary as exact id runs (F4's cue channel, the cue penalty), the passive's agent marker (the
// order penalty) and the coordinating conjunctions (the mlp gate's conj_swap feature).
#include <algorithm>
#include <string>

#include "sieve/tokenizer.h"
#include "sieve/verify.h"

namespace sieve {

namespace {

// The ids of the pieces of `text` whose bytes end past `from`, when none of them starts before
// `word_begin` (a piece that fuses the word with what precedes it gives nothing); empty when
// one is the unknown token.
std::vector<int32_t> pieces_from(const Tokenizer& tokenizer, const std::string& text, size_t word_begin, size_t from) {
  std::vector<int32_t> ids;
  const int32_t unk = tokenizer.special_tokens().unk;
  for (const TokenPiece& p : tokenizer.tokenize(text)) {
    if (p.end <= from) continue;
    // Byte-level BPE spans may take in the space before the word ("Ġnot").
    if (p.begin + 1 < word_begin) return {};
    if (p.id == unk) return {};
    ids.push_back(p.id);
  }
  return ids;
}

}  // namespace

CueSequences negation_cues(const Tokenizer& tokenizer) {
  static const char* const kWords[] = {"not",     "no",  "never",   "nothing", "none",   "nobody",
                                       "neither", "nor", "without", "nowhere", "cannot"};
  static const char* const kContracted[] = {"isn't",    "aren't",   "wasn't", "weren't",  "don't",
                                            "doesn't",  "didn't",   "can't",  "couldn't", "won't",
                                            "wouldn't", "shouldn't", "hasn't", "haven't",  "hadn't"};
  // Mid-sentence after a plain word ("so not": a byte-level BPE reads " not", not "not"), and
  // at the start of a text.
  const std::string lead = "so ";
  CueSequences out;
  auto add = [&](std::vector<int32_t> run) {
    if (!run.empty()) out.push_back(std::move(run));
  };
  for (const char* w : kWords) {
    std::string cap = w;
    cap[0] = static_cast<char>(cap[0] - 'a' + 'A');
    for (const std::string& form : {std::string(w), cap}) {
      add(pieces_from(tokenizer, lead + form, lead.size(), lead.size()));
      add(pieces_from(tokenizer, form, 0, 0));
    }
  }
  for (const char* w : kContracted) {
    const std::string word = w;
    const size_t apostrophe = word.find('\'');
    for (const std::string& mark : {std::string("'"), std::string("\xE2\x80\x99")}) {  // ' and ’
      const std::string text = lead + word.substr(0, apostrophe) + mark + word.substr(apostrophe + 1);
      // From the apostrophe on; a piece that holds the "n" before it ("n't") is taken whole.
      add(pieces_from(tokenizer, text, lead.size(), lead.size() + apostrophe));
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {
// The ids of the words that the tokenizer reads as one known piece, sorted.
std::vector<int32_t> one_piece_ids(const Tokenizer& tokenizer, std::initializer_list<const char*> words) {
  std::vector<int32_t> ids;
  for (const char* w : words) {
    const auto pieces = tokenizer.tokenize(w);
    if (pieces.size() == 1 && pieces[0].id != tokenizer.special_tokens().unk) ids.push_back(pieces[0].id);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}
}  // namespace

std::vector<int32_t> voice_cue_ids(const Tokenizer& tokenizer) { return one_piece_ids(tokenizer, {"by"}); }

std::vector<int32_t> conjunction_ids(const Tokenizer& tokenizer) { return one_piece_ids(tokenizer, {"and", "or"}); }

}  // namespace sieve
