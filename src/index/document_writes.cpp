// Writes that change documents rather than add them: the deletes log, the batch check every write
// makes, and delete by id or by filter from outside a server (`sieve index delete`). A delete is a
// record of internal ids in the deletes log, made durable and then committed by the manifest's
// rename: a reader sees all of a batch or none of it, and the documents stay on disk, invisible,
// until compaction rewrites the index without them.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "core/file_util.h"
#include "index/doc_state.h"
#include "index/ingest.h"
#include "index/record_log.h"
#include "index/shard_set.h"
#include "index/write_lock.h"
#include "sieve/error.h"
#include "sieve/filter.h"
#include "sieve/index.h"
#include "text/utf8.h"

namespace sieve {
namespace index {

void commit_manifest(const std::string& dir, const Manifest& m, const std::string& name) {
  write_manifest(dir, name, m);
  sync_dir(dir);
}

void append_deletes(const std::string& dir, Manifest& m, const std::vector<uint32_t>& docs) {
  if (docs.empty()) return;
  RecordLogWriter w = m.has_deletes ? RecordLogWriter::reopen(dir, "deletes", "DELS", 4, m.deletes)
                                    : RecordLogWriter::create(dir, "deletes", "DELS", 4);
  const std::string rec = encode_delete_record(docs);
  w.append(rec.data(), rec.size());
  m.deletes = w.sync();
  m.has_deletes = true;
  m.deleted += docs.size();
}

void check_batch(std::vector<Document>& docs) {
  std::set<std::string> ids;
  for (size_t i = 0; i < docs.size(); ++i) {
    Document& d = docs[i];
    SIEVE_THROW_IF_NOT(!d.id.empty(), "document " << i << " has an empty id");
    for (const auto* f : {&d.id, &d.title, &d.text}) {
      const size_t bad = first_invalid_utf8(*f);
      SIEVE_THROW_IF_NOT(bad == std::string::npos, "document " << i << " ('" << (f == &d.id ? std::string("?") : d.id)
                                                               << "'): invalid UTF-8 at byte " << bad);
    }
    SIEVE_THROW_IF_NOT(ids.insert(d.id).second, "document id '" << d.id << "' appears twice in the batch");
    try {
      d.metadata = check_metadata(d.metadata);
    } catch (const Error& e) {
      SIEVE_THROW("document '" << d.id << "': " << e.what());
    }
    SIEVE_THROW_IF_NOT(std::isfinite(d.expires_at) && d.expires_at >= 0,
                       "document '" << d.id << "': expires_at must be a time after 1970 (seconds), not " << d.expires_at);
  }
}


void refuse_missing(const std::vector<std::string>& missing) {
  if (missing.empty()) return;
  std::string list;
  for (size_t i = 0; i < missing.size() && i < 5; ++i) list += (i ? ", '" : "'") + missing[i] + "'";
  if (missing.size() > 5) list += ", ...";
  SIEVE_THROW(missing.size() << " of the ids to delete " << (missing.size() == 1 ? "is" : "are")
                             << " not in the index (" << list
                             << "); nothing was deleted (missing_ok / --missing-ok deletes the rest)");
}

void check_not_a_shard(const std::string& dir) {
  namespace fs = std::filesystem;
  fs::path d = fs::absolute(fs::path(dir)).lexically_normal();
  if (!d.has_filename()) d = d.parent_path();
  const std::string set = d.parent_path().string(), name = d.filename().string();
  if (!is_shard_set(set)) return;
  for (const ShardEntry& e : read_shard_set_manifest(set).shards)
    SIEVE_THROW_IF_NOT(e.dir != name, "'" << dir << "' is a shard of the shard set '" << set
                                          << "': write through the set (a write to one shard alone would leave the "
                                             "set refusing it)");
}

std::vector<uint32_t> resolve_deletes(const Index& snap, const std::vector<std::string>& ids, bool missing_ok,
                                      DeleteReport& rep) {
  std::vector<uint32_t> docs;
  std::set<std::string> seen;
  for (const std::string& id : ids) {
    if (!seen.insert(id).second) continue;
    const int64_t d = find_stored(snap, id);
    if (d < 0) rep.missing.push_back(id);
    else docs.push_back(static_cast<uint32_t>(d));
  }
  if (!missing_ok) refuse_missing(rep.missing);
  std::sort(docs.begin(), docs.end());
  return docs;
}

}  // namespace index

using namespace sieve::index;

namespace {

// Deletes what `pick` chooses from the index at `dir`, under its write lock, at its latest commit.
template <class Pick>
DeleteReport delete_where(const std::string& dir, Pick&& pick) {
  SIEVE_THROW_IF_NOT(is_dir(dir), "index '" << dir << "' does not exist");
  check_not_a_shard(dir);
  WriteLock lock(dir);
  IndexOpenOptions o;
  o.load_encoder = false;
  o.load_vectors = false;
  const std::unique_ptr<Index> snap = Index::open(dir, o);
  Manifest m = snapshot_manifest(*snap);
  DeleteReport rep;
  const std::vector<uint32_t> docs = pick(*snap, rep);
  append_deletes(dir, m, docs);
  if (!docs.empty()) commit_manifest(dir, m);
  rep.deleted = docs.size();
  rep.documents = m.documents - m.deleted;
  return rep;
}

}  // namespace

// A shard set's snapshot for a delete (no encoder, no vectors).
static std::shared_ptr<const Index> set_for_delete(const std::string& dir) {
  IndexOpenOptions o;
  o.load_encoder = false;
  o.load_vectors = false;
  return Index::open(dir, o);
}

DeleteReport delete_documents(const std::string& dir, const std::vector<std::string>& ids, bool missing_ok) {
  SIEVE_THROW_IF_NOT(!ids.empty(), "no ids to delete");
  if (is_shard_set(dir)) {
    std::shared_ptr<const Index> snap = set_for_delete(dir);
    return shard_set_remove(dir, snap, ids, missing_ok);
  }
  return delete_where(dir, [&](const Index& snap, DeleteReport& rep) {
    return resolve_deletes(snap, ids, missing_ok, rep);
  });
}

DeleteReport delete_matching(const std::string& dir, const Filter& filter) {
  SIEVE_THROW_IF_NOT(!filter.empty(), "an empty filter matches every document; to delete a whole index remove its "
                                      "folder");
  if (is_shard_set(dir)) {
    std::shared_ptr<const Index> snap = set_for_delete(dir);
    return shard_set_remove_matching(dir, snap, filter);
  }
  return delete_where(dir, [&](const Index& snap, DeleteReport&) { return snap.matching(filter, 0); });
}

}  // namespace sieve
