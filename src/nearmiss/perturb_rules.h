// Internal to the perturbations (perturb*.cpp): each rule family's candidate edits and the helpers
// they share. Not part of the nearmiss module's interface (perturb.h is).
//
// A rule appends to `out` every safe edit of `s` it finds (none when it does not recognise the
// sentence's shape); Perturber::apply picks one with the caller's rng.
#pragma once

#include <cstddef>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "nearmiss/lexicon.h"
#include "nearmiss/sentence.h"

namespace sieve::nearmiss::rules {

using Words = std::vector<std::string>;

// ---- the rule families ---------------------------------------------------------------------------

/// perturb_negation.cpp: not/n't/never inserted or removed, quantifier flips.
void negation_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out);
/// perturb_swap.cpp: subject <-> object (or the sides of "X is <comparative> than Y").
void role_swap_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out);
/// perturb_swap.cpp: "the king of the castle" -> "the castle of the king".
void of_swap_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out);
/// perturb_swap.cpp: the adjectives of two NPs exchanged.
void binding_swap_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out);
/// perturb_swap.cpp: two names or two written numbers exchanged (not when only coordinated).
void entity_swap_candidates(const Sentence& s, std::vector<Sentence>& out);
/// perturb_spatial.cpp: one spatial word or phrase replaced by its opposite.
void spatial_candidates(const Sentence& s, std::vector<Sentence>& out);
/// perturb_lexical.cpp: one content word replaced by a WordNet antonym (`antonym`) or synonym.
void lexical_candidates(const Sentence& s, const Lexicon& lex, bool antonym, std::vector<Sentence>& out);
/// perturb_rewrite.cpp: "the dog bit the man" -> "the man was bitten by the dog".
void passive_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out);
/// perturb_rewrite.cpp: one auxiliary + not, or pronoun + auxiliary, contracted or expanded.
void contraction_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out);
/// perturb_rewrite.cpp: a determiner rewrite of determiner_rules() ("every" <-> "each", ...).
void determiner_candidates(const Sentence& s, std::vector<Sentence>& out);
/// perturb_rewrite.cpp: "is not dead" -> "is alive", "did not forget" -> "remembered".
void negated_antonym_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out);
/// perturb_reorder.cpp: "salt and pepper" -> "pepper and salt".
void coordination_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out);
/// perturb_reorder.cpp: "the owner of the dog" <-> "the dog's owner".
void possessive_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out);
/// perturb_reorder.cpp: "she quickly opened the door" <-> "she opened the door quickly".
void adverb_move_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out);
/// perturb_question.cpp: true for a question (a final "?", or a leading wh-word).
bool is_question_sentence(const Sentence& s);
/// perturb_question.cpp: a question's negation added or removed.
void question_negation_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out);
/// perturb_question.cpp: the first wh-word changed (why <-> how, when <-> where, who <-> what).
void wh_swap_candidates(const Sentence& s, std::vector<Sentence>& out);
/// perturb_question.cpp: "did Google buy YouTube?" -> "did YouTube buy Google?".
void question_role_swap_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out);
/// perturb_question.cpp: one number or month changed (its new value drawn from `rng`).
void number_change_candidates(const Sentence& s, std::mt19937_64& rng, std::vector<Sentence>& out);

// ---- shared helpers (perturb_helpers.cpp) -------------------------------------------------------

/// True when `w` starts with an upper-case letter.
bool starts_upper(const std::string& w);
/// `w` with the first letter's case of `like`.
std::string case_like(const std::string& like, std::string w);
/// True when `s` ends with `suf`.
bool ends_with(const std::string& s, const char* suf);
/// Letters and hyphens, starting with a letter.
bool is_alpha_word(const std::string& w);
/// True when replacing token `i` by `replacement` keeps a preceding a/an correct.
bool article_ok(const Sentence& s, size_t i, const std::string& replacement);
/// The tokens of `s` with [r1) and [r2) exchanged (r1 before r2).
Sentence swap_spans(const Sentence& s, Range r1, Range r2);
/// A token with its text, the whitespace before it and its tag.
Token make_token(const std::string& text, const std::string& space, Tag tag);

/// The finite form of a verb: which inflection of which base it is.
enum class Form { Base, Past, Third, None };
struct VerbForm {
  std::string base;
  Form form = Form::None;
  bool past_equals_base = false;
};
/// The form of `word` as a finite verb (form None when it is not one).
VerbForm verb_form(const std::string& word, const Lexicon& lex);

/// Adjectives that are also nouns but are edited as common attributes ("red", "wooden", ...).
extern const std::set<std::string> kAttributes;
/// True when an NP ending before token `e` ends cleanly there (the end, punctuation, a preposition, ...).
bool np_boundary_after(const Sentence& s, size_t e);
/// The lower-cased tokens of `r`, each followed by a space.
std::string span_text(const Sentence& s, Range r);
/// `s` split at spaces.
Words split_words(const std::string& s);

}  // namespace sieve::nearmiss::rules
