// Compaction (sieve/index.h, compact_index): the index rewritten without its deleted, replaced
// and expired documents, from what it stores (records copied byte for byte, keys read back, BM25
// indexed again from the stored texts, the vector index built again from the keys). Two phases:
// the survivors of a snapshot are written to `<dir>.compacting` with no lock held (searches and
// writes go on); then, under the write lock, what was committed meanwhile is carried over
// (documents added since, deletes since as a deletes log of the new index), and the two folders
// are exchanged in one step (renameat2), the commit.

#include <chrono>
#include <filesystem>
#include <mutex>

#include "core/file_util.h"
#include "core/log.h"
#include "index/corpus_store.h"
#include "index/doc_state.h"
#include "index/ingest.h"
#include "index/lexical_index.h"
#include "index/manifest.h"
#include "index/record_log.h"
#include "index/shard_set.h"
#include "index/vector_index.h"
#include "index/write_lock.h"
#include "sieve/error.h"
#include "sieve/index.h"

namespace sieve {
namespace fs = std::filesystem;
using namespace sieve::index;

namespace {

// The logs of the index at `dir` as manifest `m` commits them.
struct Source {
  Source(const std::string& dir, const Manifest& m)
      : corpus(dir, "corpus", "CORP", 0, m.corpus) {
    if (m.has_tokens) tokens = RecordLogReader(dir, "tokens", "TOKN", static_cast<uint32_t>(m.token_code_bytes), m.token_log);
    if (m.has_token_ids) token_ids = RecordLogReader(dir, "token_ids", "TKID", 4, m.token_ids);
    if (m.has_metadata) metadata = RecordLogReader(dir, "metadata", "META", 1, m.metadata);
  }
  RecordLogReader corpus, tokens, token_ids, metadata;
};

// The compacted index being written in `staging`.
class Target {
 public:
  Target(const std::string& staging, const Manifest& m, const std::string& dir) : staging_(staging), m_(m) {
    corpus_ = RecordLogWriter::create(staging, "corpus", "CORP", 0);
    if (m.has_tokens) {
      tokens_ = RecordLogWriter::create(staging, "tokens", "TOKN", static_cast<uint32_t>(m.token_code_bytes));
      fs::copy_file(path_join(dir, m.codec.file), path_join(staging, m.codec.file));
    }
    if (m.has_token_ids) token_ids_ = RecordLogWriter::create(staging, "token_ids", "TKID", 4);
    if (m.has_metadata) start_metadata();
    lexical_ = std::make_unique<XapianLexicalWriter>(path_join(staging, kLexicalDir));
  }

  // The metadata log, for documents that carry none so far (an index that gained metadata while
  // it was compacted).
  void start_metadata() {
    metadata_ = RecordLogWriter::create(staging_, "metadata", "META", 1);
    const std::string empty = encode_metadata_record(Document{});
    for (size_t i = 0; i < copied_; ++i) metadata_.append(empty.data(), empty.size());
    has_metadata_ = true;
  }

  // Copies document `doc` of `src` (whose manifest is `m`) with its key; returns its new id.
  uint32_t copy(const Source& src, const Manifest& m, uint32_t doc, const std::vector<float>& key) {
    if (m.has_metadata && !has_metadata_) start_metadata();
    const auto rec = src.corpus.record(doc);
    corpus_.append(rec.data, rec.size);
    const Document d = decode_document(rec.data, rec.size);
    if (m_.has_tokens) {
      const auto t = src.tokens.record(doc);
      tokens_.append(t.data, t.size);
      token_rows_ += t.size / m_.token_code_bytes;
    }
    if (m_.has_token_ids) {
      const auto t = src.token_ids.record(doc);
      token_ids_.append(t.data, t.size);
    }
    if (has_metadata_) {
      std::string meta = encode_metadata_record(Document{});
      if (m.has_metadata) {
        const auto r = src.metadata.record(doc);
        meta.assign(reinterpret_cast<const char*>(r.data), r.size);
      }
      metadata_.append(meta.data(), meta.size());
    }
    const auto id = static_cast<uint32_t>(copied_++);
    lexical_->put(id, d.title, d.text);
    keys_.insert(keys_.end(), key.begin(), key.end());
    if (copied_ % 8192 == 0) lexical_->commit();
    return id;
  }

  size_t copied() const { return copied_; }

  // Writes the vector index, makes everything durable, and returns the manifest to commit.
  Manifest finish(const Manifest& latest, const CompactOptions& opt, const std::vector<uint32_t>& deleted) {
    Manifest out = latest;
    out.documents = copied_;
    out.corpus = corpus_.sync();
    if (m_.has_tokens) out.token_log = tokens_.sync();
    out.tokens = token_rows_;
    if (m_.has_token_ids) out.token_ids = token_ids_.sync();
    out.has_metadata = has_metadata_;
    out.metadata = has_metadata_ ? metadata_.sync() : LogState{};
    lexical_->commit();
    lexical_.reset();
    FaissVectorIndex vectors(latest.vector_factory, latest.dim, opt.hnsw_ef_construction);
    if (copied_ > 0) {
      if (vectors.needs_training()) vectors.train(copied_, keys_.data());
      vectors.add(copied_, keys_.data());
    }
    out.vectors.file = "vectors." + std::to_string(copied_) + ".faiss";
    vectors.save(path_join(staging_, out.vectors.file));
    out.vectors = sum_file(staging_, out.vectors.file);
    out.vector_documents = copied_;
    out.keys_in_vectors = vectors.holds_exact_keys();
    out.keys_from = out.keys_in_vectors ? copied_ : 0;
    out.keys = LogState{};
    if (!out.keys_in_vectors) {  // the vector index cannot give them back exactly: a keys log
      RecordLogWriter keys = RecordLogWriter::create(staging_, "keys", "KEYS", static_cast<uint32_t>(latest.dim));
      for (size_t i = 0; i < copied_; ++i) keys.append(keys_.data() + i * latest.dim, latest.dim * sizeof(float));
      out.keys = keys.sync();
    }
    if (m_.has_tokens) out.codec = sum_file(staging_, m_.codec.file);
    out.has_deletes = false;
    out.deleted = 0;
    out.deletes = LogState{};
    append_deletes(staging_, out, deleted);
    return out;
  }

 private:
  std::string staging_;
  Manifest m_;
  RecordLogWriter corpus_, tokens_, token_ids_, metadata_;
  std::unique_ptr<XapianLexicalWriter> lexical_;
  bool has_metadata_ = false;
  size_t copied_ = 0;
  uint64_t token_rows_ = 0;
  std::vector<float> keys_;
};

std::unique_ptr<Index> open_plain(const std::string& dir, bool vectors) {
  IndexOpenOptions o;
  o.load_encoder = false;
  o.load_vectors = vectors;
  return Index::open(dir, o);
}

}  // namespace

namespace index {

uint64_t folder_bytes(const std::string& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec)) n += it->file_size(ec);
  return n;
}

CompactReport compact_folder(const std::string& dir_in, const CompactOptions& opt, std::mutex* writer_mu,
                             const std::function<void()>& after_swap, const CompactHooks& hooks) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string dir = fs::path(dir_in).lexically_normal().string();
  if (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  SIEVE_THROW_IF_NOT(is_dir(dir), "index '" << dir << "' does not exist");
  // One compaction at a time per index (the lock file goes with the old folder).
  WriteLock only_one(dir, "compact.lock",
                     "index '" + dir + "' is being compacted by another process or thread; try again when it is done");
  const std::string staging = dir + kCompactingSuffix;
  fs::remove_all(staging);  // what a crashed compaction left
  CompactReport rep;
  rep.bytes_before = folder_bytes(dir);
  const double now = clock_or(opt.now);
  // Phase 1: the survivors of a snapshot, with no lock held.
  const std::unique_ptr<Index> snap = open_plain(dir, true);
  const Manifest m = snapshot_manifest(*snap);
  fs::create_directories(staging);
  Target out(staging, m, dir);
  std::vector<int64_t> new_id(m.documents, -1);
  {
    const Source src(dir, m);
    for (uint32_t d = 0; d < m.documents; ++d)
      if (snap->live(d, now)) new_id[d] = out.copy(src, m, d, snap->key(d));
  }
  log_info("compaction: " + std::to_string(out.copied()) + " of " + std::to_string(m.documents) +
           " documents kept; carrying over what was written meanwhile");
  // Phase 2: under the locks, the writes committed since, then the exchange.
  std::unique_lock<std::mutex> in_process;
  if (writer_mu != nullptr) in_process = std::unique_lock<std::mutex>(*writer_mu);
  const std::shared_ptr<void> outer = hooks.phase2_lock ? hooks.phase2_lock() : nullptr;
  WriteLock lock(dir);
  const Manifest latest = read_manifest(dir, kManifestFile);
  std::vector<uint32_t> deleted;
  if (latest.documents != m.documents || latest.deleted != m.deleted || latest.has_deletes != m.has_deletes) {
    const std::unique_ptr<Index> now_snap = open_plain(dir, false);
    const Manifest& m2 = snapshot_manifest(*now_snap);
    const Source src(dir, m2);
    for (uint32_t d = static_cast<uint32_t>(m.documents); d < m2.documents; ++d)
      if (now_snap->live(d, now)) out.copy(src, m2, d, now_snap->key(d));
    for (uint32_t d = 0; d < m.documents; ++d)
      if (new_id[d] >= 0 && !now_snap->live(d, now)) deleted.push_back(static_cast<uint32_t>(new_id[d]));
  }
  const Manifest done = out.finish(latest, opt, deleted);
  write_manifest(staging, kManifestFile, done);
  sync_dir(staging);
  if (hooks.before_swap) hooks.before_swap(staging, done);
  rep.documents_before = latest.documents;
  rep.documents = done.documents - done.deleted;
  rep.removed = latest.documents - rep.documents;
  publish_dir(staging, dir);  // the commit: one exchange of the folders; the old one is removed
  if (after_swap) after_swap();
  rep.bytes_after = folder_bytes(dir);
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace index

CompactReport compact_index(const std::string& dir, const CompactOptions& opt) {
  if (is_shard_set(dir)) return index::compact_shard_set(dir, opt, nullptr, nullptr);
  return index::compact_folder(dir, opt, nullptr, nullptr);
}

}  // namespace sieve
