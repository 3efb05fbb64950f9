// Inflection of English verbs and nouns from WordNet's exception lists read backwards, with
// spelling rules for regular forms (the heuristics are described below).
#include "nearmiss/inflection.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>

namespace sieve::nearmiss {
namespace {

bool is_vowel(char c) { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u'; }

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// ---- inflection heuristics ----------------------------------------------------------------
//
// verb.exc and noun.exc map inflected forms to bases; read backwards they give a base's irregular
// forms, but without saying which form is which. The rules used here:
//  * a verb form ending in "ing" and longer than the base is the present participle;
//  * a verb form ending in 's' (other than "was") is third person singular; only the doubled
//    "+Ces" ones (gas -> gasses, quiz -> quizzes) are taken from the file, the rest follow the rules;
//  * spelling variants of the base itself ("co-ordinate" for "coordinate": same last two letters,
//    not shorter, not a vowel change) are ignored;
//  * a form ending in "n"/"ne" (bitten, seen, gone, done, lain, borne) is the past participle,
//    unless it is a one-vowel change of the base (ran, began, won, shone: past);
//  * a pair of one-vowel changes to 'a' and to 'u' (sang/sung, swam/swum, drank/drunk): 'a' is
//    the past, 'u' the participle (and preferred over "-en": shrunk over shrunken);
//  * everything else is a past form. With a past but no participle, the participle is the past
//    (sat, made), except after a change of 'u'/'o' to 'a' (ran, came, became), where it is the base;
//    with a participle but no past (proven, shown), the past is regular ("proved");
//  * among several candidates: a form whose exc line lists only this base wins, then the longer
//    (forbade over forbad, smote over smit, borne over born), then the alphabetically first;
//  * verbs whose past is the base (put, cut, hit, ... : not in verb.exc, since morphy needs nothing)
//    come from the small table below, which also wins over verb.exc's British "quitted" and
//    "betted"; "be" and "have" are spelled out.
//  * verb.exc's British "-t" variants of regular verbs (learnt, spelt, spoilt) give way to the
//    regular "-ed" forms, which both British and American English use (table below).
// Regular rules: -e +d, consonant+y -> ied/ies, sibilants and consonant+o +es, ie -> ying, e-drop
// before -ing (kept after ee/oe/ye), and consonant doubling for consonant-vowel-consonant
// monosyllables (stop -> stopped, blog -> blogged; not fix, snow, rain). Longer verbs are not
// doubled by rule: verb.exc lists the doubled forms of WordNet's verbs (preferred, admitted, and
// the British travelled), so "visit" and "open" stay "visited" and "opened".
// Nouns: noun.exc read backwards, ignoring gerunds ("crying" for "cry"), preferring a form whose
// line lists only this base, then one without a hyphen the base lacks, then the shorter. The
// morphy rule men -> man means noun.exc omits "-man" compounds: they get "-men" (woman, fireman)
// except for a few words that are not compounds of "man" (human, German, talisman). Small tables
// cover invariant plurals that noun.exc cannot list (sheep, deer, series) and archaic plurals that
// it prefers (brother -> brothers, not brethren).

const std::unordered_set<std::string>& invariant_past_verbs() {
  static const std::unordered_set<std::string> kVerbs = {
      "bet",  "bid",  "broadcast", "burst", "cast", "cost",   "cut",  "forecast", "hit",    "hurt",
      "let",  "put",  "quit",      "read",  "rid",  "set",    "shed", "shut",     "slit",   "split",
      "spread", "thrust", "upset", "beat",  "outbid", "reset", "typeset", "offset", "overcast", "input"};
  return kVerbs;
}

const std::unordered_set<std::string>& regular_preferred_verbs() {
  static const std::unordered_set<std::string> kVerbs = {"learn", "spell", "spill", "spoil", "smell",
                                                          "lean",  "burn",  "dream", "leap"};
  return kVerbs;
}

const std::unordered_map<std::string, std::string>& plural_overrides() {
  static const std::unordered_map<std::string, std::string> kPlurals = {
      {"brother", "brothers"}, {"person", "people"}, {"fish", "fish"},       {"sheep", "sheep"},
      {"deer", "deer"},        {"moose", "moose"},   {"swine", "swine"},     {"bison", "bison"},
      {"salmon", "salmon"},    {"trout", "trout"},   {"aircraft", "aircraft"}, {"spacecraft", "spacecraft"},
      {"offspring", "offspring"}, {"series", "series"}, {"species", "species"}, {"means", "means"}};
  return kPlurals;
}

// Nouns ending in "man" that are not compounds of "man" and so take "-mans".
const std::unordered_set<std::string>& man_not_compound() {
  static const std::unordered_set<std::string> kNouns = {
      "human", "german", "roman", "norman", "shaman", "talisman", "caiman", "cayman", "ottoman",
      "dolman", "brahman", "desman", "hetman", "ataman", "walkman", "turkoman", "turkman", "mussulman"};
  return kNouns;
}

// `f` is `b` with one vowel changed, to `to` when `to` != 0.
bool vowel_change(const std::string& b, const std::string& f, char to = 0, const char* from = nullptr) {
  if (b.size() != f.size()) return false;
  size_t diff = 0, at = 0;
  for (size_t i = 0; i < b.size(); ++i)
    if (b[i] != f[i]) ++diff, at = i;
  if (diff != 1 || !is_vowel(b[at]) || !is_vowel(f[at])) return false;
  if (to != 0 && f[at] != to) return false;
  return from == nullptr || std::string_view(from).find(b[at]) != std::string_view::npos;
}

bool spelling_variant(const std::string& b, const std::string& f) {
  return f.size() >= b.size() && b.size() >= 2 && f.compare(f.size() - 2, 2, b, b.size() - 2, 2) == 0 &&
         !vowel_change(b, f);
}

// Consonant-vowel-consonant ending of a one-syllable word ("stop", "plan"; not "fix", "rain").
bool cvc_monosyllable(const std::string& w) {
  if (w.size() < 3) return false;
  char c3 = w[w.size() - 1], v = w[w.size() - 2], c1 = w[w.size() - 3];
  if (is_vowel(c3) || c3 == 'w' || c3 == 'x' || c3 == 'y' || !is_vowel(v) || is_vowel(c1)) return false;
  // Syllables ~ vowel groups, with 'y' a vowel after a consonant ("cypher" has two).
  size_t groups = 0;
  bool prev_vowel = false;
  for (size_t i = 0; i < w.size(); ++i) {
    bool v_here = is_vowel(w[i]) || (w[i] == 'y' && i > 0 && !prev_vowel);
    if (v_here && !prev_vowel) ++groups;
    prev_vowel = v_here;
  }
  return groups == 1;
}

bool consonant_y(const std::string& w) { return w.size() >= 2 && w.back() == 'y' && !is_vowel(w[w.size() - 2]); }

bool sibilant(const std::string& w) {
  return ends_with(w, "s") || ends_with(w, "x") || ends_with(w, "z") || ends_with(w, "ch") || ends_with(w, "sh");
}

struct Candidate {
  std::string form;
  bool only_base;
  int priority;
};

std::string pick(std::vector<Candidate> c) {
  if (c.empty()) return "";
  std::sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.only_base != b.only_base) return a.only_base;
    if (a.form.size() != b.form.size()) return a.form.size() > b.form.size();
    return a.form < b.form;
  });
  return c.front().form;
}

// The irregular forms of a one-word verb, classified (empty fields: use the regular rule).
VerbForms verb_exc_forms(const std::string& b, const InflectionTable& infl) {
  VerbForms vf;
  auto it = infl.find(b);
  if (it == infl.end()) return vf;
  std::vector<Candidate> past, participle, third, ing;
  for (const ExcForm& e : it->second) {
    const std::string& f = e.form;
    if (f == b || f.find('_') != std::string::npos) continue;
    Candidate c{f, e.only_base, 0};
    if (ends_with(f, "ing") && f.size() > b.size()) {
      ing.push_back(c);
    } else if (f.back() == 's' && f != "was") {
      if (f == b + b.back() + "es") third.push_back(c);
    } else if (spelling_variant(b, f)) {
      continue;
    } else if ((ends_with(f, "n") || ends_with(f, "ne")) && !vowel_change(b, f)) {
      participle.push_back(c);
    } else {
      past.push_back(c);
    }
  }
  // sang/sung: the 'a' form is the past, the 'u' form the participle.
  bool has_a = std::any_of(past.begin(), past.end(), [&](const Candidate& c) { return vowel_change(b, c.form, 'a'); });
  for (size_t i = 0; has_a && i < past.size();) {
    if (vowel_change(b, past[i].form, 'u')) {
      participle.push_back({past[i].form, past[i].only_base, 1});
      past.erase(past.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  vf.past = pick(past);
  vf.participle = pick(participle);
  vf.third = pick(third);
  vf.ing = pick(ing);
  return vf;
}

}  // namespace

VerbForms verb_forms(const std::string& b, const InflectionTable& infl) {
  if (b == "be") return {"was", "been", "is", "being"};
  if (b == "have") return {"had", "had", "has", "having"};
  VerbForms vf = verb_exc_forms(b, infl);
  if (regular_preferred_verbs().count(b)) vf.past = vf.participle = "";
  bool double_final = cvc_monosyllable(b);
  if (invariant_past_verbs().count(b)) {  // over verb.exc's British "quitted", "betted"
    vf.past = b;
    if (vf.participle.empty()) vf.participle = b;
  }
  if (!vf.past.empty() && vf.participle.empty())
    vf.participle = vowel_change(b, vf.past, 'a', "uo") ? b : vf.past;
  if (vf.past.empty()) {
    if (b.back() == 'e') vf.past = b + "d";
    else if (consonant_y(b)) vf.past = b.substr(0, b.size() - 1) + "ied";
    else if (double_final) vf.past = b + b.back() + "ed";
    else vf.past = b + "ed";
    if (vf.participle.empty()) vf.participle = vf.past;
  }
  if (vf.third.empty()) {
    if (sibilant(b) || (b.size() >= 2 && b.back() == 'o' && !is_vowel(b[b.size() - 2]))) vf.third = b + "es";
    else if (consonant_y(b)) vf.third = b.substr(0, b.size() - 1) + "ies";
    else vf.third = b + "s";
  }
  if (vf.ing.empty()) {
    if (ends_with(b, "ie")) vf.ing = b.substr(0, b.size() - 2) + "ying";
    else if (ends_with(b, "ee") || ends_with(b, "oe") || ends_with(b, "ye") || b == "e") vf.ing = b + "ing";
    else if (b.back() == 'e') vf.ing = b.substr(0, b.size() - 1) + "ing";
    else if (double_final) vf.ing = b + b.back() + "ing";
    else vf.ing = b + "ing";
  }
  return vf;
}

namespace {

std::string plural_one(const std::string& b, const InflectionTable& infl) {
  auto ov = plural_overrides().find(b);
  if (ov != plural_overrides().end()) return ov->second;
  auto it = infl.find(b);
  if (it != infl.end()) {
    std::vector<Candidate> c;
    bool base_hyphen = b.find('-') != std::string::npos;
    for (const ExcForm& e : it->second) {
      const std::string& f = e.form;
      if (f == b || (f.compare(0, b.size(), b) == 0 && f.compare(b.size(), 3, "ing") == 0)) continue;
      // Shorter first: negate the length into the priority, above the only_base tie-break.
      int prio = (e.only_base ? 2 : 0) + ((base_hyphen || f.find('-') == std::string::npos) ? 1 : 0);
      c.push_back({f, true, prio * 1000 - static_cast<int>(f.size())});
    }
    std::string f = pick(c);
    if (!f.empty()) return f;
  }
  return "";
}

}  // namespace

std::string plural(const std::string& b, const InflectionTable& infl) {
  std::string f = plural_one(b, infl);
  if (!f.empty()) return f;
  size_t last = b.find_last_of('_');
  std::string head = last == std::string::npos ? b : b.substr(last + 1);
  std::string prefix = last == std::string::npos ? "" : b.substr(0, last + 1);
  if (head.empty()) return b;
  f = last == std::string::npos ? "" : plural_one(head, infl);
  if (f.empty()) {
    if (ends_with(head, "man") && !man_not_compound().count(head)) f = head.substr(0, head.size() - 2) + "en";
    else if (sibilant(head)) f = head + "es";
    else if (consonant_y(head)) f = head.substr(0, head.size() - 1) + "ies";
    else f = head + "s";
  }
  return prefix + f;
}

}  // namespace sieve::nearmiss
