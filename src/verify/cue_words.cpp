// negation_cues, voice_cue_ids and conjunction_ids (sieve/verify.h): the negation cue words of a
// vocabulary as exact id runs (F4's cue channel, the cue penalty), the passive's agent marker (the
// order penalty) and the coordinating conjunctions (the mlp gate's conj_swap feature); the mlp
// gate's other word lists (question marks, wh-words, numbers, opposites: mlp_gate_lexicon).
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

const std::vector<std::pair<std::string, std::string>>& opposite_words() {
  // Groups whose members oppose every member of the other group, each with its inflections.
  struct Groups {
    std::vector<std::string> a, b;
  };
  static const std::vector<std::pair<std::string, std::string>> kPairs = [] {
    const Groups groups[] = {
        {{"increase", "increases", "increased", "increasing", "raise", "raises", "raised", "raising", "rise", "rises",
          "rose", "risen", "rising", "boost", "boosts", "boosted", "grow", "grows", "grew", "grown", "growing"},
         {"decrease", "decreases", "decreased", "decreasing", "reduce", "reduces", "reduced", "reducing", "lower",
          "lowers", "lowered", "lowering", "fall", "falls", "fell", "fallen", "falling", "drop", "drops", "dropped",
          "decline", "declines", "declined", "declining", "shrink", "shrinks", "shrank", "cut", "cuts"}},
        {{"increase", "increases", "increased"}, {"loss", "losses"}},
        {{"above", "over", "up", "upper", "top", "upstairs"}, {"below", "under", "beneath", "down", "lower", "bottom", "downstairs"}},
        {{"left"}, {"right"}},
        {{"before", "earlier", "prior"}, {"after", "later"}},
        {{"inside", "indoors", "inner", "internal"}, {"outside", "outdoors", "outer", "external"}},
        {{"front", "ahead"}, {"behind", "back", "rear"}},
        {{"north", "northern"}, {"south", "southern"}},
        {{"east", "eastern"}, {"west", "western"}},
        {{"more", "most", "greater", "greatest", "larger", "largest", "bigger", "biggest", "higher", "highest", "longer",
          "longest", "many", "much"},
         {"less", "least", "fewer", "fewest", "smaller", "smallest", "lower", "lowest", "shorter", "shortest", "few", "little"}},
        {{"high", "big", "large", "long", "tall", "wide", "thick"}, {"low", "small", "short", "narrow", "thin"}},
        {{"hot", "warm", "warmer", "hotter"}, {"cold", "cool", "cooler", "colder"}},
        {{"fast", "faster", "fastest", "quick", "quickly"}, {"slow", "slower", "slowest", "slowly"}},
        {{"strong", "stronger", "strongest"}, {"weak", "weaker", "weakest"}},
        {{"good", "better", "best", "positive"}, {"bad", "worse", "worst", "negative"}},
        {{"easy", "easier", "easiest"}, {"hard", "harder", "hardest", "difficult"}},
        {{"cheap", "cheaper", "cheapest"}, {"expensive"}},
        {{"rich", "richer", "wealthy"}, {"poor", "poorer"}},
        {{"safe", "safer", "safest", "safely"}, {"dangerous", "unsafe", "harmful"}},
        {{"first", "earliest", "start", "starts", "started", "begin", "begins", "began", "beginning"},
         {"last", "latest", "end", "ends", "ended", "finish", "finished", "ending"}},
        {{"win", "wins", "won", "winning", "winner"}, {"lose", "loses", "lost", "losing", "loser"}},
        {{"accept", "accepts", "accepted", "approve", "approves", "approved", "allow", "allows", "allowed", "permit",
          "permitted"},
         {"reject", "rejects", "rejected", "refuse", "refuses", "refused", "deny", "denies", "denied", "forbid",
          "forbids", "forbidden", "ban", "banned", "prohibit", "prohibited"}},
        {{"include", "includes", "included", "including"}, {"exclude", "excludes", "excluded", "excluding"}},
        {{"buy", "buys", "bought", "buying", "buyer"}, {"sell", "sells", "sold", "selling", "seller"}},
        {{"import", "imports", "imported"}, {"export", "exports", "exported"}},
        {{"open", "opens", "opened"}, {"close", "closes", "closed", "shut"}},
        {{"push", "pushed"}, {"pull", "pulled"}},
        {{"add", "adds", "added"}, {"remove", "removes", "removed", "subtract"}},
        {{"male", "man", "men", "boy", "boys", "father", "husband", "brother", "son", "he", "his", "him"},
         {"female", "woman", "women", "girl", "girls", "mother", "wife", "sister", "daughter", "she", "her", "hers"}},
        {{"old", "older", "oldest", "elderly"}, {"young", "younger", "youngest", "new", "newer", "newest"}},
        {{"true", "correct", "right"}, {"false", "wrong", "incorrect"}},
        {{"alive", "living", "live", "lives"}, {"dead", "died", "dies"}},
        {{"success", "successful", "succeed", "succeeded", "pass", "passed"}, {"failure", "failed", "fail", "fails"}},
        {{"possible", "likely"}, {"impossible", "unlikely"}},
        {{"legal", "lawful"}, {"illegal", "unlawful"}},
        {{"agree", "agrees", "agreed"}, {"disagree", "disagrees", "disagreed"}},
        {{"always", "often"}, {"rarely", "seldom"}},
        {{"present", "presence"}, {"absent", "absence"}},
        {{"benefit", "benefits", "advantage", "advantages", "pros"}, {"harm", "harms", "disadvantage", "disadvantages", "cons"}},
        {{"love", "loves", "loved", "like", "likes", "liked"}, {"hate", "hates", "hated", "dislike", "dislikes", "disliked"}},
        {{"day", "daytime"}, {"night", "nighttime"}},
        {{"summer"}, {"winter"}},
        {{"light", "lighter"}, {"dark", "darker", "heavy", "heavier"}},
        {{"full"}, {"empty"}},
        {{"wet"}, {"dry"}},
        {{"enable", "enables", "enabled", "on"}, {"disable", "disables", "disabled", "off"}},
    };
    std::vector<std::pair<std::string, std::string>> pairs;
    for (const auto& g : groups)
      for (const auto& x : g.a)
        for (const auto& y : g.b)
          if (x != y) pairs.emplace_back(x, y);
    return pairs;
  }();
  return kPairs;
}

namespace {
// The id of `word` as one piece at the start of a text and after a plain word (a byte-level BPE
// reads " word" as another piece), each known one-piece id once.
std::vector<int32_t> word_ids(const Tokenizer& tokenizer, const std::string& word) {
  std::vector<int32_t> ids;
  const std::string lead = "so ";
  for (const auto& run : {pieces_from(tokenizer, word, 0, 0), pieces_from(tokenizer, lead + word, lead.size(), lead.size())})
    if (run.size() == 1) ids.push_back(run[0]);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::vector<int32_t> words_ids(const Tokenizer& tokenizer, std::initializer_list<const char*> words) {
  std::vector<int32_t> ids;
  for (const char* w : words) {
    for (const std::string& form : {std::string(w), std::string(1, static_cast<char>(w[0] - 'a' + 'A')) + (w + 1)})
      for (int32_t id : word_ids(tokenizer, form)) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}
}  // namespace

MlpGateOptions mlp_gate_lexicon(const Tokenizer& tokenizer, MlpGateOptions gate) {
  MlpGateOptions& l = gate;
  l.cue_ids = negation_cues(tokenizer);
  l.voice_ids = voice_cue_ids(tokenizer);
  l.conj_ids = conjunction_ids(tokenizer);
  l.question_ids.clear();
  l.opposite_ids.clear();
  for (const auto& p : tokenizer.tokenize("why?"))
    if (p.begin >= 3 && p.id != tokenizer.special_tokens().unk) l.question_ids.push_back(p.id);
  l.wh_ids = words_ids(tokenizer, {"what", "who", "whom", "whose", "which", "when", "where", "why", "how"});
  l.number_ids = words_ids(tokenizer, {"january", "february", "march", "april", "june", "july", "august", "september",
                                       "october", "november", "december", "one", "two", "three", "four", "five", "six",
                                       "seven", "eight", "nine", "ten", "hundred", "thousand", "million", "billion"});
  // Every vocabulary entry whose characters, past a word-piece or byte-level marker, are digits.
  for (size_t id = 0; id < tokenizer.vocab_size(); ++id) {
    std::string t = tokenizer.id_to_token(static_cast<int32_t>(id));
    for (const std::string& mark : {std::string("##"), std::string("\xC4\xA0"), std::string("\xE2\x96\x81")})
      if (t.compare(0, mark.size(), mark) == 0) t = t.substr(mark.size());
    if (!t.empty() && t.size() <= 8 && t.find_first_not_of("0123456789") == std::string::npos)
      l.number_ids.push_back(static_cast<int32_t>(id));
  }
  std::sort(l.number_ids.begin(), l.number_ids.end());
  l.number_ids.erase(std::unique(l.number_ids.begin(), l.number_ids.end()), l.number_ids.end());
  for (const auto& [x, y] : opposite_words()) {
    const auto xs = word_ids(tokenizer, x), ys = word_ids(tokenizer, y);
    for (int32_t a : xs)
      for (int32_t b : ys)
        if (a != b) {
          l.opposite_ids.emplace_back(a, b);
          l.opposite_ids.emplace_back(b, a);
        }
  }
  std::sort(l.opposite_ids.begin(), l.opposite_ids.end());
  l.opposite_ids.erase(std::unique(l.opposite_ids.begin(), l.opposite_ids.end()), l.opposite_ids.end());
  return gate;
}

}  // namespace sieve
