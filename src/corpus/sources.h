// Cleaners that turn the raw articles of Debian's dictionaries into plain, structured entries
// (docs/corpus.md lists every rule with an example):
//
//  * GCIDE (dict-gcide): the 1913 Webster with WordNet 1.5 additions in dictd's plain-text
//    rendering. An article is a header (`Word \Pro*nun"ci*a`tion\ (pron), n. [etymology]`), then
//    blocks separated by blank lines: numbered or unnumbered senses (sub-senses "(a)", "(b)"),
//    indented quotations ending in `--Author.`, "Note:" and "Usage:" prose, "Syn:" lists, and
//    run-on phrases `{Dog cheap}, very cheap.`. Markup: `{...}` cross-reference braces, `[...]`
//    etymologies and tags (`[1913 Webster]`, `[Obs.]`), accent codes (`["o]` = o-umlaut, `[=e]`,
//    `[,c]`, `[ae]`, `[alpha]`, `[frac12]`, ...), domain labels `(Zool.)`, `--Shak.` citations.
//  * FOLDOC (dict-foldoc): headword lines, then paragraphs with `<domain>` tags, `{link}` braces,
//    URLs, `[reference]` paragraphs and a `(YYYY-MM-DD)` date stamp.
//  * WordNet 3.0 (wordnet-base): one entry per synset: its lemmas, gloss and quoted examples.
//
// Every output string is single-line, whitespace-collapsed, free of markup and ASCII except for
// the UTF-8 letters FOLDOC spells outside Latin-1.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "nearmiss/lexicon.h"

namespace sieve::corpus {

enum class Source { WordNet, Gcide, Foldoc };

/// "wordnet", "gcide" or "foldoc".
const char* source_name(Source s);
/// The inverse of source_name; throws sieve::Error listing the valid names.
Source source_from_name(const std::string& name);

struct Sense {
  /// The definition alone: no usage examples, quotations, citations or labels.
  std::string definition;
  /// Usage examples as the dictionary gives them: GCIDE's fragments after "as," (split at ';'),
  /// WordNet's quoted examples.
  std::vector<std::string> examples;
};

struct Quotation {
  std::string text;
  std::string author;  ///< the `--Author.` attribution without the dashes ("" when none)
};

/// A run-on phrase of a GCIDE article: `{Dog cheap}, very cheap.`.
struct Phrase {
  std::string phrase;
  std::string definition;
};

/// One cleaned dictionary entry (a GCIDE or FOLDOC article, a WordNet synset).
struct Entry {
  Source source = Source::Gcide;
  std::string headword;  ///< GCIDE: lower-cased unless it has inner capitals; WordNet: first lemma
  std::string pos;       ///< "noun", "verb", "adj", "adv", or "" when unknown
  std::vector<Sense> senses;
  std::vector<Quotation> quotations;
  std::vector<std::string> synonyms;  ///< GCIDE "Syn:" items, other lemmas of a WordNet synset
  std::vector<Phrase> phrases;
  /// The entry's prose in article order, cleaned (senses with their examples, quotations, notes,
  /// phrases): what sentences.txt is made from.
  std::vector<std::string> paragraphs;
  bool from_wordnet = false;  ///< a GCIDE article tagged [WordNet 1.5]
};

// --- cleaning primitives (exposed for the tests) -------------------------------------------------

/// Replaces GCIDE's accent and symbol codes by ASCII: `["o]` -> "o", `[=e]` -> "e", `[,c]` -> "c",
/// `[ae]` -> "ae", `[imac]` -> "i", `[alpha]` -> "alpha", `[deg]` -> " degrees", `[frac12]` ->
/// "1/2". Other brackets are left alone.
std::string fold_accent_codes(std::string_view text);

/// ASCII-folds Latin-1 letters in UTF-8 ("é" -> "e", "ß" -> "ss") and maps stray cp1252 bytes
/// (GCIDE has a few: 0x92 -> '\''); other valid UTF-8 is kept, other invalid bytes are dropped.
std::string fold_to_ascii(std::string_view text);

/// Removes GCIDE inline markup from one paragraph: accent codes folded, `{x}` -> x, `[...]` tags
/// and etymologies removed (in a quotation a bracketed single word is an editor's insertion and
/// is kept: "[They] set up" -> "They set up"), abbreviated domain labels "(Zool.)" removed,
/// whitespace collapsed, spaces before , ; : . ) removed.
std::string strip_gcide_markup(std::string_view text, bool quotation = false);

/// Splits prose into sentences at . ! ? followed by a space and an upper-case letter, a digit or
/// an opening quote, except after abbreviations: single letters ("n.", "v. t.", initials),
/// dotted forms ("e.g.", "i.e.", "U.S.") and a list of short forms ("Mr.", "Dr.", "cf.", "esp.",
/// "viz.", "Gr.", ...). "etc." ends a sentence when a capital follows.
std::vector<std::string> split_sentences(const std::string& text);

/// Number of words (whitespace-separated tokens with a letter or digit).
size_t count_words(std::string_view text);

/// True when `text` is a full clause: it starts with a subject noun phrase followed by a verb
/// group (nearmiss::parse_clause), so "the army retreated from the field" is and "a happy omen"
/// or "to tie a knot" are not.
bool is_full_clause(const std::string& text, const nearmiss::Lexicon& lex);

/// True for a definition that only points elsewhere ("See Weir.", "Same as Weir.", "Alt. of Dog.")
/// or has fewer than 2 words.
bool is_cross_reference(const std::string& definition);

/// A fragment as a sentence: first letter upper-cased, a final period added when it has no end
/// punctuation.
std::string as_sentence(std::string text);

// --- the sources ---------------------------------------------------------------------------------

/// Cleans one GCIDE article (the text of a dictd entry). Never throws on odd markup: what it
/// cannot classify becomes plain prose.
Entry clean_gcide_article(const std::string& raw);

/// Cleans one FOLDOC article.
Entry clean_foldoc_article(const std::string& raw);

/// Reads WordNet's data.noun, data.verb, data.adj and data.adv in that order (the order of
/// nearmiss::Lexicon's glosses()), one Entry per synset with a non-empty gloss: headword = first
/// lemma, synonyms = the other lemmas (spaces for '_', adjective markers "(a)" dropped), one sense
/// = gloss + examples, split exactly as Lexicon splits them. At most `max` synsets (0 = all).
/// Throws sieve::Error with file:line on a malformed line.
std::vector<Entry> read_wordnet_entries(const std::string& dir, size_t max = 0);

}  // namespace sieve::corpus
