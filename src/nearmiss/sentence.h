// The sentence layer of the rule-based near-miss generator: a reversible tokenizer, a light
// part-of-speech tagger (closed-class word lists + WordNet's parts of speech + a few contextual
// rules) and a shallow chunker (noun phrases, the main clause's subject / verb group / object).
//
// It is deliberately small and conservative: perturb.cpp only edits a sentence when this layer
// recognises its shape, and returns nothing otherwise. It is not a general English parser.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "nearmiss/lexicon.h"

namespace sieve::nearmiss {

/// Coarse word classes. Closed classes come from fixed lists; open classes from WordNet + context.
enum class Tag {
  Det,    ///< the, a, an, this, that, these, those
  Quant,  ///< all, some, any, every, each, no, many, ...
  Poss,   ///< my, your, his, her, its, our, their
  Pron,   ///< I, you, he, ..., someone, nothing, there
  Prep,   ///< of, in, on, ...
  To,     ///< to
  Conj,   ///< and, or, but, because, ...
  Be,     ///< am, is, are, was, were, be, been, being, 's (after a pronoun), 're, 'm
  Have,   ///< have, has, had, having, 've
  Do,     ///< do, does, did
  Modal,  ///< can, could, will, would, ..., ca/wo/sha (before n't), cannot, 'll, 'd
  Neg,    ///< not, n't, never
  Wh,     ///< who, what, which, where, when, why, how
  Noun,
  Propn,  ///< a capitalised word not at the start, or an unknown capitalised word
  Verb,
  Adj,
  Adv,
  Num,
  PossS,  ///< possessive 's
  Punct,
  Other   ///< anything else (non-ASCII words, symbols)
};

/// A token keeps its exact spelling and the whitespace before it, so that detokenize() of an
/// unedited token list rebuilds the input byte for byte.
struct Token {
  std::string text;
  std::string space_before;  ///< whitespace that preceded the token in the input ("" or " ", ...)
  Tag tag = Tag::Other;
};

struct Sentence {
  std::vector<Token> tokens;
  std::string trailing;  ///< whitespace after the last token
};

/// Splits on whitespace, then splits off leading / trailing punctuation and the clitics n't, 's,
/// 're, 've, 'll, 'd, 'm ("can't" -> "ca" "n't", "isn't" -> "is" "n't"). Tags are left Other.
Sentence tokenize(const std::string& text);

/// Concatenates space_before + text of every token, then `trailing`.
std::string detokenize(const Sentence& s);

/// Tags every token in place (closed-class lists first, then Lexicon parts of speech resolved by
/// the neighbours' tags).
void tag_sentence(Sentence& s, const Lexicon& lex);

/// tokenize() + tag_sentence().
Sentence analyse(const std::string& text, const Lexicon& lex);

/// Lower-cased ASCII copy.
std::string lower(const std::string& s);

/// True for the words of the closed-class lists (determiners, pronouns, prepositions, auxiliaries,
/// a few frequent adverbs, ...), matched case-insensitively.
bool is_closed_class(const std::string& word);

/// True for punctuation-only tokens.
bool is_punct(const std::string& tok);

/// End (exclusive) of the noun phrase starting at token `i`, or `i` when none starts there.
/// NP := Pron | (Det|Quant|Poss|Num)* (Adv* Adj)* (Noun|Propn)+ ('s (Adj)* (Noun|Propn)+)?
size_t np_end(const Sentence& s, size_t i);

/// Index range of the adjectives of the NP [b, e): the run of Adj tokens right before its first
/// noun (empty range b==e when there is none).
struct Range {
  size_t b = 0, e = 0;
  bool empty() const { return b == e; }
  size_t size() const { return e - b; }
};
Range np_adjectives(const Sentence& s, size_t b, size_t e);

/// The main clause when the sentence starts with a subject NP followed by a verb group.
struct Clause {
  Range subject;       ///< the subject NP (starts at token 0)
  Range verb_group;    ///< aux* neg? adv* verb?  (right after the subject)
  size_t head = 0;     ///< index of the main verb, or of the last auxiliary for a copula
  bool head_is_verb = false;  ///< head is an open-class Verb (not be/have/do/modal)
  Range object;        ///< the NP right after the verb group (empty when none)
};

/// Parses the main clause; false when the sentence does not start with NP + verb group.
bool parse_clause(const Sentence& s, Clause& c);

/// Grammatical number of the NP [b, e) as a subject: true for third person singular (he, the dog,
/// John), false for I / you / we / they / plural nouns.
bool np_third_singular(const Sentence& s, Range np, const Lexicon& lex);

}  // namespace sieve::nearmiss
