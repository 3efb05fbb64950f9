// Reader for dictd databases (the format of Debian's dict-* packages: dict-gcide, dict-foldoc, ...),
// after dictd(8) and dictzip(1):
//
//  * `<name>.index`: one line per headword, `headword<TAB>offset<TAB>length` (a fourth field, the
//    original spelling, is allowed). offset and length are byte positions in the uncompressed
//    data written in dictd's base64 digits A-Z a-z 0-9 + / (values 0..63, most significant
//    first, no padding). Several headwords may point at the same article (aliases, inflected
//    forms, run-on phrases), and the lines are sorted for look-up, not in data order.
//  * `<name>.dict.dz`: the articles concatenated, compressed with dictzip, which is gzip with an
//    extra header field listing random-access chunks. A corpus reads everything anyway, so the
//    file is inflated whole with zlib's gzip reader; a plain `<name>.dict` is read as is.
//  * headwords starting with "00-database" (or "00database") are the database's own metadata
//    (licence, url, short name), not dictionary articles.
//
// Everything is validated at open: a malformed index line or a range past the end of the data
// fails with sieve::Error naming the index file and line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sieve::corpus {

/// Decodes a dictd base64 number ("B" = 1, "BA" = 64). Throws sieve::Error on an empty string, a
/// character outside A-Z a-z 0-9 + /, or a value that does not fit 64 bits.
uint64_t decode_dictd_number(std::string_view digits);

/// The inverse of decode_dictd_number ("A" for 0).
std::string encode_dictd_number(uint64_t value);

struct DictdIndexEntry {
  std::string headword;
  uint64_t offset = 0;
  uint64_t length = 0;
  size_t line = 0;  ///< 1-based line in the index file
};

/// Parses the text of an index file; `path` names the file in error messages ("path:line: ...").
/// Empty lines are skipped.
std::vector<DictdIndexEntry> parse_dictd_index(const std::string& text, const std::string& path);

/// Reads a whole gzip (or dictzip) file, inflated. Throws sieve::Error naming the path when it
/// cannot be opened or is corrupt.
std::string read_gzip_file(const std::string& path);

/// One article of the data file with every headword of the index that points at it.
struct DictdArticle {
  std::vector<std::string> headwords;  ///< in index order
  uint64_t offset = 0;
  uint64_t length = 0;
  std::string text;
};

class DictdDatabase {
 public:
  /// Opens `<dir>/<name>.index` with `<dir>/<name>.dict.dz`, or `<dir>/<name>.dict` when there is
  /// no .dz. Throws sieve::Error when a file is missing or invalid.
  static DictdDatabase open(const std::string& dir, const std::string& name);
  /// Opens an explicit pair of files (the data file is inflated when its name ends in ".dz").
  static DictdDatabase open_files(const std::string& index_path, const std::string& dict_path);
  /// True when the index and a data file (.dict.dz or .dict) exist in `dir`.
  static bool available(const std::string& dir, const std::string& name);

  const std::vector<DictdIndexEntry>& index() const { return index_; }
  /// Size of the uncompressed data.
  size_t data_size() const { return data_.size(); }
  /// The text an index entry points at.
  std::string_view text(const DictdIndexEntry& e) const;

  /// Index entries whose headword equals `headword` ignoring ASCII case (dictd's look-up), in
  /// index order.
  std::vector<const DictdIndexEntry*> find(std::string_view headword) const;

  /// Every distinct (offset, length) article once, in data order, with its headwords; the
  /// database's "00-database-*" metadata is left out.
  std::vector<DictdArticle> articles() const;

 private:
  std::vector<DictdIndexEntry> index_;
  std::string data_;
};

}  // namespace sieve::corpus
