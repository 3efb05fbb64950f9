// Tokenizer, tagger and chunker of the near-miss generator (see sentence.h).
#include "nearmiss/sentence.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <unordered_map>

namespace sieve::nearmiss {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

const char* const kLeadPunct = "\"'([{`";
const char* const kTrailPunct = "\"'.,;:!?)]}`";

bool ends_with_ci(const std::string& s, const std::string& suffix) {
  if (s.size() < suffix.size()) return false;
  return lower(s.substr(s.size() - suffix.size())) == suffix;
}

// Splits one whitespace-free chunk into tokens (punctuation, word, clitic).
void split_chunk(const std::string& chunk, const std::string& space, std::vector<Token>& out) {
  size_t b = 0, e = chunk.size();
  std::vector<std::string> lead, trail;
  while (b < e && std::strchr(kLeadPunct, chunk[b])) {
    lead.push_back(chunk.substr(b, 1));
    ++b;
  }
  while (e > b && std::strchr(kTrailPunct, chunk[e - 1])) {
    // keep the apostrophe of a clitic ("dogs'") as trailing punctuation too
    trail.push_back(chunk.substr(e - 1, 1));
    --e;
  }
  std::reverse(trail.begin(), trail.end());
  std::vector<std::string> words;
  std::string w = chunk.substr(b, e - b);
  if (!w.empty()) {
    static const char* const kClitics[] = {"n't", "'s", "'re", "'ve", "'ll", "'d", "'m"};
    std::string clitic;
    for (const char* c : kClitics) {
      std::string cs(c);
      if (w.size() > cs.size() && ends_with_ci(w, cs)) {
        clitic = w.substr(w.size() - cs.size());
        w = w.substr(0, w.size() - cs.size());
        break;
      }
    }
    words.push_back(w);
    if (!clitic.empty()) words.push_back(clitic);
  }
  bool first = true;
  auto push = [&](const std::string& t) {
    Token tok;
    tok.text = t;
    tok.space_before = first ? space : "";
    first = false;
    out.push_back(tok);
  };
  for (const auto& t : lead) push(t);
  for (const auto& t : words) push(t);
  for (const auto& t : trail) push(t);
}

// ---- closed-class lists ------------------------------------------------------------------------

const std::unordered_map<std::string, Tag>& closed_class() {
  static const std::unordered_map<std::string, Tag> m = [] {
    std::unordered_map<std::string, Tag> t;
    auto add = [&](Tag tag, std::initializer_list<const char*> ws) {
      for (const char* w : ws) t[w] = tag;
    };
    add(Tag::Det, {"the", "a", "an", "this", "that", "these", "those"});
    add(Tag::Quant, {"all", "some", "any", "every", "each", "no", "many", "much", "few", "several",
                     "both", "either", "neither", "most", "another", "other", "such", "enough"});
    add(Tag::Poss, {"my", "your", "his", "her", "its", "our", "their"});
    add(Tag::Pron, {"i", "you", "he", "she", "it", "we", "they", "me", "him", "us", "them",
                    "myself", "yourself", "himself", "herself", "itself", "ourselves",
                    "themselves", "someone", "somebody", "something", "anyone", "anybody",
                    "anything", "everyone", "everybody", "everything", "nobody", "nothing",
                    "none", "there", "mine", "yours", "hers", "ours", "theirs", "one"});
    add(Tag::Prep, {"of", "in", "on", "at", "by", "for", "with", "from", "into", "onto", "upon",
                    "about", "above", "below", "over", "under", "between", "among", "through",
                    "during", "before", "after", "against", "without", "within", "behind",
                    "beside", "besides", "near", "across", "along", "around", "toward", "towards",
                    "beneath", "underneath", "inside", "outside", "off", "up", "down", "out",
                    "than", "as", "since", "until", "till", "via", "per", "despite", "except",
                    "beyond", "throughout", "onto", "like", "unlike"});
    add(Tag::To, {"to"});
    add(Tag::Conj, {"and", "or", "but", "nor", "yet", "because", "although", "though", "while",
                    "if", "whereas", "unless", "whether", "so"});
    add(Tag::Be, {"am", "is", "are", "was", "were", "be", "been", "being", "'re", "'m"});
    add(Tag::Have, {"have", "has", "had", "having", "'ve"});
    add(Tag::Do, {"do", "does", "did"});
    add(Tag::Modal, {"can", "could", "will", "would", "shall", "should", "may", "might", "must",
                     "ca", "wo", "sha", "cannot", "'ll", "'d"});
    add(Tag::Neg, {"not", "n't", "never"});
    add(Tag::Wh, {"who", "whom", "whose", "what", "which", "where", "when", "why", "how"});
    add(Tag::Adv, {"very", "too", "quite", "rather", "really", "also", "just", "only", "even",
                   "still", "already", "always", "often", "sometimes", "usually", "here", "then",
                   "now", "soon", "again", "almost", "perhaps", "ever", "once", "twice"});
    return t;
  }();
  return m;
}

bool is_number(const std::string& w) {
  bool digit = false;
  for (char c : w) {
    if (std::isdigit(static_cast<unsigned char>(c))) digit = true;
    else if (c != ',' && c != '.') return false;
  }
  return digit;
}

bool has_pos(const std::vector<Pos>& v, Pos p) { return std::find(v.begin(), v.end(), p) != v.end(); }

}  // namespace

std::string lower(const std::string& s) {
  std::string r = s;
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

bool is_closed_class(const std::string& word) { return closed_class().count(lower(word)) > 0; }

bool is_punct(const std::string& tok) {
  if (tok.empty()) return false;
  for (char c : tok)
    if (std::isalnum(static_cast<unsigned char>(c)) || static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

Sentence tokenize(const std::string& text) {
  Sentence s;
  size_t i = 0;
  while (i < text.size()) {
    size_t ws = i;
    while (i < text.size() && is_space(text[i])) ++i;
    std::string space = text.substr(ws, i - ws);
    if (i >= text.size()) {
      s.trailing = space;
      break;
    }
    size_t b = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    split_chunk(text.substr(b, i - b), space, s.tokens);
  }
  return s;
}

std::string detokenize(const Sentence& s) {
  std::string r;
  for (const auto& t : s.tokens) r += t.space_before + t.text;
  return r + s.trailing;
}

void tag_sentence(Sentence& s, const Lexicon& lex) {
  auto& toks = s.tokens;
  const size_t n = toks.size();
  std::vector<std::vector<Pos>> cand(n);
  const auto& cc = closed_class();
  // Pass 1: closed classes and candidates.
  for (size_t i = 0; i < n; ++i) {
    const std::string& w = toks[i].text;
    std::string lw = lower(w);
    toks[i].tag = Tag::Other;
    if (is_punct(w)) {
      toks[i].tag = Tag::Punct;
      continue;
    }
    if (std::any_of(w.begin(), w.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) continue;
    static const std::unordered_map<std::string, int> kNumberWords = [] {
      std::unordered_map<std::string, int> m;
      for (const char* x : {"two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                            "twelve", "thirteen", "fourteen", "fifteen", "twenty", "thirty", "forty", "fifty",
                            "hundred", "thousand", "million", "billion", "dozen", "zero"})
        m[x] = 1;
      return m;
    }();
    std::string singular = lw.size() > 3 && lw.back() == 's' ? lw.substr(0, lw.size() - 1) : lw;
    if (is_number(w) || kNumberWords.count(lw) || kNumberWords.count(singular)) {
      toks[i].tag = Tag::Num;
      continue;
    }
    if (lw == "'s") {
      toks[i].tag = Tag::PossS;  // resolved below
      continue;
    }
    auto it = cc.find(lw);
    if (it != cc.end()) {
      toks[i].tag = it->second;
      continue;
    }
    cand[i] = lex.parts_of_speech(lw);
    bool cap = std::isupper(static_cast<unsigned char>(w[0]));
    if (cap && (i > 0 || cand[i].empty()) && lw != "i") {
      // A capitalised word inside the sentence is a name unless the previous token ends a sentence.
      bool after_stop = i > 0 && (toks[i - 1].text == "." || toks[i - 1].text == "\"" || toks[i - 1].text == ":");
      if (!after_stop || cand[i].empty()) {
        toks[i].tag = Tag::Propn;
        continue;
      }
    }
  }
  // Pass 2: resolve open-class words left to right. `seen_verb`: the current clause already has
  // a verb or auxiliary (reset by conjunctions, wh-words and commas).
  bool seen_verb = false;
  for (size_t i = 0; i < n; ++i) {
    Token& t = toks[i];
    if (i > 0) {
      Tag pt = toks[i - 1].tag;
      if (pt == Tag::Verb || pt == Tag::Be || pt == Tag::Have || pt == Tag::Modal || pt == Tag::Do) seen_verb = true;
      if (pt == Tag::Conj || pt == Tag::Wh || toks[i - 1].text == "," || toks[i - 1].text == ";") seen_verb = false;
    }
    if (t.tag == Tag::PossS) {
      Tag prev = i > 0 ? toks[i - 1].tag : Tag::Other;
      std::string lp = i > 0 ? lower(toks[i - 1].text) : "";
      if (prev == Tag::Pron || prev == Tag::Wh || lp == "that" || lp == "this") t.tag = Tag::Be;
      continue;
    }
    if (t.tag != Tag::Other || is_punct(t.text)) continue;
    const auto& c = cand[i];
    const std::string lw = lower(t.text);
    if (c.empty()) {
      if (std::any_of(lw.begin(), lw.end(), [](char ch) { return static_cast<unsigned char>(ch) >= 0x80; })) continue;
      // Unknown word: guess from the suffix.
      if (lw.size() > 4 && lw.compare(lw.size() - 2, 2, "ly") == 0) t.tag = Tag::Adv;
      else t.tag = Tag::Noun;
      continue;
    }
    const bool N = has_pos(c, Pos::Noun), V = has_pos(c, Pos::Verb), A = has_pos(c, Pos::Adj),
               R = has_pos(c, Pos::Adv);
    if (c.size() == 1) {
      t.tag = N ? Tag::Noun : V ? Tag::Verb : A ? Tag::Adj : Tag::Adv;
      continue;
    }
    Tag prev = i > 0 ? toks[i - 1].tag : Tag::Other;
    // Could the next token continue a noun phrase (noun or adjective)?
    bool next_nominal = false;
    if (i + 1 < n) {
      Tag nt = toks[i + 1].tag;
      if (nt == Tag::Propn) next_nominal = true;
      else if (nt == Tag::Other && !cand[i + 1].empty())
        next_nominal = has_pos(cand[i + 1], Pos::Noun) || has_pos(cand[i + 1], Pos::Adj);
    }
    // Right before an auxiliary, a word that can be a noun is the subject's head ("the show is").
    if (N && i + 1 < n && i > 0 &&
        (toks[i + 1].tag == Tag::Be || toks[i + 1].tag == Tag::Modal || toks[i + 1].tag == Tag::Have)) {
      t.tag = Tag::Noun;
      continue;
    }
    if (R && lw.size() > 4 && lw.compare(lw.size() - 2, 2, "ly") == 0 && !N) {
      t.tag = (A && next_nominal) ? Tag::Adj : Tag::Adv;
      continue;
    }
    switch (prev) {
      case Tag::Det: case Tag::Quant: case Tag::Poss: case Tag::Num: case Tag::PossS:
        if (A && next_nominal) t.tag = Tag::Adj;
        else if (N) t.tag = Tag::Noun;
        else t.tag = A ? Tag::Adj : V ? Tag::Verb : Tag::Adv;
        break;
      case Tag::Adj:
        if (A && next_nominal) t.tag = Tag::Adj;  // "a small blue box"
        else if (N) t.tag = Tag::Noun;
        else t.tag = A ? Tag::Adj : V ? Tag::Verb : Tag::Adv;
        break;
      case Tag::Modal: case Tag::To: case Tag::Do:
        t.tag = V ? Tag::Verb : A ? Tag::Adj : N ? Tag::Noun : Tag::Adv;
        break;
      case Tag::Neg:
        // "did not bite", "is not hot": follow the auxiliary before the negation.
        if (i >= 2 && (toks[i - 2].tag == Tag::Be)) t.tag = A ? Tag::Adj : V ? Tag::Verb : N ? Tag::Noun : Tag::Adv;
        else t.tag = V ? Tag::Verb : A ? Tag::Adj : N ? Tag::Noun : Tag::Adv;
        break;
      case Tag::Pron: case Tag::Propn: case Tag::Wh:
        t.tag = V ? Tag::Verb : N ? Tag::Noun : A ? Tag::Adj : Tag::Adv;
        break;
      case Tag::Noun:
        // After a noun: a verb when the word can be one and the clause has no verb yet ("the dog
        // bites"), else a compound noun ("the blackjack table").
        if (V && (!seen_verb || !N)) t.tag = Tag::Verb;
        else t.tag = N ? Tag::Noun : A ? Tag::Adj : V ? Tag::Verb : Tag::Adv;
        break;
      case Tag::Be: {
        bool participle = lw.size() > 3 && (lw.compare(lw.size() - 3, 3, "ing") == 0 ||
                                            lw.compare(lw.size() - 2, 2, "ed") == 0 ||
                                            lw.compare(lw.size() - 2, 2, "en") == 0);
        if (V && participle && !(A && lw.compare(lw.size() - 2, 2, "ed") == 0 && lex.has(lw, Pos::Adj))) t.tag = Tag::Verb;
        else if (A) t.tag = Tag::Adj;
        else if (N) t.tag = Tag::Noun;
        else t.tag = V ? Tag::Verb : Tag::Adv;
        break;
      }
      case Tag::Have: {
        // "has bitten", "had walked": an inflected verb form is the participle; else "has fun".
        bool inflected = V && !lex.has(lw, Pos::Verb);
        bool ed = lw.size() > 3 && (lw.compare(lw.size() - 2, 2, "ed") == 0 || lw.compare(lw.size() - 2, 2, "en") == 0);
        if (V && (inflected || ed)) t.tag = Tag::Verb;
        else if (A && next_nominal) t.tag = Tag::Adj;
        else t.tag = N ? Tag::Noun : V ? Tag::Verb : A ? Tag::Adj : Tag::Adv;
        break;
      }
      case Tag::Prep:
        if (A && next_nominal) t.tag = Tag::Adj;
        else if (N) t.tag = Tag::Noun;
        else if (V && lw.size() > 4 && lw.compare(lw.size() - 3, 3, "ing") == 0) t.tag = Tag::Verb;
        else t.tag = A ? Tag::Adj : V ? Tag::Verb : Tag::Adv;
        break;
      case Tag::Adv:
        t.tag = V ? Tag::Verb : A ? Tag::Adj : N ? Tag::Noun : Tag::Adv;
        break;
      default:
        if (i == 0 && V && i + 1 < n &&
            (toks[1].tag == Tag::Det || toks[1].tag == Tag::Poss || toks[1].tag == Tag::Quant))
          t.tag = Tag::Verb;  // "take a right at the corner": an imperative
        else if (i == 0) t.tag = (A && next_nominal) ? Tag::Adj : N ? Tag::Noun : V ? Tag::Verb : A ? Tag::Adj : Tag::Adv;
        else t.tag = N ? Tag::Noun : V ? Tag::Verb : A ? Tag::Adj : Tag::Adv;
    }
  }
  // Pass 3: "that" / "her" / "one" as determiners only before a nominal.
  for (size_t i = 0; i < n; ++i) {
    std::string lw = lower(toks[i].text);
    bool next_open = i + 1 < n && (toks[i + 1].tag == Tag::Noun || toks[i + 1].tag == Tag::Adj || toks[i + 1].tag == Tag::Propn);
    if (lw == "that" && !next_open) toks[i].tag = Tag::Conj;
    if (lw == "her" && !next_open) toks[i].tag = Tag::Pron;
    if (lw == "one" && next_open) toks[i].tag = Tag::Num;
    // "like" is a verb after a subject pronoun, an auxiliary, a negation or "to".
    if (lw == "like" && i > 0) {
      Tag p = toks[i - 1].tag;
      if (p == Tag::Neg || p == Tag::Do || p == Tag::Modal || p == Tag::To ||
          (p == Tag::Pron && lower(toks[i - 1].text) != "it"))
        toks[i].tag = Tag::Verb;
    }
  }
  // A bare capitalised singular noun opening the sentence before a verb is taken for a name
  // ("John saw Mary"): it keeps its capital when moved.
  if (n > 1 && toks[0].tag == Tag::Noun && std::isupper(static_cast<unsigned char>(toks[0].text[0]))) {
    std::string lw = lower(toks[0].text);
    if (toks[1].tag == Tag::Propn) toks[0].tag = Tag::Propn;  // "Michael Jackson"
    else if (toks[1].tag == Tag::Verb && cand[0].size() == 1 && lex.has(lw, Pos::Noun)) toks[0].tag = Tag::Propn;
  }
}

Sentence analyse(const std::string& text, const Lexicon& lex) {
  Sentence s = tokenize(text);
  tag_sentence(s, lex);
  return s;
}

size_t np_end(const Sentence& s, size_t i) {
  const auto& t = s.tokens;
  const size_t n = t.size();
  if (i >= n) return i;
  if (t[i].tag == Tag::Pron) return i + 1;
  size_t j = i;
  size_t dets = 0;
  while (j < n && (t[j].tag == Tag::Det || t[j].tag == Tag::Quant || t[j].tag == Tag::Poss || t[j].tag == Tag::Num) && dets < 3) {
    ++j;
    ++dets;
  }
  auto nominal_run = [&](size_t k) {
    while (k < n) {
      if (t[k].tag == Tag::Adj) ++k;
      else if (t[k].tag == Tag::Adv && k + 1 < n && t[k + 1].tag == Tag::Adj) ++k;
      else break;
    }
    size_t h = k;
    while (h < n && (t[h].tag == Tag::Noun || t[h].tag == Tag::Propn)) ++h;
    return h == k ? std::string::npos : h;
  };
  size_t e = nominal_run(j);
  if (e == std::string::npos) return i;
  if (e < n && t[e].tag == Tag::PossS) {
    size_t e2 = nominal_run(e + 1);
    if (e2 != std::string::npos) e = e2;
  }
  return e;
}

Range np_adjectives(const Sentence& s, size_t b, size_t e) {
  const auto& t = s.tokens;
  size_t j = b;
  while (j < e && (t[j].tag == Tag::Det || t[j].tag == Tag::Quant || t[j].tag == Tag::Poss || t[j].tag == Tag::Num)) ++j;
  size_t k = j;
  while (k < e && t[k].tag == Tag::Adj) ++k;
  if (k < e && (t[k].tag == Tag::Noun || t[k].tag == Tag::Propn)) return Range{j, k};
  return Range{j, j};
}

bool parse_clause(const Sentence& s, Clause& c) {
  const auto& t = s.tokens;
  const size_t n = t.size();
  c = Clause{};
  size_t se = np_end(s, 0);
  if (se == 0) return false;
  c.subject = Range{0, se};
  size_t j = se;
  size_t last_aux = std::string::npos;
  while (j < n) {
    Tag g = t[j].tag;
    if (g == Tag::Modal || g == Tag::Be || g == Tag::Have || g == Tag::Do) {
      last_aux = j;
      ++j;
    } else if (g == Tag::Neg || (g == Tag::Adv && j + 1 < n && (t[j + 1].tag == Tag::Verb || t[j + 1].tag == Tag::Neg ||
                                                                 t[j + 1].tag == Tag::Be || t[j + 1].tag == Tag::Have))) {
      ++j;
    } else {
      break;
    }
  }
  if (j < n && t[j].tag == Tag::Verb) {
    c.head = j;
    c.head_is_verb = true;
    ++j;
  } else if (last_aux != std::string::npos) {
    c.head = last_aux;
  } else {
    return false;
  }
  c.verb_group = Range{se, j};
  size_t oe = np_end(s, j);
  c.object = Range{j, oe};
  return true;
}

bool np_third_singular(const Sentence& s, Range np, const Lexicon& lex) {
  const auto& t = s.tokens;
  if (np.size() == 1 && t[np.b].tag == Tag::Pron) {
    std::string w = lower(t[np.b].text);
    return !(w == "i" || w == "you" || w == "we" || w == "they" || w == "these" || w == "those");
  }
  // Head: the last noun before a possessive 's or the end.
  size_t head = np.e;
  for (size_t k = np.b; k < np.e; ++k) {
    if (t[k].tag == Tag::PossS) break;
    if (t[k].tag == Tag::Noun || t[k].tag == Tag::Propn) head = k;
  }
  for (size_t k = np.b; k < np.e; ++k) {
    std::string w = lower(t[k].text);
    if (w == "these" || w == "those" || w == "many" || w == "several" || w == "both" || w == "few" || w == "all") return false;
  }
  for (size_t k = np.b; k < head && k < np.e; ++k)
    if (t[k].tag == Tag::Num && lower(t[k].text) != "one" && t[k].text != "1") return false;
  if (head == np.e) return true;
  if (t[head].tag == Tag::Propn) return true;
  std::string w = lower(t[head].text);
  static const char* const kPluralLemmas[] = {"people", "police", "cattle", "clergy", "men", "women", "children",
                                              "feet", "teeth", "mice", "geese", "data"};
  for (const char* pl : kPluralLemmas)
    if (w == pl) return false;
  if (lex.has(w, Pos::Noun)) return true;
  if (!lex.base_forms(w, Pos::Noun).empty()) return false;
  return !(w.size() > 2 && w.back() == 's' && w[w.size() - 2] != 's');
}

}  // namespace sieve::nearmiss
