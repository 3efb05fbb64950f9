// IndexWriter: one writer per index and process, over the open index. An add encodes with the
// encoder loaded at open, appends (index/ingest.h), commits, and swaps in a snapshot extended
// from the previous one, so that it costs what it adds.
#include <chrono>
#include <mutex>
#include <algorithm>
#include <set>

#include "core/file_util.h"
#include "core/log.h"
#include "index/ingest.h"
#include "index/shard_set.h"
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
         same_log(a.keys, b.keys) && same_log(a.token_log, b.token_log) && a.codec.crc == b.codec.crc &&
         a.has_metadata == b.has_metadata && same_log(a.metadata, b.metadata) && a.has_deletes == b.has_deletes &&
         same_log(a.deletes, b.deletes);
}

}  // namespace

struct IndexWriter::State {
  std::string dir;
  bool set = false;  // a shard set (index/shard_set_writes.cpp)
  IndexOpenOptions open;
  std::mutex write_mu;                  // one add at a time
  mutable std::mutex snapshot_mu;       // guards `snapshot` (held only to copy or swap it)
  std::shared_ptr<const Index> snapshot;

  void publish(std::shared_ptr<const Index> next) {
    std::lock_guard<std::mutex> lock(snapshot_mu);
    snapshot = std::move(next);
  }
  std::shared_ptr<const Index> current(const Manifest& m, std::string* note);
  // A write to a shard set: serialised with this process's others, its new snapshot published
  // (also the one reopened when another process had written, should the write then fail).
  template <class Write>
  auto on_set(Write&& write) {
    std::lock_guard<std::mutex> writing(write_mu);
    std::shared_ptr<const Index> snap;
    {
      std::lock_guard<std::mutex> lock(snapshot_mu);
      snap = snapshot;
    }
    const std::shared_ptr<const Index> before = snap;
    try {
      auto rep = write(snap);
      publish(snap);
      return rep;
    } catch (...) {
      if (snap != before) publish(snap);
      throw;
    }
  }
};

IndexWriter::IndexWriter(const std::string& dir, const IndexOpenOptions& opt) : s_(std::make_unique<State>()) {
  SIEVE_THROW_IF_NOT(opt.load_encoder, "an index writer needs the encoder (IndexOpenOptions::load_encoder)");
  s_->dir = dir;
  s_->set = is_shard_set(dir);
  if (!s_->set) check_not_a_shard(dir);
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

// The snapshot a write starts from: the one published, unless another process committed since
// (then the index is opened again at its latest commit). The caller holds both locks.
std::shared_ptr<const Index> IndexWriter::State::current(const Manifest& m, std::string* note) {
  std::shared_ptr<const Index> snap;
  {
    std::lock_guard<std::mutex> lock(snapshot_mu);
    snap = snapshot;
  }
  if (!same_commit(m, snapshot_manifest(*snap))) {
    log_info("index '" + dir + "' changed since it was opened (another process wrote to it); reopening it");
    snap = Index::open(dir, open);
    publish(snap);
    if (note) *note = "reopened (another process had written); ";
  }
  return snap;
}

BuildReport IndexWriter::add(const std::vector<Document>& given, const IndexBuildOptions& opt) {
  const auto t_start = std::chrono::steady_clock::now();
  if (s_->set) return s_->on_set([&](std::shared_ptr<const Index>& snap) { return shard_set_add(s_->dir, snap, given, opt); });
  SIEVE_THROW_IF_NOT(!given.empty(), "no documents to add");
  std::vector<Document> docs = given;
  check_batch(docs);
  std::lock_guard<std::mutex> writing(s_->write_mu);
  WriteLock lock(s_->dir);
  Manifest m = read_manifest(s_->dir, kManifestFile);
  BuildReport rep;
  std::shared_ptr<const Index> snap = s_->current(m, &rep.note);
  std::vector<uint32_t> replaced;
  for (const Document& d : docs) {
    // An expired document is gone to every reader: adding its id again needs no upsert, and the
    // stale copy is marked replaced so that it counts as dead for the next compaction.
    SIEVE_THROW_IF_NOT(opt.upsert || snap->find(d.id) < 0,
                       "document id '" << d.id << "' is already in the index (upsert replaces it)");
    const int64_t held = find_stored(*snap, d.id);
    if (held >= 0) replaced.push_back(static_cast<uint32_t>(held));
  }
  std::sort(replaced.begin(), replaced.end());
  rep.note += "added to an index of " + std::to_string(m.documents) + " documents";
  // The snapshot, opened at this very commit, has checked the logs: the add does not again.
  Appended a = append_documents(s_->dir, m, docs, *snap->encoder(), opt, rep, /*logs_checked=*/true, replaced);
  s_->publish(extend_snapshot(*snap, m, std::move(a.vectors), a.keys));
  rep.replaced = replaced.size();
  rep.documents = m.documents - m.deleted;  // live: the replaced ones no longer count
  rep.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return rep;
}

BuildReport IndexWriter::upsert(const std::vector<Document>& docs, IndexBuildOptions opt) {
  opt.upsert = true;
  return add(docs, opt);
}

template <class Pick>
DeleteReport IndexWriter::delete_where(Pick&& pick) {
  std::lock_guard<std::mutex> writing(s_->write_mu);
  WriteLock lock(s_->dir);
  Manifest m = read_manifest(s_->dir, kManifestFile);
  std::shared_ptr<const Index> snap = s_->current(m, nullptr);
  DeleteReport rep;
  const std::vector<uint32_t> docs = pick(*snap, rep);
  if (!docs.empty()) {
    append_deletes(s_->dir, m, docs);
    commit_manifest(s_->dir, m);
    s_->publish(extend_snapshot(*snap, m, nullptr, {}));
  }
  rep.deleted = docs.size();
  rep.documents = m.documents - m.deleted;
  return rep;
}

DeleteReport IndexWriter::remove(const std::vector<std::string>& ids, bool missing_ok) {
  SIEVE_THROW_IF_NOT(!ids.empty(), "no ids to delete");
  if (s_->set)
    return s_->on_set([&](std::shared_ptr<const Index>& snap) { return shard_set_remove(s_->dir, snap, ids, missing_ok); });
  return delete_where([&](const Index& snap, DeleteReport& rep) { return resolve_deletes(snap, ids, missing_ok, rep); });
}

DeleteReport IndexWriter::remove_matching(const Filter& filter) {
  SIEVE_THROW_IF_NOT(!filter.empty(), "an empty filter matches every document; to delete a whole index remove its "
                                      "folder");
  if (s_->set)
    return s_->on_set([&](std::shared_ptr<const Index>& snap) { return shard_set_remove_matching(s_->dir, snap, filter); });
  return delete_where([&](const Index& snap, DeleteReport&) { return snap.matching(filter, 0); });
}

CompactReport IndexWriter::compact(const CompactOptions& opt) {
  if (s_->set)
    return compact_shard_set(s_->dir, opt, &s_->write_mu,
                             [this](std::shared_ptr<const Index> next) { s_->publish(std::move(next)); }, &s_->open);
  return compact_folder(s_->dir, opt, &s_->write_mu, [this] { s_->publish(Index::open(s_->dir, s_->open)); });
}

}  // namespace sieve
