// Meaning-preserving reorderings: coordination ("X and Y"), possessive ("the X of the Y"), adverb move.
#include <algorithm>
#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "nearmiss/perturb_rules.h"

namespace sieve::nearmiss::rules {

namespace {

// Token `e`, tagged Verb right after an NP, is the verb and not a noun the NP failed to take in
// ("the dog house"): it cannot be a noun, or it is a finite form followed by a determiner, a
// possessive, an adverb, a pronoun, "to", a preposition other than "of", or the end of the sentence
// ("the owner of the dog lives here").
bool verb_after_np(const Sentence& s, size_t e, const Lexicon& lex) {
  const auto& t = s.tokens;
  const std::string w = lower(t[e].text);
  const auto pos = lex.parts_of_speech(w);
  if (std::find(pos.begin(), pos.end(), Pos::Noun) == pos.end()) return true;
  const VerbForm vf = verb_form(w, lex);
  if (vf.form != Form::Past && vf.form != Form::Third) return false;
  if (e + 1 >= t.size()) return false;
  const Tag g = t[e + 1].tag;
  if (g == Tag::Punct) return t[e + 1].text == "." || t[e + 1].text == "!";
  if (g == Tag::Prep) return lower(t[e + 1].text) != "of";
  return g == Tag::Det || g == Tag::Poss || g == Tag::Adv || g == Tag::Pron || g == Tag::To || g == Tag::Quant;
}

// ---- coordination (a positive) -----------------------------------------------------------------

// Binomials whose order is fixed: reversed they sound wrong or lose their idiomatic sense.
const std::set<std::string> kFixedBinomials = {
    "bread and butter", "rock and roll", "law and order", "trial and error", "pros and cons", "ups and downs",
    "odds and ends", "arts and crafts", "life and death", "ladies and gentlemen", "fish and chips",
    "rank and file", "flesh and blood", "cats and dogs", "heart and soul", "hide and seek", "wear and tear",
    "nuts and bolts", "bits and pieces", "peace and quiet", "bed and breakfast", "salt and vinegar",
    "king and queen", "husband and wife", "father and son", "mother and daughter",
    "ham and eggs", "bacon and eggs", "cause and effect", "question and answer",
    "supply and demand", "research and development", "time and space", "space and time", "chapter and verse",
    "part and parcel", "sticks and stones", "fire and brimstone", "bells and whistles", "goods and services",
    "cup and saucer", "knife and fork", "needle and thread", "horse and carriage", "horse and buggy",
    "hammer and sickle", "milk and honey", "song and dance", "wine and dine", "name and address",
    "arms and legs", "hands and knees", "head and shoulders", "body and soul", "mind and body",
    "day and night", "night and day", "morning and evening", "beginning and end", "black and white",
    "fits and starts", "wrack and ruin", "rack and ruin", "pomp and circumstance", "room and board",
    "bump and grind", "mop and mow", "kith and kin", "rhyme and reason", "nook and cranny", "hue and cry",
    "cloak and dagger", "smoke and mirrors", "trials and tribulations", "leaps and bounds",
    "twists and turns", "ins and outs", "dribs and drabs", "stars and stripes", "skin and bones",
    "flesh and bone", "blood and guts", "bread and circuses", "sackcloth and ashes", "loaves and fishes",
    "sword and sorcery", "stick and carrot", "carrot and stick", "hearth and home", "house and home",
    "lock and key", "bow and arrow", "rod and reel", "pen and ink", "pen and paper", "pencil and paper",
    "nickel and dime", "tooth and nail", "hook and line", "sink and drain", "lord and master", "duck and cover",
    "null and void", "pro and con", "pros and cons", "work and play", "death and taxes", "shipping and handling",
    "bed and board", "board and lodging", "cut and paste", "wear and tear", "alpha and omega"};

// Words that make an NP unfit for reordering: comparatives ("more and more"), fractions ("a century
// and one half").
// Also "other" / "such" / "same", which point back at the first NP ("the lion and other animals").
const std::set<std::string> kNotCoordinated = {"more", "less", "most", "least", "much", "half", "halves",
                                               "quarter", "quarters", "third", "thirds", "percent", "lot",
                                               "other", "another", "such", "same", "similar", "rest", "former",
                                               "latter", "respective", "else"};
// Bare singular nouns that are adverbials or parts of idioms ("at home and cocoon", "at work").
const std::set<std::string> kAdverbialBare = {"home", "school", "work", "church", "bed", "town", "sea", "court",
                                              "college", "hospital", "prison", "jail", "class", "lunch", "dinner",
                                              "breakfast", "night", "day", "time", "hand", "foot", "heart",
                                              "order", "place", "way", "part", "course", "fact", "case", "hand"};

}  // namespace

// "salt and pepper" -> "pepper and salt", "a red car and a blue house" -> "a blue house and a red
// car": two simple NPs around "and", both determined or both bare nouns, without pronouns, names or
// possessives, not inside a longer list, after "between" or "of", nor followed by a modifier that
// could attach to the second NP only (a prepositional phrase, a relative clause).
void coordination_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out) {
  const auto& t = s.tokens;
  const size_t n = t.size();
  for (const auto& tok : t)
    if (lower(tok.text) == "respectively") return;
  auto simple_np = [&](Range r, bool& determined) {
    if (r.empty() || r.size() > 5) return false;
    const Tag f = t[r.b].tag;
    determined = f == Tag::Det || f == Tag::Quant || f == Tag::Poss || f == Tag::Num;
    bool adjectives = false;
    for (size_t k = r.b; k < r.e; ++k) {
      const Tag g = t[k].tag;
      if (g == Tag::Pron || g == Tag::Propn || g == Tag::PossS || g == Tag::Other) return false;
      if (k > r.b && starts_upper(t[k].text)) return false;
      if (g == Tag::Adj || g == Tag::Adv) adjectives = true;
      if ((g == Tag::Noun || g == Tag::Adj) && !is_alpha_word(t[k].text)) return false;
    }
    if (t[r.e - 1].tag != Tag::Noun) return false;
    for (size_t k = r.b; k < r.e; ++k)
      if (kNotCoordinated.count(lower(t[k].text))) return false;
    // A bare NP is one noun: in "old men and women" or "traffic noise and smog" the modifier may
    // scope over both, and a bare two-word "NP" is often a misread verb ("grate carrots and onions").
    return determined || (r.size() == 1 && !adjectives && !kAdverbialBare.count(lower(t[r.b].text)));
  };
  for (size_t i = 1; i + 1 < n; ++i) {
    if (lower(t[i].text) != "and") continue;
    size_t b1 = i;
    for (size_t b = 0; b < i; ++b)
      if (np_end(s, b) == i) {
        b1 = b;
        break;
      }
    if (b1 == i) continue;
    if (lower(t[b1].text) == "both") ++b1;  // "both salt and pepper": "both" stays in front
    const size_t b2 = i + 1, e2 = np_end(s, b2);
    if (e2 <= b2 || b1 >= i) continue;
    const Range x{b1, i}, y{b2, e2};
    bool det1 = false, det2 = false;
    if (!simple_np(x, det1) || !simple_np(y, det2) || det1 != det2) continue;
    if (span_text(s, x) == span_text(s, y)) continue;
    // "the mare and all her mates" -> "all her mates and the mare": "her" would come before the noun
    // it may refer to.
    bool poss1 = false, poss2 = false;
    for (size_t k = x.b; k < x.e; ++k) poss1 = poss1 || t[k].tag == Tag::Poss;
    for (size_t k = y.b; k < y.e; ++k) poss2 = poss2 || t[k].tag == Tag::Poss;
    if (poss2 && !poss1) continue;
    // What comes before the first NP: not a list ("apples, pears and plums"), not "between X and
    // Y", not "the owner of X and Y" (X alone or X and Y?).
    if (b1 > 0) {
      const std::string p = lower(t[b1 - 1].text);
      const Tag pt = t[b1 - 1].tag;
      if (p == "," || p == "between" || p == "of" || p == "among" || p == "and" || p == "or" || p == "nor" ||
          p == "from" || p == "either" || p == "neither")
        continue;
      if (pt == Tag::Adj || pt == Tag::Noun || pt == Tag::Propn || pt == Tag::PossS || pt == Tag::Num ||
          pt == Tag::Det || pt == Tag::Other || pt == Tag::Adv)
        continue;
    }
    // What comes after the second NP: the end, a sentence punctuation mark, a subordinating
    // conjunction, or (when "X and Y" is the subject) the verb.
    bool ok = false;
    if (e2 >= n) {
      ok = true;
    } else {
      const std::string nx = lower(t[e2].text);
      const Tag nt = t[e2].tag;
      if (nt == Tag::Punct) {
        ok = !(nx == "," && e2 + 1 < n && (t[e2 + 1].tag == Tag::Wh || lower(t[e2 + 1].text) == "that"));
        if (nx == "'" || nx == "\"" || nx == "(" || nx == "-" || nx == "--") ok = false;
      } else if (nt == Tag::Conj) {
        ok = nx != "and" && nx != "or" && nx != "nor" && nx != "that";
      } else if (b1 == 0 && (nt == Tag::Be || nt == Tag::Have || nt == Tag::Modal || nt == Tag::Do)) {
        ok = true;
      } else if (b1 == 0 && nt == Tag::Verb) {
        ok = verb_after_np(s, e2, lex);
      }
    }
    if (!ok) continue;
    std::string both = lower(span_text(s, Range{det1 ? x.b + 1 : x.b, x.e})) + "and " +
                       lower(span_text(s, Range{det2 ? y.b + 1 : y.b, y.e}));
    both.pop_back();
    if (kFixedBinomials.count(both)) continue;
    out.push_back(swap_spans(s, x, y));
  }
}

// ---- possessive (a positive) -------------------------------------------------------------------

namespace {

// Heads X of "the X of the Y" that do not alternate with "the Y's X": partitives, measures and
// containers ("the rest of the team"), parts and places ("the middle of the road", "the city of
// ..."), and nouns whose "of" phrase is their object ("the fear of the dark" is not "the dark's
// fear", "the picture of the dog" is not "the dog's picture").
const std::set<std::string> kNoPossessive = {
    "rest", "most", "half", "part", "parts", "piece", "pieces", "bit", "bits", "lot", "lots", "number", "numbers",
    "amount", "amounts", "quantity", "majority", "minority", "bulk", "remainder", "portion", "share", "percent",
    "percentage", "fraction", "kind", "kinds", "sort", "sorts", "type", "types", "variety", "form", "forms",
    "cup", "cups", "glass", "glasses", "bottle", "bottles", "box", "boxes", "bag", "bags", "bowl", "bowls",
    "plate", "plates", "slice", "slices", "loaf", "bunch", "pair", "pairs", "couple", "set", "sets", "series",
    "group", "groups", "herd", "flock", "pack", "crowd", "row", "rows", "line", "lines", "stack", "pile", "dozen",
    "hundred", "thousand", "million", "one", "ones", "top", "bottom", "side", "sides", "front", "back", "middle",
    "center", "centre", "inside", "outside", "rear", "head", "foot", "tip", "course", "sake", "case", "use",
    "lack", "way", "time", "times", "day", "days", "year", "years", "period", "age", "city", "town", "state",
    "kingdom", "island", "river", "lake", "sea", "land", "country", "fear", "love", "hatred", "hate", "dread",
    "knowledge", "study", "studies", "analysis", "treatment", "understanding", "awareness", "perception",
    "view", "views", "sight", "picture", "pictures", "image", "images", "photo", "photos", "photograph",
    "painting", "paintings", "drawing", "drawings", "portrait", "map", "model", "copy", "copies", "story",
    "stories", "history", "account", "description", "definition", "theory", "idea", "concept", "notion",
    "thought", "thoughts", "prospect", "threat", "question", "problem", "subject", "topic", "discussion",
    "review", "report", "memory", "memories", "desire", "need", "hope", "search", "pursuit", "investigation",
    "examination", "control", "care", "sense", "act", "process", "result", "cause",
    "word", "words", "art", "science", "language", "music", "sound", "smell", "mention", "absence",
    "presence", "loss", "fact", "matter", "point", "spirit", "letter", "order", "member", "issue", "theme",
    "principle", "practice", "virtue", "vice", "sin", "phrase", "expression", "category", "class", "square",
    "cube", "root", "sum", "product", "inverse", "reciprocal", "logarithm", "derivative", "integral", "plural",
    "singular", "title", "term", "figure", "symbol", "version", "edition", "volume", "chapter", "page"};

// "the X of the Y" and "the Y's X" read differently when X is an action, event or attitude and Y
// can act: "the discovery of the murderer" (Y found) is not "the murderer's discovery" (Y found
// something, or was found?), "the doctor's appointment" is not "the appointment of the doctor". Also
// a WordNet compound "Y's X" ("potter's wheel") is a kind of thing, not an X belonging to a Y.
bool possessive_ambiguous(const std::string& xhead, const std::string& yhead, const Lexicon& lex) {
  auto base = [&](const std::string& w) {
    const auto b = lex.base_forms(w, Pos::Noun);
    return b.empty() ? w : b.front();
  };
  const std::string xb = base(xhead), yb = base(yhead);
  if (lex.has(yb + "'s " + xb, Pos::Noun) || lex.has(yhead + "'s " + xhead, Pos::Noun)) return true;
  bool agent = false;
  for (int f : lex.lex_files(yb, Pos::Noun, 2))
    if (f == 5 || f == 14 || f == 18) agent = true;  // noun.animal, noun.group, noun.person
  if (!agent) return false;
  for (const char* suf : {"tion", "sion", "ment", "ance", "ence", "ure", "ery", "ism", "ing"})
    if (ends_with(xb, suf)) return true;
  for (int f : lex.lex_files(xb, Pos::Noun, 1))  // act, cognition, communication, event, feeling, process
    if (f == 4 || f == 9 || f == 10 || f == 11 || f == 12 || f == 22) return true;
  return false;
}

// Time words that follow a predicate ("the water's cold today") rather than head an NP.
const std::set<std::string> kTimeNouns = {"today", "tonight", "yesterday", "tomorrow", "now", "morning",
                                          "evening", "afternoon", "night", "week", "year", "day", "time"};

// True for the -ing form of a verb ("barking", "building"), not for "king" or "ceiling".
bool ing_form(const std::string& w, const Lexicon& lex) {
  if (!ends_with(w, "ing")) return false;
  for (const auto& b : lex.base_forms(w, Pos::Verb))
    if (b != w) return true;
  return false;
}

// Tokens [b, e) are Adj* Noun+ in lower case (an NP without its determiner), at most `max` long,
// without -ing forms (gerunds and participles).
bool bare_nominal(const Sentence& s, size_t b, size_t e, size_t max, const Lexicon& lex) {
  const auto& t = s.tokens;
  if (e <= b || e - b > max || e > t.size()) return false;
  size_t k = b;
  while (k < e && t[k].tag == Tag::Adj) ++k;
  if (k == e) return false;
  for (; k < e; ++k)
    if (t[k].tag != Tag::Noun) return false;
  for (size_t j = b; j < e; ++j)
    if (!is_alpha_word(t[j].text) || starts_upper(t[j].text) || ing_form(lower(t[j].text), lex)) return false;
  return true;
}

// What may follow a moved "the X of the Y" / "the Y's X": the end, a punctuation mark (not a
// comma before a relative clause), a subordinating conjunction, an auxiliary, or a finite verb that
// cannot be a noun. A prepositional phrase or relative clause could belong to Y alone.
bool possessive_boundary(const Sentence& s, size_t e, const Lexicon& lex) {
  const auto& t = s.tokens;
  if (e >= t.size()) return true;
  const std::string w = lower(t[e].text);
  switch (t[e].tag) {
    case Tag::Punct:
      if (w != "." && w != "," && w != ";" && w != ":" && w != "!" && w != "?" && w != ")") return false;
      return !(w == "," && e + 1 < t.size() && (t[e + 1].tag == Tag::Wh || lower(t[e + 1].text) == "that"));
    case Tag::Conj: return w != "and" && w != "or" && w != "nor" && w != "that";
    case Tag::Be: case Tag::Have:  // finite forms only: "the results of the thing being simulated"
      return w != "be" && w != "being" && w != "been" && w != "having";
    case Tag::Modal: case Tag::Do: return true;
    case Tag::Verb: return verb_after_np(s, e, lex);
    default: return false;
  }
}

// Number of a noun for the possessive marker: 1 singular (or an irregular plural: "the children's"),
// 2 a plural in -s ("the dogs'"), 0 unknown or both ("glasses").
int possessive_number(const std::string& head, const Lexicon& lex) {
  const auto bases = lex.base_forms(head, Pos::Noun);
  if (bases.empty()) return 0;
  bool other = false;
  for (const auto& b : bases)
    if (b != head) other = true;
  if (!ends_with(head, "s")) return 1;
  if (!other) return 0;  // a singular in -s ("boss", "physics"): "'s" or "'"? leave it
  return lex.has(head, Pos::Noun) ? 0 : 2;
}

}  // namespace

// "the owner of the dog" <-> "the dog's owner" ("the owners of the dogs" <-> "the dogs' owners").
void possessive_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out) {
  const auto& t = s.tokens;
  const size_t n = t.size();
  auto is_the = [&](size_t k) { return k < n && lower(t[k].text) == "the"; };
  auto retext = [](Token tok, const std::string& space) {
    tok.space_before = space;
    return tok;
  };
  // of-phrase -> possessive
  for (size_t i = 2; i + 2 < n; ++i) {
    if (lower(t[i].text) != "of" || !is_the(i + 1)) continue;
    size_t x0 = i;
    for (size_t b = i >= 6 ? i - 6 : 0; b + 1 < i; ++b)
      if (is_the(b) && bare_nominal(s, b + 1, i, 4, lex)) {
        x0 = b;
        break;
      }
    if (x0 == i) continue;
    if (x0 > 0 && (t[x0 - 1].tag == Tag::Adj || t[x0 - 1].tag == Tag::Noun || t[x0 - 1].tag == Tag::PossS)) continue;
    const size_t b2 = i + 2, e2 = np_end(s, i + 1);
    if (!bare_nominal(s, b2, e2, 3, lex) || !possessive_boundary(s, e2, lex)) continue;
    const std::string xhead = lower(t[i - 1].text), yhead = lower(t[e2 - 1].text);
    if (kNoPossessive.count(xhead) || kTimeNouns.count(xhead) || possessive_ambiguous(xhead, yhead, lex)) continue;
    if (!lex.has(xhead, Pos::Noun) && lex.base_forms(xhead, Pos::Noun).empty()) continue;
    const int num = possessive_number(yhead, lex);
    if (num == 0) continue;
    Sentence r;
    r.trailing = s.trailing;
    for (size_t k = 0; k <= x0; ++k) r.tokens.push_back(t[k]);  // ... "the"
    for (size_t k = b2; k < e2; ++k) r.tokens.push_back(retext(t[k], " "));
    r.tokens.push_back(make_token(num == 2 ? "'" : "'s", "", num == 2 ? Tag::Punct : Tag::PossS));
    for (size_t k = x0 + 1; k < i; ++k) r.tokens.push_back(retext(t[k], " "));
    for (size_t k = e2; k < n; ++k) r.tokens.push_back(t[k]);
    out.push_back(std::move(r));
  }
  // possessive -> of-phrase
  for (size_t j = 2; j + 1 < n; ++j) {
    const bool s_marker = t[j].text == "'s" && t[j].tag == Tag::PossS;
    const bool bare_marker = t[j].text == "'" && t[j].space_before.empty() && ends_with(lower(t[j - 1].text), "s") &&
                             t[j + 1].space_before == " ";
    if (!s_marker && !bare_marker) continue;
    size_t k = j;
    while (k > 0 && t[k - 1].tag == Tag::Noun) --k;
    if (k == j) continue;
    while (k > 0 && t[k - 1].tag == Tag::Adj) --k;
    if (k == 0 || !is_the(k - 1)) continue;
    const size_t y0 = k - 1;
    if (!bare_nominal(s, y0 + 1, j, 3, lex)) continue;
    if (y0 > 0 && (t[y0 - 1].tag == Tag::Adj || t[y0 - 1].tag == Tag::Noun || t[y0 - 1].tag == Tag::PossS ||
                   t[y0 - 1].tag == Tag::Det || lower(t[y0 - 1].text) == "of"))
      continue;
    const std::string yhead = lower(t[j - 1].text);
    const int num = possessive_number(yhead, lex);
    if (num == 0 || (num == 2) != bare_marker) continue;
    size_t e = j + 1;
    while (e < n && t[e].tag == Tag::Adj) ++e;
    while (e < n && t[e].tag == Tag::Noun) ++e;
    if (!bare_nominal(s, j + 1, e, 4, lex) || !possessive_boundary(s, e, lex)) continue;
    const std::string xhead = lower(t[e - 1].text);
    if (kNoPossessive.count(xhead) || kTimeNouns.count(xhead) || possessive_ambiguous(xhead, yhead, lex)) continue;
    // "the water's cold": an adjective right after 's may be a predicate ("is cold").
    if (t[j + 1].tag == Tag::Adj && s_marker && e == j + 2) continue;
    Sentence r;
    r.trailing = s.trailing;
    for (size_t m = 0; m <= y0; ++m) r.tokens.push_back(t[m]);  // ... "the"
    for (size_t m = j + 1; m < e; ++m) r.tokens.push_back(retext(t[m], " "));
    r.tokens.push_back(make_token("of", " ", Tag::Prep));
    r.tokens.push_back(make_token("the", " ", Tag::Det));
    for (size_t m = y0 + 1; m < j; ++m) r.tokens.push_back(retext(t[m], " "));
    for (size_t m = e; m < n; ++m) r.tokens.push_back(t[m]);
    out.push_back(std::move(r));
  }
}

// ---- adverb move (a positive) ------------------------------------------------------------------

namespace {

// Manner adverbs that mean the same before the verb and after its object. Subject-oriented ones
// ("wisely", "foolishly"), sentence adverbs ("clearly", "naturally"), frequency and degree words
// ("usually", "hardly") change meaning or sound wrong when moved, so the list is closed.
const std::set<std::string> kMannerAdverbs = {
    "quickly", "slowly", "carefully", "gently", "quietly", "loudly", "softly", "firmly", "tightly", "loosely",
    "neatly", "smoothly", "swiftly", "rapidly", "hastily", "hurriedly", "calmly", "patiently", "eagerly",
    "angrily", "nervously", "anxiously", "politely", "rudely", "warmly", "coldly", "silently", "noisily",
    "cautiously", "thoroughly", "briskly", "steadily", "skillfully", "skilfully", "awkwardly", "clumsily",
    "gracefully", "violently", "fiercely", "tenderly", "cheerfully", "proudly", "confidently", "sharply",
    "heavily", "lightly", "abruptly", "suddenly", "immediately", "promptly", "instantly", "repeatedly",
    "correctly", "properly", "accurately", "precisely", "efficiently", "effectively", "successfully",
    "systematically", "vigorously", "energetically", "enthusiastically", "happily", "reluctantly",
    "willingly", "easily", "furiously", "frantically", "casually", "deliberately", "gradually", "methodically",
    "meticulously"};

}  // namespace

// "she quickly opened the door" <-> "she opened the door quickly": subject + (adverb) finite verb
// + object NP that ends the sentence (before final punctuation).
void adverb_move_candidates(const Sentence& s, const Lexicon& lex, std::vector<Sentence>& out) {
  Clause c;
  if (!parse_clause(s, c) || !c.head_is_verb || c.object.empty()) return;
  const auto& t = s.tokens;
  const size_t n = t.size();
  auto final_punct = [&](size_t k) {
    for (; k < n; ++k) {
      const std::string w = t[k].text;
      if (w != "." && w != "!") return false;
    }
    return true;
  };
  const size_t vg = c.verb_group.b;
  if (verb_form(t[c.head].text, lex).form == Form::None) return;  // a finite verb: a clause, not a fragment
  const std::string oh = lower(t[c.object.e - 1].text);
  if (t[c.object.e - 1].tag != Tag::Noun && t[c.object.e - 1].tag != Tag::Propn && t[c.object.e - 1].tag != Tag::Pron)
    return;
  if (oh == "there" || oh == "one" || oh == "it") return;  // "took it lightly": idioms
  // A determined object or a personal pronoun: a bare word after the verb is too often a misread
  // ("These fine china cups damage easily").
  const Tag of = t[c.object.b].tag;
  if (of != Tag::Det && of != Tag::Poss && of != Tag::Quant && of != Tag::Num && of != Tag::Pron) return;
  // Before the verb -> after the object.
  if (c.verb_group.size() == 2 && c.head == vg + 1 && t[vg].tag == Tag::Adv &&
      kMannerAdverbs.count(lower(t[vg].text)) && final_punct(c.object.e)) {
    Sentence r;
    r.trailing = s.trailing;
    for (size_t k = 0; k < n; ++k) {
      if (k == vg) continue;
      Token tok = t[k];
      if (k == vg + 1) tok.space_before = t[vg].space_before;
      r.tokens.push_back(tok);
      if (k + 1 == c.object.e) {
        Token adv = t[vg];
        adv.space_before = " ";
        r.tokens.push_back(adv);
      }
    }
    out.push_back(std::move(r));
  }
  // After the object -> before the verb.
  if (c.verb_group.size() == 1 && c.head == vg && c.object.e < n && t[c.object.e].tag == Tag::Adv &&
      kMannerAdverbs.count(lower(t[c.object.e].text)) && final_punct(c.object.e + 1)) {
    Sentence r;
    r.trailing = s.trailing;
    for (size_t k = 0; k < n; ++k) {
      if (k == c.object.e) continue;
      if (k == vg) {
        Token adv = t[c.object.e];
        adv.space_before = t[vg].space_before;
        r.tokens.push_back(adv);
        Token v = t[vg];
        v.space_before = " ";
        r.tokens.push_back(v);
        continue;
      }
      r.tokens.push_back(t[k]);
    }
    out.push_back(std::move(r));
  }
}

}  // namespace sieve::nearmiss::rules
