// The GCIDE cleaner: an article's header, senses, usage examples, quotations, synonyms and
// run-on phrases (see sources.h; the rules with examples are in docs/corpus.md).
#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "corpus/sources.h"
#include "corpus/text_rules.h"
#include "sieve/error.h"

namespace sieve::corpus {

using namespace detail;  // the shared text rules

namespace {

// --- GCIDE article structure ----------------------------------------------------------------------

// A line holding only bracket tags: "[1913 Webster]", "[PJC]", "[Obs.]".
bool tag_only(std::string_view line) {
  line = trim(line);
  if (line.empty() || line.front() != '[') return false;
  int depth = 0;
  for (char c : line) {
    if (c == '[')
      ++depth;
    else if (c == ']')
      --depth;
    else if (depth == 0 && !is_space(c))
      return false;
  }
  return depth == 0;
}

// Net bracket depth change of a header line: [ ] ( ) { }.
int bracket_balance(std::string_view line) {
  int d = 0;
  for (char c : line) {
    if (c == '[' || c == '(' || c == '{') ++d;
    if (c == ']' || c == ')' || c == '}') --d;
  }
  return d;
}

// "(a) " at the start of a stripped line.
bool is_subsense_start(std::string_view s) {
  return s.size() > 4 && s[0] == '(' && is_lower(s[1]) && s[2] == ')' && s[3] == ' ';
}

// A header continuation that is only part-of-speech abbreviations or labels: "t. [L. ...",
// "n. [Acetyl ...", "(Chem.)".
bool looks_like_header_tail(std::string_view s) {
  s = trim(s);
  if (s.empty()) return false;
  if (s.front() == '[') return true;  // an etymology that starts on its own line
  if (s.front() == '(') {             // a line of labels only: "(Chem.)", "(Med., Chem.)"
    while (!s.empty() && s.front() == '(') {
      size_t c = s.find(')');
      if (c == std::string_view::npos || !is_domain_label(s.substr(1, c - 1), false)) return false;
      s = trim(s.substr(c + 1));
    }
    return s.empty();
  }
  size_t i = 0;
  bool any = false;
  while (i < s.size()) {
    size_t b = i;
    while (i < s.size() && is_lower(s[i])) ++i;
    if (i == b || i - b > 6 || i >= s.size() || s[i] != '.') break;
    ++i;
    any = true;
    while (i < s.size() && (s[i] == ' ' || s[i] == '&' || s[i] == ',')) ++i;
    if (i >= s.size() || s[i] == '[' || s[i] == '(') return true;
  }
  return any && i >= s.size();
}

// The citation "--Author." of a line: position of the dashes, or npos. A citation follows the end of
// a sentence or quotation (or starts the line) and names a capitalised author or a book
// ("--Shak.", "-- 2 Kings", "--[MI11]"); "; -- called also" is a dash.
size_t find_citation(std::string_view line) {
  size_t from = 0;
  for (;;) {
    size_t p = line.find("--", from);
    if (p == std::string_view::npos) return p;
    from = p + 2;
    size_t q = p + 2;
    if (q < line.size() && line[q] == ' ') ++q;
    // At the end of the line the author is on the next (deep-indented) line.
    bool at_end = q >= line.size();
    if (!at_end && !(is_upper(line[q]) || is_digit(line[q]) || line[q] == '[')) continue;
    size_t k = p;
    while (k > 0 && line[k - 1] == ' ') --k;
    if (k == 0) return p;
    if (k == p) continue;  // "word--Word" is a hyphenated compound, not a citation
    if (std::strchr(".!?\"')]", line[k - 1]) != nullptr) return p;
  }
}

const char kCiteOpen = '\x01', kCiteClose = '\x02';

// Joins the lines of a block, marking citations as \x01author\x02 and dropping the deep-indented
// continuation lines of an attribution ("-- 2 Kings" / "viii. 13").
std::string join_block(const std::vector<std::string_view>& lines) {
  std::string out;
  bool after_citation = false;
  for (std::string_view line : lines) {
    if (after_citation && indentation(line) >= 25) continue;
    after_citation = false;
    std::string_view s = trim(line);
    size_t p = find_citation(s);
    if (!out.empty()) out.push_back(' ');
    if (p != std::string_view::npos) {
      out.append(s.substr(0, p));
      std::string_view author = trim(s.substr(p + 2));
      out.push_back(kCiteOpen);
      out.append(author);
      out.push_back(kCiteClose);
      after_citation = true;
    } else {
      out.append(s);
    }
  }
  return out;
}

// Takes the inline quotations out of a joined block: a "..." right before a citation becomes a
// Quotation with that author; a citation without a quotation (the source of a definition) is
// dropped. Returns the remaining text.
std::string take_quotations(const std::string& text, std::vector<Quotation>& quotes) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t open = text.find(kCiteOpen, i);
    if (open == std::string::npos) {
      out.append(text, i, std::string::npos);
      break;
    }
    size_t close = text.find(kCiteClose, open);
    if (close == std::string::npos) close = text.size() - 1;
    std::string author = collapse_spaces(text.substr(open + 1, close - open - 1));
    std::string before = text.substr(i, open - i);
    std::vector<std::string> taken;
    for (;;) {  // "A." "B." --Author: both quotations are the author's
      std::string_view b = trim(before);
      if (b.empty() || b.back() != '"') break;
      size_t q = b.substr(0, b.size() - 1).rfind('"');
      if (q == std::string_view::npos) break;
      taken.push_back(std::string(b.substr(q + 1, b.size() - q - 2)));
      before = std::string(b.substr(0, q));
    }
    std::reverse(taken.begin(), taken.end());
    for (auto& t : taken) {
      std::string clean = strip_gcide_markup(t, true);
      if (!clean.empty()) quotes.push_back({clean, strip_gcide_markup(author)});
    }
    out.append(before);
    out.push_back(' ');
    i = close + 1;
  }
  return out;
}

// A sense may end with the derived words of the entry, another part of speech's definition:
// "... and micropyle. -- {Chal`a*zo*gam"ic}, a." or "-- n. An asiphonate mollusk."; they are cut.
std::string cut_derived_forms(std::string text) {
  size_t from = 0;
  for (;;) {
    size_t p = text.find("-- ", from);
    if (p == std::string::npos) return text;
    from = p + 3;
    std::string_view rest = std::string_view(text).substr(p + 3);
    bool derived = false;
    if (starts_with(rest, "{")) {
      size_t c = rest.find('}');
      std::string_view inner = rest.substr(1, c == std::string_view::npos ? 0 : c - 1);
      derived = inner.find('*') != std::string_view::npos || inner.find('`') != std::string_view::npos ||
                inner.find('"') != std::string_view::npos;
    } else {
      for (const char* pos : {"n. ", "a. ", "adv. ", "v. t. ", "v. i. ", "adj. "})
        if (starts_with(rest, pos)) derived = true;
    }
    if (derived) {
      text.resize(p);
      return text;
    }
  }
}

// A cross-reference closing a paragraph: "the dog days, See Dog days." -> "the dog days.";
// "(See Flea.)" too. A "See" that starts the text is left for is_cross_reference.
std::string cut_trailing_see(std::string text) {
  for (const char* sep : {", See ", "; See ", ". See ", ", see ", "; see ", " (See "}) {
    size_t p = text.rfind(sep);
    if (p == std::string::npos || p == 0) continue;
    std::string_view tail = std::string_view(text).substr(p + 2);
    if (count_words(tail) > 9 || tail.find(". ") != std::string_view::npos) continue;
    text.resize(p);
    if (std::strcmp(sep, ". See ") == 0 || text.back() != '.') text.push_back('.');
    return tidy(text);
  }
  return text;
}

// Dashes of the 1913 style: "; -- called also dog" -> "; called also dog", other " -- " -> " - ".
std::string normalise_dashes(std::string s) {
  size_t p;
  while ((p = s.find("; --")) != std::string::npos) s.erase(p + 1, 3);
  while ((p = s.find(", --")) != std::string::npos) s.erase(p + 1, 3);
  while ((p = s.find(" -- ")) != std::string::npos) s.replace(p, 4, " - ");
  while ((p = s.find("-- ")) == 0) s.erase(0, 3);
  return tidy(s);
}

// Splits a clean sense into its definition and the usage examples after "as,".
Sense split_usage(const std::string& text) {
  Sense sense;
  size_t p = std::string::npos;
  if (starts_with(text, "as, ")) {
    p = 0;
  } else {
    for (const char* sep : {"; as, ", ", as, ", ": as, "}) {
      size_t q = text.find(sep);
      if (q != std::string::npos && q < p) p = q;
    }
  }
  if (p == std::string::npos) {
    sense.definition = text;
  } else {
    sense.definition = text.substr(0, p);
    std::string rest = text.substr(text.find("as, ", p) + 4);
    size_t dash = rest.find(" - ");
    if (dash != std::string::npos) rest.resize(dash);
    auto sentences = split_sentences(rest);
    rest = sentences.empty() ? std::string() : sentences.front();
    size_t b = 0;
    while (b <= rest.size()) {
      size_t e = rest.find(';', b);
      if (e == std::string::npos) e = rest.size();
      std::string ex = std::string(trim(std::string_view(rest).substr(b, e - b)));
      for (const char* tail : {", etc.", " etc.", "."})
        if (ex.size() > std::strlen(tail) &&
            ex.compare(ex.size() - std::strlen(tail), std::string::npos, tail) == 0)
          ex.resize(ex.size() - std::strlen(tail));
      while (!ex.empty() && std::strchr(",;: ", ex.back()) != nullptr) ex.pop_back();
      if (count_words(ex) >= 1) sense.examples.push_back(ex);
      b = e + 1;
    }
  }
  // The first sentence: what follows is encyclopedic ("In America it is the common flea.") or a
  // cross-reference ("See Flea.").
  std::string d = strip_leading_labels(sense.definition);
  auto first = split_sentences(d);
  if (!first.empty()) d = first.front();
  while (!d.empty() && std::strchr(",;: ", d.back()) != nullptr) d.pop_back();
  if (!d.empty() && d.back() != '.' && d.back() != '!' && d.back() != '?') d.push_back('.');
  sense.definition = count_words(d) > 0 ? d : std::string();
  return sense;
}

struct GcideHeader {
  std::string headword, pos;
};

GcideHeader parse_header(const std::string& header) {
  GcideHeader h;
  size_t b = header.find('\\');
  size_t e = b == std::string::npos ? std::string::npos : header.find('\\', b + 1);
  std::string word;
  if (e != std::string::npos) {
    word = fold_accent_codes(header.substr(b + 1, e - b - 1));  // before the marks go: ["i] holds a '"'
    word.erase(
        std::remove_if(word.begin(), word.end(), [](char c) { return c == '*' || c == '"' || c == '`'; }),
        word.end());
  } else {
    word = header.substr(0, header.find_first_of(",("));
  }
  h.headword = collapse_spaces(fold_to_ascii(fold_accent_codes(word)));
  // Part of speech: the first abbreviation outside \...\, brackets, parentheses and braces.
  // (After the first \...\ group: the headword before it may itself be "a" or "v".)
  std::string rest;
  int depth = 0;
  bool in_pron = false;
  for (size_t k = e == std::string::npos ? 0 : e + 1; k < header.size(); ++k) {
    char c = header[k];
    if (c == '\\') {
      in_pron = !in_pron;
      continue;
    }
    if (c == '[' || c == '(' || c == '{') ++depth;
    if (depth == 0 && !in_pron) rest.push_back(c);
    if ((c == ']' || c == ')' || c == '}') && depth > 0) --depth;
  }
  if (e == std::string::npos) rest = rest.substr(std::min(rest.size(), rest.find_first_of(",(")));
  size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && !is_lower(rest[i])) ++i;
    size_t s = i;
    while (i < rest.size() && is_lower(rest[i])) ++i;
    std::string tok = rest.substr(s, i - s);
    bool dotted = i < rest.size() && rest[i] == '.';
    if (tok.empty()) break;
    if (s > 0 && is_alpha(rest[s - 1])) continue;
    if (tok == "n" && (dotted || i >= rest.size() || rest[i] == ' '))
      h.pos = "noun";
    else if (tok == "v" && (dotted || i >= rest.size() || rest[i] == ' '))
      h.pos = "verb";
    else if ((tok == "a" && dotted) || tok == "adj")
      h.pos = "adj";
    else if (tok == "adv")
      h.pos = "adv";
    else if (dotted)
      return h;  // prep., conj., interj., imp., p. p., ...: none of the four
    if (!h.pos.empty()) return h;
  }
  return h;
}


// 1913 Webster capitalises every headword: "Dog" -> "dog"; "McCarthy" and "DNA" keep theirs.
std::string headword_case(const std::string& w) {
  if (w.size() < 2 || !is_upper(w[0])) return w;
  for (size_t i = 1; i < w.size(); ++i)
    if (is_upper(w[i])) return w;
  std::string r = w;
  r[0] = to_lower(r[0]);
  return r;
}

// A sense block (or a run-on phrase's definition): sub-senses "(a)", "(b)" split apart, inline
// quotations and citations taken out, usage examples separated. `drop` characters of the trimmed
// first line are not part of the text (the sense number, the phrase and its labels). With a
// phrase, definitions become Phrase rows and the paragraphs start with the phrase.
void add_senses(Entry& entry, const std::vector<std::string_view>& lines, size_t drop,
                const std::string* phrase) {
  std::vector<std::vector<std::string_view>> parts(1);
  for (size_t k = 0; k < lines.size(); ++k) {
    std::string_view s = trim(lines[k]);
    if (k == 0) s = trim(s.substr(std::min(s.size(), drop)));
    if (is_subsense_start(s)) {
      parts.emplace_back();
      parts.back().push_back(trim(s.substr(4)));
    } else if (k == 0) {
      if (!s.empty()) parts.back().push_back(s);
    } else {
      parts.back().push_back(lines[k]);
    }
  }
  for (size_t p = 0; p < parts.size(); ++p) {
    if (parts[p].empty()) continue;
    std::vector<Quotation> quotes;
    std::string joined = take_quotations(cut_derived_forms(join_block(parts[p])), quotes);
    std::string clean = strip_leading_labels(normalise_dashes(strip_gcide_markup(joined)));
    clean = cut_trailing_see(clean);
    // "{Dog Star}. See in the Vocabulary." only points elsewhere: no prose, no pair.
    if (phrase != nullptr && is_cross_reference(clean)) clean.clear();
    std::string paragraph = phrase != nullptr && !clean.empty() ? *phrase + ", " + clean : clean;
    if (p == 0 && parts.size() > 1) {
      // The text before "(a)": a label or a heading of the sub-senses, prose at most.
      if (count_words(clean) >= 3) add_paragraph(entry, paragraph);
    } else {
      add_paragraph(entry, paragraph);
      Sense sense = split_usage(clean);
      if (phrase != nullptr) {
        if (!sense.definition.empty() && !is_cross_reference(sense.definition))
          entry.phrases.push_back({*phrase, sense.definition});
      } else if (!sense.definition.empty() || !sense.examples.empty()) {
        entry.senses.push_back(std::move(sense));
      }
    }
    for (auto& q : quotes) {
      add_paragraph(entry, q.text);
      entry.quotations.push_back(std::move(q));
    }
  }
}

// Length of the prefix of a phrase line that names the phrase: "{Bell cage}, or {Bell carriage}
// (Arch.), " -> up to "a timber frame"; the phrase itself goes to `phrase`.
size_t phrase_prefix(std::string_view first, std::string& phrase) {
  size_t close = first.find('}');
  if (close == std::string_view::npos) return 0;
  phrase = strip_gcide_markup(first.substr(1, close - 1));
  size_t p = close + 1;
  for (;;) {
    size_t q = p;
    while (q < first.size() && (first[q] == ' ' || first[q] == ',' || first[q] == '.')) ++q;
    std::string_view rest = first.substr(q);
    if (starts_with(rest, "or {") || starts_with(rest, "{")) {
      size_t c = first.find('}', q);
      if (c == std::string_view::npos) return q;
      p = c + 1;
      continue;
    }
    if (starts_with(rest, "(")) {
      size_t c = first.find(')', q);
      if (c != std::string_view::npos && is_domain_label(first.substr(q + 1, c - q - 1), false)) {
        p = c + 1;
        continue;
      }
    }
    return q;
  }
}

void add_synonyms(Entry& entry, const std::vector<std::string_view>& lines) {
  std::string text;
  for (auto l : lines) text += std::string(trim(l)) + " ";
  text = std::string(trim(text));
  text.erase(0, 4);  // "Syn:"
  text = std::string(trim(text));
  for (const char* p : {"Syn. --", "Syn. -", "Syn.-", "Syn."})
    if (starts_with(text, p)) {
      text = std::string(trim(text.substr(std::strlen(p))));
      break;
    }
  std::string clean = strip_gcide_markup(text);
  char sep = clean.find(';') != std::string::npos ? ';' : ',';
  size_t b = 0;
  while (b <= clean.size()) {
    size_t e = clean.find(sep, b);
    if (e == std::string::npos) e = clean.size();
    std::string item = std::string(trim(std::string_view(clean).substr(b, e - b)));
    b = e + 1;
    while (!item.empty() && item.back() == '.') item.pop_back();
    if (starts_with(item, "To ") || starts_with(item, "to ")) item = item.substr(3);
    if (item.empty() || starts_with(item, "See ") || item.find('.') != std::string::npos) continue;
    entry.synonyms.push_back(entry.from_wordnet ? item : headword_case(item));
  }
}

// dictd's GCIDE articles often end with the next article's headwords: "[1913 Webster] Abelite"
// then "Abelian", or "joy or merriment. Effervescence". They are cut off.
void trim_article_tail(std::vector<std::string_view>& lines, std::vector<std::string>& storage) {
  auto bare = [](std::string_view s) {  // a headword: no sentence punctuation, a few words
    s = trim(s);
    return !s.empty() && s.find_first_of(".:;,[]{}\"") == std::string_view::npos && count_words(s) <= 4;
  };
  for (size_t k = lines.size(); k-- > 1;) {
    std::string_view s = trim(lines[k]);
    if (s.empty() || s.front() != '[') {
      if (bare(s)) continue;
      break;
    }
    size_t close = s.find(']');
    if (close == std::string_view::npos) break;
    if (close + 1 < s.size() && !bare(s.substr(close + 1))) break;
    // lines[k] is "[tag] Next" (or "[tag]") and everything after it is bare headwords.
    storage.push_back(std::string(s.substr(0, close + 1)));
    lines.resize(k);
    lines.push_back(storage.back());
    return;
  }
  if (lines.size() < 2) return;
  std::string_view last = trim(lines.back());
  size_t dot = last.rfind(". ");
  if (dot != std::string_view::npos && last.back() != '.' && last.back() != ']' &&
      bare(last.substr(dot + 2)) && is_upper(last[dot + 2])) {
    storage.push_back(std::string(last.substr(0, dot + 1)));
    lines.back() = storage.back();
  }
}

}  // namespace

Entry clean_gcide_article(const std::string& raw_text) {
  Entry entry;
  entry.source = Source::Gcide;
  // Only WordNet 1.5 tags: a copy of WordNet. "[1913 Webster + WordNet 1.5]" articles are mixed.
  entry.from_wordnet =
      raw_text.find("WordNet 1.5") != std::string::npos && raw_text.find("Webster") == std::string::npos;
  auto lines = split_lines(raw_text);
  std::vector<std::string> storage;
  storage.reserve(2);  // trim_article_tail keeps views into it: no reallocation
  trim_article_tail(lines, storage);
  size_t i = 0;
  while (i < lines.size() && trim(lines[i]).empty()) ++i;
  if (i >= lines.size()) return entry;
  // Header: the first line, plus continuation lines while a bracket is open, the line ends in ','
  // or '&', the next line is at the left margin too (body lines are indented), or it holds only
  // part-of-speech abbreviations, labels and tags.
  std::string header(trim(lines[i]));
  int depth = bracket_balance(lines[i]);
  ++i;
  for (size_t extra = 0; i < lines.size() && extra < 12; ++extra) {
    std::string_view next = trim(lines[i]);
    if (next.empty()) break;
    std::string_view last = trim(header);
    bool cont = depth > 0 || indentation(lines[i]) == 0 ||
                (!last.empty() && (last.back() == ',' || last.back() == '&' || last.back() == '\\')) ||
                looks_like_header_tail(next) || tag_only(next);
    if (!cont && parse_header(header).pos.empty() && next.front() == '(') {
      // The pronunciation of a second headword wrapped onto this line: "(kr?d"?-tr?ks), n. [L. ...]".
      size_t close = next.find(')');
      std::string_view after =
          close == std::string_view::npos ? std::string_view() : trim(next.substr(close + 1));
      if (!after.empty() && after.front() == ',') after = trim(after.substr(1));
      cont = !after.empty() && looks_like_header_tail(after);
    }
    if (!cont || sense_number_length(next) > 0) break;
    header += " " + std::string(next);
    depth += bracket_balance(next);
    ++i;
  }
  GcideHeader h = parse_header(header);
  entry.headword = entry.from_wordnet ? h.headword : headword_case(h.headword);
  entry.pos = h.pos;

  // Blocks: separated by blank lines and tag-only lines; a sense number, "Note:", "Syn:" or
  // "Usage:" at the left margin also starts one.
  std::vector<std::vector<std::string_view>> blocks;
  std::vector<std::string_view> cur;
  auto flush = [&] {
    if (!cur.empty()) blocks.push_back(cur);
    cur.clear();
  };
  for (; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    std::string_view s = trim(line);
    if (s.empty() || tag_only(s)) {
      flush();
      continue;
    }
    bool starter = indentation(line) <= 4 && (sense_number_length(s) > 0 || starts_with(s, "Note:") ||
                                              starts_with(s, "Syn:") || starts_with(s, "Usage:"));
    if (starter) flush();
    cur.push_back(line);
  }
  flush();

  for (const auto& block : blocks) {
    std::string_view first = trim(block.front());
    size_t ind = indentation(block.front());
    if (starts_with(first, "Syn:")) {
      add_synonyms(entry, block);
    } else if (starts_with(first, "Note:") || starts_with(first, "Usage:")) {
      std::vector<std::string_view> ls = block;
      ls[0] = first.substr(first.find(':') + 1);
      std::vector<Quotation> quotes;
      add_paragraph(entry, normalise_dashes(strip_gcide_markup(take_quotations(join_block(ls), quotes))));
      for (auto& q : quotes) {
        add_paragraph(entry, q.text);
        entry.quotations.push_back(std::move(q));
      }
    } else if (size_t n = sense_number_length(first); n > 0) {
      add_senses(entry, block, n, nullptr);
    } else if (ind >= 8 && !is_subsense_start(first)) {
      // A quotation block: the text up to the attribution.
      std::string joined = join_block(block);
      size_t c = joined.find(kCiteOpen);
      Quotation q;
      q.text = strip_gcide_markup(joined.substr(0, c), true);
      if (c != std::string::npos) {
        size_t ce = joined.find(kCiteClose, c);
        q.author = strip_gcide_markup(joined.substr(c + 1, ce == std::string::npos ? ce : ce - c - 1));
      }
      if (!q.text.empty()) {
        add_paragraph(entry, q.text);
        entry.quotations.push_back(std::move(q));
      }
    } else if (first.front() == '{') {
      // A run-on phrase: "{Dog cheap}, very cheap." / "{Bell cage}, or {Bell carriage} (Arch.), ...".
      std::string phrase;
      size_t drop = phrase_prefix(first, phrase);
      add_senses(entry, block, drop, phrase.empty() ? nullptr : &phrase);
    } else {
      add_senses(entry, block, 0, nullptr);
    }
  }
  return entry;
}

}  // namespace sieve::corpus
