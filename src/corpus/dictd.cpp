#include "corpus/dictd.h"

#include <zlib.h>

#include <algorithm>
#include <map>
#include <utility>

#include "core/file_util.h"
#include "sieve/error.h"

namespace sieve::corpus {

namespace {

constexpr const char* kDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int digit_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_metadata(const std::string& headword) {
  return headword.rfind("00-database", 0) == 0 || headword.rfind("00database", 0) == 0;
}

char lower_ascii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

uint64_t decode_dictd_number(std::string_view digits) {
  SIEVE_THROW_IF_NOT(!digits.empty(), "empty dictd number");
  uint64_t v = 0;
  for (char c : digits) {
    int d = digit_value(c);
    SIEVE_THROW_IF_NOT(d >= 0, "invalid character '" << c << "' in dictd number '" << digits
                                                     << "' (expected A-Z a-z 0-9 + /)");
    SIEVE_THROW_IF_NOT(v <= (UINT64_MAX >> 6), "dictd number '" << digits << "' does not fit 64 bits");
    v = v * 64 + static_cast<uint64_t>(d);
  }
  return v;
}

std::string encode_dictd_number(uint64_t value) {
  std::string out;
  do {
    out.push_back(kDigits[value % 64]);
    value /= 64;
  } while (value != 0);
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<DictdIndexEntry> parse_dictd_index(const std::string& text, const std::string& path) {
  std::vector<DictdIndexEntry> out;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    std::vector<std::string_view> fields;
    size_t b = 0;
    for (;;) {
      size_t t = line.find('\t', b);
      fields.push_back(line.substr(b, t == std::string_view::npos ? std::string_view::npos : t - b));
      if (t == std::string_view::npos) break;
      b = t + 1;
    }
    SIEVE_THROW_IF_NOT(fields.size() == 3 || fields.size() == 4,
                       path << ":" << line_no << ": expected 'headword<TAB>offset<TAB>length', found "
                            << fields.size() << " tab-separated field(s)");
    SIEVE_THROW_IF_NOT(!fields[0].empty(), path << ":" << line_no << ": empty headword");
    DictdIndexEntry e;
    e.headword = std::string(fields[0]);
    e.line = line_no;
    try {
      e.offset = decode_dictd_number(fields[1]);
      e.length = decode_dictd_number(fields[2]);
    } catch (const Error& err) {
      SIEVE_THROW(path << ":" << line_no << ": " << err.what());
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::string read_gzip_file(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  SIEVE_THROW_IF_NOT(f != nullptr, "cannot open '" << path << "'");
  std::string out;
  std::string buf(1 << 16, '\0');
  for (;;) {
    int n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int code = 0;
      std::string msg = gzerror(f, &code);
      gzclose(f);
      SIEVE_THROW("'" << path << "' is not a valid gzip/dictzip file: " << msg);
    }
    if (n == 0) break;
    out.append(buf.data(), static_cast<size_t>(n));
  }
  gzclose(f);
  return out;
}

DictdDatabase DictdDatabase::open(const std::string& dir, const std::string& name) {
  std::string index = path_join(dir, name + ".index");
  std::string dz = path_join(dir, name + ".dict.dz");
  std::string plain = path_join(dir, name + ".dict");
  SIEVE_THROW_IF_NOT(is_file(index), "dictd index '" << index << "' not found");
  SIEVE_THROW_IF_NOT(is_file(dz) || is_file(plain), "dictd data '" << dz << "' not found");
  return open_files(index, is_file(dz) ? dz : plain);
}

DictdDatabase DictdDatabase::open_files(const std::string& index_path, const std::string& dict_path) {
  DictdDatabase db;
  db.index_ = parse_dictd_index(read_file(index_path), index_path);
  // gzread passes a file that is not gzip through unchanged, so a plain .dict named .dz still reads;
  // a .dict is read directly to spare the copy.
  db.data_ = ends_with(dict_path, ".dz") || ends_with(dict_path, ".gz") ? read_gzip_file(dict_path)
                                                                        : read_file(dict_path);
  for (const auto& e : db.index_)
    SIEVE_THROW_IF_NOT(e.offset <= db.data_.size() && e.length <= db.data_.size() - e.offset,
                       index_path << ":" << e.line << ": '" << e.headword << "' points at bytes " << e.offset
                                  << ".." << e.offset + e.length << ", past the end of '" << dict_path
                                  << "' (" << db.data_.size() << " bytes uncompressed)");
  return db;
}

bool DictdDatabase::available(const std::string& dir, const std::string& name) {
  return is_file(path_join(dir, name + ".index")) &&
         (is_file(path_join(dir, name + ".dict.dz")) || is_file(path_join(dir, name + ".dict")));
}

std::string_view DictdDatabase::text(const DictdIndexEntry& e) const {
  return std::string_view(data_).substr(e.offset, e.length);
}

std::vector<const DictdIndexEntry*> DictdDatabase::find(std::string_view headword) const {
  std::vector<const DictdIndexEntry*> out;
  for (const auto& e : index_) {
    if (e.headword.size() != headword.size()) continue;
    bool same = true;
    for (size_t i = 0; i < headword.size() && same; ++i)
      same = lower_ascii(e.headword[i]) == lower_ascii(headword[i]);
    if (same) out.push_back(&e);
  }
  return out;
}

std::vector<DictdArticle> DictdDatabase::articles() const {
  std::map<std::pair<uint64_t, uint64_t>, std::vector<const DictdIndexEntry*>> by_range;
  for (const auto& e : index_)
    if (e.length > 0) by_range[{e.offset, e.length}].push_back(&e);
  std::vector<DictdArticle> out;
  out.reserve(by_range.size());
  for (const auto& [range, entries] : by_range) {
    // Metadata may have aliases too (GCIDE's "00-gcide-long" = "00-database-long").
    if (std::any_of(entries.begin(), entries.end(),
                    [](const DictdIndexEntry* e) { return is_metadata(e->headword); }))
      continue;
    DictdArticle a;
    a.offset = range.first;
    a.length = range.second;
    for (const auto* e : entries) a.headwords.push_back(e->headword);
    a.text = std::string(text(*entries.front()));
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace sieve::corpus
