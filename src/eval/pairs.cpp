#include "eval/pairs.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sieve/error.h"

namespace sieve::eval {
namespace {

std::vector<std::string> split_tsv(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t tab = line.find('\t', start);
    out.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    unquote_tsv_field(out.back());
    if (tab == std::string::npos) return out;
    start = tab + 1;
  }
}

int find_column(const std::vector<std::string>& header, std::initializer_list<const char*> names) {
  for (const char* n : names)
    for (size_t i = 0; i < header.size(); ++i) {
      std::string h = header[i];
      std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return std::tolower(c); });
      if (h == n) return static_cast<int>(i);
    }
  return -1;
}

}  // namespace

void unquote_tsv_field(std::string& f) {
  if (f.size() < 2 || f.front() != '"' || f.back() != '"') return;
  std::string out;
  for (size_t i = 1; i + 1 < f.size(); ++i) {
    if (f[i] == '"') {
      if (i + 2 >= f.size() || f[i + 1] != '"') return;
      ++i;
    }
    out += f[i];
  }
  f = std::move(out);
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"' && out.back().empty()) {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  SIEVE_THROW_IF_NOT(!quoted, "unterminated quoted field");
  return out;
}

const std::vector<std::string>& default_positive_categories() {
  static const std::vector<std::string> names = {
      "synonym",         "passive",         "contraction",    "coordination", "possessive", "adverb_move",
      "determiner",      "negated_antonym",
      "paws_paraphrase", "mrpc_paraphrase", "sts_paraphrase", "paraphrase",   "positive",   "entailment"};
  return names;
}

std::string default_positive_categories_list() {
  std::string out;
  for (const auto& n : default_positive_categories()) out += (out.empty() ? "" : ",") + n;
  return out;
}

namespace {

const std::initializer_list<const char*> kSentence1 = {"sentence1", "premise", "anchor", "query", "original", "text1"};
const std::initializer_list<const char*> kSentence2 = {"sentence2", "hypothesis", "candidate", "near_miss",
                                                       "negative",  "text2",      "positive"};
const std::initializer_list<const char*> kLabel = {"label", "score", "is_same"};

// JSON lines: one object per line, keys as the column names (first match in each list).
std::vector<SentencePair> read_pairs_jsonl(std::istream& in, const std::string& path) {
  auto text = [](const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  auto field = [&](const nlohmann::json& j, std::initializer_list<const char*> names, std::string& out) {
    for (const char* n : names)
      if (j.contains(n)) {
        out = text(j.at(n));
        return true;
      }
    return false;
  };
  std::vector<SentencePair> pairs;
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_no == 1 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      SIEVE_THROW(path << ":" << line_no << ": not a JSON object: " << e.what());
    }
    SIEVE_THROW_IF_NOT(j.is_object(), path << ":" << line_no << ": not a JSON object");
    SentencePair p;
    SIEVE_THROW_IF_NOT(field(j, kSentence1, p.sentence1) && field(j, kSentence2, p.sentence2),
                       path << ":" << line_no << ": needs a sentence1 and a sentence2 field (or anchor/positive, "
                            << "premise/hypothesis, ...)");
    field(j, {"category"}, p.category);
    field(j, kLabel, p.label);
    pairs.push_back(std::move(p));
  }
  return pairs;
}

}  // namespace

std::vector<SentencePair> read_pairs(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  SIEVE_THROW_IF_NOT(in.is_open(), "cannot open pairs file '" << path << "'");
  if (path.size() >= 6 && path.compare(path.size() - 6, 6, ".jsonl") == 0) return read_pairs_jsonl(in, path);
  const bool csv = path.size() >= 4 && path.compare(path.size() - 4, 4, ".csv") == 0;
  std::string line;
  size_t line_no = 0;
  auto split = [&](const std::string& l) {
    try {
      return csv ? split_csv_line(l) : split_tsv(l);
    } catch (const Error& e) {
      SIEVE_THROW(path << ":" << line_no << ": " << e.what());
    }
  };
  std::vector<std::string> header;
  while (header.empty() && std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_no == 1 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);
    if (!line.empty()) header = split(line);
  }
  SIEVE_THROW_IF_NOT(!header.empty(), path << ": empty file (a header row is required)");
  int s1 = find_column(header, kSentence1);
  int s2 = find_column(header, kSentence2);
  int cat = find_column(header, {"category"});
  int lab = find_column(header, kLabel);
  SIEVE_THROW_IF_NOT(s1 >= 0 && s2 >= 0, path << ":" << line_no << ": the header needs a sentence1 and a sentence2 "
                                               << "column (or premise/hypothesis, anchor/negative, original/near_miss)");
  std::vector<SentencePair> pairs;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> f = split(line);
    int need = std::max(s1, s2) + 1;
    SIEVE_THROW_IF_NOT(static_cast<int>(f.size()) >= need,
                       path << ":" << line_no << ": " << f.size() << " field(s), the header has " << header.size());
    SentencePair p;
    p.sentence1 = f[s1];
    p.sentence2 = f[s2];
    if (cat >= 0 && cat < static_cast<int>(f.size())) p.category = f[cat];
    if (lab >= 0 && lab < static_cast<int>(f.size())) p.label = f[lab];
    pairs.push_back(std::move(p));
  }
  return pairs;
}

}  // namespace sieve::eval
