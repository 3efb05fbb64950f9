// What an add shares between the corpus-file path (`add_to_index`, `sieve index add`) and the
// in-process writer (`IndexWriter`, the server's POST /v1/documents, Python's Index.add): appending
// encoded documents to the logs and BM25, and the commit that decides whether the vector file is
// rewritten. Internal to the library.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "index/manifest.h"
#include "index/vector_index.h"
#include "sieve/index.h"

namespace sieve::index {

/// The tail of added documents whose keys live only in the keys log, past which an add rewrites
/// the vector file with every key (`opt.max_vector_tail`, or documents / 8 kept within 4,096 and
/// 32,768 when 0): so an add costs what it adds, and the rewrite, O(documents), comes once per
/// eighth of the index (per 32,768 documents in large ones, where the tail's exact scan would
/// otherwise cost a query more than the HNSW search itself).
size_t vector_tail_limit(const IndexBuildOptions& opt, uint64_t documents);

/// What append_documents did.
struct Appended {
  std::vector<float> keys;  ///< the added documents' unit keys, in order (n x dim)
  /// The vector index with every key when this add rewrote the vector file, else null.
  std::shared_ptr<FaissVectorIndex> vectors;
  /// The vector file the commit replaced, left on disk when the commit wrote another manifest than
  /// manifest.json (a shard set's prepare: the old file is removed once the set commits); "" else.
  std::string replaced_vectors;
};

/// Encodes `docs` with `enc` and appends them to the index at `dir`, whose committed manifest is
/// `m`, then commits (manifest replaced; `m` updated). The caller holds the write lock and has
/// checked the ids (non-empty, unique, new). All of the batch or none of it is committed.
/// `logs_checked`: a snapshot of this process has checked the logs at `m`'s state (not again).
/// `replaced`: internal ids the batch replaces (an upsert), deleted in the same commit.
/// `manifest`: the file the commit writes (a shard set's prepare writes kNextManifestFile, and the
/// set's manifest commits it).
Appended append_documents(const std::string& dir, Manifest& m, const std::vector<Document>& docs, const Encoder& enc,
                          const IndexBuildOptions& opt, BuildReport& rep, bool logs_checked,
                          const std::vector<uint32_t>& replaced = {}, const std::string& manifest = kManifestFile);

/// Appends one delete record of `docs` (internal ids, distinct, not deleted before) to the deletes
/// log of the index at `dir` and makes it durable; `m` records it (the caller commits the manifest).
void append_deletes(const std::string& dir, Manifest& m, const std::vector<uint32_t>& docs);

/// Writes `m` as the index's manifest (or as `name`) and makes the commit durable (the manifest's
/// rename and the folder), the step that publishes a write.
void commit_manifest(const std::string& dir, const Manifest& m, const std::string& name = kManifestFile);

/// A shard's prepared manifest: written by a shard set's write before the set commits, renamed to
/// manifest.json after (docs/formats.md, "Writes to a shard set").
constexpr const char* kNextManifestFile = "manifest.next.json";

/// Refuses a delete batch with ids the index does not hold (sieve::Error naming the first five).
void refuse_missing(const std::vector<std::string>& missing);
/// Refuses a write to one shard of a shard set (sieve::Error): writes go through the set.
void check_not_a_shard(const std::string& dir);

/// The live documents of `ids` in `snap` (duplicates once), ascending; ids it does not hold go
/// to rep.missing, and refuse the batch (sieve::Error, nothing deleted) unless `missing_ok`.
std::vector<uint32_t> resolve_deletes(const Index& snap, const std::vector<std::string>& ids, bool missing_ok,
                                      DeleteReport& rep);

/// compact_index's work; with `writer_mu` (an IndexWriter's), the final step (carrying over the
/// writes committed meanwhile, the exchange) holds it too, and `after_swap` runs before it is
/// released (the writer publishes the compacted snapshot there).
/// Bytes of the regular files under `dir` (what a compaction reports before and after).
uint64_t folder_bytes(const std::string& dir);

/// A shard set's compaction of one shard adds two steps: `phase2_lock` (called before the index's
/// own lock is taken, its result held to the end: the set's lock) and `before_swap` (called with
/// the staging folder once it holds the complete compacted index, before the exchange: the set
/// records the new shard there, its commit point).
struct CompactHooks {
  std::function<std::shared_ptr<void>()> phase2_lock;
  std::function<void(const std::string& staging, const Manifest& done)> before_swap;
};
CompactReport compact_folder(const std::string& dir, const CompactOptions& opt, std::mutex* writer_mu,
                             const std::function<void()>& after_swap, const CompactHooks& hooks = {});

/// Checks a batch before anything is written: ids non-empty and unique in the batch, every text
/// valid UTF-8, metadata as check_metadata accepts (stored compact: `docs` is normalised in
/// place), expiry finite and not negative. sieve::Error naming the document otherwise.
void check_batch(std::vector<Document>& docs);

/// The snapshot after an add committed `m`: shares `prev`'s vector index (or takes `rewritten`),
/// its keys added earlier, its id map and its encoder; reopens the logs and BM25 only.
std::shared_ptr<const Index> extend_snapshot(const Index& prev, const Manifest& m,
                                             std::shared_ptr<const FaissVectorIndex> rewritten,
                                             const std::vector<float>& added_keys);
/// One index (not a shard set) opened at the manifest file `manifest` of `dir` rather than its
/// manifest.json: a shard whose set committed a write whose last step (the rename of the shard's
/// manifest.next.json) has not happened yet.
std::unique_ptr<Index> open_index_at(const std::string& dir, const std::string& manifest, const IndexOpenOptions& opt);
/// The folder a snapshot was opened from.
const std::string& snapshot_dir(const Index& snapshot);
/// The manifest a snapshot was opened at.
const Manifest& snapshot_manifest(const Index& snapshot);
/// Internal id of `id` while it is stored and not deleted or replaced, expired or not (deleting an
/// expired document is not an error: it is still there until a compaction); -1 otherwise.
int64_t find_stored(const Index& snapshot, const std::string& id);

}  // namespace sieve::index
