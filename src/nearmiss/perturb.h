// Rule-based near-miss generator (issue 6): a near-miss keeps almost every word of its source
// sentence but no longer means the same. Each perturbation either returns a fluent sentence with
// exactly one intended edit or nothing; it never returns garbage. Synonym substitution, active ->
// passive, contraction, coordination reordering, possessive alternation and adverb movement are the
// meaning-preserving ("positive") edits.
//
// Works on top of the sentence layer (sentence.h) and the WordNet lexicon (lexicon.h).
#pragma once

#include <optional>
#include <random>
#include <string>

#include "nearmiss/lexicon.h"

namespace sieve::nearmiss {

enum class Kind {
  Negation,
  RoleSwap,
  BindingSwap,
  SpatialFlip,
  Antonym,
  Synonym /*positive*/,
  Passive /*positive*/,
  Contraction /*positive*/,
  Coordination /*positive*/,
  Possessive /*positive*/,
  AdverbMove /*positive*/,
  /// A role swap that looks like a paraphrase: the passive of the role-swapped sentence ("the dog
  /// bit the man" -> "the dog was bitten by the man"); the subject stays first, as in the source.
  PassiveRoleSwap,
  /// A determiner rewrite that keeps the meaning ("every" <-> "each", "all the" <-> "all of the",
  /// "both the" <-> "both of the", "a lot of" <-> "lots of").
  Determiner /*positive*/,
  /// A negated word replaced by its complementary antonym ("is not dead" -> "is alive", "did not
  /// forget" -> "remembered"), only for pairs that WordNet lists as antonyms and that leave no
  /// middle ground (a fixed list: not "not hot" -> "cold").
  NegatedAntonym /*positive*/,
  /// Two names or two written numbers of the sentence exchanged, PAWS-style ("flew from Paris to
  /// Rome" -> "flew from Rome to Paris"); never two that are only coordinated ("Paris and Rome").
  EntitySwap,
  /// A question's negation added or removed (issue 57): "which drugs interact with warfarin?" ->
  /// "which drugs do not interact with warfarin?", "does aspirin reduce fever?" -> "does aspirin
  /// not reduce fever?", "why don't cats swim?" -> "why do cats swim?". Questions only.
  QuestionNegation,
  /// A question's wh-word changed to one that asks for another thing: why <-> how, when <->
  /// where, who <-> what before a copula ("why do cats purr?" -> "how do cats purr?").
  WhSwap,
  /// A question's subject and object NPs exchanged ("did Google buy YouTube?" -> "did YouTube buy
  /// Google?"); no pronouns, the auxiliary's agreement kept.
  QuestionRoleSwap,
  /// One number or month name changed to another value (a year by 1-5, a count by 1-3 or doubled;
  /// "in 1998" -> "in 1999", "in May" -> "in July"); any sentence, questions included.
  NumberChange
};

/// "negation", "role_swap", "binding_swap", "spatial_flip", "antonym", "synonym", "passive",
/// "contraction", "coordination", "possessive", "adverb_move", "passive_role_swap", "determiner",
/// "negated_antonym", "entity_swap", "question_negation", "wh_swap", "question_role_swap",
/// "number_change".
const char* kind_name(Kind k);

/// True for the meaning-preserving kinds (synonym, passive, contraction, coordination, possessive,
/// adverb_move, determiner, negated_antonym), false for the structural near-misses.
inline bool is_positive(Kind k) {
  return k == Kind::Synonym || k == Kind::Passive || k == Kind::Contraction || k == Kind::Coordination ||
         k == Kind::Possessive || k == Kind::AdverbMove || k == Kind::Determiner || k == Kind::NegatedAntonym;
}

/// Inverse of kind_name; throws sieve::Error listing the valid names.
Kind kind_from_name(const std::string& name);

/// Limits on the input sentences apply() accepts.
struct PerturbOptions {
  size_t max_words = 60;            ///< longer sentences give nullopt
  double max_non_ascii_ratio = 0.1; ///< share of non-ASCII bytes above which a line is skipped
};

class Perturber {
 public:
  explicit Perturber(const Lexicon& lex, PerturbOptions opts = {});

  /// One perturbation of kind `k` of `sentence`, or nullopt when no safe edit exists (the shape is
  /// not recognised, nothing to edit, a question, markup, too long, mostly non-ASCII, ...). When
  /// several edits are possible, `rng` chooses one. The result always differs from the input.
  ///  - negation: "bit" -> "did not bite", "is" -> "is not", "can" -> "cannot", removal of not/n't
  ///    (with do-support undone: "doesn't like" -> "likes"), quantifier flips (some/all/every <->
  ///    no before a noun, something <-> nothing, always <-> never);
  ///  - role_swap: subject and object NPs of the main verb (with subject-verb agreement), or the
  ///    two sides of "X is <comparative> than Y";
  ///  - binding_swap: the adjectives of two NPs;
  ///  - spatial_flip: left/right, above/below, over/under, in front of/behind, ...;
  ///  - antonym / synonym: one content word replaced by a WordNet antonym / synonym of the same
  ///    part of speech and inflection;
  ///  - passive (a positive): "the dog bit the man" -> "the man was bitten by the dog", for a
  ///    simple finite transitive clause (one verb word, no auxiliary, no pronoun NPs);
  ///  - contraction (a positive): one auxiliary + not or pronoun + auxiliary contracted or
  ///    expanded ("is not" <-> "isn't", "cannot" <-> "can't", "will not" <-> "won't", "it is" <->
  ///    "it's", "they are" <-> "they're", "I am" <-> "I'm", "I have seen" <-> "I've seen"); "'s" is
  ///    expanded only when it cannot be "has", "'d" never; not in questions;
  ///  - coordination (a positive): the two NPs of "X and Y" exchanged ("salt and pepper" -> "pepper
  ///    and salt"), when both are simple, parallel, pronoun- and name-free NPs that end cleanly;
  ///  - possessive (a positive): "the owner of the dog" <-> "the dog's owner" ("the dogs' owner"
  ///    for a plural in -s), for "the X of the Y" with common nouns, not partitives, measures,
  ///    parts or nouns whose "of" is their object ("the fear of the dark");
  ///  - adverb_move (a positive): a manner adverb from a fixed list moved between the verb and the
  ///    end of a simple clause ("she quickly opened the door" <-> "she opened the door quickly");
  ///  - determiner (a positive): "every" <-> "each" before a noun phrase (not "each other", "every
  ///    so often"), "all the" <-> "all of the", "both the" <-> "both of the", "a lot of" <-> "lots of";
  ///  - negated_antonym (a positive): "is not dead" -> "is alive" (a predicative adjective that
  ///    ends its clause) and "did not forget" -> "remembered", "will not forget" -> "will
  ///    remember" (fail/succeed only without an object), for the complementary pairs of
  ///    perturb_tables.h that WordNet lists as antonyms; not in questions.
  std::optional<std::string> apply(const std::string& sentence, Kind k, std::mt19937_64& rng) const;

 private:
  const Lexicon& lex_;
  PerturbOptions opts_;
};

/// How `b` differs from `a` at the token level (tokens compared case-insensitively; "cannot" and
/// "can't" count as "can" + a negation):
///  - "identical";
///  - "swap": two spans exchanged (a subject-verb agreement change of the verb between them, e.g.
///    "chase" -> "chases" or "is" -> "are", is tolerated);
///  - "insert" / "delete": one span inserted / removed; the do-support form "bit" <-> "did not
///    bite" counts as an insertion / deletion of "did not";
///  - "contraction": one word replaced by its contracted / expanded form after the right host
///    ("not" <-> "n't" after an auxiliary, "is" <-> "'s" after a pronoun, ...);
///  - "replace1": one word replaced by one word;
///  - "move": one -ly adverb moved to another place (the rest unchanged; any other one-word move is
///    a "swap" with its neighbour span);
///  - "possessive": "the X of the Y" <-> "the Y's X" (or "the Ys' X");
///  - "replace": one span of at most 4 tokens replaced by another such span;
///  - "other".
/// `intended` says whether that is the edit `k` should make: negation: insertion / deletion of
/// not, n't, never (or do + negation), or a quantifier flip; role_swap / binding_swap: swap;
/// spatial_flip: replace(1) between a spatial pair; antonym / synonym: replace1 by a WordNet
/// antonym / synonym of the word (any sense, any part of speech); passive: b has exactly a's words
/// with the verb replaced by a form of "be", its past participle and "by"; contraction: the
/// "contraction" shape; coordination: "X and Y" -> "Y and X" (X != Y, the rest unchanged);
/// possessive: the "possessive" shape; adverb_move: "move" of an -ly adverb; determiner: a
/// replace(1) by a rule of determiner_rules(); negated_antonym: "not X" -> "Y" or "do-form not X"
/// -> Y in the do-form's inflection, for a complementary pair WordNet lists as antonyms.
struct DiffCheck {
  std::string shape;
  bool intended = false;
};
DiffCheck check_edit(const std::string& a, const std::string& b, Kind k, const Lexicon& lex);

}  // namespace sieve::nearmiss
