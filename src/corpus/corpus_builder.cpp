#include "corpus/corpus_builder.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/file_util.h"
#include "core/log.h"
#include "corpus/dictd.h"
#include "sieve/error.h"

namespace sieve::corpus {

namespace {

constexpr const char* kHeadwordDefinition = "headword_definition";
constexpr const char* kGlossExample = "gloss_example";
constexpr const char* kDefinitionDefinition = "definition_definition";
constexpr const char* kSynonym = "synonym";

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Markup that survived cleaning, or text that is mostly symbols (formulas, tables).
bool looks_like_markup(const std::string& s) {
  size_t letters = 0, visible = 0;
  for (char c : s) {
    if (c == '{' || c == '}' || c == '\\' || c == '<' || c == '>' || static_cast<unsigned char>(c) < 0x20)
      return true;
    if (c != ' ') ++visible;
    if (is_alpha(c) || static_cast<unsigned char>(c) >= 0x80) ++letters;
  }
  return visible == 0 || letters * 2 < visible;
}

// A word usable as one side of a synonym pair: letters with inner hyphens or apostrophes, 2+ letters.
bool single_word(const std::string& w) {
  size_t letters = 0;
  for (char c : w) {
    if (is_alpha(c))
      ++letters;
    else if (c != '-' && c != '\'')
      return false;
  }
  return letters >= 2 && is_alpha(w.front()) && is_alpha(w.back());
}

const std::unordered_set<std::string>& stopwords() {
  // English function words plus the vocabulary every definition uses ("used", "especially").
  static const std::unordered_set<std::string> s = {
      "the",        "and",        "for",        "with",       "that",       "this",          "from",
      "into",       "onto",       "upon",       "which",      "what",       "who",           "whom",
      "whose",      "are",        "was",        "were",       "been",       "being",         "have",
      "has",        "had",        "having",     "not",        "but",        "any",           "all",
      "some",       "one",        "ones",       "other",      "others",     "such",          "than",
      "then",       "its",        "their",      "his",        "her",        "hers",          "our",
      "your",       "they",       "them",       "there",      "these",      "those",         "when",
      "where",      "while",      "how",        "also",       "very",       "more",          "most",
      "less",       "least",      "much",       "many",       "each",       "every",         "either",
      "neither",    "both",       "can",        "could",      "may",        "might",         "must",
      "shall",      "should",     "will",       "would",      "does",       "did",           "doing",
      "done",       "out",        "over",       "under",      "about",      "above",         "below",
      "after",      "before",     "between",    "through",    "without",    "within",        "against",
      "among",      "along",      "around",     "because",    "used",       "use",           "using",
      "especially", "esp",        "etc",        "like",       "something",  "someone",       "anything",
      "thing",      "things",     "act",        "kind",       "kinds",      "sort",          "form",
      "forms",      "state",      "quality",    "manner",     "way",        "made",          "make",
      "makes",      "pertaining", "relating",   "related",    "belonging",  "characterized", "certain",
      "various",    "several",    "usually",    "often",      "commonly",   "generally",     "called",
      "same",       "see",        "person",     "persons",    "having",     "part",          "parts",
      "give",       "given",      "take",       "being",      "well",       "only",          "just",
      "same",       "very",       "too",        "you",        "him",        "she",           "its",
      "own",        "itself",     "himself",    "herself",    "yet",        "lacking",       "capable",
      "full",       "free",       "condition",  "consisting", "containing", "resembling",    "applied",
      "similar",    "genus",      "species",    "family",     "order",      "small",         "large",
      "great",      "little",     "good",       "new",        "old",        "two",           "three",
      "first",      "second",     "especially", "known",      "often",      "away"};
  return s;
}

// Content words of a definition: lower-cased alphabetic tokens of 3+ letters that are not stop
// words, a final plural "s" dropped, the headword's words excluded.
std::set<std::string> content_words(const std::string& text, const std::set<std::string>& exclude) {
  std::set<std::string> out;
  std::string w;
  auto flush = [&] {
    if (w.size() > 4 && w.back() == 's' && w[w.size() - 2] != 's') w.pop_back();
    if (w.size() >= 3 && !stopwords().count(w) && !exclude.count(w)) out.insert(w);
    w.clear();
  };
  for (char c : text) {
    if (is_alpha(c))
      w.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
    else
      flush();
  }
  flush();
  return out;
}

std::string anchor_of(const Entry& e) { return e.pos.empty() ? e.headword : e.headword + " (" + e.pos + ")"; }

// Equal but for case, spacing and punctuation: "in an admirable manner" / "In an admirable manner."
bool same_text(const std::string& a, const std::string& b) {
  auto norm = [](const std::string& s) {
    std::string out;
    for (char c : s)
      if (is_alpha(c) || (c >= '0' && c <= '9'))
        out.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
    return out;
  };
  return norm(a) == norm(b);
}

// "crawl" / "crawling", "ruin" / "ruins": WordNet lists such forms as synonyms, but they teach
// inflection, not meaning.
bool inflected_pair(const std::string& a, const std::string& b) {
  std::string base = lower(a.size() <= b.size() ? a : b), form = lower(a.size() <= b.size() ? b : a);
  for (const char* suffix : {"s", "es", "ing", "ed", "d"})
    if (form == base + suffix) return true;
  std::string stem = base.back() == 'e' ? base.substr(0, base.size() - 1) : base;  // "bake" / "baking"
  return form == stem + "ing" || form == stem + "ed";
}

// A quotation cut out of a longer one can keep one of its quote marks: 'the spot is cursed."'.
std::string balance_quotes(std::string s) {
  if (std::count(s.begin(), s.end(), '"') % 2 == 0) return s;
  if (!s.empty() && s.back() == '"')
    s.pop_back();
  else if (!s.empty() && s.front() == '"')
    s.erase(0, 1);
  return s;
}

class PairSink {
 public:
  explicit PairSink(std::vector<Pair>& out) : out_(out) {}
  void add(std::string anchor, std::string positive, const char* category, const std::string& source,
           bool unordered = false) {
    if (anchor.empty() || positive.empty() || same_text(anchor, positive)) return;
    std::string key = std::string(category) + '\t';
    if (unordered) {
      std::string a = lower(anchor), b = lower(positive);
      key += a < b ? a + '\t' + b : b + '\t' + a;
    } else {
      key += anchor + '\t' + positive;
    }
    if (!seen_.insert(key).second) return;
    out_.push_back({std::move(anchor), std::move(positive), category, source});
  }

 private:
  std::vector<Pair>& out_;
  std::unordered_set<std::string> seen_;
};

void mine_definition_pairs(const std::vector<Entry>& entries, PairSink& sink) {
  // (headword, pos) -> source -> definitions, in entry order.
  std::map<std::pair<std::string, std::string>, std::map<Source, std::vector<const std::string*>>> by_key;
  for (const auto& e : entries) {
    if (e.source == Source::Gcide && (e.from_wordnet || e.pos.empty())) continue;
    std::string pos = e.source == Source::Foldoc ? "noun" : e.pos;
    std::vector<std::string> words = {e.headword};
    if (e.source == Source::WordNet) words.insert(words.end(), e.synonyms.begin(), e.synonyms.end());
    for (const auto& w : words)
      for (const auto& s : e.senses)
        if (!is_cross_reference(s.definition)) by_key[{lower(w), pos}][e.source].push_back(&s.definition);
  }
  // Emit per source pair in source order (WordNet first), matches greedily by overlap.
  std::vector<std::tuple<Source, Source>> combos = {
      {Source::WordNet, Source::Gcide}, {Source::WordNet, Source::Foldoc}, {Source::Gcide, Source::Foldoc}};
  for (const auto& [key, per_source] : by_key) {
    if (per_source.size() < 2) continue;
    std::set<std::string> exclude;
    for (const auto& w : content_words(key.first, {})) exclude.insert(w);
    for (const auto& [sa, sb] : combos) {
      auto ia = per_source.find(sa), ib = per_source.find(sb);
      if (ia == per_source.end() || ib == per_source.end()) continue;
      const auto& da = ia->second;
      const auto& db = ib->second;
      std::vector<std::set<std::string>> wa, wb;
      for (const auto* d : da) wa.push_back(content_words(*d, exclude));
      for (const auto* d : db) wb.push_back(content_words(*d, exclude));
      struct Cand {
        size_t shared, i, j;
      };
      std::vector<Cand> cands;
      for (size_t i = 0; i < da.size(); ++i)
        for (size_t j = 0; j < db.size(); ++j) {
          size_t shared = 0;
          for (const auto& w : wa[i]) shared += wb[j].count(w);
          if (shared > 0) cands.push_back({shared, i, j});
        }
      std::stable_sort(cands.begin(), cands.end(),
                       [](const Cand& x, const Cand& y) { return x.shared > y.shared; });
      std::vector<bool> used_a(da.size()), used_b(db.size());
      std::vector<std::pair<size_t, size_t>> matches;
      for (const auto& c : cands) {
        if (used_a[c.i] || used_b[c.j]) continue;
        used_a[c.i] = used_b[c.j] = true;
        matches.push_back({c.i, c.j});
      }
      std::sort(matches.begin(), matches.end());
      std::string source = std::string(source_name(sa)) + "+" + source_name(sb);
      for (const auto& [i, j] : matches) sink.add(*da[i], *db[j], kDefinitionDefinition, source);
    }
  }
}

// "See under Bear.", "(See these names in the Vocabulary.)": navigation, not prose.
// Grammar notes start with an abbreviation: "imp. & p. p. of bead", "p. pr. of coax".
bool is_cross_reference_sentence(const std::string& s) {
  for (const char* p : {"See ", "(See ", "Cf. ", "See also "})
    if (s.compare(0, std::strlen(p), p) == 0 && count_words(s) <= 8) return true;
  size_t i = 0;
  while (i < s.size() && i < 5 && s[i] >= 'a' && s[i] <= 'z') ++i;
  return i > 0 && i < s.size() && s[i] == '.';
}

}  // namespace

const std::vector<std::string>& pair_categories() {
  static const std::vector<std::string> c = {kHeadwordDefinition, kGlossExample, kDefinitionDefinition,
                                             kSynonym};
  return c;
}

std::vector<std::string> entry_sentences(const Entry& e, size_t* dropped) {
  std::vector<std::string> out;
  for (const auto& p : e.paragraphs)
    for (auto& sentence : split_sentences(p)) {
      std::string s = balance_quotes(std::move(sentence));
      if (count_words(s) < 3 || looks_like_markup(s) || is_cross_reference_sentence(s)) {
        if (dropped != nullptr) ++*dropped;
        continue;
      }
      out.push_back(std::move(s));
    }
  return out;
}

std::vector<std::string> entry_examples(const Entry& e, const nearmiss::Lexicon* lex) {
  std::vector<std::string> out;
  auto push = [&](const std::string& text) {
    std::string s = balance_quotes(text);
    if (count_words(s) >= 3 && !looks_like_markup(s)) out.push_back(s);
  };
  for (const auto& sense : e.senses)
    for (const auto& ex : sense.examples) {
      if (e.source == Source::WordNet)
        push(ex);
      else if (lex != nullptr && is_full_clause(ex, *lex))
        push(as_sentence(ex));
    }
  for (const auto& q : e.quotations)
    for (const auto& s : split_sentences(q.text)) push(s);
  return out;
}

std::vector<Pair> mine_pairs(const std::vector<Entry>& entries, const nearmiss::Lexicon* lex) {
  std::vector<Pair> out;
  PairSink sink(out);
  for (const auto& e : entries) {
    if (e.headword.empty()) continue;
    std::string src = source_name(e.source);
    for (const auto& s : e.senses)
      if (!is_cross_reference(s.definition)) sink.add(anchor_of(e), s.definition, kHeadwordDefinition, src);
    for (const auto& ph : e.phrases) sink.add(ph.phrase, ph.definition, kHeadwordDefinition, src);
  }
  for (const auto& e : entries) {
    std::string src = source_name(e.source);
    for (const auto& s : e.senses) {
      if (s.definition.empty()) continue;
      for (const auto& ex : s.examples) {
        if (e.source == Source::WordNet) {
          if (count_words(ex) >= 2) sink.add(s.definition, ex, kGlossExample, src);
        } else if (lex != nullptr && is_full_clause(ex, *lex)) {
          sink.add(s.definition, as_sentence(ex), kGlossExample, src);
        }
      }
    }
  }
  mine_definition_pairs(entries, sink);
  for (const auto& e : entries) {
    std::string src = source_name(e.source);
    std::vector<std::string> words;
    if (single_word(e.headword)) words.push_back(e.headword);
    for (const auto& s : e.synonyms)
      if (single_word(s)) words.push_back(s);
    if (words.size() < 2) continue;
    // The headword (or, in a synset named by a phrase, its first single word) with each other.
    for (size_t k = 1; k < words.size(); ++k)
      if (!inflected_pair(words[0], words[k])) sink.add(words[0], words[k], kSynonym, src, true);
  }
  // Category order, then entry order (each category was mined in entry order).
  std::stable_sort(out.begin(), out.end(), [](const Pair& a, const Pair& b) {
    const auto& c = pair_categories();
    return std::find(c.begin(), c.end(), a.category) < std::find(c.begin(), c.end(), b.category);
  });
  return out;
}

nlohmann::ordered_json CorpusReport::to_json() const {
  nlohmann::ordered_json j;
  j["out"] = out_dir;
  j["total"] = nullptr;  // filled below; placed first for the reader
  j["pairs"] = nullptr;
  nlohmann::ordered_json srcs = nlohmann::ordered_json::object();
  size_t sentences = 0, words = 0, bytes = 0, dups = 0, docs = 0, examples = 0;
  for (const auto& s : sources) {
    nlohmann::ordered_json r;
    r["available"] = s.available;
    if (!s.available) {
      r["skipped"] = s.missing;
    } else {
      r["entries"] = s.entries;
      r["documents"] = s.documents;
      r["sentences"] = s.sentences;
      r["words"] = s.words;
      r["bytes"] = s.bytes;
      r["duplicates_removed"] = s.duplicates;
      r["dropped_short_or_markup"] = s.dropped;
      r["examples"] = s.examples;
      r["seconds"] = std::round(s.seconds * 100) / 100;
      auto it = pairs_by_source.find(source_name(s.source));
      r["pairs"] =
          it == pairs_by_source.end() ? nlohmann::ordered_json::object() : nlohmann::ordered_json(it->second);
    }
    srcs[source_name(s.source)] = r;
    sentences += s.sentences;
    words += s.words;
    bytes += s.bytes;
    dups += s.duplicates;
    docs += s.documents;
    examples += s.examples;
  }
  j["sources"] = srcs;
  size_t npairs = 0;
  nlohmann::ordered_json pj = nlohmann::ordered_json::object();
  for (const auto& c : pair_categories()) {
    auto it = pairs.find(c);
    size_t n = it == pairs.end() ? 0 : it->second;
    pj[c] = n;
    npairs += n;
  }
  j["pairs"] = pj;
  j["pairs_by_source"] = pairs_by_source;
  j["total"] = {{"documents", docs},
                {"sentences", sentences},
                {"words", words},
                {"bytes", bytes},
                {"duplicates_removed", dups},
                {"examples", examples},
                {"example_duplicates_removed", example_duplicates},
                {"pairs", npairs}};
  j["seconds"] = std::round(seconds * 100) / 100;
  return j;
}

CorpusReport build_corpus(const CorpusOptions& options) {
  SIEVE_THROW_IF_NOT(!options.out_dir.empty(), "no output folder given");
  auto t0 = std::chrono::steady_clock::now();
  CorpusReport report;
  report.out_dir = options.out_dir;

  // Which sources: the named ones must exist; by default every installed one.
  const std::vector<Source> all = {Source::WordNet, Source::Gcide, Source::Foldoc};
  auto missing_reason = [&](Source s) -> std::string {
    switch (s) {
      case Source::WordNet:
        return nearmiss::Lexicon::available(options.wordnet_dir)
                   ? ""
                   : "WordNet not found in '" + options.wordnet_dir + "' (apt install wordnet-base)";
      case Source::Gcide:
        return DictdDatabase::available(options.dictd_dir, "gcide")
                   ? ""
                   : "gcide.index/gcide.dict.dz not found in '" + options.dictd_dir +
                         "' (apt install dict-gcide)";
      case Source::Foldoc:
        return DictdDatabase::available(options.dictd_dir, "foldoc")
                   ? ""
                   : "foldoc.index/foldoc.dict.dz not found in '" + options.dictd_dir +
                         "' (apt install dict-foldoc)";
    }
    return "";
  };
  // Always in the canonical order, so that the outputs do not depend on how --sources is spelled.
  std::vector<Source> wanted;
  for (Source s : all)
    if (options.sources.empty() ||
        std::find(options.sources.begin(), options.sources.end(), s) != options.sources.end())
      wanted.push_back(s);
  for (Source s : wanted) {
    std::string why = missing_reason(s);
    SIEVE_THROW_IF_NOT(why.empty() || options.sources.empty(),
                       "source '" << source_name(s) << "' is not available: " << why);
    SourceReport r;
    r.source = s;
    r.available = why.empty();
    r.missing = why;
    if (!why.empty()) log_warn("corpus: skipping " + std::string(source_name(s)) + ": " + why);
    report.sources.push_back(r);
  }
  std::filesystem::create_directories(options.out_dir);

  // The lexicon decides which GCIDE usage fragments are full clauses; without WordNet they are
  // left out of examples.txt.
  std::unique_ptr<nearmiss::Lexicon> lex;
  if (nearmiss::Lexicon::available(options.wordnet_dir))
    lex = nearmiss::Lexicon::load(options.wordnet_dir);
  else
    log_warn("corpus: WordNet not installed: GCIDE usage examples are left out of examples.txt");

  std::vector<Entry> entries;
  std::string sentences_txt, examples_txt;
  std::unordered_set<std::string> seen_sentences, seen_examples;
  for (auto& r : report.sources) {
    if (!r.available) continue;
    auto ts = std::chrono::steady_clock::now();
    size_t begin = entries.size();
    if (r.source == Source::WordNet) {
      auto wn = read_wordnet_entries(options.wordnet_dir, options.max_entries);
      r.entries = wn.size();
      for (auto& e : wn) entries.push_back(std::move(e));
    } else {
      const char* name = r.source == Source::Gcide ? "gcide" : "foldoc";
      log_info(std::string("corpus: reading ") + name);
      DictdDatabase db = DictdDatabase::open(options.dictd_dir, name);
      auto articles = db.articles();
      size_t n = options.max_entries == 0 ? articles.size() : std::min(articles.size(), options.max_entries);
      Progress progress(std::string("clean ") + name, n);
      for (size_t k = 0; k < n; ++k) {
        Entry e = r.source == Source::Gcide ? clean_gcide_article(articles[k].text)
                                            : clean_foldoc_article(articles[k].text);
        progress.add();
        if (e.headword.empty() && e.paragraphs.empty()) continue;
        entries.push_back(std::move(e));
      }
      progress.finish();
      r.entries = n;
    }
    Progress progress(std::string("sentences ") + source_name(r.source), entries.size() - begin);
    for (size_t k = begin; k < entries.size(); ++k) {
      const Entry& e = entries[k];
      bool any = false;
      for (auto& s : entry_sentences(e, &r.dropped)) {
        if (!seen_sentences.insert(s).second) {
          ++r.duplicates;
          continue;
        }
        sentences_txt += s;
        sentences_txt += '\n';
        ++r.sentences;
        r.words += count_words(s);
        r.bytes += s.size() + 1;
        any = true;
      }
      if (any) {
        sentences_txt += '\n';
        ++r.documents;
      }
      for (auto& s : entry_examples(e, lex.get())) {
        if (!seen_examples.insert(s).second) {
          ++report.example_duplicates;
          continue;
        }
        examples_txt += s;
        examples_txt += '\n';
        ++r.examples;
      }
      progress.add();
    }
    progress.finish();
    r.seconds = seconds_since(ts);
    log_info(std::string("corpus: ") + source_name(r.source) + ": " + std::to_string(r.entries) +
             " entries, " + std::to_string(r.sentences) + " sentences");
  }

  log_info("corpus: mining pairs");
  auto tp = std::chrono::steady_clock::now();
  std::vector<Pair> pairs = mine_pairs(entries, lex.get());
  std::string pairs_jsonl;
  for (const auto& p : pairs) {
    nlohmann::ordered_json j = {{"anchor", p.anchor}, {"positive", p.positive}, {"category", p.category}};
    pairs_jsonl += j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    pairs_jsonl += '\n';
    ++report.pairs[p.category];
    ++report.pairs_by_source[p.source][p.category];
  }
  log_debug("corpus: pairs mined in " + std::to_string(seconds_since(tp)) + " s");

  write_file_atomic(path_join(options.out_dir, "sentences.txt"), sentences_txt);
  write_file_atomic(path_join(options.out_dir, "examples.txt"), examples_txt);
  write_file_atomic(path_join(options.out_dir, "pairs.jsonl"), pairs_jsonl);
  report.seconds = seconds_since(t0);
  write_file_atomic(path_join(options.out_dir, "report.json"), report.to_json().dump(2) + "\n");
  return report;
}

}  // namespace sieve::corpus
