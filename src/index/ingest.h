// What an add shares between the corpus-file path (`add_to_index`, `sieve index add`) and the
// in-process writer (`IndexWriter`, the server's POST /v1/documents, Python's Index.add): appending
// encoded documents to the logs and BM25, and the commit that decides whether the vector file is
// rewritten. Internal to the library.
#pragma once

#include <memory>
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
Appended append_documents(const std::string& dir, Manifest& m, const std::vector<Document>& docs, const Encoder& enc,
                          const IndexBuildOptions& opt, BuildReport& rep, bool logs_checked);

/// The snapshot after an add committed `m`: shares `prev`'s vector index (or takes `rewritten`),
/// its keys added earlier, its id map and its encoder; reopens the logs and BM25 only.
std::shared_ptr<const Index> extend_snapshot(const Index& prev, const Manifest& m,
                                             std::shared_ptr<const FaissVectorIndex> rewritten,
                                             const std::vector<float>& added_keys);
/// The manifest a snapshot was opened at.
const Manifest& snapshot_manifest(const Index& snapshot);

}  // namespace sieve::index
