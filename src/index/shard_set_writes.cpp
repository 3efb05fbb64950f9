// Writes to a shard set: add, upsert, delete and compaction, each one transaction over the shards
// it touches. Two phases: every shard the batch touches prepares its part (appends to its logs and
// BM25, and writes its next manifest, manifest.next.json, under its own write lock), then the set's
// manifest (shardset.json), naming each shard's new manifest by its checksum, is replaced in one
// rename: the commit. Last, each prepared shard's manifest.next.json is renamed to manifest.json.
// A crash before the commit leaves the set as it was (the next writer removes what was prepared);
// a crash after it leaves a set whose readers find each shard's recorded copy (find_recorded_shard)
// and whose next writer completes the renames (recover_shard_set). A compaction of one shard is the
// same with the compacted folder in place of the next manifest. docs/formats.md, "Writes to a
// shard set".
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "core/checksum.h"
#include "core/file_util.h"
#include "core/log.h"
#include "index/ingest.h"
#include "index/manifest.h"
#include "index/shard_set.h"
#include "index/write_lock.h"
#include "sieve/error.h"
#include "sieve/filter.h"
#include "sieve/index.h"

namespace sieve::index {
namespace fs = std::filesystem;

void (*shard_set_write_step)(const char* step) = nullptr;

size_t shard_of_new_id(const std::string& id, size_t shards) {
  SIEVE_THROW_IF_NOT(shards > 0, "a shard set has at least one shard");
  uint64_t h = 14695981039346656037ull;  // FNV-1a, 64 bits
  for (const unsigned char c : id) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return static_cast<size_t>(h % shards);
}

namespace {

void step(const char* name) {
  if (shard_set_write_step != nullptr) shard_set_write_step(name);
}

std::string crc_of(const std::string& path) { return crc32_hex(crc32_file(path)); }

// The set's manifest with shard `s`'s count and identity changed and every first id after it
// recomputed.
void record_shard(ShardSetManifest& m, size_t s, uint64_t documents, const std::string& identity) {
  m.shards[s].documents = documents;
  m.shards[s].manifest_crc = identity;
  uint64_t next = 0;
  for (ShardEntry& e : m.shards) {
    e.first = next;
    next += e.documents;
  }
  m.documents = next;
}

bool same_set(const ShardSetManifest& a, const ShardSetManifest& b) {
  if (a.documents != b.documents || a.shards.size() != b.shards.size()) return false;
  for (size_t i = 0; i < a.shards.size(); ++i)
    if (a.shards[i].manifest_crc != b.shards[i].manifest_crc || a.shards[i].dir != b.shards[i].dir) return false;
  return true;
}

// `dir`, when the set `snap` was opened with its shards' folders (a router that holds only the
// manifest cannot write: sieve::Error before anything is locked or touched).
const std::string& writable_set(const std::string& dir, const Index& snap) {
  SIEVE_THROW_IF_NOT(!reads_from_shards(snap), "this router holds only the shard set's manifest (its shards' folders are "
                                               "on the shard servers): write to the set where its folder is, then "
                                               "restart the shard servers");
  return dir;
}

// One set write: the set's lock, what an interrupted write left settled, the caller's snapshot
// brought to the set's latest commit, then each shard's part prepared and the whole committed
// (or, when the write fails before its commit, every prepared part discarded).
class SetWrite {
 public:
  SetWrite(const std::string& dir, std::shared_ptr<const Index>& snap)
      : dir_(writable_set(dir, *snap)), snap_(snap), lock_(dir) {
    recover_shard_set(dir);
    m_ = read_shard_set_manifest(dir);
    bool stale = !same_set(m_, shard_set_manifest_of(*snap_));
    for (size_t s = 0; !stale && s < m_.shards.size(); ++s)  // a snapshot taken mid-commit reads a copy beside
      stale = snapshot_dir(*shards_of(*snap_)[s]) != path_join(dir, m_.shards[s].dir);
    if (stale) {
      log_info("shard set '" + dir + "' changed since it was opened (another process wrote to it); reopening it");
      IndexOpenOptions o = shard_set_open_options(*snap_);
      o.encoder_instance = snap_->shared_encoder();
      snap_ = open_shard_set(dir, o);
      reopened_ = true;
    }
    shards_ = shards_of(*snap_);
  }
  ~SetWrite() {
    if (committed_) return;
    for (const Prepared& p : prepared_) {  // nothing of the batch stays: the next writer truncates the logs
      std::error_code ec;
      fs::remove(path_join(p.dir, kNextManifestFile), ec);
      if (!p.replaced_vectors.empty()) fs::remove(path_join(p.dir, p.m.vectors.file), ec);
    }
  }
  SetWrite(const SetWrite&) = delete;
  SetWrite& operator=(const SetWrite&) = delete;

  const Index& set() const { return *snap_; }
  const std::vector<std::shared_ptr<const Index>>& shards() const { return shards_; }
  const ShardSetManifest& manifest() const { return m_; }
  bool reopened() const { return reopened_; }

  // Shard `s`'s part of an add: its documents appended and its next manifest written.
  void prepare_add(size_t s, const std::vector<Document>& docs, std::vector<uint32_t> replaced,
                   const IndexBuildOptions& opt, BuildReport& rep) {
    Prepared& p = begin(s);
    std::sort(replaced.begin(), replaced.end());
    // The shard's snapshot was opened at this very commit (its identity is the set's record).
    Appended a = append_documents(p.dir, p.m, docs, *snap_->encoder(), opt, rep, /*logs_checked=*/true, replaced,
                                  kNextManifestFile);
    p.replaced_vectors = a.replaced_vectors;
    p.snapshot = remote() ? reopen(p) : extend_snapshot(*shards_[s], p.m, std::move(a.vectors), a.keys);
  }
  // Shard `s`'s part of a delete.
  void prepare_delete(size_t s, const std::vector<uint32_t>& docs) {
    Prepared& p = begin(s);
    append_deletes(p.dir, p.m, docs);
    commit_manifest(p.dir, p.m, kNextManifestFile);
    p.snapshot = remote() ? reopen(p) : extend_snapshot(*shards_[s], p.m, nullptr, {});
  }

  // The commit: the set's manifest names every prepared shard's next manifest; then the renames.
  // Returns the set's snapshot after the write.
  std::shared_ptr<const Index> commit() {
    ShardSetManifest next = m_;
    std::vector<std::shared_ptr<const Index>> shards = shards_;
    for (const Prepared& p : prepared_) {
      record_shard(next, p.shard, p.m.documents, crc_of(path_join(p.dir, kNextManifestFile)));
      shards[p.shard] = p.snapshot;
    }
    step("prepared");
    write_shard_set_manifest(dir_, next);  // the commit (one rename)
    committed_ = true;
    sync_dir(dir_);
    step("committed");
    for (const Prepared& p : prepared_) {  // what a reader or the next writer would otherwise complete
      try {
        SIEVE_THROW_IF_NOT(std::rename(path_join(p.dir, kNextManifestFile).c_str(),
                                       path_join(p.dir, kManifestFile).c_str()) == 0,
                           "cannot rename the manifest of '" << p.dir << "'");
        sync_dir(p.dir);
        if (!p.replaced_vectors.empty()) fs::remove(path_join(p.dir, p.replaced_vectors));
      } catch (const std::exception& e) {
        log_warn(std::string("the write is committed; its last step failed and the next writer completes it: ") +
                 e.what());
      }
    }
    m_ = next;
    snap_ = shard_set_snapshot(dir_, shard_set_open_options(*snap_), next, std::move(shards));
    return snap_;
  }

  // Live documents of the set after the write (the prepared shards' new counts).
  uint64_t live() const {
    uint64_t n = 0;
    for (size_t s = 0; s < shards_.size(); ++s) {
      const Manifest* m = &snapshot_manifest(*shards_[s]);
      for (const Prepared& p : prepared_)
        if (p.shard == s) m = &p.m;
      n += m->documents - m->deleted;
    }
    return n;
  }

 private:
  struct Prepared {
    size_t shard = 0;
    std::string dir;
    std::unique_ptr<WriteLock> lock;  // held until the set commits (or the write is given up)
    Manifest m;
    std::string replaced_vectors;  // the vector file the add replaced (removed after the commit)
    std::shared_ptr<const Index> snapshot;
  };

  Prepared& begin(size_t s) {
    Prepared p;
    p.shard = s;
    p.dir = path_join(dir_, m_.shards[s].dir);
    try {
      p.lock = std::make_unique<WriteLock>(p.dir);
    } catch (const Error& e) {
      SIEVE_THROW("shard '" << m_.shards[s].dir << "' of shard set '" << dir_ << "' cannot be written: " << e.what()
                            << "; nothing of the batch was written");
    }
    p.m = read_manifest(p.dir, kManifestFile);
    prepared_.push_back(std::move(p));
    return prepared_.back();
  }
  bool remote() const { return shard_set_open_options(*snap_).remote != nullptr; }
  // A remote set's shards are opened here without their vectors: opened again at the prepared state.
  std::shared_ptr<const Index> reopen(const Prepared& p) const {
    IndexOpenOptions o = shard_set_open_options(*snap_);
    o.remote = nullptr;
    o.load_vectors = false;
    o.encoder_instance = snap_->shared_encoder();
    o.verify = false;
    return open_index_at(p.dir, kNextManifestFile, o);
  }

  std::string dir_;
  std::shared_ptr<const Index>& snap_;
  WriteLock lock_;
  ShardSetManifest m_;
  std::vector<std::shared_ptr<const Index>> shards_;
  std::vector<Prepared> prepared_;
  bool committed_ = false, reopened_ = false;
};

std::string shard_list(const std::vector<size_t>& shards, const ShardSetManifest& m) {
  std::string out;
  for (size_t s : shards) out += (out.empty() ? "" : ", ") + m.shards[s].dir;
  return out;
}

// A compacted copy of shard `sd` the set never recorded: left by a compaction that died before
// its commit, unless one is running now (it holds the shard's compact.lock).
void discard_stale_compaction(const std::string& sd) {
  const std::string staged = sd + kCompactingSuffix;
  if (!is_dir(staged)) return;
  try {
    WriteLock only_one(sd, "compact.lock", "busy");
    log_info("discarding '" + staged + "', left by a compaction that did not commit");
    fs::remove_all(staged);
  } catch (const Error&) {  // a compaction is under way: its folder
  }
}

}  // namespace

void recover_shard_set(const std::string& dir) {
  const ShardSetManifest m = read_shard_set_manifest(dir);
  for (const ShardEntry& e : m.shards) {
    const std::string sd = path_join(dir, e.dir), next = path_join(sd, kNextManifestFile);
    const std::optional<RecordedShard> at = find_recorded_shard(dir, e);
    SIEVE_THROW_IF_NOT(at.has_value(), "shard '" << e.dir << "' of shard set '" << dir
                                               << "' is not the one the set was committed with (changed or replaced "
                                                  "since); rebuild the set");
    if (at->dir == sd && at->manifest == kManifestFile) {
      if (is_file(next)) {  // prepared by a write that never committed
        log_info("shard set '" + dir + "': discarding a write to shard '" + e.dir + "' that was not committed");
        fs::remove(next);
      }
      discard_stale_compaction(sd);
      continue;
    }
    log_info("shard set '" + dir + "': completing the committed write to shard '" + e.dir + "'");
    WriteLock shard_lock(sd);
    if (at->dir == sd) {  // the prepared manifest
      SIEVE_THROW_IF_NOT(std::rename(next.c_str(), path_join(sd, kManifestFile).c_str()) == 0,
                         "cannot rename '" << next << "' to complete a committed write");
      sync_dir(sd);
    } else {  // the compacted copy
      publish_dir(at->dir, sd);
    }
  }
}

BuildReport shard_set_add(const std::string& dir, std::shared_ptr<const Index>& snap, std::vector<Document> docs,
                          const IndexBuildOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  SIEVE_THROW_IF_NOT(!docs.empty(), "no documents to add");
  check_batch(docs);
  SetWrite w(dir, snap);
  const auto& shards = w.shards();
  const size_t n = shards.size();
  std::vector<std::vector<Document>> part(n);
  std::vector<std::vector<uint32_t>> replaced(n);
  size_t replacing = 0;
  for (Document& d : docs) {
    SIEVE_THROW_IF_NOT(opt.upsert || w.set().find(d.id) < 0,
                       "document id '" << d.id << "' is already in the index (upsert replaces it)");
    size_t owner = n;  // the shard that stores the id, else the hash's
    for (size_t s = 0; s < n && owner == n; ++s)
      if (const int64_t held = find_stored(*shards[s], d.id); held >= 0) {
        owner = s;
        replaced[s].push_back(static_cast<uint32_t>(held));
        ++replacing;
      }
    if (owner == n) owner = shard_of_new_id(d.id, n);
    part[owner].push_back(std::move(d));
  }
  BuildReport rep;
  if (w.reopened()) rep.note = "reopened (another process had written); ";
  std::vector<size_t> touched;
  for (size_t s = 0; s < n; ++s)
    if (!part[s].empty()) {
      w.prepare_add(s, part[s], replaced[s], opt, rep);
      touched.push_back(s);
    }
  rep.note += "added to a shard set of " + std::to_string(w.manifest().documents) + " documents (" +
              shard_list(touched, w.manifest()) + ")";
  snap = w.commit();
  rep.replaced = replacing;
  rep.documents = w.live();
  rep.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

namespace {

// Deletes what `pick` chooses in each shard (its own internal ids), in one set write.
template <class Pick>
DeleteReport set_delete(const std::string& dir, std::shared_ptr<const Index>& snap, Pick&& pick) {
  SetWrite w(dir, snap);
  DeleteReport rep;
  const std::vector<std::vector<uint32_t>> docs = pick(w.shards(), rep);
  for (size_t s = 0; s < docs.size(); ++s)
    if (!docs[s].empty()) {
      w.prepare_delete(s, docs[s]);
      rep.deleted += docs[s].size();
    }
  if (rep.deleted > 0) snap = w.commit();
  rep.documents = w.live();
  return rep;
}

}  // namespace

DeleteReport shard_set_remove(const std::string& dir, std::shared_ptr<const Index>& snap,
                              const std::vector<std::string>& ids, bool missing_ok) {
  SIEVE_THROW_IF_NOT(!ids.empty(), "no ids to delete");
  return set_delete(dir, snap, [&](const std::vector<std::shared_ptr<const Index>>& shards, DeleteReport& rep) {
    std::vector<std::vector<uint32_t>> docs(shards.size());
    std::map<std::string, size_t> absent;  // id -> shards that do not store it
    for (size_t s = 0; s < shards.size(); ++s) {
      DeleteReport r;
      docs[s] = resolve_deletes(*shards[s], ids, /*missing_ok=*/true, r);
      for (const std::string& id : r.missing) ++absent[id];
    }
    std::set<std::string> seen;
    for (const std::string& id : ids)
      if (seen.insert(id).second && absent[id] == shards.size()) rep.missing.push_back(id);
    if (!missing_ok) refuse_missing(rep.missing);
    return docs;
  });
}

DeleteReport shard_set_remove_matching(const std::string& dir, std::shared_ptr<const Index>& snap,
                                       const Filter& filter) {
  SIEVE_THROW_IF_NOT(!filter.empty(), "an empty filter matches every document; to delete a whole index remove its "
                                      "folder");
  return set_delete(dir, snap, [&](const std::vector<std::shared_ptr<const Index>>& shards, DeleteReport&) {
    std::vector<std::vector<uint32_t>> docs;
    for (const auto& sh : shards) docs.push_back(sh->matching(filter, 0));
    return docs;
  });
}

CompactReport compact_shard_set(const std::string& dir, const CompactOptions& opt, std::mutex* writer_mu,
                                const std::function<void(std::shared_ptr<const Index>)>& publish,
                                const IndexOpenOptions* open) {
  const auto t0 = std::chrono::steady_clock::now();
  {
    WriteLock lock(dir);
    recover_shard_set(dir);
  }
  const ShardSetManifest first = read_shard_set_manifest(dir);
  CompactReport rep;
  for (size_t s = 0; s < first.shards.size(); ++s) {
    const std::string sd = path_join(dir, first.shards[s].dir);
    const Manifest sm = read_manifest(sd, kManifestFile);
    if (sm.deleted == 0 && !sm.has_metadata) {  // nothing dead, nothing that expires: nothing to remove
      const uint64_t bytes = folder_bytes(sd);
      rep.bytes_before += bytes;
      rep.bytes_after += bytes;
      rep.documents_before += sm.documents;
      rep.documents += sm.documents;
      continue;
    }
    CompactHooks hooks;
    hooks.phase2_lock = [&dir]() -> std::shared_ptr<void> {
      auto lock = std::make_shared<WriteLock>(dir);
      recover_shard_set(dir);
      return lock;
    };
    hooks.before_swap = [&dir, s](const std::string& staging, const Manifest& done) {
      ShardSetManifest m = read_shard_set_manifest(dir);
      record_shard(m, s, done.documents, crc_of(path_join(staging, kManifestFile)));
      step("compact-prepared");
      write_shard_set_manifest(dir, m);
      sync_dir(dir);
      step("compact-committed");
    };
    const std::function<void()> after = [&] {
      if (!publish) return;
      IndexOpenOptions o = open != nullptr ? *open : IndexOpenOptions{};
      publish(open_shard_set(dir, o));
    };
    const CompactReport r = compact_folder(sd, opt, writer_mu, after, hooks);
    rep.bytes_before += r.bytes_before;
    rep.bytes_after += r.bytes_after;
    rep.documents_before += r.documents_before;
    rep.documents += r.documents;
    rep.removed += r.removed;
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace sieve::index
