// The lexical recall stage: BM25 over title + text with English stemming, backed by Xapian.
#pragma once

#include <cstdint>
#include <map>
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

class Bitmap;

/// BM25 parameters (Elasticsearch/Lucene defaults, which BEIR's BM25 baseline used).
struct Bm25Params {
  double k1 = 1.2;
  double b = 0.75;
};

/// A free-text query's BM25 terms, as every search here reads it: the query parser's terms
/// (English stemming, stop words out, no operators), each with its count, in byte order.
std::map<std::string, unsigned> bm25_terms(const std::string& query);

/// The collection statistics BM25 reads: documents, their total length, and the number of
/// documents holding each of some terms (summed over a set's shards, the statistics of one
/// database holding every document).
struct Bm25Stats {
  uint64_t documents = 0;
  uint64_t total_length = 0;
  std::vector<uint64_t> termfreqs;
};

/// One query's terms (byte order), their counts and each term's document count in the whole set.
struct Bm25Query {
  std::vector<std::string> terms;
  std::vector<uint32_t> wqf;
  std::vector<uint64_t> termfreqs;
};

/// Interface of the lexical recall stage.
class LexicalIndex {
 public:
  virtual ~LexicalIndex() = default;
  /// Top `k` (internal id, BM25 score) pairs for a free-text query, best first; ids >= `limit`
  /// (documents of an uncommitted add) are skipped, and with `allowed`, ids it does not hold.
  virtual std::vector<std::pair<uint32_t, double>> search(const std::string& query, size_t k, uint32_t limit,
                                                          const Bitmap* allowed = nullptr) const = 0;
};

/// A BM25 hit in one of several databases searched as one.
struct ShardHit {
  uint32_t shard = 0;  ///< position of the database in the list
  uint32_t doc = 0;    ///< internal id within it
  double score = 0;
};

/// Reads a Xapian database, or several as one (the shards of a shard set: Xapian's multi-database
/// gives BM25 the statistics of all of them, so scores are those of one database holding every
/// document). Xapian handles are not thread-safe, so searches take a lock.
class XapianLexicalIndex : public LexicalIndex {
 public:
  XapianLexicalIndex(const std::string& path, const Bm25Params& params = {});
  XapianLexicalIndex(const std::vector<std::string>& paths, const Bm25Params& params = {});
  ~XapianLexicalIndex() override;
  std::vector<std::pair<uint32_t, double>> search(const std::string& query, size_t k, uint32_t limit,
                                                  const Bitmap* allowed = nullptr) const override;
  /// Top `k` over every database, best first; document ids >= limits[shard] are skipped. Equal
  /// scores are returned lower shard first, then lower id, and the `k`-th place is decided among
  /// equal scores the same way (documents numbered shard by shard in the order of the list).
  /// Scores are BM25 computed here in a fixed order (rescore()), within about 1e-12 of Xapian's
  /// own weights, which `xapian_scores` receives for each hit (tests compare the two).
  /// `allowed`: one entry per database (null: all of its documents), or empty for none.
  std::vector<ShardHit> search_shards(const std::string& query, size_t k, const std::vector<uint32_t>& limits,
                                      std::vector<double>* xapian_scores = nullptr,
                                      const std::vector<const Bitmap*>& allowed = {}) const;
  /// Number of documents in the database(s).
  uint32_t doc_count() const;
  /// This database's statistics for `terms` (one database only).
  Bm25Stats stats(const std::vector<std::string>& terms) const;
  /// This database's top `k` by BM25 with the statistics of a whole set (`documents`,
  /// `total_length`, q.termfreqs), best first, equal scores lower id first; ids >= `limit` and,
  /// with `allowed`, ids it does not hold are skipped. Every document holding a query term is
  /// scored, in the order and by the formula of rescore(), so each score equals to the bit the
  /// one a search over every shard's database as one gives it (one database only).
  std::vector<std::pair<uint32_t, double>> search_global(const Bm25Query& q, uint64_t documents, uint64_t total_length,
                                                         size_t k, uint32_t limit, const Bitmap* allowed) const;

 private:
  static constexpr double kMinNormLen = 0.5;
  std::vector<double> rescore(const std::map<std::string, unsigned>& wqf, const std::vector<unsigned>& ids) const;
  std::unique_ptr<Xapian::Database> db_;
  std::vector<std::string> uuids_;  // each database's, in order (several databases only)
  size_t shards_ = 1;
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
