// Shard sets (internal): the manifest that names the shards of a sharded index, the searcher that
// merges them, and the hook into one shard's dense search. The public API is in sieve/index.h;
// the format in docs/formats.md ("Shard sets").
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <functional>

#include "index/fusion.h"
#include "index/lexical_index.h"
#include "sieve/error.h"
#include "sieve/index.h"

namespace sieve::index {

constexpr uint32_t kShardSetFormatVersion = 1;

/// One shard as the shard-set manifest records it.
struct ShardEntry {
  std::string dir;          ///< folder inside the set ("shard-000")
  uint64_t first = 0;       ///< internal id of its first document in the set
  uint64_t documents = 0;
  std::string manifest_crc;  ///< CRC-32 (hex) of its manifest.json as committed
};

/// shardset.json: what every shard shares and the list of shards, in id order.
struct ShardSetManifest {
  uint64_t documents = 0;
  uint64_t dim = 0;
  std::string model_identity, model_path, pooling;
  uint64_t max_length = 0;
  std::string vector_factory;
  bool has_tokens = false;
  std::string token_codec;
  std::string codec_crc;  ///< CRC-32 (hex) of the codec file every shard holds ("" without tokens)
  std::vector<ShardEntry> shards;
};

/// Writes `<dir>/shardset.json` atomically with a checksum over its content.
void write_shard_set_manifest(const std::string& dir, const ShardSetManifest& m);
/// Reads and validates it (format, version, checksum, contiguous ids); sieve::Error otherwise.
ShardSetManifest read_shard_set_manifest(const std::string& dir);

/// A shard's identity as its set records it (ShardEntry::manifest_crc): the CRC-32 (hex) of the
/// manifest.json in `shard_dir`. A rebuilt or other copy of the shard has another one.
std::string shard_identity(const std::string& shard_dir);
/// The identity each shard of the set at `dir` must have, in shard order (its manifest's record).
std::vector<std::string> shard_set_identities(const std::string& dir);
/// The shard's identity (shard_identity), after checking that it is the copy its set (the folder
/// above it, when that is a shard set) records: sieve::Error otherwise. What a shard server checks
/// before it serves.
std::string check_shard_in_its_set(const std::string& shard_dir);

/// A ShardRemote whose shards also answer BM25 (sieve's own shard servers): the router then
/// reads no shard's BM25 database. It asks every shard for its statistics of the queries' terms,
/// sums them (the statistics of one database holding every document), and has every shard rank
/// its own documents with those (search_global), so the merged lists equal one index's.
class LexicalRemote {
 public:
  virtual ~LexicalRemote() = default;
  /// Shard `shard`'s statistics for `terms`.
  virtual Bm25Stats bm25_stats(size_t shard, const std::string& identity, const std::vector<std::string>& terms,
                               std::chrono::steady_clock::time_point deadline) const = 0;
  /// Shard `shard`'s best `depth` documents for each query with the set's statistics
  /// (`documents`, `total_length`, each query's termfreqs); p.filter and p.now apply (the shard
  /// leaves out its deleted and expired documents itself).
  virtual std::vector<Ranked> bm25_lists(size_t shard, const std::string& identity, const std::vector<Bm25Query>& queries,
                                         uint64_t documents, uint64_t total_length, size_t depth,
                                         const SearchParams& p) const = 0;
};

/// What a router that holds only the set's manifest reads from the shards themselves (sieve's
/// shard servers): documents, ids, deletions and expiry, filters, and each shard's statistics.
/// A set opened with such a remote and no shard folder beside its shardset.json reads nothing
/// else from disk (docs/scale.md, "The native shard path").
class ShardReader {
 public:
  virtual ~ShardReader() = default;
  virtual std::vector<Document> documents(size_t shard, const std::string& identity, const std::vector<uint32_t>& docs,
                                          std::chrono::steady_clock::time_point deadline) const = 0;
  /// Index::find of each id in the shard (-1: none there).
  virtual std::vector<int64_t> find(size_t shard, const std::string& identity, const std::vector<std::string>& ids,
                                    std::chrono::steady_clock::time_point deadline) const = 0;
  /// Index::live of each document at `now`.
  virtual std::vector<bool> live(size_t shard, const std::string& identity, const std::vector<uint32_t>& docs,
                                 double now, std::chrono::steady_clock::time_point deadline) const = 0;
  /// Index::matching: the shard's documents passing `filter`, live at `now`.
  virtual std::vector<uint32_t> matching(size_t shard, const std::string& identity, const Filter& filter, double now,
                                         std::chrono::steady_clock::time_point deadline) const = 0;
  /// The shard's IndexStats.
  virtual IndexStats shard_stats(size_t shard, const std::string& identity,
                                 std::chrono::steady_clock::time_point deadline) const = 0;
};

/// The encoder an index searches with (IndexOpenOptions: the given one, or the model `m`
/// records or opt.model_dir), checked against m's model identity, width and key grid; `dir`
/// names the index in messages.
struct Manifest;
std::shared_ptr<const Encoder> load_index_encoder(const Manifest& m, const std::string& dir, const IndexOpenOptions& opt);

/// Opens a shard set (Index::open calls it for a folder with shardset.json).
std::unique_ptr<Index> open_shard_set(const std::string& dir, const IndexOpenOptions& opt);

/// One index's (not a shard set's) BM25 statistics for `terms`.
Bm25Stats bm25_stats(const Index& shard, const std::vector<std::string>& terms);
/// One index's (not a shard set's) best `depth` documents for each query by BM25 with a whole
/// set's statistics (XapianLexicalIndex::search_global); only the documents p allows.
std::vector<Ranked> bm25_lists(const Index& shard, const std::vector<Bm25Query>& queries, uint64_t documents,
                               uint64_t total_length, size_t depth, const SearchParams& p);

/// The dense lists of one index opened by Index::open (not a shard set) for `n` pooled query
/// vectors: the best `depth` documents of each, equal scores lower document first; only the
/// documents p's filter, deletions and expiry allow.
std::vector<Ranked> dense_lists(const Index& shard, size_t n, const float* pooled, size_t depth,
                                const SearchParams& p);

/// A set's snapshot at manifest `m` whose shards are `shards` (opened at the copies `m` records;
/// null entries are opened here): what a write publishes, sharing the shards it did not change.
std::shared_ptr<const Index> shard_set_snapshot(const std::string& dir, const IndexOpenOptions& opt,
                                                const ShardSetManifest& m,
                                                std::vector<std::shared_ptr<const Index>> shards);
/// What a shard-set snapshot (open_shard_set) was opened at: its manifest, its shards' snapshots,
/// its open options. sieve::Error for another kind of Index.
const ShardSetManifest& shard_set_manifest_of(const Index& set);
const std::vector<std::shared_ptr<const Index>>& shards_of(const Index& set);
/// Whether the set was opened holding only its manifest (ShardReader: everything from the shards).
bool reads_from_shards(const Index& set);
const IndexOpenOptions& shard_set_open_options(const Index& set);

/// Where a compaction writes the compacted copy of the index at `dir`: `dir` + this.
constexpr const char* kCompactingSuffix = ".compacting";

/// Where the copy of a shard that its set records lies: `dir` opened at `manifest` (its own
/// manifest.json; between a set write's commit and its last step, the shard's manifest.next.json
/// or the compacted folder beside it). nullopt when no copy there is the recorded one.
struct RecordedShard {
  std::string dir, manifest;
};
std::optional<RecordedShard> find_recorded_shard(const std::string& set_dir, const ShardEntry& e);
/// The same for the shard at `shard_dir` and the identity `identity` (a shard replica asked for
/// the copy a router's snapshot names).
std::optional<RecordedShard> find_shard_copy(const std::string& shard_dir, const std::string& identity);
/// The copies of one shard a shard server answers from, by identity: the one it opened, and those
/// its set commits later, opened (`open`) the first time a caller names them (find_shard_copy);
/// the last `kept` are kept for searches still under way on an older snapshot of the set. A copy
/// that is neither held nor on disk is refused (sieve::Error: another set's or a rebuilt shard).
/// Thread-safe. `Copy` is what the server holds per copy (the index and its scorer).
template <class Copy>
class ShardCopies {
 public:
  using Open = std::function<std::shared_ptr<const Copy>(const std::string& identity, const RecordedShard& at)>;
  ShardCopies(std::string shard_dir, Open open, size_t kept = 3)
      : dir_(std::move(shard_dir)), open_(std::move(open)), kept_(kept) {}
  /// The copy named `identity` ("" = the latest opened).
  std::shared_ptr<const Copy> get(const std::string& identity) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, c] : copies_)
      if (identity.empty() || id == identity) return c;
    const std::optional<RecordedShard> at = find_shard_copy(dir_, identity);
    SIEVE_THROW_IF_NOT(at.has_value(), "this replica serves another copy of the shard '"
                                           << dir_ << "' (its latest is " << latest_identity()
                                           << ", the caller's set records " << identity
                                           << ", which is not on disk here): the shard was rebuilt or replaced; "
                                              "restart the application on one set");
    copies_.insert(copies_.begin(), {identity, open_(identity, *at)});
    if (copies_.size() > kept_) copies_.pop_back();
    return copies_.front().second;
  }
  /// The identity of the latest copy opened ("" before the first).
  std::string latest() const {
    std::lock_guard<std::mutex> lock(mu_);
    return latest_identity();
  }

 private:
  std::string latest_identity() const { return copies_.empty() ? "" : copies_.front().first; }
  std::string dir_;
  Open open_;
  size_t kept_;
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, std::shared_ptr<const Copy>>> copies_;  // newest first
};

/// Opens the copy `at` (one index, not a shard set).
std::unique_ptr<Index> open_shard_copy(const RecordedShard& at, const IndexOpenOptions& opt);

/// The shard a new id goes to (one the set does not store): FNV-1a 64 of the id's bytes, modulo
/// the number of shards. An id the set stores (live, expired, not deleted) stays in its shard.
size_t shard_of_new_id(const std::string& id, size_t shards);

/// Completes what an interrupted write to the set at `dir` committed (the renames after the set's
/// manifest) and discards what it had only prepared. The caller holds the set's write lock.
void recover_shard_set(const std::string& dir);

/// Writes to the set at `dir` (IndexWriter, the CLI, the server over a set): each is one
/// transaction over the shards it touches, committed by the set's manifest (docs/formats.md,
/// "Writes to a shard set"). `snap` is the caller's latest snapshot of the set (reopened when
/// another process wrote since) and becomes the one after the write. The caller serialises
/// writes of its process.
BuildReport shard_set_add(const std::string& dir, std::shared_ptr<const Index>& snap, std::vector<Document> docs,
                          const IndexBuildOptions& opt);
DeleteReport shard_set_remove(const std::string& dir, std::shared_ptr<const Index>& snap,
                              const std::vector<std::string>& ids, bool missing_ok);
DeleteReport shard_set_remove_matching(const std::string& dir, std::shared_ptr<const Index>& snap, const Filter& filter);
/// Compacts every shard with dead documents, one at a time, each exchange committed by the set's
/// manifest; `writer_mu` (the writer's) is held while a shard's compaction carries over and
/// commits, and `publish` receives each new snapshot of the set.
CompactReport compact_shard_set(const std::string& dir, const CompactOptions& opt, std::mutex* writer_mu,
                                const std::function<void(std::shared_ptr<const Index>)>& publish,
                                const IndexOpenOptions* open = nullptr);

/// A test's view of a set write's steps ("prepared": every shard prepared, before the set's
/// manifest; "committed": after it, before the renames): called with the step's name when set.
extern void (*shard_set_write_step)(const char* step);

class Bitmap;
/// The documents of one index (not a shard set) a search with `p` may return: live and passing
/// p.filter; null when that is all of them.
std::shared_ptr<const Bitmap> allowed_documents(const Index& shard, const SearchParams& p);

}  // namespace sieve::index
