// Streams documents out of a corpus file (BEIR jsonl, TSV or plain text) with line-numbered errors.
#pragma once

#include <fstream>
#include <string>
#include <unordered_map>

#include "sieve/index.h"

namespace sieve::index {

/// Reads one document at a time; validates ids (present, non-empty, unique), fields and UTF-8.
class CorpusReader {
 public:
  /// Opens `path`; throws sieve::Error when it cannot be read. Text ids are the line number plus
  /// `text_id_offset` (an add continues the numbering after the index's documents).
  CorpusReader(const std::string& path, CorpusFormat format = CorpusFormat::Auto, size_t text_id_offset = 0);
  /// Next document; false at the end. Throws sieve::Error "path:line: what" on bad input.
  bool next(Document& doc);
  /// The format in use (Auto resolved).
  CorpusFormat format() const { return format_; }

  /// Counts the documents a file would yield without validating them (for progress and ETA).
  static size_t count(const std::string& path, CorpusFormat format = CorpusFormat::Auto);
  /// Resolves Auto by the file's extension.
  static CorpusFormat resolve(const std::string& path, CorpusFormat format);

 private:
  bool parse_jsonl(const std::string& line, Document& doc);
  bool parse_tsv(const std::string& line, Document& doc);
  [[noreturn]] void fail(const std::string& what) const;
  void check_utf8(const std::string& s, const char* field) const;

  std::string path_;
  std::ifstream in_;
  CorpusFormat format_;
  size_t line_no_ = 0;
  size_t text_id_offset_ = 0;
  bool first_row_ = true;  // the first non-blank TSV row may be a header
  int tsv_id_ = 0, tsv_text_ = 1, tsv_title_ = 2;  // column positions
  std::unordered_map<std::string, size_t> seen_;    // id -> line, for duplicate reports
};

}  // namespace sieve::index
