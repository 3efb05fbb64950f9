#include "train/train_data.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/file_util.h"
#include "eval/beir.h"
#include "eval/pairs.h"
#include "sieve/error.h"

namespace sieve::train {
namespace {

using Json = nlohmann::json;

// --- small text helpers -------------------------------------------------------------------------

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n\v\f");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n\v\f");
  return s.substr(b, e - b + 1);
}

bool ends_with_ci(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && lower(s.substr(s.size() - suffix.size())) == suffix;
}

// A whitespace-only text encodes to [CLS][SEP] alone, as useless to the loss as an empty one.
bool blank(std::string_view s) { return s.find_first_not_of(" \t\r\n\v\f") == std::string_view::npos; }

void strip_bom(std::string& content) {
  if (content.compare(0, 3, "\xEF\xBB\xBF") == 0) content.erase(0, 3);
}

// --- column names ---------------------------------------------------------------------------------

// The pair aliases of eval::read_pairs (src/eval/pairs.cpp) without anchor and negative, which
// here are triplet columns.
const std::vector<std::string> kSentence1 = {"sentence1", "premise", "query", "original", "text1"};
const std::vector<std::string> kSentence2 = {"sentence2", "hypothesis", "candidate", "near_miss", "text2"};

const char* const kColumnsHelp =
    "anchor, positive[, negative] (triplets) or sentence1, sentence2 (pairs; also premise/hypothesis, "
    "query/candidate, original/near_miss, text1/text2)";

// "negative" -> 0, "negative_3" or "negative3" -> 3 (extra negatives, as sentence-transformers'
// hard-negative mining names them), anything else -> -1.
long negative_rank(const std::string& name) {
  static const std::string kNeg = "negative";
  if (name.compare(0, kNeg.size(), kNeg) != 0) return -1;
  std::string_view rest(name);
  rest.remove_prefix(kNeg.size());
  if (rest.empty()) return 0;
  if (rest.front() == '_') rest.remove_prefix(1);
  if (rest.empty() || rest.size() > 9) return -1;
  long n = 0;
  for (char c : rest) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

// Which header columns hold what; -1 when absent.
struct Columns {
  bool triplet = false;
  int anchor = -1, positive = -1, s1 = -1, s2 = -1, category = -1;
  std::vector<int> negatives;  // header order
  size_t needed = 0;           // fields a row must have
};

int find_column(const std::vector<std::string>& names, const std::vector<std::string>& aliases) {
  for (const std::string& a : aliases)
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == a) return static_cast<int>(i);
  return -1;
}

Columns resolve_columns(const std::vector<std::string>& header, const std::string& path, size_t line_no) {
  std::vector<std::string> names;
  for (const std::string& h : header) names.push_back(lower(trim(h)));
  Columns c;
  c.anchor = find_column(names, {"anchor"});
  c.positive = find_column(names, {"positive"});
  for (size_t i = 0; i < names.size(); ++i)
    if (negative_rank(names[i]) >= 0) c.negatives.push_back(static_cast<int>(i));
  c.category = find_column(names, {"category"});
  // Triplet columns win: the paper's Model B file carries both NQ triplets and rewritten pairs
  // under the triplet header. (anchor, positive) without a negative column is a plain pair, as in
  // sentence-transformers' datasets.
  c.triplet = c.anchor >= 0 && c.positive >= 0;
  int last = -1;
  if (c.triplet) {
    last = std::max(c.anchor, c.positive);
    for (int n : c.negatives) last = std::max(last, n);
  } else {
    c.s1 = find_column(names, kSentence1);
    c.s2 = find_column(names, kSentence2);
    if (c.s1 < 0 || c.s2 < 0) {
      std::ostringstream found;
      for (size_t i = 0; i < names.size(); ++i) found << (i ? ", " : "") << "'" << names[i] << "'";
      SIEVE_THROW(path << ":" << line_no << ": the header needs the columns " << kColumnsHelp
                       << "; it has " << found.str());
    }
    last = std::max(c.s1, c.s2);
  }
  c.needed = static_cast<size_t>(last) + 1;
  return c;
}

// Builds the example of one row (`get(column)` returns a field); false when a required field is
// blank.
template <typename Get>
bool make_example(const Columns& c, bool identity, Get get, TrainExample& ex) {
  ex = TrainExample();
  if (c.triplet) {
    ex.anchor = get(c.anchor);
    ex.positive = get(c.positive);
    for (int n : c.negatives) ex.negatives.push_back(get(n));
  } else if (identity) {
    // Model B's identity triplets: the original is its own positive, its near-miss the negative.
    ex.anchor = get(c.s1);
    ex.positive = ex.anchor;
    ex.negatives.push_back(get(c.s2));
  } else {
    ex.anchor = get(c.s1);
    ex.positive = get(c.s2);
  }
  if (c.category >= 0) ex.category = get(c.category);
  if (blank(ex.anchor) || blank(ex.positive)) return false;
  return std::none_of(ex.negatives.begin(), ex.negatives.end(), [](const std::string& s) { return blank(s); });
}

// --- CSV and TSV records ------------------------------------------------------------------------

// One CSV record starting at `pos`: the rules of eval::split_csv_line (a quote opens a quoted
// field only at the field's start, "" inside it is one quote), except that a quoted field may span
// lines (RFC 4180). split_csv_line itself sees one line, so it cannot be used here. A CRLF inside
// quotes becomes "\n", so a file saved on Windows reads the same. Returns false at the end of the
// content; `line_no` is the 1-based line of the next unread character.
bool next_csv_record(const std::string& s, size_t& pos, size_t& line_no, std::vector<std::string>& fields,
                     const std::string& path) {
  if (pos >= s.size()) return false;
  const size_t start_line = line_no;
  fields.assign(1, std::string());
  bool quoted = false;
  while (pos < s.size()) {
    const char c = s[pos];
    const bool crlf = c == '\r' && pos + 1 < s.size() && s[pos + 1] == '\n';
    if (quoted) {
      if (c == '"' && pos + 1 < s.size() && s[pos + 1] == '"') {
        fields.back() += '"';
        pos += 2;
      } else if (c == '"') {
        quoted = false;
        ++pos;
      } else if (c == '\n' || crlf) {
        fields.back() += '\n';
        pos += crlf ? 2 : 1;
        ++line_no;
      } else {
        fields.back() += c;
        ++pos;
      }
    } else if (c == '\n' || crlf) {
      pos += crlf ? 2 : 1;
      ++line_no;
      return true;
    } else {
      if (c == '"' && fields.back().empty()) {
        quoted = true;
      } else if (c == ',') {
        fields.emplace_back();
      } else {
        fields.back() += c;
      }
      ++pos;
    }
  }
  SIEVE_THROW_IF_NOT(!quoted, path << ":" << start_line << ": unterminated quoted field (the quote opened on line "
                                   << start_line << " is never closed)");
  if (!fields.back().empty() && fields.back().back() == '\r') fields.back().pop_back();  // last line, bare CR
  return true;
}

bool next_tsv_record(const std::string& s, size_t& pos, size_t& line_no, std::vector<std::string>& fields) {
  if (pos >= s.size()) return false;
  size_t end = s.find('\n', pos);
  if (end == std::string::npos) end = s.size();
  std::string_view line(s.data() + pos, end - pos);
  pos = end + 1;
  ++line_no;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  fields.clear();
  for (size_t start = 0;;) {
    const size_t tab = line.find('\t', start);
    fields.emplace_back(line.substr(start, tab == std::string_view::npos ? tab : tab - start));
    eval::unquote_tsv_field(fields.back());
    if (tab == std::string_view::npos) break;
    start = tab + 1;
  }
  return true;
}

bool blank_record(const std::vector<std::string>& fields) { return fields.size() == 1 && blank(fields[0]); }

std::vector<TrainExample> read_delimited(const std::string& path, const std::string& content, bool csv,
                                         bool identity, size_t& skipped) {
  size_t pos = 0, line_no = 1;
  std::vector<std::string> fields;
  auto next = [&](size_t& record_line) {
    while (true) {
      record_line = line_no;
      const bool got = csv ? next_csv_record(content, pos, line_no, fields, path)
                           : next_tsv_record(content, pos, line_no, fields);
      if (!got) return false;
      if (!blank_record(fields)) return true;
    }
  };
  size_t record_line = 0;
  SIEVE_THROW_IF_NOT(next(record_line), path << ": empty file (a header row naming the columns " << kColumnsHelp
                                             << " is required)");
  const std::vector<std::string> header = fields;
  const Columns cols = resolve_columns(header, path, record_line);
  std::vector<TrainExample> out;
  TrainExample ex;
  while (next(record_line)) {
    SIEVE_THROW_IF_NOT(fields.size() >= cols.needed, path << ":" << record_line << ": " << fields.size()
                                                          << " field(s), the header has " << header.size());
    auto get = [&](int c) -> const std::string& {
      static const std::string kEmpty;
      return c < static_cast<int>(fields.size()) ? fields[c] : kEmpty;
    };
    if (make_example(cols, identity, get, ex)) {
      out.push_back(std::move(ex));
    } else {
      ++skipped;
    }
  }
  return out;
}

// --- JSON lines -----------------------------------------------------------------------------------

// A required text: false when missing, null or blank; throws when it is not a string.
bool json_text(const Json* v, const std::string& key, const std::string& path, size_t line_no, std::string& out) {
  if (v == nullptr || v->is_null()) return false;
  SIEVE_THROW_IF_NOT(v->is_string(), path << ":" << line_no << ": \"" << key << "\" must be a string, got "
                                          << v->type_name());
  out = v->get<std::string>();
  return !blank(out);
}

std::vector<TrainExample> read_jsonl(const std::string& path, const std::string& content, bool identity,
                                     size_t& skipped) {
  std::vector<TrainExample> out;
  bool any_known_key = false;
  size_t first_line = 0;
  std::string_view rest(content);
  for (size_t line_no = 1; !rest.empty(); ++line_no) {
    const size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (blank(line)) continue;
    if (first_line == 0) first_line = line_no;
    Json j;
    try {
      j = Json::parse(line);
    } catch (const Json::exception& e) {
      SIEVE_THROW(path << ":" << line_no << ": invalid JSON: " << e.what());
    }
    SIEVE_THROW_IF_NOT(j.is_object(), path << ":" << line_no << ": expected a JSON object, got " << j.type_name());
    // Keys are matched case-insensitively, like the CSV/TSV header.
    std::map<std::string, const Json*> keys;
    for (auto it = j.begin(); it != j.end(); ++it) keys.emplace(lower(it.key()), &it.value());
    auto value_of = [&](const std::string& key) -> const Json* {
      auto it = keys.find(key);
      return it == keys.end() ? nullptr : it->second;
    };
    auto find = [&](const std::vector<std::string>& aliases) -> std::pair<std::string, const Json*> {
      for (const std::string& a : aliases) {
        auto it = keys.find(a);
        if (it != keys.end()) return {a, it->second};
      }
      return {aliases.front(), nullptr};
    };
    std::vector<std::pair<long, std::string>> negative_keys;  // (rank, key): "negative", "negative_2", ...
    for (const auto& [k, v] : keys)
      if (negative_rank(k) >= 0) negative_keys.emplace_back(negative_rank(k), k);
    std::sort(negative_keys.begin(), negative_keys.end());
    const bool triplet = keys.count("anchor") || keys.count("positive") || !negative_keys.empty();
    const auto s1 = find(kSentence1), s2 = find(kSentence2);
    const bool pair = s1.second != nullptr || s2.second != nullptr;
    if (!triplet && !pair) {
      ++skipped;
      continue;
    }
    any_known_key = true;
    TrainExample ex;
    bool ok = true;
    if (triplet) {
      ok = json_text(value_of("anchor"), "anchor", path, line_no, ex.anchor);
      ok = json_text(value_of("positive"), "positive", path, line_no, ex.positive) && ok;
      for (const auto& [rank, key] : negative_keys) {
        const Json* v = value_of(key);
        if (v->is_array()) {  // {"negative": ["n1", "n2"]}: several negatives in one key
          if (v->empty()) ok = false;
          for (const Json& e : *v) {
            std::string neg;
            ok = json_text(&e, key + "[]", path, line_no, neg) && ok;
            ex.negatives.push_back(std::move(neg));
          }
        } else {
          std::string neg;
          ok = json_text(v, key, path, line_no, neg) && ok;
          ex.negatives.push_back(std::move(neg));
        }
      }
    } else {
      std::string a, b;
      ok = json_text(s1.second, s1.first, path, line_no, a);
      ok = json_text(s2.second, s2.first, path, line_no, b) && ok;
      if (identity) {
        ex.anchor = a;
        ex.positive = std::move(a);
        ex.negatives.push_back(std::move(b));
      } else {
        ex.anchor = std::move(a);
        ex.positive = std::move(b);
      }
    }
    auto cat = keys.find("category");
    if (cat != keys.end() && !cat->second->is_null()) {
      SIEVE_THROW_IF_NOT(cat->second->is_string(), path << ":" << line_no << ": \"category\" must be a string, got "
                                                        << cat->second->type_name());
      ex.category = cat->second->get<std::string>();
    }
    if (ok) {
      out.push_back(std::move(ex));
    } else {
      ++skipped;
    }
  }
  // A file none of whose lines has a known key is the wrong file, not a file of bad rows.
  SIEVE_THROW_IF_NOT(first_line == 0 || any_known_key,
                     path << ":" << first_line << ": no line has the keys " << kColumnsHelp);
  return out;
}

}  // namespace

std::vector<TrainExample> read_training_file(const std::string& path, bool identity, size_t* skipped) {
  SIEVE_THROW_IF_NOT(is_file(path), "training file '" << path << "' does not exist (or is not a file)");
  std::string content = read_file(path);
  strip_bom(content);  // spreadsheet exports start with a UTF-8 byte-order mark
  size_t n_skipped = 0;
  std::vector<TrainExample> out;
  if (ends_with_ci(path, ".jsonl")) {
    out = read_jsonl(path, content, identity, n_skipped);
  } else {
    out = read_delimited(path, content, ends_with_ci(path, ".csv"), identity, n_skipped);
  }
  if (skipped != nullptr) *skipped = n_skipped;
  return out;
}

std::vector<TrainExample> read_beir_train_pairs(const std::string& dir, const std::string& split) {
  SIEVE_THROW_IF_NOT(is_dir(dir), "BEIR folder '" << dir << "' does not exist");
  const std::string corpus_path = path_join(dir, "corpus.jsonl");
  const std::string queries_path = path_join(dir, "queries.jsonl");
  const std::string qrels_path = path_join(path_join(dir, "qrels"), split + ".tsv");
  for (const std::string& p : {corpus_path, queries_path, qrels_path})
    SIEVE_THROW_IF_NOT(is_file(p), "BEIR folder '" << dir << "' has no '" << p
                                                   << "' (a BEIR folder holds corpus.jsonl, queries.jsonl and "
                                                      "qrels/<split>.tsv)");
  const eval::Qrels qrels = eval::read_qrels(qrels_path);
  std::unordered_map<std::string, std::string> queries;
  for (eval::Query& q : eval::read_queries(queries_path)) queries.emplace(std::move(q.id), std::move(q.text));

  // Only the judged passages are kept: a BEIR corpus can hold millions.
  std::unordered_map<std::string, std::string> passages;  // id -> text, empty until found
  for (const auto& [qid, docs] : qrels)
    for (const auto& [doc, score] : docs)
      if (score > 0) passages.emplace(doc, std::string());
  std::unordered_set<std::string> found;
  std::ifstream in(corpus_path, std::ios::binary);
  SIEVE_THROW_IF_NOT(in.is_open(), "cannot open '" << corpus_path << "'");
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_no == 1) strip_bom(line);
    if (blank(line)) continue;
    Json j;
    try {
      j = Json::parse(line);
    } catch (const Json::exception& e) {
      SIEVE_THROW(corpus_path << ":" << line_no << ": invalid JSON: " << e.what());
    }
    SIEVE_THROW_IF_NOT(j.is_object(), corpus_path << ":" << line_no << ": expected a JSON object with \"_id\" and "
                                                     "\"text\", got "
                                                  << j.type_name());
    auto id_it = j.find("_id");
    SIEVE_THROW_IF_NOT(id_it != j.end() && (id_it->is_string() || id_it->is_number_integer()),
                       corpus_path << ":" << line_no << ": missing \"_id\" (a string)");
    // Some exports write numeric ids; the index's corpus reader accepts them the same way.
    const std::string id = id_it->is_string() ? id_it->get<std::string>() : id_it->dump();
    auto want = passages.find(id);
    if (want == passages.end()) continue;
    SIEVE_THROW_IF_NOT(found.insert(id).second, corpus_path << ":" << line_no << ": duplicate doc id '" << id << "'");
    auto text_field = [&](const char* key, bool required) {
      auto it = j.find(key);
      if (it == j.end() || it->is_null()) {
        SIEVE_THROW_IF_NOT(!required, corpus_path << ":" << line_no << ": missing \"" << key << "\"");
        return std::string();
      }
      SIEVE_THROW_IF_NOT(it->is_string(), corpus_path << ":" << line_no << ": \"" << key << "\" must be a string");
      return it->get<std::string>();
    };
    const std::string title = text_field("title", false), text = text_field("text", true);
    // The rule of sieve::encoder_text (include/sieve/index.h), replicated because it lives in
    // sieve_index, which links FAISS and libtorch; this library must not.
    want->second = title.empty() ? text : title + " " + text;
  }
  SIEVE_THROW_IF_NOT(!in.bad(), "error while reading '" << corpus_path << "'");

  // In the order of the qrels map: by query id, then by doc id.
  std::vector<TrainExample> out;
  for (const auto& [qid, docs] : qrels) {
    for (const auto& [doc, score] : docs) {
      if (score <= 0) continue;
      auto q = queries.find(qid);
      SIEVE_THROW_IF_NOT(q != queries.end(), qrels_path << ": query id '" << qid << "' is not in " << queries_path);
      SIEVE_THROW_IF_NOT(found.count(doc), qrels_path << ": doc id '" << doc << "' (judged for query '" << qid
                                                      << "') is not in " << corpus_path);
      TrainExample ex;
      ex.anchor = q->second;
      ex.positive = passages.at(doc);
      out.push_back(std::move(ex));
    }
  }
  return out;
}

std::vector<TrainExample> read_training_data(const std::string& path, bool identity) {
  if (is_dir(path)) {
    // Identity triplets are built from (original, near-miss) pairs; a BEIR folder's (query,
    // passage) pairs would become nonsense, so refuse rather than silently ignore the flag.
    SIEVE_THROW_IF_NOT(!identity, "'" << path << "' is a BEIR folder: identity triplets need a pair file "
                                              "(sentence1/sentence2 or original/near_miss), not (query, passage) pairs");
    return read_beir_train_pairs(path, "train");
  }
  return read_training_file(path, identity);
}

}  // namespace sieve::train
