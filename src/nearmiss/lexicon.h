// English lexicon from Princeton WordNet 3.0 (Debian's `wordnet-base`): lemma look-up, base forms
// (WordNet's "morphy"), synonyms, antonyms, inflection, and WordNet's glosses and example
// sentences. It is the word-level layer under the rule-based near-miss generator (negation, role
// swap, attribute-binding swap, spatial flip, antonym); it knows nothing about sentences.
//
// The files are parsed here (formats documented in lexicon.cpp, after wndb(5WN)); they are
// validated at load time, so a damaged file fails with its path and line instead of giving wrong
// words later. A loaded Lexicon is immutable and safe to share across threads.
//
// Conventions of every query:
//  - input words and lemmas are matched case-insensitively, and a multiword lemma may be spelled with
//    '_' (WordNet's spelling) or spaces: "ice cream" == "ice_cream";
//  - outputs spell multiword lemmas with spaces. Lemma outputs (base_forms) and inflections are
//    lower-case; synonyms and antonyms keep WordNet's capitalisation ("Einstein").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sieve::nearmiss {

/// WordNet's four syntactic categories (adjective satellites count as Adj).
enum class Pos { Noun, Verb, Adj, Adv };

/// "noun", "verb", "adj" or "adv" (WordNet's file suffixes).
const char* pos_name(Pos p);

class Lexicon {
 public:
  /// Where Debian's wordnet-base installs the database.
  static constexpr const char* kDefaultDir = "/usr/share/wordnet";

  /// Loads WordNet from `dir`: index.*, data.* and *.exc for noun, verb, adj and adv (12 files).
  /// Throws sieve::Error naming the missing file, or the file and line of a malformed entry.
  static std::unique_ptr<Lexicon> load(const std::string& dir = kDefaultDir);

  /// True when all 12 files load() needs exist in `dir` (tests and callers skip or explain when it
  /// is false: "apt install wordnet-base").
  static bool available(const std::string& dir = kDefaultDir);

  ~Lexicon();
  Lexicon(const Lexicon&) = delete;
  Lexicon& operator=(const Lexicon&) = delete;

  /// True when `lemma` is a WordNet lemma of part of speech `p` (no inflection: see base_forms).
  bool has(const std::string& lemma, Pos p) const;

  /// Base forms of `word` as part of speech `p` (WordNet's morphy): the bases of its exception-list
  /// entry first, then the word itself, then the detachment rules (noun: s, ses, xes, zes, ches,
  /// shes, men, ies; verb: s, ies, es, ed, ing; adj: er, est), keeping only lemmas of `p`, without
  /// duplicates. A multiword word that gives nothing is retried with one of its words reduced
  /// ("attorneys general" -> "attorney general"). Empty when `word` is not a form of any `p` lemma.
  std::vector<std::string> base_forms(const std::string& word, Pos p) const;

  /// Every part of speech `word` (any inflection) can have, in Noun, Verb, Adj, Adv order.
  std::vector<Pos> parts_of_speech(const std::string& word) const;

  /// The other lemmas of the first `max_senses` synsets of `lemma` (most frequent sense first, the
  /// order of index.*), in synset order, without `lemma` itself and without duplicates.
  std::vector<std::string> synonyms(const std::string& lemma, Pos p, size_t max_senses = 1) const;

  /// WordNet's lexicographer file numbers (lexnames(5WN): 4 noun.act, 5 noun.animal, 14 noun.group,
  /// 18 noun.person, ...) of the first `max_senses` senses of `lemma` (an exact lemma, as for
  /// synonyms), most frequent sense first; empty when `lemma` is not a `p` lemma.
  std::vector<int> lex_files(const std::string& lemma, Pos p, size_t max_senses = SIZE_MAX) const;

  /// Direct antonyms of `lemma` ('!' pointers of its first `max_senses` senses, most frequent sense
  /// first). With `indirect` (meaningful for adjectives) it adds, after them, the antonyms of the
  /// head synsets that those senses, when satellites, are similar to ('&'): "damp" -> "dry" via
  /// "wet". Indirect antonyms of all senses are many and loose ("hot" -> "legal" via "hot" =
  /// stolen); a generator wants `max_senses` = 1 or 2 with them.
  std::vector<std::string> antonyms(const std::string& lemma, Pos p, bool indirect = false,
                                    size_t max_senses = SIZE_MAX) const;

  /// Verb inflections of a base form ("bite" -> "bit", "bitten", "bites", "biting"). Irregular forms
  /// come from WordNet's verb.exc read backwards, regular ones from English spelling rules; a
  /// multiword verb inflects its first word ("take off" -> "took off"). The heuristics are listed
  /// in lexicon.cpp. "be" gives "was", "been", "is", "being". Empty input gives "".
  std::string verb_past(const std::string& base) const;
  std::string verb_past_participle(const std::string& base) const;
  std::string verb_third_person(const std::string& base) const;
  std::string verb_present_participle(const std::string& base) const;

  /// Plural of a noun ("man" -> "men", "box" -> "boxes"), irregulars from noun.exc read backwards;
  /// a multiword noun without an entry pluralises its last word ("ice cream" -> "ice creams").
  std::string noun_plural(const std::string& base) const;

  /// The example sentences quoted in the synsets' glosses ("...", ';'-separated after the
  /// definition), without the quotes, in file order (data.noun, data.verb, data.adj, data.adv);
  /// at most `max` of them (0 = all).
  std::vector<std::string> example_sentences(size_t max = 0) const;

  /// The definitions of the synsets (the gloss without its examples), in the same order; at most
  /// `max` (0 = all).
  std::vector<std::string> glosses(size_t max = 0) const;

  /// One synset's text: part of speech, lemmas ('_' shown as ' ', adjective markers removed, no
  /// duplicates, file order), definition and quoted examples (as example_sentences() splits them).
  struct SynsetText {
    Pos pos = Pos::Noun;
    std::vector<std::string> lemmas;
    std::string definition;
    std::vector<std::string> examples;
  };
  /// Calls `fn` for each synset in file order (data.noun, data.verb, data.adj, data.adv) until it
  /// returns false; `fn` may move from its argument.
  void for_each_synset(const std::function<bool(SynsetText&)>& fn) const;

  /// Number of lemmas (index.* lines) and synsets (data.* lines) of part of speech `p`.
  size_t lemma_count(Pos p) const;
  size_t synset_count(Pos p) const;

 private:
  struct Impl;
  explicit Lexicon(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sieve::nearmiss
