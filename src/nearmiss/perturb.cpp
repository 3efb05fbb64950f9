// Rule-based near-miss perturbations (see perturb.h): the kinds, the input guards and Perturber::apply.
//
// Every rule works on the tagged, chunked sentence of sentence.h and builds a list of candidate
// edits; apply() picks one with the caller's rng. A rule that does not recognise the sentence's
// shape contributes no candidate, so the answer is nullopt rather than a guess. Each family of
// rules is in its own perturb_<family>.cpp behind perturb_rules.h; the edit check is in
// edit_check.cpp.
#include "nearmiss/perturb.h"

#include <cctype>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "nearmiss/perturb_rules.h"
#include "nearmiss/sentence.h"
#include "sieve/error.h"

namespace sieve::nearmiss {

using namespace rules;  // the rule families (perturb_rules.h)

namespace {

struct KindInfo {
  Kind kind;
  const char* name;
};
const KindInfo kKinds[] = {{Kind::Negation, "negation"},         {Kind::RoleSwap, "role_swap"},
                           {Kind::BindingSwap, "binding_swap"}, {Kind::SpatialFlip, "spatial_flip"},
                           {Kind::Antonym, "antonym"},           {Kind::Synonym, "synonym"},
                           {Kind::Passive, "passive"},           {Kind::Contraction, "contraction"},
                           {Kind::Coordination, "coordination"}, {Kind::Possessive, "possessive"},
                           {Kind::AdverbMove, "adverb_move"},    {Kind::PassiveRoleSwap, "passive_role_swap"},
                           {Kind::Determiner, "determiner"},     {Kind::NegatedAntonym, "negated_antonym"},
                           {Kind::EntitySwap, "entity_swap"},   {Kind::QuestionNegation, "question_negation"},
                           {Kind::WhSwap, "wh_swap"},           {Kind::QuestionRoleSwap, "question_role_swap"},
                           {Kind::NumberChange, "number_change"}};

// The declarative rules' guard: a question (is_question_sentence), or a sentence that starts like
// one without its question mark ("Is it raining"), or nothing at all.
bool is_question(const Sentence& s) {
  const auto& t = s.tokens;
  if (t.empty() || is_question_sentence(s)) return true;
  Tag f = t[0].tag;
  return f == Tag::Be || f == Tag::Do || f == Tag::Modal || f == Tag::Have;
}

// Makes the first token's case follow the original sentence's (a capitalised start stays so).
void fix_initial_case(const Sentence& orig, Sentence& s) {
  if (orig.tokens.empty() || s.tokens.empty()) return;
  if (starts_upper(orig.tokens[0].text)) {
    auto& w = s.tokens[0].text;
    w[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(w[0])));
  }
}

// ---- input guards ------------------------------------------------------------------------------

bool acceptable_input(const std::string& text, const Sentence& s, const PerturbOptions& o) {
  if (text.empty() || text.find('\n') != std::string::npos) return false;
  size_t non_ascii = 0;
  for (char c : text)
    if (static_cast<unsigned char>(c) >= 0x80) ++non_ascii;
  if (static_cast<double>(non_ascii) > o.max_non_ascii_ratio * static_cast<double>(text.size())) return false;
  static const char* const kMarkup[] = {"<", ">", "{", "}", "://", "&amp;", "&lt;", "&gt;", "|", "\\", "[[", "]]"};
  for (const char* m : kMarkup)
    if (text.find(m) != std::string::npos) return false;
  size_t words = 0;
  for (const auto& t : s.tokens)
    if (t.tag != Tag::Punct) ++words;
  if (words == 0 || words > o.max_words) return false;
  size_t alpha = 0;
  for (const auto& t : s.tokens)
    if (is_alpha_word(t.text)) ++alpha;
  return alpha * 2 >= words;
}

}  // namespace

const char* kind_name(Kind k) {
  for (const auto& info : kKinds)
    if (info.kind == k) return info.name;
  SIEVE_ASSERT_MSG(false, "unknown near-miss kind " << static_cast<int>(k));
  return "";
}

Kind kind_from_name(const std::string& name) {
  std::string valid;
  for (const auto& info : kKinds) {
    if (name == info.name) return info.kind;
    valid += (valid.empty() ? "" : ", ") + std::string(info.name);
  }
  SIEVE_THROW("unknown near-miss kind '" << name << "'; valid kinds: " << valid);
}

Perturber::Perturber(const Lexicon& lex, PerturbOptions opts) : lex_(lex), opts_(opts) {}

std::optional<std::string> Perturber::apply(const std::string& sentence, Kind k, std::mt19937_64& rng) const {
  if (k == Kind::PassiveRoleSwap) {
    // The passive of a subject-object role swap; kept only when the source's subject still leads
    // (check_edit), so that it reads as a paraphrase of the source while it means the reverse.
    auto swapped = apply(sentence, Kind::RoleSwap, rng);
    if (!swapped) return std::nullopt;
    auto out = apply(*swapped, Kind::Passive, rng);
    if (!out || !check_edit(sentence, *out, Kind::PassiveRoleSwap, lex_).intended) return std::nullopt;
    return out;
  }
  if (sentence.size() > 20 * opts_.max_words + 200) return std::nullopt;
  Sentence s = tokenize(sentence);
  tag_sentence(s, lex_);
  if (!acceptable_input(sentence, s, opts_)) return std::nullopt;
  std::vector<Sentence> cands;
  switch (k) {
    case Kind::Negation:
      if (!is_question(s)) negation_candidates(s, lex_, cands);
      break;
    case Kind::RoleSwap:
      if (!is_question(s)) {
        role_swap_candidates(s, lex_, cands);
        of_swap_candidates(s, lex_, cands);
      }
      break;
    case Kind::BindingSwap: binding_swap_candidates(s, lex_, cands); break;
    case Kind::SpatialFlip: spatial_candidates(s, cands); break;
    case Kind::Antonym: lexical_candidates(s, lex_, true, cands); break;
    case Kind::Synonym: lexical_candidates(s, lex_, false, cands); break;
    case Kind::Passive:
      if (!is_question(s)) passive_candidates(s, lex_, cands);
      break;
    case Kind::Contraction:
      if (!is_question(s)) contraction_candidates(s, lex_, cands);
      break;
    case Kind::Coordination: coordination_candidates(s, lex_, cands); break;
    case Kind::Possessive: possessive_candidates(s, lex_, cands); break;
    case Kind::AdverbMove:
      if (!is_question(s)) adverb_move_candidates(s, lex_, cands);
      break;
    case Kind::Determiner: determiner_candidates(s, cands); break;
    case Kind::NegatedAntonym:
      if (!is_question(s)) negated_antonym_candidates(s, lex_, cands);
      break;
    case Kind::EntitySwap: entity_swap_candidates(s, cands); break;
    case Kind::QuestionNegation: question_negation_candidates(s, lex_, cands); break;
    case Kind::WhSwap: wh_swap_candidates(s, cands); break;
    case Kind::QuestionRoleSwap: question_role_swap_candidates(s, lex_, cands); break;
    case Kind::NumberChange: number_change_candidates(s, rng, cands); break;
    case Kind::PassiveRoleSwap: break;  // composed of two kinds above
  }
  const std::string source = lower(sentence);
  while (!cands.empty()) {
    size_t pick = std::uniform_int_distribution<size_t>(0, cands.size() - 1)(rng);
    Sentence r = std::move(cands[pick]);
    cands.erase(cands.begin() + static_cast<std::ptrdiff_t>(pick));
    fix_initial_case(s, r);
    std::string text = detokenize(r);
    if (lower(text) != source) return text;
  }
  return std::nullopt;
}

}  // namespace sieve::nearmiss
