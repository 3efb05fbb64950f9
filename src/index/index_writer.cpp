// IndexWriter: one writer per index and process, over the open index. An add encodes with the
// encoder loaded at open, appends (index/ingest.h), commits, and swaps in a snapshot extended
// from the previous one, so that it costs what it adds.
#include <chrono>
#include <mutex>
#include <set>

#include "core/file_util.h"
#include "core/log.h"
#include "index/ingest.h"
#include "index/write_lock.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "text/utf8.h"

namespace sieve {
using namespace sieve::index;

namespace {

bool same_log(const LogState& a, const LogState& b) {
  return a.records == b.records && a.data_bytes == b.data_bytes && a.index_bytes == b.index_bytes &&
         a.data_crc == b.data_crc && a.index_crc == b.index_crc;
}

// The commit the snapshot was opened at is the one on disk (no other process has added since).
bool same_commit(const Manifest& a, const Manifest& b) {
  return a.documents == b.documents && a.vectors.file == b.vectors.file && a.vectors.crc == b.vectors.crc &&
         a.vector_documents == b.vector_documents && a.keys_from == b.keys_from && same_log(a.corpus, b.corpus) &&
         same_log(a.keys, b.keys) && same_log(a.token_log, b.token_log) && a.codec.crc == b.codec.crc;
}

}  // namespace

struct IndexWriter::State {
  std::string dir;
  IndexOpenOptions open;
  std::mutex write_mu;                  // one add at a time
  mutable std::mutex snapshot_mu;       // guards `snapshot` (held only to copy or swap it)
  std::shared_ptr<const Index> snapshot;

  void publish(std::shared_ptr<const Index> next) {
    std::lock_guard<std::mutex> lock(snapshot_mu);
    snapshot = std::move(next);
  }
};

IndexWriter::IndexWriter(const std::string& dir, const IndexOpenOptions& opt) : s_(std::make_unique<State>()) {
  SIEVE_THROW_IF_NOT(opt.load_encoder, "an index writer needs the encoder (IndexOpenOptions::load_encoder)");
  s_->dir = dir;
  s_->open = opt;
  s_->open.verify = false;  // reopening after another process's add checks what an open checks
  s_->snapshot = Index::open(dir, opt);
  s_->open.encoder_instance = s_->snapshot->shared_encoder();
}

IndexWriter::~IndexWriter() = default;

const std::string& IndexWriter::dir() const { return s_->dir; }

std::shared_ptr<const Index> IndexWriter::snapshot() const {
  std::lock_guard<std::mutex> lock(s_->snapshot_mu);
  return s_->snapshot;
}

BuildReport IndexWriter::add(const std::vector<Document>& docs, const IndexBuildOptions& opt) {
  const auto t_start = std::chrono::steady_clock::now();
  // A shard set is searched through a writer too (the service holds one), but never grows.
  SIEVE_THROW_IF_NOT(!is_shard_set(s_->dir), "'" << s_->dir << "' is a shard set: adding documents to one is not "
                                                    "supported (rebuild it with the new corpus)");
  SIEVE_THROW_IF_NOT(!docs.empty(), "no documents to add");
  std::set<std::string> ids;
  for (size_t i = 0; i < docs.size(); ++i) {
    const Document& d = docs[i];
    SIEVE_THROW_IF_NOT(!d.id.empty(), "document " << i << " has an empty id");
    for (const auto* f : {&d.id, &d.title, &d.text}) {
      const size_t bad = first_invalid_utf8(*f);
      SIEVE_THROW_IF_NOT(bad == std::string::npos, "document " << i << " ('" << (f == &d.id ? std::string("?") : d.id)
                                                               << "'): invalid UTF-8 at byte " << bad);
    }
    SIEVE_THROW_IF_NOT(ids.insert(d.id).second, "document id '" << d.id << "' appears twice in the batch");
  }
  std::lock_guard<std::mutex> writing(s_->write_mu);
  WriteLock lock(s_->dir);
  Manifest m = read_manifest(s_->dir, kManifestFile);
  std::shared_ptr<const Index> snap = snapshot();
  BuildReport rep;
  if (!same_commit(m, snapshot_manifest(*snap))) {
    log_info("index '" + s_->dir + "' changed since it was opened (another process added to it); reopening it");
    snap = Index::open(s_->dir, s_->open);
    s_->publish(snap);
    rep.note = "reopened (another process had added); ";
  }
  for (const Document& d : docs)
    SIEVE_THROW_IF_NOT(snap->find(d.id) < 0, "document id '" << d.id << "' is already in the index");
  rep.note += "added to an index of " + std::to_string(m.documents) + " documents";
  // The snapshot, opened at this very commit, has checked the logs: the add does not again.
  Appended a = append_documents(s_->dir, m, docs, *snap->encoder(), opt, rep, /*logs_checked=*/true);
  s_->publish(extend_snapshot(*snap, m, std::move(a.vectors), a.keys));
  rep.documents = m.documents;
  rep.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return rep;
}

}  // namespace sieve
