#include "eval/beir.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <istream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "core/file_util.h"
#include "sieve/error.h"

namespace sieve::eval {
namespace {

using Fields = std::vector<std::string_view>;

// Calls `fn(line_no, line)` for every line that is not blank, with CRLF endings stripped, so that
// files written on Windows read the same and error line numbers match an editor's.
void for_each_line_of(std::string_view rest, const std::function<void(size_t, std::string_view)>& fn) {
  if (rest.substr(0, 3) == "\xEF\xBB\xBF") rest.remove_prefix(3);  // a UTF-8 byte order mark
  size_t line_no = 0;
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t\v\f") != std::string_view::npos) fn(line_no, line);
  }
}

void for_each_line(const std::string& path, const std::function<void(size_t, std::string_view)>& fn) {
  const std::string content = read_file(path);
  for_each_line_of(content, fn);
}

Fields split_tabs(std::string_view line) {
  Fields out;
  for (size_t start = 0;;) {
    const size_t tab = line.find('\t', start);
    out.push_back(line.substr(start, tab == std::string_view::npos ? tab : tab - start));
    if (tab == std::string_view::npos) return out;
    start = tab + 1;
  }
}

Fields split_whitespace(std::string_view line) {
  Fields out;
  size_t pos = 0;
  while ((pos = line.find_first_not_of(" \t\v\f", pos)) != std::string_view::npos) {
    const size_t end = line.find_first_of(" \t\v\f", pos);
    out.push_back(line.substr(pos, end == std::string_view::npos ? end : end - pos));
    pos = end;
  }
  return out;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// from_chars, unlike stoi/stod, rejects trailing junk ("1x") and never consults the locale.
template <typename T>
bool parse_number(std::string_view s, T& value) {
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// Checks that ids are unique, reporting the line where an id was first seen.
class IdSet {
 public:
  explicit IdSet(const std::string& path) : path_(path) {}
  void add(const std::string& id, size_t line_no) {
    const auto [it, inserted] = first_line_.emplace(id, line_no);
    SIEVE_THROW_IF_NOT(inserted, path_ << ":" << line_no << ": duplicate query id '" << id
                                       << "' (first on line " << it->second << ")");
  }

 private:
  const std::string& path_;
  std::map<std::string, size_t> first_line_;
};

std::string json_string_field(const nlohmann::json& j, const char* key, const std::string& path,
                              size_t line_no) {
  const auto it = j.find(key);
  SIEVE_THROW_IF_NOT(it != j.end(), path << ":" << line_no << ": missing \"" << key << "\"");
  SIEVE_THROW_IF_NOT(it->is_string(), path << ":" << line_no << ": \"" << key << "\" must be a string, got "
                                           << it->type_name());
  return it->get<std::string>();
}

}  // namespace

QueriesLayout sniff_queries_layout(std::string_view content) {
  QueriesLayout layout = QueriesLayout::Text;
  bool seen = false;
  for_each_line_of(content, [&](size_t, std::string_view line) {
    if (seen) return;
    seen = true;
    const size_t first = line.find_first_not_of(" \t");
    if (first != std::string_view::npos && line[first] == '{')
      layout = QueriesLayout::Jsonl;
    else if (line.find('\t') != std::string_view::npos)
      layout = QueriesLayout::Tsv;
  });
  return layout;
}

QueriesLayout queries_layout_for(const std::string& path, std::string_view content) {
  if (ends_with(path, ".jsonl")) return QueriesLayout::Jsonl;
  if (ends_with(path, ".tsv")) return QueriesLayout::Tsv;
  if (ends_with(path, ".txt")) return QueriesLayout::Text;
  return sniff_queries_layout(content);
}

std::vector<Query> parse_queries(std::string_view content, const std::string& name, QueriesLayout layout) {
  std::vector<Query> queries;
  IdSet ids(name);
  if (layout == QueriesLayout::Jsonl) {
    for_each_line_of(content, [&](size_t line_no, std::string_view line) {
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception& e) {
        SIEVE_THROW(name << ":" << line_no << ": invalid JSON: " << e.what());
      }
      SIEVE_THROW_IF_NOT(j.is_object(), name << ":" << line_no << ": expected a JSON object");
      Query q{json_string_field(j, "_id", name, line_no), json_string_field(j, "text", name, line_no)};
      SIEVE_THROW_IF_NOT(!q.id.empty(), name << ":" << line_no << ": empty \"_id\"");
      ids.add(q.id, line_no);
      queries.push_back(std::move(q));
    });
  } else if (layout == QueriesLayout::Tsv) {
    bool first = true;
    for_each_line_of(content, [&](size_t line_no, std::string_view line) {
      const Fields f = split_tabs(line);
      const bool header = first && (f[0] == "query-id" || f[0] == "_id" || f[0] == "id");
      first = false;
      if (header) return;
      SIEVE_THROW_IF_NOT(f.size() >= 2 && !f[0].empty(),
                         name << ":" << line_no << ": expected 'id<TAB>text'");
      Query q{std::string(f[0]), std::string(f[1])};
      ids.add(q.id, line_no);
      queries.push_back(std::move(q));
    });
  } else {
    for_each_line_of(content, [&](size_t, std::string_view line) {
      queries.push_back(Query{std::to_string(queries.size() + 1), std::string(line)});
    });
  }
  return queries;
}

std::vector<Query> read_queries(const std::string& path) {
  const std::string content = read_file(path);
  return parse_queries(content, path, queries_layout_for(path, content));
}

std::vector<Query> read_queries(std::istream& in, const std::string& name, QueriesLayout* detected) {
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  SIEVE_THROW_IF_NOT(!in.bad(), "cannot read " << name);
  const QueriesLayout layout = sniff_queries_layout(content);
  if (detected != nullptr) *detected = layout;
  return parse_queries(content, name, layout);
}

Qrels read_qrels(const std::string& path) {
  Qrels qrels;
  bool first = true, beir = false;
  for_each_line(path, [&](size_t line_no, std::string_view line) {
    if (first) {
      first = false;
      beir = split_tabs(line)[0] == "query-id";
      if (beir) return;
    }
    // BEIR ids may hold spaces, so its columns are split on tabs only.
    const Fields f = beir ? split_tabs(line) : split_whitespace(line);
    std::string_view qid, doc, grade;
    if (beir) {
      SIEVE_THROW_IF_NOT(f.size() == 3 && !f[0].empty() && !f[1].empty(),
                         path << ":" << line_no << ": expected 'query-id<TAB>corpus-id<TAB>score'");
      qid = f[0], doc = f[1], grade = f[2];
    } else {
      SIEVE_THROW_IF_NOT(f.size() == 4, path << ":" << line_no
                                             << ": expected 4 TREC columns 'qid iter docid rel' "
                                                "(or a BEIR header 'query-id<TAB>corpus-id<TAB>score' "
                                                "on the first line)");
      qid = f[0], doc = f[2], grade = f[3];
    }
    const std::string q = beir ? std::string(qid) : trec_unescape_id(qid);
    const std::string d = beir ? std::string(doc) : trec_unescape_id(doc);
    int rel = 0;
    SIEVE_THROW_IF_NOT(parse_number(grade, rel),
                       path << ":" << line_no << ": relevance '" << grade << "' is not an integer");
    const bool inserted = qrels[q].emplace(d, rel).second;
    SIEVE_THROW_IF_NOT(inserted,
                       path << ":" << line_no << ": query '" << qid << "' judges doc '" << doc << "' twice");
  });
  return qrels;
}

namespace {
constexpr const char* kWhitespace = " \t\n\r\v\f";
bool is_whitespace_escape(std::string_view s, size_t at) {
  if (at + 3 > s.size() || s[at] != '%') return false;
  const std::string_view e = s.substr(at + 1, 2);
  return e == "20" || e == "09" || e == "0A" || e == "0B" || e == "0C" || e == "0D";
}
}  // namespace

std::string trec_escape_id(const std::string& id) {
  SIEVE_THROW_IF_NOT(!id.empty(), "an empty id cannot be written to a TREC file");
  if (id.find_first_of(kWhitespace) == std::string::npos) return id;
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (const char c : id) {
    if (c == '%' || std::strchr(kWhitespace, c) != nullptr) {
      out += '%';
      out += hex[static_cast<unsigned char>(c) >> 4];
      out += hex[static_cast<unsigned char>(c) & 15];
    } else {
      out += c;
    }
  }
  return out;
}

std::string trec_unescape_id(std::string_view token) {
  bool escaped = false;
  for (size_t i = 0; i < token.size() && !escaped; ++i) escaped = is_whitespace_escape(token, i);
  if (!escaped) return std::string(token);
  std::string out;
  for (size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '%' && i + 2 < token.size() && std::isxdigit(static_cast<unsigned char>(token[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(token[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(token.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += token[i];
    }
  }
  return out;
}

void write_trec_run(std::ostream& out, const std::string& query_id, const std::vector<RunEntry>& ranked,
                    const std::string& run_name) {
  SIEVE_THROW_IF_NOT(!run_name.empty() && run_name.find_first_of(kWhitespace) == std::string::npos,
                     "TREC run name '" << run_name << "' must be non-empty without whitespace");
  const std::string qid = trec_escape_id(query_id);
  for (size_t i = 0; i < ranked.size(); ++i) {
    const RunEntry& e = ranked[i];
    SIEVE_THROW_IF_NOT(std::isfinite(e.score), "TREC run: score of doc '" << e.doc_id << "' for query '"
                                                                          << query_id << "' is not finite");
    // The shortest text that parses back to the same double, so a run read back ranks identically.
    char buf[32];
    const auto res = std::to_chars(buf, buf + sizeof buf, e.score);
    SIEVE_ASSERT(res.ec == std::errc());
    const std::string_view score(buf, static_cast<size_t>(res.ptr - buf));
    out << qid << " Q0 " << trec_escape_id(e.doc_id) << ' ' << (i + 1) << ' ' << score << ' ' << run_name << '\n';
  }
}

Run read_trec_run(const std::string& path) {
  std::map<std::string, std::vector<std::pair<long, RunEntry>>> ranked;
  for_each_line(path, [&](size_t line_no, std::string_view line) {
    const Fields f = split_whitespace(line);
    SIEVE_THROW_IF_NOT(f.size() == 6, path << ":" << line_no
                                           << ": expected 6 TREC run columns 'qid Q0 docid rank score "
                                              "run_name', got "
                                           << f.size());
    long rank = 0;
    RunEntry e{trec_unescape_id(f[2]), 0.0};
    SIEVE_THROW_IF_NOT(parse_number(f[3], rank),
                       path << ":" << line_no << ": rank '" << f[3] << "' is not an integer");
    SIEVE_THROW_IF_NOT(parse_number(f[4], e.score),
                       path << ":" << line_no << ": score '" << f[4] << "' is not a number");
    ranked[trec_unescape_id(f[0])].emplace_back(rank, std::move(e));
  });
  Run run;
  for (auto& [qid, entries] : ranked) {
    // Stable, so entries sharing a rank keep their order in the file.
    std::stable_sort(entries.begin(), entries.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    auto& out = run[qid];
    for (auto& entry : entries) out.push_back(std::move(entry.second));
  }
  return run;
}

}  // namespace sieve::eval
