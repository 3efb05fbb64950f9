#include "index/corpus_reader.h"
#include "index/document_json.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "index/doc_state.h"
#include "sieve/error.h"
#include "sieve/filter.h"
#include "text/utf8.h"

namespace sieve::index {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void strip_cr(std::string& line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
}

// Spreadsheet exports start with a UTF-8 byte-order mark.
void strip_bom(std::string& line) {
  if (line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);
}

bool blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t'; });
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t tab = line.find('\t', start);
    out.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) break;
    start = tab + 1;
  }
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_id_column(const std::string& name) {
  static const char* const kNames[] = {"id", "_id", "docid", "doc_id", "doc-id", "corpus-id"};
  std::string l = lower(name);
  return std::any_of(std::begin(kNames), std::end(kNames), [&](const char* n) { return l == n; });
}

}  // namespace

CorpusFormat CorpusReader::resolve(const std::string& path, CorpusFormat format) {
  if (format != CorpusFormat::Auto) return format;
  if (ends_with(path, ".jsonl") || ends_with(path, ".json")) return CorpusFormat::Jsonl;
  if (ends_with(path, ".tsv")) return CorpusFormat::Tsv;
  return CorpusFormat::Text;
}

CorpusReader::CorpusReader(const std::string& path, CorpusFormat format, size_t text_id_offset)
    : path_(path), in_(path, std::ios::binary), format_(resolve(path, format)), text_id_offset_(text_id_offset) {
  SIEVE_THROW_IF_NOT(in_.is_open(), "cannot open corpus '" << path << "'");
}

void CorpusReader::fail(const std::string& what) const {
  SIEVE_THROW(path_ << ":" << line_no_ << ": " << what);
}

void CorpusReader::check_utf8(const std::string& s, const char* field) const {
  size_t bad = first_invalid_utf8(s);
  if (bad != std::string::npos) fail(std::string("invalid UTF-8 in ") + field + " at byte " + std::to_string(bad));
}

bool CorpusReader::parse_jsonl(const std::string& line, Document& doc) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("not a valid JSON line (") + e.what() + ")");
  }
  if (!j.is_object()) fail("expected a JSON object with \"_id\" and \"text\"");
  auto field = [&](const char* key, bool required, std::string& out) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
      if (required) fail(std::string("missing field \"") + key + "\"");
      out.clear();
      return;
    }
    if (it->is_string()) {
      out = it->get<std::string>();
    } else if (it->is_number_integer() && std::string(key) == "_id") {
      out = it->dump();  // some exports write numeric ids
    } else {
      fail(std::string("field \"") + key + "\" must be a string");
    }
  };
  field("_id", true, doc.id);
  field("title", false, doc.title);
  field("text", true, doc.text);
  // Optional: metadata (a flat object, as BEIR's corpus files allow), and an expiry.
  try {
    read_document_extras(j, doc, index::clock_or(0));
  } catch (const Error& err) {
    fail(err.what());
  }
  return true;
}

bool CorpusReader::parse_tsv(const std::string& line, Document& doc) {
  std::vector<std::string> cols = split_tabs(line);
  if (first_row_) {
    first_row_ = false;
    if (is_id_column(cols[0])) {
      tsv_title_ = -1;
      tsv_text_ = -1;
      for (size_t c = 0; c < cols.size(); ++c) {
        std::string name = lower(cols[c]);
        if (name == "text" || name == "body" || name == "passage") tsv_text_ = static_cast<int>(c);
        if (name == "title") tsv_title_ = static_cast<int>(c);
      }
      if (tsv_text_ < 0) fail("the header row names no text column (text, body or passage)");
      return false;  // header row
    }
  }
  int needed = std::max(tsv_id_, tsv_text_) + 1;
  if (static_cast<int>(cols.size()) < needed) fail("expected id<TAB>text[<TAB>title], found " +
                                                   std::to_string(cols.size()) + " field(s)");
  doc.id = cols[tsv_id_];
  doc.text = cols[tsv_text_];
  doc.title = (tsv_title_ >= 0 && tsv_title_ < static_cast<int>(cols.size())) ? cols[tsv_title_] : "";
  return true;
}

bool CorpusReader::next(Document& doc) {
  std::string line;
  while (std::getline(in_, line)) {
    ++line_no_;
    strip_cr(line);
    if (line_no_ == 1) strip_bom(line);
    if (blank(line)) continue;
    bool got = false;
    switch (format_) {
      case CorpusFormat::Jsonl:
        got = parse_jsonl(line, doc);
        break;
      case CorpusFormat::Tsv:
        got = parse_tsv(line, doc);
        break;
      default:
        doc.id = std::to_string(line_no_ + text_id_offset_);
        doc.title.clear();
        doc.text = line;
        got = true;
        break;
    }
    if (!got) continue;
    check_utf8(doc.id, "the id");
    check_utf8(doc.title, "the title");
    check_utf8(doc.text, "the text");
    if (doc.id.empty() || blank(doc.id)) fail("empty document id");
    auto [it, fresh] = seen_.emplace(doc.id, line_no_);
    if (!fresh) fail("duplicate document id '" + doc.id + "' (first seen on line " + std::to_string(it->second) + ")");
    return true;
  }
  SIEVE_THROW_IF_NOT(!in_.bad(), "error reading corpus '" << path_ << "'");
  return false;
}

size_t CorpusReader::count(const std::string& path, CorpusFormat format) {
  std::ifstream in(path, std::ios::binary);
  SIEVE_THROW_IF_NOT(in.is_open(), "cannot open corpus '" << path << "'");
  CorpusFormat f = resolve(path, format);
  size_t n = 0, line_no = 0;
  bool first_row = true;
  std::string line;
  while (std::getline(in, line)) {
    ++line_no;
    strip_cr(line);
    if (line_no == 1) strip_bom(line);
    if (blank(line)) continue;
    if (f == CorpusFormat::Tsv && first_row) {
      first_row = false;
      if (is_id_column(line.substr(0, line.find('\t')))) continue;
    }
    ++n;
  }
  return n;
}

}  // namespace sieve::index
