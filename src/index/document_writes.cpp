// Writes that change documents rather than add them: the deletes log, the batch check every write
// makes, and delete by id or by filter from outside a server (`sieve index delete`). A delete is a
// record of internal ids in the deletes log, made durable and then committed by the manifest's
// rename: a reader sees all of a batch or none of it, and the documents stay on disk, invisible,
// until compaction rewrites the index without them.
#include <algorithm>
#include <cmath>
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

void commit_manifest(const std::string& dir, const Manifest& m) {
  write_manifest(dir, kManifestFile, m);
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
  if (!rep.missing.empty() && !missing_ok) {
    std::string list;
    for (size_t i = 0; i < rep.missing.size() && i < 5; ++i) list += (i ? ", '" : "'") + rep.missing[i] + "'";
    if (rep.missing.size() > 5) list += ", ...";
    SIEVE_THROW(rep.missing.size() << " of the ids to delete " << (rep.missing.size() == 1 ? "is" : "are")
                                   << " not in the index (" << list
                                   << "); nothing was deleted (missing_ok / --missing-ok deletes the rest)");
  }
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
  SIEVE_THROW_IF_NOT(!is_shard_set(dir), "'" << dir << "' is a shard set: deleting from one is not supported yet "
                                                    "(rebuild it without the documents)");
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

DeleteReport delete_documents(const std::string& dir, const std::vector<std::string>& ids, bool missing_ok) {
  SIEVE_THROW_IF_NOT(!ids.empty(), "no ids to delete");
  return delete_where(dir, [&](const Index& snap, DeleteReport& rep) {
    return resolve_deletes(snap, ids, missing_ok, rep);
  });
}

DeleteReport delete_matching(const std::string& dir, const Filter& filter) {
  SIEVE_THROW_IF_NOT(!filter.empty(), "an empty filter matches every document; to delete a whole index remove its "
                                      "folder");
  return delete_where(dir, [&](const Index& snap, DeleteReport&) { return snap.matching(filter, 0); });
}

}  // namespace sieve
