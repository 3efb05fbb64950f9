// WordNet 3.0 reader. The file formats this relies on, after wndb(5WN) and wninput(5WN):
//
//  * Every index.* and data.* file starts with the license: lines that begin with two spaces. They
//    are skipped (so are empty lines). Fields are separated by single spaces; lines end in "  \n".
//  * index.<pos>, one lemma per line, sorted:
//      lemma pos synset_cnt p_cnt [ptr_symbol...] sense_cnt tagsense_cnt synset_offset...
//    `lemma` is lower-case with '_' for spaces; `pos` is n, v, a or r; p_cnt pointer symbols follow;
//    sense_cnt repeats synset_cnt; the synset_cnt 8-digit offsets into data.<pos> are in order of
//    decreasing frequency (sense 1 first).
//  * data.<pos>, one synset per line:
//      synset_offset lex_filenum ss_type w_cnt word lex_id [word lex_id...] p_cnt [ptr...]
//        [frames...] | gloss
//    synset_offset: 8 decimal digits, the byte offset of the line in its file (that is how pointers
//    find synsets); lex_filenum: 2 decimal digits; ss_type: n v a s r (s = adjective satellite);
//    w_cnt: 2 hex digits; word: as in the index but with its capitalisation, and in data.adj possibly
//    followed by a syntactic marker "(a)", "(p)" or "(ip)"; lex_id: 1 hex digit; p_cnt: 3 decimal
//    digits; each ptr is `pointer_symbol synset_offset pos source/target`, where source/target is 4
//    hex digits: the source and target word numbers (1-based), 0000 for a pointer between whole
//    synsets. data.verb alone has frames: `f_cnt + f_num w_num...` (2 decimal digits, then per frame
//    '+', 2 decimal digits and 2 hex digits). The gloss after '|' is the definition followed by
//    examples in double quotes, ';'-separated.
//  * <pos>.exc (no license): `inflected_form base_form [base_form...]`, the forms that morphy's
//    detachment rules cannot reduce (irregular, doubled consonants, some British spellings).
#include "nearmiss/lexicon.h"
#include "nearmiss/inflection.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/file_util.h"
#include "core/log.h"
#include "core/mmap_file.h"
#include "sieve/error.h"

namespace sieve::nearmiss {

const char* pos_name(Pos p) {
  switch (p) {
    case Pos::Noun: return "noun";
    case Pos::Verb: return "verb";
    case Pos::Adj: return "adj";
    case Pos::Adv: return "adv";
  }
  return "?";
}

namespace {

constexpr std::array<Pos, 4> kAllPos = {Pos::Noun, Pos::Verb, Pos::Adj, Pos::Adv};
constexpr const char* kReinstall = "reinstall it with `apt install --reinstall wordnet-base`";

size_t idx(Pos p) { return static_cast<size_t>(p); }

// The pos letter of index.* lines and of pointers; 's' (satellite) is an adjective.
bool pos_from_letter(char c, Pos* p) {
  switch (c) {
    case 'n': *p = Pos::Noun; return true;
    case 'v': *p = Pos::Verb; return true;
    case 'a':
    case 's': *p = Pos::Adj; return true;
    case 'r': *p = Pos::Adv; return true;
    default: return false;
  }
}

char index_letter(Pos p) { return "nvar"[idx(p)]; }

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// WordNet's spelling of a query: trimmed, lower-case, runs of blanks -> '_'.
std::string normalize(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  bool gap = false;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      gap = !out.empty();
      continue;
    }
    if (gap) out.push_back('_');
    gap = false;
    out.push_back(lower(c));
  }
  return out;
}

// The spelling of an output: '_' -> ' '.
std::string display(std::string_view s) {
  std::string out(s);
  std::replace(out.begin(), out.end(), '_', ' ');
  return out;
}

bool equal_lemma(std::string_view word, const std::string& lemma) {
  if (word.size() != lemma.size()) return false;
  for (size_t i = 0; i < word.size(); ++i)
    if (lower(word[i]) != lemma[i]) return false;
  return true;
}

void push_unique(std::vector<std::string>* out, std::string s) {
  if (std::find(out->begin(), out->end(), s) == out->end()) out->push_back(std::move(s));
}

// ---- file parsing --------------------------------------------------------------------------

// The fields of one line, with errors that name the file and line.
class LineReader {
 public:
  LineReader(std::string_view text, const std::string& path, size_t line_no)
      : text_(text), path_(path), line_no_(line_no) {}

  [[noreturn]] void fail(const std::string& what) const {
    SIEVE_THROW(path_ << ":" << line_no_ << ": " << what << " (not a WordNet 3.0 line as wndb(5WN) "
                      << "describes it; the file is damaged or not WordNet 3.0: " << kReinstall << ")");
  }

  bool at_end() {
    skip_blanks();
    return pos_ >= text_.size();
  }

  std::string_view token(const char* what) {
    skip_blanks();
    if (pos_ >= text_.size()) fail(std::string("the line ends where ") + what + " was expected");
    size_t begin = pos_;
    while (pos_ < text_.size() && text_[pos_] != ' ') ++pos_;
    return text_.substr(begin, pos_ - begin);
  }

  /// A decimal number of exactly `digits` digits (any number of digits when 0).
  uint32_t decimal(const char* what, size_t digits = 0) { return number(what, digits, 10); }
  uint32_t hex(const char* what, size_t digits) { return number(what, digits, 16); }

  /// The rest of the line without surrounding blanks.
  std::string_view rest() {
    skip_blanks();
    std::string_view r = text_.substr(pos_);
    while (!r.empty() && (r.back() == ' ' || r.back() == '\r')) r.remove_suffix(1);
    pos_ = text_.size();
    return r;
  }

  static std::string quote(std::string_view t) {
    std::string s(t.substr(0, 40));
    if (t.size() > 40) s += "...";
    return "'" + s + "'";
  }

 private:
  void skip_blanks() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\r')) ++pos_;
  }

  uint32_t number(const char* what, size_t digits, int base) {
    std::string_view t = token(what);
    bool ok = !t.empty() && t.size() <= 9 && (digits == 0 || t.size() == digits);
    uint32_t v = 0;
    for (size_t i = 0; ok && i < t.size(); ++i) {
      char c = lower(t[i]);
      int d = (c >= '0' && c <= '9') ? c - '0' : (base == 16 && c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
      if (d < 0) ok = false;
      else v = v * static_cast<uint32_t>(base) + static_cast<uint32_t>(d);
    }
    if (!ok)
      fail(std::string("bad ") + what + " " + quote(t) + " (expected " +
           (digits ? std::to_string(digits) + " " : std::string()) + (base == 16 ? "hex" : "decimal") +
           " digits)");
    return v;
  }

  std::string_view text_;
  const std::string& path_;
  size_t line_no_;
  size_t pos_ = 0;
};

// Calls fn(line, line_no, byte_offset) for each non-license, non-empty line of `text`.
template <typename Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    ++line_no;
    std::string_view line = text.substr(pos, end - pos);
    bool license = line.size() >= 2 && line[0] == ' ' && line[1] == ' ';
    bool blank = line.find_first_not_of(" \r") == std::string_view::npos;
    if (!license && !blank) fn(line, line_no, pos);
    pos = end + 1;
  }
}

bool known_pointer_symbol(std::string_view s) {
  static const std::unordered_set<std::string_view> kSymbols = {
      "!", "@", "@i", "~", "~i", "#m", "#s", "#p", "%m", "%s", "%p", "=", "+", ";c", "-c", ";r",
      "-r", ";u", "-u", "*", ">", "^", "$", "&", "<", "\\",
      ";", "-"};  // index.* lists the domain pointers without their c/r/u qualifier
  return kSymbols.count(s) > 0;
}

struct WordRef {  // a word of a synset: bytes of the mapped data file, marker stripped
  uint32_t offset;
  uint16_t size;
};

struct Pointer {
  uint32_t target;  // synset offset in the data file of `pos`
  char symbol[2];   // "!", "&", "@i", ...; second byte 0 for one-character symbols
  uint8_t pos;      // Pos of the target
  uint8_t source;   // 1-based word numbers, 0 = the whole synset
  uint8_t dest;
  bool is(const char* s) const { return symbol[0] == s[0] && symbol[1] == s[1]; }  // s has >= 2 bytes
};

struct Synset {
  uint32_t offset;  // == byte offset of its line
  uint32_t line_no;
  char type;        // n v a s r
  uint8_t lex_file; // lex_filenum: the lexicographer file (lexnames(5WN))
  uint32_t first_word;
  uint16_t word_count;
  uint32_t first_pointer;
  uint16_t pointer_count;
  uint32_t gloss_offset;
  uint32_t gloss_size;
};


struct PosData {
  std::string index_path, data_path, exc_path;
  MappedFile index_file, data_file;
  std::vector<Synset> synsets;  // ascending offsets (file order)
  std::vector<WordRef> words;
  std::vector<Pointer> pointers;
  std::vector<uint32_t> sense_offsets;  // index entries' offsets, concatenated
  // lemma (a view of index_file) -> [begin, begin + count) in sense_offsets
  std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> index;
  std::unordered_map<std::string, std::vector<std::string>> exceptions;  // inflected -> bases
  InflectionTable inflections;                                            // base -> inflected

  std::string_view data_text() const {
    return {reinterpret_cast<const char*>(data_file.data()), data_file.size()};
  }
  std::string_view word(const WordRef& w) const { return data_text().substr(w.offset, w.size); }
  std::string_view word(const Synset& s, size_t i) const { return word(words[s.first_word + i]); }
  std::string_view gloss(const Synset& s) const { return data_text().substr(s.gloss_offset, s.gloss_size); }

  const Synset* find(uint32_t offset) const {
    auto it = std::lower_bound(synsets.begin(), synsets.end(), offset,
                               [](const Synset& s, uint32_t o) { return s.offset < o; });
    return (it != synsets.end() && it->offset == offset) ? &*it : nullptr;
  }
  const std::pair<uint32_t, uint32_t>* senses(const std::string& lemma) const {
    auto it = index.find(std::string_view(lemma));
    return it == index.end() ? nullptr : &it->second;
  }
};

void parse_data(PosData& d, Pos p) {
  std::string_view text = d.data_text();
  for_each_line(text, [&](std::string_view line, size_t line_no, size_t byte_offset) {
    LineReader r(line, d.data_path, line_no);
    Synset s{};
    s.offset = r.decimal("synset_offset", 8);
    if (s.offset != byte_offset)
      r.fail("synset_offset " + std::to_string(s.offset) + " is not the line's byte offset " +
             std::to_string(byte_offset) + " (line endings or bytes were changed)");
    if (!d.synsets.empty() && s.offset <= d.synsets.back().offset) r.fail("synset offsets are not ascending");
    s.line_no = static_cast<uint32_t>(line_no);
    uint32_t lex_file = r.decimal("lex_filenum", 2);
    if (lex_file > 99) r.fail("lex_filenum out of range");
    s.lex_file = static_cast<uint8_t>(lex_file);
    std::string_view type = r.token("ss_type");
    Pos type_pos;
    if (type.size() != 1 || !pos_from_letter(type[0], &type_pos) || type_pos != p)
      r.fail("ss_type " + LineReader::quote(type) + " does not belong in data." + pos_name(p));
    s.type = type[0];
    uint32_t w_cnt = r.hex("w_cnt", 2);
    if (w_cnt == 0) r.fail("a synset without words (w_cnt 00)");
    s.first_word = static_cast<uint32_t>(d.words.size());
    s.word_count = static_cast<uint16_t>(w_cnt);
    for (uint32_t i = 0; i < w_cnt; ++i) {
      std::string_view w = r.token("word");
      if (p == Pos::Adj && !w.empty() && w.back() == ')') {
        for (std::string_view marker : {"(a)", "(p)", "(ip)"})
          if (ends_with(w, marker) && w.size() > marker.size()) {
            w.remove_suffix(marker.size());
            break;
          }
        if (w.back() == ')') r.fail("unknown adjective marker in " + LineReader::quote(w));
      }
      if (w.size() > 0xffff) r.fail("word too long");
      d.words.push_back({static_cast<uint32_t>(w.data() - text.data()), static_cast<uint16_t>(w.size())});
      r.hex("lex_id", 1);
    }
    uint32_t p_cnt = r.decimal("p_cnt", 3);
    s.first_pointer = static_cast<uint32_t>(d.pointers.size());
    s.pointer_count = static_cast<uint16_t>(p_cnt);
    for (uint32_t i = 0; i < p_cnt; ++i) {
      Pointer ptr{};
      std::string_view sym = r.token("pointer_symbol");
      if (!known_pointer_symbol(sym)) r.fail("unknown pointer symbol " + LineReader::quote(sym));
      ptr.symbol[0] = sym[0];
      ptr.symbol[1] = sym.size() > 1 ? sym[1] : '\0';
      ptr.target = r.decimal("pointer synset_offset", 8);
      std::string_view tp = r.token("pointer pos");
      Pos target_pos;
      if (tp.size() != 1 || !pos_from_letter(tp[0], &target_pos))
        r.fail("bad pointer pos " + LineReader::quote(tp));
      ptr.pos = static_cast<uint8_t>(target_pos);
      uint32_t st = r.hex("pointer source/target", 4);
      ptr.source = static_cast<uint8_t>(st >> 8);
      ptr.dest = static_cast<uint8_t>(st & 0xff);
      if (ptr.source > w_cnt) r.fail("pointer source word " + std::to_string(ptr.source) + " > w_cnt");
      d.pointers.push_back(ptr);
    }
    if (p == Pos::Verb) {
      uint32_t f_cnt = r.decimal("f_cnt", 2);
      for (uint32_t i = 0; i < f_cnt; ++i) {
        if (r.token("'+' of a frame") != "+") r.fail("a verb frame does not start with '+'");
        r.decimal("f_num", 2);
        r.hex("w_num", 2);
      }
    }
    std::string_view bar = r.token("'|' before the gloss");
    if (bar != "|") r.fail("expected '|' before the gloss, found " + LineReader::quote(bar));
    std::string_view gloss = r.rest();
    s.gloss_offset = static_cast<uint32_t>(gloss.data() - text.data());
    s.gloss_size = static_cast<uint32_t>(gloss.size());
    d.synsets.push_back(s);
  });
}

void parse_index(PosData& d, Pos p) {
  std::string_view text(reinterpret_cast<const char*>(d.index_file.data()), d.index_file.size());
  for_each_line(text, [&](std::string_view line, size_t line_no, size_t) {
    LineReader r(line, d.index_path, line_no);
    std::string_view lemma = r.token("lemma");
    std::string_view pos = r.token("pos");
    if (pos.size() != 1 || pos[0] != index_letter(p))
      r.fail("pos " + LineReader::quote(pos) + " does not belong in index." + pos_name(p));
    uint32_t synset_cnt = r.decimal("synset_cnt");
    uint32_t p_cnt = r.decimal("p_cnt");
    for (uint32_t i = 0; i < p_cnt; ++i) {
      std::string_view sym = r.token("ptr_symbol");
      if (!known_pointer_symbol(sym)) r.fail("unknown pointer symbol " + LineReader::quote(sym));
    }
    uint32_t sense_cnt = r.decimal("sense_cnt");
    if (sense_cnt != synset_cnt) r.fail("sense_cnt differs from synset_cnt");
    r.decimal("tagsense_cnt");
    if (synset_cnt == 0) r.fail("a lemma without synsets");
    uint32_t begin = static_cast<uint32_t>(d.sense_offsets.size());
    for (uint32_t i = 0; i < synset_cnt; ++i) {
      uint32_t off = r.decimal("synset_offset", 8);
      if (d.find(off) == nullptr)
        r.fail("synset_offset " + std::to_string(off) + " of '" + std::string(lemma) + "' is not a synset of " +
               d.data_path);
      d.sense_offsets.push_back(off);
    }
    if (!r.at_end()) r.fail("more synset offsets than synset_cnt " + std::to_string(synset_cnt));
    if (!d.index.emplace(lemma, std::make_pair(begin, synset_cnt)).second)
      r.fail("lemma '" + std::string(lemma) + "' is listed twice");
  });
}

void parse_exceptions(PosData& d) {
  std::string text = read_file(d.exc_path);
  for_each_line(text, [&](std::string_view line, size_t line_no, size_t) {
    LineReader r(line, d.exc_path, line_no);
    std::string form(r.token("inflected form"));
    std::vector<std::string> bases;
    while (!r.at_end()) bases.emplace_back(r.token("base form"));
    if (bases.empty()) r.fail("an exception without a base form");
    auto& known = d.exceptions[form];
    for (const auto& b : bases) {
      push_unique(&known, b);
      d.inflections[b].push_back({form, bases.size() == 1});
    }
  });
}

// Every pointer must reach an existing synset and word; checked once all four data files are in.
void check_pointers(const std::array<PosData, 4>& all, Pos p) {
  const PosData& d = all[idx(p)];
  for (const Synset& s : d.synsets)
    for (uint32_t i = 0; i < s.pointer_count; ++i) {
      const Pointer& ptr = d.pointers[s.first_pointer + i];
      const PosData& t = all[ptr.pos];
      const Synset* target = t.find(ptr.target);
      if (target == nullptr || ptr.dest > target->word_count)
        SIEVE_THROW(d.data_path << ":" << s.line_no << ": pointer '" << std::string(ptr.symbol, ptr.symbol[1] ? 2 : 1)
                                << "' to " << t.data_path << " offset " << ptr.target
                                << (target ? " names a word the target synset does not have" : " reaches no synset")
                                << " (the WordNet files do not belong together: " << kReinstall << ")");
    }
}

// ---- morphy -------------------------------------------------------------------------------

struct Rule {
  const char* suffix;
  const char* ending;
};
// WordNet's detachment rules (morphy(7WN)), in WordNet's order.
const std::vector<Rule>& rules(Pos p) {
  static const std::vector<Rule> kNoun = {{"s", ""},     {"ses", "s"},  {"xes", "x"}, {"zes", "z"},
                                          {"ches", "ch"}, {"shes", "sh"}, {"men", "man"}, {"ies", "y"}};
  static const std::vector<Rule> kVerb = {{"s", ""},   {"ies", "y"}, {"es", "e"},  {"es", ""},
                                          {"ed", "e"}, {"ed", ""},   {"ing", "e"}, {"ing", ""}};
  static const std::vector<Rule> kAdj = {{"er", ""}, {"est", ""}, {"er", "e"}, {"est", "e"}};
  static const std::vector<Rule> kNone;
  switch (p) {
    case Pos::Noun: return kNoun;
    case Pos::Verb: return kVerb;
    case Pos::Adj: return kAdj;
    case Pos::Adv: return kNone;
  }
  return kNone;
}


}  // namespace

// ---- Lexicon ------------------------------------------------------------------------------

struct Lexicon::Impl {
  std::array<PosData, 4> pos;

  const PosData& at(Pos p) const { return pos[idx(p)]; }
  bool has_norm(const std::string& lemma, Pos p) const { return at(p).senses(lemma) != nullptr; }

  std::vector<std::string> base_forms_norm(const std::string& w, Pos p) const {
    std::vector<std::string> out;
    if (w.empty()) return out;
    const PosData& d = at(p);
    auto exc = d.exceptions.find(w);
    if (exc != d.exceptions.end())
      for (const auto& b : exc->second)
        if (has_norm(b, p)) push_unique(&out, b);
    if (has_norm(w, p)) push_unique(&out, w);
    for (const Rule& r : rules(p)) {
      std::string_view suffix(r.suffix);
      if (w.size() <= suffix.size() || !ends_with(w, suffix)) continue;
      std::string cand = w.substr(0, w.size() - suffix.size()) + r.ending;
      if (has_norm(cand, p)) push_unique(&out, cand);
    }
    if (out.empty() && w.find('_') != std::string::npos) {
      // A collocation: reduce one of its words ("runs_away" -> "run_away").
      size_t start = 0;
      while (start < w.size()) {
        size_t end = w.find('_', start);
        if (end == std::string::npos) end = w.size();
        std::string part = w.substr(start, end - start);
        if (part.find('_') == std::string::npos && !part.empty())
          for (const auto& b : base_forms_norm(part, p)) {
            if (b == part) continue;
            std::string cand = w.substr(0, start) + b + w.substr(end);
            if (has_norm(cand, p)) push_unique(&out, cand);
          }
        start = end + 1;
      }
    }
    return out;
  }

  std::string verb_form(const std::string& base, std::string VerbForms::*field) const {
    std::string b = normalize(base);
    if (b.empty()) return "";
    size_t space = b.find('_');
    std::string head = b.substr(0, space);
    std::string tail = space == std::string::npos ? "" : b.substr(space);
    if (head.empty()) return display(b);
    return display(verb_forms(head, at(Pos::Verb).inflections).*field + tail);
  }

  std::string noun_plural(const std::string& base) const {
    std::string b = normalize(base);
    return b.empty() ? "" : display(plural(b, at(Pos::Noun).inflections));
  }

  // The synsets of a lemma with the (0-based) number of the lemma's word in each.
  template <typename Fn>
  void for_each_sense(const std::string& lemma, Pos p, size_t max_senses, Fn&& fn) const {
    const PosData& d = at(p);
    const auto* senses = d.senses(lemma);
    if (senses == nullptr) return;
    size_t n = std::min<size_t>(senses->second, max_senses);
    for (size_t i = 0; i < n; ++i) {
      const Synset* s = d.find(d.sense_offsets[senses->first + i]);
      SIEVE_ASSERT(s != nullptr);  // checked at load
      size_t word_no = s->word_count;
      for (size_t w = 0; w < s->word_count; ++w)
        if (equal_lemma(d.word(*s, w), lemma)) {
          word_no = w;
          break;
        }
      fn(*s, word_no);
    }
  }

  // Antonym words reached by the '!' pointers of synset `s` leaving word `word_no` (any word when
  // word_no is npos).
  void antonyms_of(const Synset& s, Pos p, size_t word_no, std::vector<std::string>* out) const {
    const PosData& d = at(p);
    for (uint32_t i = 0; i < s.pointer_count; ++i) {
      const Pointer& ptr = d.pointers[s.first_pointer + i];
      if (!ptr.is("!\0")) continue;
      if (word_no != std::string::npos && ptr.source != 0 && ptr.source != word_no + 1) continue;
      const PosData& t = pos[ptr.pos];
      const Synset* target = t.find(ptr.target);
      SIEVE_ASSERT(target != nullptr);
      if (ptr.dest == 0)
        for (size_t w = 0; w < target->word_count; ++w) push_unique(out, display(t.word(*target, w)));
      else
        push_unique(out, display(t.word(*target, ptr.dest - 1u)));
    }
  }

  // Calls fn(text) for each synset, in file order, until fn returns false.
  void for_each_synset(const std::function<bool(Lexicon::SynsetText&)>& fn) const {
    for (Pos p : kAllPos) {
      const PosData& d = at(p);
      for (const Synset& s : d.synsets) {
        std::string_view g = d.gloss(s);
        Lexicon::SynsetText text;
        text.pos = p;
        for (size_t w = 0; w < s.word_count; ++w) push_unique(&text.lemmas, display(d.word(s, w)));
        std::string& definition = text.definition;
        std::vector<std::string>& examples = text.examples;
        // Split at ';' outside double quotes; a part that starts with '"' is an example.
        size_t start = 0;
        bool quoted = false;
        for (size_t i = 0; i <= g.size(); ++i) {
          if (i < g.size() && g[i] == '"') quoted = !quoted;
          if (i < g.size() && (quoted || g[i] != ';')) continue;
          std::string_view part = g.substr(start, i - start);
          start = i + 1;
          while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
          while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
          if (part.empty()) continue;
          if (part.front() == '"') {
            size_t close = part.rfind('"');
            std::string_view body = close > 0 ? part.substr(1, close - 1) : part.substr(1);
            std::string ex;
            for (char c : body)
              if (c != '"') ex.push_back(c);
            size_t b = ex.find_first_not_of(' '), e = ex.find_last_not_of(' ');
            if (b != std::string::npos) examples.push_back(ex.substr(b, e - b + 1));
          } else if (examples.empty()) {
            if (!definition.empty()) definition += "; ";
            definition.append(part);
          }
        }
        if (!fn(text)) return;
      }
    }
  }
};

Lexicon::Lexicon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Lexicon::~Lexicon() = default;

bool Lexicon::available(const std::string& dir) {
  for (Pos p : kAllPos) {
    std::string name = pos_name(p);
    for (const std::string& file : {"index." + name, "data." + name, name + ".exc"})
      if (!is_file(path_join(dir, file))) return false;
  }
  return true;
}

std::unique_ptr<Lexicon> Lexicon::load(const std::string& dir) {
  auto start = std::chrono::steady_clock::now();
  auto impl = std::make_unique<Impl>();
  for (Pos p : kAllPos) {
    PosData& d = impl->pos[idx(p)];
    d.index_path = path_join(dir, std::string("index.") + pos_name(p));
    d.data_path = path_join(dir, std::string("data.") + pos_name(p));
    d.exc_path = path_join(dir, std::string(pos_name(p)) + ".exc");
    for (const std::string* path : {&d.index_path, &d.data_path, &d.exc_path})
      SIEVE_THROW_IF_NOT(is_file(*path), "WordNet file '" << *path << "' not found: load() needs index.*, data.* "
                                                          << "and *.exc of noun, verb, adj and adv "
                                                          << "(install Debian's WordNet 3.0 with `apt install wordnet-base`)");
  }
  for (Pos p : kAllPos) {
    PosData& d = impl->pos[idx(p)];
    d.data_file = MappedFile(d.data_path);
    SIEVE_THROW_IF_NOT(d.data_file.size() < (uint64_t{1} << 32), d.data_path << ": too large for WordNet 3.0");
    parse_data(d, p);
    d.index_file = MappedFile(d.index_path);
    parse_index(d, p);
    parse_exceptions(d);
  }
  for (Pos p : kAllPos) check_pointers(impl->pos, p);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  log_debug("WordNet loaded from " + dir + ": " + std::to_string(impl->pos[0].index.size()) + " nouns, " +
            std::to_string(impl->pos[1].index.size()) + " verbs, " + std::to_string(impl->pos[2].index.size()) +
            " adjectives, " + std::to_string(impl->pos[3].index.size()) + " adverbs in " +
            std::to_string(static_cast<int>(ms)) + " ms");
  return std::unique_ptr<Lexicon>(new Lexicon(std::move(impl)));
}

bool Lexicon::has(const std::string& lemma, Pos p) const { return impl_->has_norm(normalize(lemma), p); }

std::vector<std::string> Lexicon::base_forms(const std::string& word, Pos p) const {
  std::vector<std::string> out = impl_->base_forms_norm(normalize(word), p);
  for (auto& s : out) s = display(s);
  return out;
}

std::vector<Pos> Lexicon::parts_of_speech(const std::string& word) const {
  std::string w = normalize(word);
  std::vector<Pos> out;
  for (Pos p : kAllPos)
    if (!impl_->base_forms_norm(w, p).empty()) out.push_back(p);
  return out;
}

std::vector<std::string> Lexicon::synonyms(const std::string& lemma, Pos p, size_t max_senses) const {
  std::string l = normalize(lemma);
  std::vector<std::string> out;
  const PosData& d = impl_->at(p);
  impl_->for_each_sense(l, p, max_senses, [&](const Synset& s, size_t) {
    for (size_t w = 0; w < s.word_count; ++w) {
      std::string_view word = d.word(s, w);
      if (!equal_lemma(word, l)) push_unique(&out, display(word));
    }
  });
  return out;
}

std::vector<int> Lexicon::lex_files(const std::string& lemma, Pos p, size_t max_senses) const {
  std::vector<int> out;
  impl_->for_each_sense(normalize(lemma), p, max_senses, [&](const Synset& s, size_t) { out.push_back(s.lex_file); });
  return out;
}

std::vector<std::string> Lexicon::antonyms(const std::string& lemma, Pos p, bool indirect,
                                           size_t max_senses) const {
  std::string l = normalize(lemma);
  std::vector<std::string> out;
  impl_->for_each_sense(l, p, max_senses, [&](const Synset& s, size_t word_no) {
    impl_->antonyms_of(s, p, word_no, &out);
  });
  if (indirect && p == Pos::Adj) {
    const PosData& d = impl_->at(p);
    impl_->for_each_sense(l, p, max_senses, [&](const Synset& s, size_t) {
      if (s.type != 's') return;
      for (uint32_t i = 0; i < s.pointer_count; ++i) {
        const Pointer& ptr = d.pointers[s.first_pointer + i];
        if (!ptr.is("&\0") || ptr.pos != idx(Pos::Adj)) continue;
        const Synset* head = d.find(ptr.target);
        if (head != nullptr && head->type == 'a') impl_->antonyms_of(*head, p, std::string::npos, &out);
      }
    });
  }
  // A lemma is not its own antonym (WordNet has no such pointers; guard against odd data).
  out.erase(std::remove_if(out.begin(), out.end(), [&](const std::string& a) { return normalize(a) == l; }),
            out.end());
  return out;
}

std::string Lexicon::verb_past(const std::string& base) const { return impl_->verb_form(base, &VerbForms::past); }
std::string Lexicon::verb_past_participle(const std::string& base) const {
  return impl_->verb_form(base, &VerbForms::participle);
}
std::string Lexicon::verb_third_person(const std::string& base) const {
  return impl_->verb_form(base, &VerbForms::third);
}
std::string Lexicon::verb_present_participle(const std::string& base) const {
  return impl_->verb_form(base, &VerbForms::ing);
}
std::string Lexicon::noun_plural(const std::string& base) const { return impl_->noun_plural(base); }

std::vector<std::string> Lexicon::example_sentences(size_t max) const {
  std::vector<std::string> out;
  impl_->for_each_synset([&](SynsetText& t) {
    for (auto& e : t.examples) {
      if (max != 0 && out.size() >= max) return false;
      out.push_back(std::move(e));
    }
    return max == 0 || out.size() < max;
  });
  return out;
}

std::vector<std::string> Lexicon::glosses(size_t max) const {
  std::vector<std::string> out;
  impl_->for_each_synset([&](SynsetText& t) {
    if (!t.definition.empty()) out.push_back(std::move(t.definition));
    return max == 0 || out.size() < max;
  });
  return out;
}

void Lexicon::for_each_synset(const std::function<bool(SynsetText&)>& fn) const { impl_->for_each_synset(fn); }

size_t Lexicon::lemma_count(Pos p) const { return impl_->at(p).index.size(); }
size_t Lexicon::synset_count(Pos p) const { return impl_->at(p).synsets.size(); }

}  // namespace sieve::nearmiss
