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
};

/// Encodes `docs` with `enc` and appends them to the index at `dir`, whose committed manifest is
/// `m`, then commits (manifest replaced; `m` updated). The caller holds the write lock and has
/// checked the ids (non-empty, unique, new). All of the batch or none of it is committed.
/// `logs_checked`: a snapshot of this process has checked the logs at `m`'s state (not again).
/// `replaced`: internal ids the batch replaces (an upsert), deleted in the same commit.
Appended append_documents(const std::string& dir, Manifest& m, const std::vector<Document>& docs, const Encoder& enc,
                          const IndexBuildOptions& opt, BuildReport& rep, bool logs_checked,
                          const std::vector<uint32_t>& replaced = {});

/// Appends one delete record of `docs` (internal ids, distinct, not deleted before) to the deletes
/// log of the index at `dir` and makes it durable; `m` records it (the caller commits the manifest).
void append_deletes(const std::string& dir, Manifest& m, const std::vector<uint32_t>& docs);

/// Writes `m` as the index's manifest and makes the commit durable (the manifest's rename and the
/// folder), the step that publishes a write.
void commit_manifest(const std::string& dir, const Manifest& m);

/// The live documents of `ids` in `snap` (duplicates once), ascending; ids it does not hold go
/// to rep.missing, and refuse the batch (sieve::Error, nothing deleted) unless `missing_ok`.
std::vector<uint32_t> resolve_deletes(const Index& snap, const std::vector<std::string>& ids, bool missing_ok,
                                      DeleteReport& rep);

/// compact_index's work; with `writer_mu` (an IndexWriter's), the final step (carrying over the
/// writes committed meanwhile, the exchange) holds it too, and `after_swap` runs before it is
/// released (the writer publishes the compacted snapshot there).
CompactReport compact_folder(const std::string& dir, const CompactOptions& opt, std::mutex* writer_mu,
                             const std::function<void()>& after_swap);

/// Checks a batch before anything is written: ids non-empty and unique in the batch, every text
/// valid UTF-8, metadata as check_metadata accepts (stored compact: `docs` is normalised in
/// place), expiry finite and not negative. sieve::Error naming the document otherwise.
void check_batch(std::vector<Document>& docs);

/// The snapshot after an add committed `m`: shares `prev`'s vector index (or takes `rewritten`),
/// its keys added earlier, its id map and its encoder; reopens the logs and BM25 only.
std::shared_ptr<const Index> extend_snapshot(const Index& prev, const Manifest& m,
                                             std::shared_ptr<const FaissVectorIndex> rewritten,
                                             const std::vector<float>& added_keys);
/// The manifest a snapshot was opened at.
const Manifest& snapshot_manifest(const Index& snapshot);
/// Internal id of `id` while it is stored and not deleted or replaced, expired or not (deleting an
/// expired document is not an error: it is still there until a compaction); -1 otherwise.
int64_t find_stored(const Index& snapshot, const std::string& id);

}  // namespace sieve::index
