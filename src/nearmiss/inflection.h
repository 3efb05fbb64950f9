// Inflection of English verbs and nouns (the word-level part of lexicon.h): irregular forms from
// WordNet's <pos>.exc files read backwards, regular forms by spelling rules. Works on normalized
// lower-case words with '_' between the words of a multiword lemma.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

namespace sieve::nearmiss {

/// An inflected form of a base, from <pos>.exc read backwards.
struct ExcForm {
  std::string form;
  bool only_base;  ///< its exc line lists this base only
};
/// base -> its irregular forms (one table per part of speech).
using InflectionTable = std::unordered_map<std::string, std::vector<ExcForm>>;

struct VerbForms {
  std::string past, participle, third, ing;
};

/// All forms of a one-word verb: irregular ones from `verbs`, the rest by rule.
VerbForms verb_forms(const std::string& base, const InflectionTable& verbs);

/// The plural of a noun (a multiword one pluralizes its last word): irregular from `nouns`, else by rule.
std::string plural(const std::string& base, const InflectionTable& nouns);

}  // namespace sieve::nearmiss
