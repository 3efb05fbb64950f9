// Source names, the text functions shared by the cleaners, and the FOLDOC and WordNet cleaners
// (GCIDE, the largest, is in gcide.cpp; the rules with examples are in docs/corpus.md).
#include "corpus/sources.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/file_util.h"
#include "corpus/text_rules.h"
#include "nearmiss/lexicon.h"
#include "nearmiss/sentence.h"
#include "sieve/error.h"

namespace sieve::corpus {

const char* source_name(Source s) {
  switch (s) {
    case Source::WordNet:
      return "wordnet";
    case Source::Gcide:
      return "gcide";
    case Source::Foldoc:
      return "foldoc";
  }
  return "?";
}

Source source_from_name(const std::string& name) {
  if (name == "wordnet") return Source::WordNet;
  if (name == "gcide") return Source::Gcide;
  if (name == "foldoc") return Source::Foldoc;
  SIEVE_THROW("unknown corpus source '" << name << "' (expected wordnet, gcide or foldoc)");
}

using namespace detail;  // the shared text rules

std::vector<std::string> split_sentences(const std::string& text) {
  std::vector<std::string> out;
  std::string s = collapse_spaces(text);
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c != '.' && c != '!' && c != '?') continue;
    size_t end = i + 1;  // closing quotes and brackets stay with the sentence
    while (end < s.size() && (s[end] == '"' || s[end] == '\'' || s[end] == ')')) ++end;
    if (end >= s.size() || s[end] != ' ' || end + 1 >= s.size()) continue;
    char next = s[end + 1];
    if (next == '"' || next == '(' || next == '\'') next = end + 2 < s.size() ? s[end + 2] : ' ';
    if (!is_upper(next) && !is_digit(next)) continue;
    if (c == '.') {
      size_t wb = s.rfind(' ', i);
      wb = wb == std::string::npos ? 0 : wb + 1;
      std::string_view word(s.data() + wb, i + 1 - wb);
      if (word == ".") continue;  // an ellipsis ". . ."
      if (is_abbreviation(word)) continue;
    }
    out.push_back(s.substr(start, end - start));
    start = end + 1;
    i = end;
  }
  if (start < s.size()) out.push_back(s.substr(start));
  for (auto& x : out) x = std::string(trim(x));
  out.erase(std::remove_if(out.begin(), out.end(), [](const std::string& x) { return x.empty(); }),
            out.end());
  return out;
}

size_t count_words(std::string_view text) {
  size_t n = 0;
  bool in_word = false, has_alnum = false;
  for (size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : ' ';
    if (is_space(c)) {
      if (in_word && has_alnum) ++n;
      in_word = has_alnum = false;
    } else {
      in_word = true;
      if (is_alpha(c) || is_digit(c) || static_cast<unsigned char>(c) >= 0x80) has_alnum = true;
    }
  }
  return n;
}

bool is_full_clause(const std::string& text, const nearmiss::Lexicon& lex) {
  if (count_words(text) < 3) return false;
  nearmiss::Sentence s = nearmiss::analyse(text, lex);
  nearmiss::Clause c;
  return nearmiss::parse_clause(s, c);
}

// A definition that only points elsewhere ("See Weir.", "Same as Weir.", "Alt. of Dog.") says
// nothing on its own.
bool is_cross_reference(const std::string& d) {
  for (const char* p : {"See ", "Same as ", "Alt. of ", "Alt. ", "Obs. ", "Variant of ", "Plural of ", "of "})
    if (starts_with(d, p) && count_words(d) <= 8) return true;
  return count_words(d) < 2;
}

std::string as_sentence(std::string text) {
  text = std::string(trim(text));
  while (!text.empty() && std::strchr(",;:", text.back()) != nullptr) text.pop_back();
  if (text.empty()) return text;
  text[0] = to_upper(text[0]);
  char last = text.back();
  if (last != '.' && last != '!' && last != '?' && last != '"') text.push_back('.');
  return text;
}

std::string fold_accent_codes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') {
      size_t j = i + 1;
      while (j < text.size() && j - i <= 14 && text[j] != ']' && text[j] != '[' && text[j] != ' ') ++j;
      std::string repl;
      if (j < text.size() && text[j] == ']' && accent_code(text.substr(i + 1, j - i - 1), repl)) {
        out += repl;
        i = j;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

std::string fold_to_ascii(std::string_view text) {
  // Latin-1 U+00C0..U+00FF to ASCII (index = code point - 0xC0).
  static const char* const kLatin1[64] = {
      "A", "A", "A", "A", "A", "A", "AE", "C", "E", "E", "E", "E", "I", "I", "I",  "I",
      "D", "N", "O", "O", "O", "O", "O",  "x", "O", "U", "U", "U", "U", "Y", "Th", "ss",
      "a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i",  "i",
      "d", "n", "o", "o", "o", "o", "o",  "/", "o", "u", "u", "u", "u", "y", "th", "y"};
  auto latin1 = [&](unsigned cp, std::string& out) {
    if (cp >= 0xC0 && cp <= 0xFF)
      out += kLatin1[cp - 0xC0];
    else if (cp == 0xA0)
      out += ' ';
    else if (cp == 0xB0)
      out += " degrees";
    else if (cp == 0xA3)
      out += 'L';
    // other Latin-1 symbols (section sign, inverted marks, ...) carry no words
  };
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      continue;
    }
    // A valid UTF-8 sequence?
    size_t len = c >= 0xF0 && c < 0xF8 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    bool valid = len > 0 && i + len <= text.size();
    for (size_t k = 1; valid && k < len; ++k)
      valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    if (valid) {
      if (len == 2) {
        unsigned cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3Fu);
        if (cp <= 0xFF)
          latin1(cp, out);
        else
          out.append(text.substr(i, 2));
      } else {
        unsigned cp = len == 3
                          ? ((c & 0x0Fu) << 12) | ((static_cast<unsigned char>(text[i + 1]) & 0x3Fu) << 6) |
                                (static_cast<unsigned char>(text[i + 2]) & 0x3Fu)
                          : 0;
        if (cp == 0x2018 || cp == 0x2019)
          out += '\'';
        else if (cp == 0x201C || cp == 0x201D)
          out += '"';
        else if (cp == 0x2013 || cp == 0x2014)
          out += '-';
        else
          out.append(text.substr(i, len));
      }
      i += len - 1;
      continue;
    }
    // A stray single byte: cp1252 punctuation, else Latin-1.
    switch (c) {
      case 0x91:
      case 0x92:
        out += '\'';
        break;
      case 0x93:
      case 0x94:
        out += '"';
        break;
      case 0x96:
      case 0x97:
        out += '-';
        break;
      default:
        latin1(c, out);
    }
  }
  return out;
}

std::string strip_gcide_markup(std::string_view text, bool quotation) {
  std::string s = fold_accent_codes(fold_to_ascii(text));
  // Brackets (possibly nested: etymologies contain codes and cross-references).
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ']') continue;  // an unmatched closer
    if (s[i] != '[') {
      out.push_back(s[i]);
      continue;
    }
    int depth = 0;
    size_t j = i;
    for (; j < s.size(); ++j) {
      if (s[j] == '[') ++depth;
      if (s[j] == ']' && --depth == 0) break;
    }
    if (j >= s.size()) continue;  // an unmatched opener: drop the character alone
    std::string_view inner(s.data() + i + 1, j - i - 1);
    bool one_word = !inner.empty() && std::all_of(inner.begin(), inner.end(), [](char c) {
      return is_alpha(c) || c == '\'' || c == '-';
    });
    if (quotation && one_word)
      out.append(inner);
    else if (!out.empty() && !is_space(out.back()) && j + 1 < s.size() && is_alpha(s[j + 1]))
      out.push_back(' ');  // "word[Obs.]word" must not glue the words
    i = j;
  }
  // Braces: keep the words; a braced form with pronunciation marks ({Chal`a*zo*gam"ic}) loses them.
  {
    std::string kept;
    kept.reserve(out.size());
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i] == '}') continue;
      if (out[i] != '{') {
        kept.push_back(out[i]);
        continue;
      }
      size_t close = out.find('}', i);
      std::string_view inner =
          std::string_view(out).substr(i + 1, close == std::string::npos ? 0 : close - i - 1);
      if (close != std::string::npos &&
          (inner.find('*') != std::string_view::npos || inner.find('`') != std::string_view::npos)) {
        for (char c : inner)
          if (c != '*' && c != '`' && c != '"') kept.push_back(c);
        i = close;
      }
    }
    out = std::move(kept);
  }
  // Abbreviated domain labels anywhere: "{Dog ape} (Zool.), a male ape".
  std::string res;
  res.reserve(out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '(') {
      size_t close = out.find(')', i);
      size_t inner_open = out.find('(', i + 1);
      if (close != std::string::npos && (inner_open == std::string::npos || inner_open > close) &&
          is_domain_label(std::string_view(out).substr(i + 1, close - i - 1), true)) {
        i = close;
        continue;
      }
    }
    res.push_back(out[i]);
  }
  return tidy(res);
}

namespace {

// What a FOLDOC paragraph may start with before its prose: a pronunciation "/bit'blit/", a
// reference "[BLT]", a sense number "1.", the acronym or alias "(HID)", "(Or "contraction")".
std::string foldoc_paragraph_start(std::string s) {
  for (;;) {
    std::string_view v = trim(s);
    size_t cut = 0;
    if (!v.empty() && (v.front() == '/' || v.front() == '[' || v.front() == '(')) {
      char close = v.front() == '/' ? '/' : v.front() == '[' ? ']' : ')';
      size_t e = v.find(close, 1);
      if (e != std::string_view::npos && e < 60 && e + 1 < v.size()) cut = e + 1;
    } else if (sense_number_length(v) > 0) {
      cut = sense_number_length(v);
    }
    if (cut == 0) return std::string(v);
    s = std::string(trim(v.substr(cut)));
  }
}

}  // namespace

Entry clean_foldoc_article(const std::string& raw_text) {
  Entry entry;
  entry.source = Source::Foldoc;
  const std::string text_ascii = fold_to_ascii(raw_text);  // the lines are views into it
  auto lines = split_lines(text_ascii);
  size_t i = 0;
  while (i < lines.size() && trim(lines[i]).empty()) ++i;
  // Headword lines: at the left margin, up to the first blank line.
  for (; i < lines.size() && !trim(lines[i]).empty(); ++i)
    if (entry.headword.empty() && indentation(lines[i]) == 0) entry.headword = collapse_spaces(lines[i]);
  if (entry.headword.find("%%%") != std::string::npos) {  // the database's preface and licence
    entry.headword.clear();
    return entry;
  }
  std::vector<std::vector<std::string_view>> blocks;
  std::vector<std::string_view> cur;
  for (; i <= lines.size(); ++i) {
    if (i == lines.size() || trim(lines[i]).empty()) {
      if (!cur.empty()) blocks.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(lines[i]);
    }
  }
  for (const auto& block : blocks) {
    // Code, tables and ASCII art are indented beyond the paragraph margin.
    bool deep = false;
    for (auto l : block) deep = deep || indentation(l) > 4;
    if (deep) continue;
    std::string text;
    for (auto l : block) text += std::string(trim(l)) + " ";
    text = collapse_spaces(text);
    // "[{Jargon File}]", bibliographic references, lists of cross-references.
    if (text.empty() || text.front() == '[' || starts_with(text, "See ")) continue;
    // URLs, with the "{text (url)}" link form and the "(url)" parentheses around them.
    std::string out;
    for (size_t k = 0; k < text.size();) {
      std::string_view rest = std::string_view(text).substr(k);
      size_t word_end = std::min(rest.find(' '), rest.size());
      bool email =
          (k == 0 || text[k - 1] == ' ') && rest.substr(0, word_end).find('@') != std::string_view::npos;
      if (email || starts_with(rest, "http://") || starts_with(rest, "https://") ||
          starts_with(rest, "ftp://") || starts_with(rest, "www.") || starts_with(rest, "mailto:") ||
          starts_with(rest, "news:")) {
        size_t e = k;
        while (e < text.size() && !is_space(text[e]) && text[e] != ')' && text[e] != '}') ++e;
        while (e > k && std::strchr(".,;:", text[e - 1]) != nullptr) --e;  // sentence punctuation stays
        k = e;
        while (!out.empty() && out.back() == ' ') out.pop_back();
        for (const char* lead : {" at URL", " from URL", " URL"})
          if (out.size() >= std::strlen(lead) &&
              out.compare(out.size() - std::strlen(lead), std::string::npos, lead) == 0) {
            out.resize(out.size() - std::strlen(lead));
            break;
          }
        // A sentence around an address ("Write to x@y.org for a copy.") is left without its object:
        // the marker makes the sentence filter drop it.
        if (email) out += " \x03";
        continue;
      }
      out.push_back(text[k]);
      ++k;
    }
    // "<domain>" tags, "(YYYY-MM-DD)" stamps, then braces.
    std::string cleaned;
    for (size_t k = 0; k < out.size(); ++k) {
      if (out[k] == '<') {
        size_t e = out.find('>', k);
        if (e != std::string::npos && e - k <= 40 &&
            std::all_of(out.begin() + static_cast<long>(k) + 1, out.begin() + static_cast<long>(e),
                        [](char c) { return is_alpha(c) || c == ' ' || c == '-' || c == ','; })) {
          k = e;
          continue;
        }
      }
      if (out[k] == '(' && k + 11 < out.size() + 1 && out.size() - k >= 12 && out[k + 11] == ')' &&
          is_digit(out[k + 1]) && out[k + 5] == '-' && out[k + 8] == '-') {
        k += 11;
        continue;
      }
      if (out[k] == '{' || out[k] == '}') continue;
      cleaned.push_back(out[k]);
    }
    cleaned = foldoc_paragraph_start(tidy(cleaned));
    if (count_words(cleaned) == 0) continue;
    if (entry.senses.empty()) {
      Sense s;
      s.definition = split_sentences(cleaned).front();  // the rest is commentary
      s.definition.erase(std::remove(s.definition.begin(), s.definition.end(), '\x03'), s.definition.end());
      s.definition = tidy(s.definition);
      entry.senses.push_back(std::move(s));
    }
    add_paragraph(entry, cleaned);
  }
  return entry;
}

std::vector<Entry> read_wordnet_entries(const std::string& dir, size_t max) {
  // The Lexicon parses and validates the data files; each synset becomes one entry: the first
  // lemma as headword, the others as synonyms, the gloss as one sense with its examples.
  std::vector<Entry> out;
  nearmiss::Lexicon::load(dir)->for_each_synset([&](nearmiss::Lexicon::SynsetText& t) {
    if (max != 0 && out.size() >= max) return false;
    if (t.definition.empty() || t.lemmas.empty()) return true;
    Entry entry;
    entry.source = Source::WordNet;
    entry.pos = nearmiss::pos_name(t.pos);
    entry.headword = t.lemmas.front();
    entry.synonyms.assign(t.lemmas.begin() + 1, t.lemmas.end());
    entry.paragraphs.push_back(t.definition);
    for (const auto& ex : t.examples) entry.paragraphs.push_back(ex);
    entry.senses.push_back(Sense{std::move(t.definition), std::move(t.examples)});
    out.push_back(std::move(entry));
    return true;
  });
  return out;
}

}  // namespace sieve::corpus
