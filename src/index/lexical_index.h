// The lexical recall stage: BM25 over title + text with English stemming, backed by Xapian.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace Xapian {
class Database;
class WritableDatabase;
}  // namespace Xapian

namespace sieve::index {

/// BM25 parameters (Elasticsearch/Lucene defaults, which BEIR's BM25 baseline used).
struct Bm25Params {
  double k1 = 1.2;
  double b = 0.75;
};

/// Interface of the lexical recall stage.
class LexicalIndex {
 public:
  virtual ~LexicalIndex() = default;
  /// Top `k` (internal id, BM25 score) pairs for a free-text query, best first; ids >= `limit`
  /// (documents of an uncommitted add) are skipped.
  virtual std::vector<std::pair<uint32_t, double>> search(const std::string& query, size_t k,
                                                          uint32_t limit) const = 0;
};

/// Reads a Xapian database. Xapian handles are not thread-safe, so searches take a lock.
class XapianLexicalIndex : public LexicalIndex {
 public:
  XapianLexicalIndex(const std::string& path, const Bm25Params& params = {});
  ~XapianLexicalIndex() override;
  std::vector<std::pair<uint32_t, double>> search(const std::string& query, size_t k,
                                                  uint32_t limit) const override;
  /// Number of documents in the database.
  uint32_t doc_count() const;

 private:
  std::unique_ptr<Xapian::Database> db_;
  Bm25Params params_;
  mutable std::mutex mu_;
};

/// Writes documents into a Xapian database (Xapian document id = internal id + 1).
class XapianLexicalWriter {
 public:
  /// Opens or creates the database at `path`.
  explicit XapianLexicalWriter(const std::string& path);
  ~XapianLexicalWriter();
  /// Indexes (or replaces) document `doc`.
  void put(uint32_t doc, const std::string& title, const std::string& text);
  /// Removes documents with internal id >= `count` (left by an interrupted run).
  void truncate(uint32_t count);
  /// Makes everything put so far durable (atomic in Xapian).
  void commit();
  uint32_t doc_count() const;

 private:
  std::unique_ptr<Xapian::WritableDatabase> db_;
  std::string path_;
};

}  // namespace sieve::index
