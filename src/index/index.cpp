// Index::open and search: the read side of an index directory.
#include <xapian.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/file_util.h"
#include "core/omp_threads.h"
#include "core/log.h"
#include "index/corpus_store.h"
#include "index/doc_state.h"
#include "index/fusion.h"
#include "index/ingest.h"
#include "index/lexical_index.h"
#include "index/write_lock.h"
#include "index/manifest.h"
#include "index/shard_set.h"
#include "index/token_store.h"
#include "index/vector_index.h"
#include "model/packed_linear.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "sieve/model.h"

namespace sieve {
namespace fs = std::filesystem;
using namespace sieve::index;

namespace {

uint64_t bytes_under(const fs::path& p) {
  std::error_code ec;
  if (fs::is_regular_file(p, ec)) return fs::file_size(p, ec);
  uint64_t n = 0;
  for (auto it = fs::recursive_directory_iterator(p, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file(ec)) n += it->file_size(ec);
  return n;
}

class IndexImpl final : public Index {
 public:
  IndexImpl(const std::string& dir, const IndexOpenOptions& opt, const std::string& manifest = kManifestFile)
      : dir_(dir) {
    SIEVE_THROW_IF_NOT(is_dir(dir), "index '" << dir << "' does not exist");
    m_ = read_manifest(dir, manifest);
    check_file(dir, m_.vectors);
    if (opt.load_vectors) {
      vectors_ = std::make_shared<FaissVectorIndex>(path_join(dir, m_.vectors.file), m_.dim);
      check_vectors();
    }
    corpus_ = std::make_unique<CorpusStore>(dir, m_.corpus);
    open_logs();
    if (m_.vector_documents < m_.documents) {  // keys added since the vector file was written
      auto seg = std::make_shared<KeySegment>();
      seg->first = static_cast<uint32_t>(m_.vector_documents);
      seg->rows = m_.documents - m_.vector_documents;
      seg->keys.resize(seg->rows * m_.dim);
      for (size_t i = 0; i < seg->rows; ++i) read_key_record(seg->first + i, seg->keys.data() + i * m_.dim);
      tail_.push_back(std::move(seg));
    }
    if (opt.verify) verify();
    if (opt.load_encoder) load_encoder(opt);
    fill_stats();
  }

  // The snapshot after an add committed `m` (under the write lock): shares `prev`'s vector index
  // (or takes `rewritten`, when the add wrote the vector file anew), key tail, id map and encoder,
  // and reopens only the logs and BM25, so that it costs what the add added.
  IndexImpl(const IndexImpl& prev, const Manifest& m, std::shared_ptr<const FaissVectorIndex> rewritten,
            const std::vector<float>& added_keys)
      : dir_(prev.dir_), m_(m), encoder_(prev.encoder_) {
    SIEVE_THROW_IF_NOT(m_.dim == prev.m_.dim && m_.documents >= prev.m_.documents &&
                           added_keys.size() == (m_.documents - prev.m_.documents) * m_.dim,
                       "internal: a snapshot extended with keys that do not fit");
    if (rewritten) {
      vectors_ = std::move(rewritten);
      check_vectors();
    } else {
      SIEVE_THROW_IF_NOT(m_.vectors.file == prev.m_.vectors.file && m_.vector_documents == prev.m_.vector_documents,
                         "internal: the vector file changed without its index");
      vectors_ = prev.vectors_;
      tail_ = prev.tail_;
      if (!added_keys.empty()) {
        auto seg = std::make_shared<KeySegment>();
        seg->first = static_cast<uint32_t>(prev.m_.documents);
        seg->rows = m_.documents - prev.m_.documents;
        seg->keys = added_keys;
        tail_.push_back(std::move(seg));
      }
      if (tail_.size() > 16) {  // one segment again: a copy of the tail, once every 16 adds
        auto all = std::make_shared<KeySegment>();
        all->first = tail_.front()->first;
        for (const auto& t : tail_) {
          all->rows += t->rows;
          all->keys.insert(all->keys.end(), t->keys.begin(), t->keys.end());
        }
        tail_.assign(1, std::move(all));
      }
    }
    corpus_ = std::make_unique<CorpusStore>(dir_, m_.corpus, *prev.corpus_);
    open_logs(&prev);
    fill_stats();
  }

  const IndexStats& stats() const override { return stats_; }
  const Manifest& manifest() const { return m_; }
  const std::string& dir() const { return dir_; }
  const XapianLexicalIndex& lexical() const {
    SIEVE_THROW_IF_NOT(lexical_ != nullptr, "this index has no BM25 database");
    return *lexical_;
  }
  size_t size() const override { return m_.documents; }
  Document document(uint32_t doc) const override {
    Document d = corpus_->get(doc);
    if (meta_) {
      const auto r = meta_->record(doc);
      decode_metadata_record(r.data, r.size, &d.metadata, &d.expires_at);
    }
    return d;
  }
  // The latest document of an id (an upsert appends the new one), when it is live.
  int64_t find(const std::string& id) const override {
    const int64_t doc = corpus_->find(id);
    return doc >= 0 && state_->live(static_cast<uint32_t>(doc), 0) ? doc : -1;
  }
  int64_t find_stored(const std::string& id) const {
    const int64_t doc = corpus_->find(id);
    return doc >= 0 && !state_->deleted(static_cast<uint32_t>(doc)) ? doc : -1;
  }
  bool live(uint32_t doc, double now) const override { return doc < m_.documents && state_->live(doc, now); }
  std::vector<uint32_t> matching(const Filter& filter, double now) const override {
    return state_->matching(filter, now);
  }
  /// The documents a search with `p` may return (null: all of them).
  std::shared_ptr<const Bitmap> allowed(const SearchParams& p) const { return state_->allowed(p.filter, p.now); }
  const DocState& doc_state() const { return *state_; }
  const Encoder* encoder() const override { return encoder_.get(); }
  std::shared_ptr<const Encoder> shared_encoder() const override { return encoder_; }

  std::vector<float> key(uint32_t doc) const override {
    SIEVE_THROW_IF_NOT(doc < m_.documents, "document " << doc << " is out of range (the index holds " << m_.documents << ")");
    std::vector<float> k(m_.dim);
    if (doc < m_.keys_from) {  // keys_in_vectors: only there
      SIEVE_THROW_IF_NOT(vectors_ != nullptr, "index '" << dir_ << "' was opened without its vectors: no key of document " << doc);
      vectors_->reconstruct(doc, k.data());
    }
    else read_key_record(doc, k.data());
    return k;
  }

  using Index::tokens;
  TokenStates tokens(uint32_t doc, size_t max_rows) const override {
    SIEVE_THROW_IF_NOT(tokens_ != nullptr, "index '" << dir_ << "' was built without a token store (--no-tokens)");
    return tokens_->get(doc, max_rows);
  }

  std::vector<int32_t> token_ids(uint32_t doc) const override {
    if (m_.has_token_ids) {  // stored beside the token states
      auto r = token_ids_.record(doc);
      const size_t stored = tokens_ ? tokens_->length(doc) : 0;
      SIEVE_THROW_IF_NOT(r.size == stored * sizeof(int32_t), "document " << doc << " has " << r.size / sizeof(int32_t)
                                                                   << " stored token ids for " << stored
                                                                   << " token states (damaged index)");
      std::vector<int32_t> ids(stored);
      std::memcpy(ids.data(), r.data, r.size);
      return ids;
    }
    SIEVE_THROW_IF_NOT(encoder_ != nullptr, "token ids need the index's encoder (opened without one)");
    EncodeOptions eo;
    eo.max_length = encoder_->max_length();
    std::vector<int32_t> ids = encoder_->tokenizer().encode(encoder_text(document(doc)), eo).ids;
    const size_t stored = tokens_ ? tokens_->length(doc) : 0;
    SIEVE_THROW_IF_NOT(ids.size() == stored, "document " << doc << " gives " << ids.size() << " tokens, the token store holds "
                                                         << stored << " (damaged index)");
    return ids;
  }

  SearchResult search(const std::string& query, const SearchParams& p) const override {
    return std::move(search_batch({query}, p)[0]);
  }

  std::vector<SearchResult> search_batch(const std::vector<std::string>& queries,
                                         const SearchParams& p) const override {
    SearchPlan plan = plan_search(encoder_.get(), queries, p, m_.documents);
    const size_t n = queries.size(), depth = plan.depth;
    Embeddings& e = plan.queries;
    std::vector<SearchResult> out(n);
    std::vector<Ranked> dls(n);
    const std::shared_ptr<const Bitmap> allowed = this->allowed(p);
    if (plan.dense && n > 0) dls = dense_lists(n, e.pooled.data(), depth, p, allowed.get());
    for (size_t q = 0; q < n; ++q) {
      Ranked bl;
      if (plan.lexical) bl = lexical_->search(queries[q], depth, static_cast<uint32_t>(m_.documents), allowed.get());
      out[q] = result_from_lists(dls[q], bl, p, e, q);
      for (Hit& h : out[q].hits) h.id = corpus_->id(h.doc);
    }
    return out;
  }

  // The dense lists of `n` pooled queries: the best `depth` documents of each (vector index and
  // key tail), by score, equal scores lower document first.
  //
  // Exact (Flat) search scores every candidate again with inner_product(): from 20 queries at a
  // time FAISS scores through BLAS, whose blocking depends on the number of keys, so the same
  // pair could score an ulp apart in a shard and in the whole index. A few candidates past
  // `depth` are fetched so that the cut at `depth` is made on the rescored values.
  //
  // With `allowed` (a filter, deleted or expired documents), only those documents: an exact scan
  // of them when they are few (or the index is Flat), else the vector index's own search limited
  // to them (filtered_dense_lists).
  std::vector<Ranked> dense_lists(size_t n, const float* pooled, size_t depth, const SearchParams& p,
                                  const Bitmap* allowed) const {
    constexpr size_t kRescoreMargin = 16;
    SIEVE_THROW_IF_NOT(vectors_ != nullptr, "index '" << dir_ << "' was opened without its vectors: no dense search");
    const bool exact = m_.vector_factory == "Flat";
    // A filter every document passes (nothing deleted or expired) searches as no filter does.
    if (allowed != nullptr && allowed->count() < m_.documents)
      return filtered_dense_lists(n, pooled, depth, p, *allowed, exact);
    const size_t fetch = exact ? depth + kRescoreMargin : depth;
    std::vector<int64_t> labels(n * fetch);
    std::vector<float> scores(n * fetch);
    VectorSearchParams vp;
    vp.k = fetch;
    vp.ef_search = p.ef_search;
    vp.nprobe = p.nprobe;
    vectors_->search(n, pooled, vp, labels.data(), scores.data());
    if (exact) {
      const int64_t in_file = static_cast<int64_t>(vectors_->size());
      std::vector<float> key(m_.dim);
      for (size_t q = 0; q < n; ++q)
        for (size_t j = 0; j < fetch; ++j) {
          const int64_t l = labels[q * fetch + j];
          if (l < 0 || l >= in_file) continue;
          vectors_->reconstruct(static_cast<size_t>(l), key.data());
          scores[q * fetch + j] = inner_product(pooled + q * m_.dim, key.data(), m_.dim);
        }
    }
    if (!tail_.empty()) merge_tail(n, pooled, fetch, labels.data(), scores.data());
    std::vector<Ranked> out(n);
    for (size_t q = 0; q < n; ++q) {
      Ranked& dl = out[q];
      for (size_t j = 0; j < fetch; ++j) {
        int64_t l = labels[q * fetch + j];
        if (l >= 0 && static_cast<uint64_t>(l) < m_.documents) dl.emplace_back(static_cast<uint32_t>(l), scores[q * fetch + j]);
      }
      // FAISS leaves the order of equal scores open; a shard set merging lists needs one order.
      std::stable_sort(dl.begin(), dl.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
      });
      if (dl.size() > depth) dl.resize(depth);
    }
    return out;
  }

 private:
  // The keys of `docs` (ascending) in place: the vector file's storage, else the tail; null for a
  // key the vector index cannot give in place (then reconstructed into `spare`).
  std::vector<const float*> key_pointers(const std::vector<uint32_t>& docs, std::vector<float>& spare) const {
    std::vector<const float*> out(docs.size(), nullptr);
    std::vector<size_t> rebuild;
    size_t seg = 0;
    for (size_t i = 0; i < docs.size(); ++i) {
      const uint32_t d = docs[i];
      if (d < m_.vector_documents) {
        out[i] = vectors_->stored_key(d);
        if (out[i] == nullptr) rebuild.push_back(i);
        continue;
      }
      while (seg < tail_.size() && d >= tail_[seg]->first + tail_[seg]->rows) ++seg;
      SIEVE_THROW_IF_NOT(seg < tail_.size() && d >= tail_[seg]->first, "internal: no key for document " << d);
      out[i] = tail_[seg]->keys.data() + (d - tail_[seg]->first) * m_.dim;
    }
    spare.resize(rebuild.size() * m_.dim);
    for (size_t j = 0; j < rebuild.size(); ++j) {
      vectors_->reconstruct(docs[rebuild[j]], spare.data() + j * m_.dim);
      out[rebuild[j]] = spare.data() + j * m_.dim;
    }
    return out;
  }

  // The planner's switch, from bench/bench_filter.py (100,000 MiniLM keys, one thread): an exact
  // scan costs about 0.1 us per allowed key (0.2 ms at 3,000, 1.1 ms at 10,000); the filtered walk
  // (index/filtered_hnsw.h, ef 20) grows as allowed keys get rarer (0.41 ms at 10 %, 0.64 ms at
  // 6 %, 1.1 ms at 3 %). They meet near 6 to 8 % of 100,000; the rule 80 x documents^0.375
  // (about 6,000 of 100,000; 19,000 of 1,000,000) grows slower than the index, as the walk's cost
  // at a given share grows only with the graph's depth.
  static bool scan_is_cheaper(size_t allowed, size_t documents) {
    return static_cast<double>(allowed) <= 80.0 * std::pow(static_cast<double>(documents), 0.375);
  }
  std::vector<Ranked> filtered_dense_lists(size_t n, const float* pooled, size_t depth, const SearchParams& p,
                                           const Bitmap& allowed, bool exact) const {
    std::vector<Ranked> out(n);
    const size_t pass = allowed.count();
    if (pass == 0 || depth == 0) return out;
    auto better = [](const std::pair<uint32_t, double>& a, const std::pair<uint32_t, double>& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    };
    const bool scan = exact || p.filter_plan == FilterPlan::Scan ||
                      (p.filter_plan == FilterPlan::Auto && scan_is_cheaper(pass, m_.documents));
    if (scan) {
      const std::vector<uint32_t> docs = allowed.ones();
      std::vector<float> spare;
      const std::vector<const float*> keys = key_pointers(docs, spare);
      std::vector<float> scores(n * docs.size());
      for (size_t i = 0; i < docs.size(); ++i)
        for (size_t q = 0; q < n; ++q) scores[q * docs.size() + i] = inner_product(pooled + q * m_.dim, keys[i], m_.dim);
      for (size_t q = 0; q < n; ++q) {
        Ranked& dl = out[q];
        dl.resize(docs.size());
        for (size_t i = 0; i < docs.size(); ++i) dl[i] = {docs[i], scores[q * docs.size() + i]};
        const size_t keep = std::min(depth, dl.size());
        std::partial_sort(dl.begin(), dl.begin() + static_cast<std::ptrdiff_t>(keep), dl.end(), better);
        dl.resize(keep);
      }
      return out;
    }
    // The vector file's documents through the index, limited to the allowed ones (HNSW over exact
    // keys: a walk counting only them against ef, index/filtered_hnsw.h); the tail's by a scan.
    // The tail's documents listed; the file's only counted (its bits go to the search as they are).
    const std::vector<uint32_t> tail_docs = allowed.ones(m_.vector_documents);
    const size_t in_file = pass - tail_docs.size();
    VectorSearchParams vp;
    vp.k = depth;
    vp.nprobe = p.nprobe;
    vp.allowed = allowed.bytes();
    vp.allowed_bits = std::min<size_t>(allowed.size(), m_.vector_documents);
    vp.ef_search = p.ef_search;  // 0: the vector index's default for a filtered search
    vp.allowed_count = in_file;
    std::vector<int64_t> labels(n * depth, -1);
    std::vector<float> scores(n * depth, 0.0f);
    if (in_file > 0) vectors_->search(n, pooled, vp, labels.data(), scores.data());
    std::vector<float> spare;
    const std::vector<const float*> tail_keys = key_pointers(tail_docs, spare);
    for (size_t q = 0; q < n; ++q) {
      Ranked& dl = out[q];
      for (size_t j = 0; j < depth; ++j) {
        const int64_t l = labels[q * depth + j];
        if (l >= 0 && static_cast<uint64_t>(l) < m_.vector_documents && allowed.test(static_cast<size_t>(l)))
          dl.emplace_back(static_cast<uint32_t>(l), scores[q * depth + j]);
      }
      for (size_t i = 0; i < tail_docs.size(); ++i)
        dl.emplace_back(tail_docs[i], inner_product(pooled + q * m_.dim, tail_keys[i], m_.dim));
      const size_t keep = std::min(depth, dl.size());
      std::partial_sort(dl.begin(), dl.begin() + static_cast<std::ptrdiff_t>(keep), dl.end(), better);
      dl.resize(keep);
    }
    return out;
  }

  void verify() const {
    corpus_->verify();
    if (meta_) meta_->verify_data();
    if (m_.has_deletes) deletes_.verify_data();
    if (m_.keys_from < m_.documents) keys_.verify_data();
    if (m_.has_token_ids) token_ids_.verify_data();
    if (tokens_) tokens_->verify();
    std::ostringstream report;
    size_t errors = 0;
    try {
      errors = Xapian::Database::check(path_join(dir_, kLexicalDir), Xapian::DBCHECK_SHORT_TREE, &report);
    } catch (const Xapian::Error& e) {
      SIEVE_THROW("the lexical index is damaged: " << e.get_description());
    }
    SIEVE_THROW_IF_NOT(errors == 0, "the lexical index is damaged (" << errors << " errors)");
  }

  void load_encoder(const IndexOpenOptions& opt) { encoder_ = load_index_encoder(m_, dir_, opt); }

  void fill_stats() {
    const std::string codec_file = m_.codec.file.empty() ? kCodecFile : m_.codec.file;
    stats_.documents = m_.documents;
    stats_.dim = m_.dim;
    stats_.tokens = m_.tokens;
    stats_.vector_factory = m_.vector_factory;
    stats_.token_codec = m_.has_tokens ? m_.token_codec : "none";
    stats_.token_code_bytes = m_.token_code_bytes;
    stats_.model_identity = m_.model_identity;
    stats_.key_grid = m_.key_grid;
    stats_.model_path = m_.model_path;
    std::vector<std::string> parts = {kManifestFile, "corpus.dat", "corpus.idx", m_.vectors.file, kLexicalDir};
    if (m_.keys_from < m_.documents) parts.insert(parts.end(), {"keys.dat", "keys.idx"});
    if (m_.has_tokens) parts.insert(parts.end(), {"tokens.dat", "tokens.idx", codec_file});
    if (m_.has_token_ids) parts.insert(parts.end(), {"token_ids.dat", "token_ids.idx"});
    if (m_.has_metadata) parts.insert(parts.end(), {"metadata.dat", "metadata.idx"});
    if (m_.has_deletes) parts.insert(parts.end(), {"deletes.dat", "deletes.idx"});
    stats_.deleted = m_.deleted;
    stats_.has_metadata = m_.has_metadata;
    for (const auto& f : parts) {
      uint64_t b = bytes_under(fs::path(dir_) / f);
      stats_.file_bytes.emplace_back(f, b);
      stats_.bytes_on_disk += b;
    }
  }

  void check_vectors() const {
    SIEVE_THROW_IF_NOT(vectors_->size() == m_.vector_documents, "'" << m_.vectors.file << "' holds " << vectors_->size()
                                                                    << " vectors, the manifest says "
                                                                    << m_.vector_documents << " (damaged index)");
  }

  // The keys log (when there is one), the token store and BM25, at the manifest's state; after an
  // add, the logs are checked from where `prev`'s readers left off.
  void open_logs(const IndexImpl* prev = nullptr) {
    if (m_.keys_from < m_.documents) {
      if (prev != nullptr && prev->m_.keys_from < prev->m_.documents && prev->m_.keys_from == m_.keys_from)
        keys_ = RecordLogReader(dir_, "keys", "KEYS", static_cast<uint32_t>(m_.dim), m_.keys, prev->keys_);
      else
        keys_ = RecordLogReader(dir_, "keys", "KEYS", static_cast<uint32_t>(m_.dim), m_.keys);
    }
    if (m_.has_tokens)
      tokens_ = prev != nullptr && prev->tokens_ ? std::make_unique<TokenStore>(dir_, m_, *prev->tokens_)
                                                 : std::make_unique<TokenStore>(dir_, m_);
    if (m_.has_token_ids)
      token_ids_ = prev != nullptr && prev->m_.has_token_ids
                       ? RecordLogReader(dir_, "token_ids", "TKID", 4, m_.token_ids, prev->token_ids_)
                       : RecordLogReader(dir_, "token_ids", "TKID", 4, m_.token_ids);
    if (m_.has_metadata)
      meta_ = prev != nullptr && prev->meta_
                  ? std::make_shared<const RecordLogReader>(dir_, "metadata", "META", 1, m_.metadata, *prev->meta_)
                  : std::make_shared<const RecordLogReader>(dir_, "metadata", "META", 1, m_.metadata);
    if (m_.has_deletes)
      deletes_ = prev != nullptr && prev->m_.has_deletes
                     ? RecordLogReader(dir_, "deletes", "DELS", 4, m_.deletes, prev->deletes_)
                     : RecordLogReader(dir_, "deletes", "DELS", 4, m_.deletes);
    const RecordLogReader* dels = m_.has_deletes ? &deletes_ : nullptr;
    state_ = prev != nullptr ? std::make_shared<const DocState>(*prev->state_, m_.documents, meta_, dels)
                             : std::make_shared<const DocState>(m_.documents, meta_, dels);
    SIEVE_THROW_IF_NOT(state_->deleted_count() == m_.deleted, "the deletes log removes " << state_->deleted_count()
                                                                << " documents, the manifest says " << m_.deleted
                                                                << " (damaged index)");
    lexical_ = std::make_unique<XapianLexicalIndex>(path_join(dir_, kLexicalDir));
    SIEVE_THROW_IF_NOT(lexical_->doc_count() >= m_.documents,
                       "the lexical index holds " << lexical_->doc_count() << " documents, the manifest says "
                                                  << m_.documents << " (damaged index)");
  }

  void read_key_record(uint64_t doc, float* out) const {
    auto r = keys_.record(doc - m_.keys_from);
    SIEVE_THROW_IF_NOT(r.size == m_.dim * sizeof(float), "key record " << doc << " has the wrong size (damaged)");
    std::memcpy(out, r.data, r.size);
  }

  // Adds the tail's keys (searched exactly) to the vector index's lists of `n` queries: each list
  // becomes the best `depth` of both, by score, ties to the lower document.
  void merge_tail(size_t n, const float* queries, size_t depth, int64_t* labels, float* scores) const {
    const size_t dim = m_.dim;
    std::vector<std::pair<float, int64_t>> cand;
    for (size_t q = 0; q < n; ++q) {
      const float* x = queries + q * dim;
      cand.clear();
      for (size_t j = 0; j < depth; ++j)
        if (labels[q * depth + j] >= 0) cand.emplace_back(scores[q * depth + j], labels[q * depth + j]);
      for (const auto& seg : tail_)
        for (size_t r = 0; r < seg->rows; ++r)
          cand.emplace_back(inner_product(x, seg->keys.data() + r * dim, dim), static_cast<int64_t>(seg->first + r));
      const size_t keep = std::min(depth, cand.size());
      auto better = [](const std::pair<float, int64_t>& a, const std::pair<float, int64_t>& b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
      };
      std::partial_sort(cand.begin(), cand.begin() + static_cast<std::ptrdiff_t>(keep), cand.end(), better);
      for (size_t j = 0; j < depth; ++j) {
        labels[q * depth + j] = j < keep ? cand[j].second : -1;
        scores[q * depth + j] = j < keep ? cand[j].first : 0.0f;
      }
    }
  }

  // Keys added since the vector file was written (immutable; shared with later snapshots).
  struct KeySegment {
    uint32_t first = 0;  // document of the first row
    size_t rows = 0;
    std::vector<float> keys;  // rows x dim
  };

  std::string dir_;
  Manifest m_;
  IndexStats stats_;
  std::unique_ptr<CorpusStore> corpus_;
  RecordLogReader keys_;  // documents [keys_from, documents): checked at open, read by key() and verify
  RecordLogReader token_ids_;  // when the index keeps them: the ids of each document's token rows
  std::shared_ptr<const RecordLogReader> meta_;  // when documents carry metadata or expiry
  RecordLogReader deletes_;                      // when some batch deleted documents
  std::shared_ptr<const DocState> state_;        // deletions, expiry, metadata columns
  std::unique_ptr<TokenStore> tokens_;
  std::shared_ptr<const FaissVectorIndex> vectors_;  // documents [0, vector_documents)
  std::vector<std::shared_ptr<const KeySegment>> tail_;  // documents [vector_documents, documents)
  std::unique_ptr<XapianLexicalIndex> lexical_;

  // Documents of an add killed before its manifest was committed may stay in the BM25 database
  // (past m_.documents): searches skip them, and the next writer removes them (open_writer
  // truncates). A reader never writes: many processes may open one index (or one shard set) while
  // another adds, and the leftovers' weight on the BM25 statistics lasts only until that add.
  std::shared_ptr<const Encoder> encoder_;
};

}  // namespace

namespace index {

std::shared_ptr<const Index> extend_snapshot(const Index& prev, const Manifest& m,
                                             std::shared_ptr<const FaissVectorIndex> rewritten,
                                             const std::vector<float>& added_keys) {
  const auto* impl = dynamic_cast<const IndexImpl*>(&prev);
  SIEVE_THROW_IF_NOT(impl != nullptr, "internal: not an index of this library");
  return std::make_shared<IndexImpl>(*impl, m, std::move(rewritten), added_keys);
}

// The encoder an index (or a shard set's router) searches with: the given one, checked, or the
// model its manifest records (or opt.model_dir), checked against the recorded identity and grid.
std::shared_ptr<const Encoder> load_index_encoder(const Manifest& m, const std::string& dir,
                                                const IndexOpenOptions& opt) {
  if (opt.encoder_instance) {
    SIEVE_THROW_IF_NOT(opt.encoder_instance->dim() == m.dim, "the given encoder's dimension differs from the index's");
    const std::string grid = opt.encoder_instance->key_grid();
    SIEVE_THROW_IF_NOT(int8_levels_of_grid(grid) == 0 || int8_levels_of_grid(m.key_grid) == 0 ||
                           key_grids_agree(m.key_grid, grid),
                       "the given encoder computes " << grid << " keys, but index '" << dir << "' holds "
                                                     << m.key_grid << " keys: load it on that grid "
                                                     << "(EncoderOptions::int8_levels) or use fp32");
    return opt.encoder_instance;
  }
  // A given model may be an installed name (sieve model list) or a folder.
  std::string model = opt.model_dir.empty() ? m.model_path : resolve_model_dir(opt.model_dir);
  SIEVE_THROW_IF_NOT(is_dir(model), "the model '" << model << "' this index was built with is not there; pass the "
                                                  << "model (a name or folder: --model)");
  std::string identity = model_identity_like(model, m.model_identity);
  SIEVE_THROW_IF_NOT(identity == m.model_identity,
                     "the model at '" << model << "' is not the one index '" << dir << "' was built with (identity "
                                      << identity << ", the index records " << m.model_identity
                                      << "); use that model or rebuild the index");
  EncoderOptions eo = opt.encoder;
  eo.pooling = pooling_from_name(m.pooling);
  eo.max_length = m.max_length;
  // int8 queries run on the grid the index's int8 keys were built on (127 or 63 weight levels,
  // which depends on the building CPU), so that they meet the keys' own arithmetic.
  take_key_grid(m, eo);
  SIEVE_THROW_IF_NOT(eo.precision != Precision::Int8 || eo.int8_levels != 127 || PackedLinear::cpu_has_vnni(),
                     "index '" << dir << "' holds " << m.key_grid << " keys, and int8 queries must use that grid, "
                               << "which needs a CPU with VNNI; this one has none (search it with --precision fp32, "
                               << "or rebuild it on this CPU)");
  std::shared_ptr<const Encoder> encoder = Encoder::load(model, eo);
  SIEVE_THROW_IF_NOT(encoder->dim() == m.dim, "the model's dimension differs from the index's");
  // int8 queries must meet the keys' whole recipe: the weight grid (taken above) and the
  // attention's arithmetic, which this CPU decides (bf16 products or not).
  if (eo.precision == Precision::Int8 && int8_levels_of_grid(m.key_grid) > 0)
    SIEVE_THROW_IF_NOT(key_grids_agree(m.key_grid, encoder->key_grid()),
                       "index '" << dir << "' holds " << m.key_grid << " keys, but int8 queries on this CPU compute "
                                 << encoder->key_grid() << " (another attention arithmetic: bf16 attention needs a "
                                 << "CPU with bf16 products); search it with --precision fp32, or rebuild it on this CPU");
  return encoder;
}

std::vector<Ranked> dense_lists(const Index& shard, size_t n, const float* pooled, size_t depth,
                                const SearchParams& p) {
  const auto* impl = dynamic_cast<const IndexImpl*>(&shard);
  SIEVE_THROW_IF_NOT(impl != nullptr, "internal: not an index of this library");
  const std::shared_ptr<const Bitmap> allowed = impl->allowed(p);
  return impl->dense_lists(n, pooled, depth, p, allowed.get());
}

Bm25Stats bm25_stats(const Index& shard, const std::vector<std::string>& terms) {
  const auto* impl = dynamic_cast<const IndexImpl*>(&shard);
  SIEVE_THROW_IF_NOT(impl != nullptr, "internal: not an index of this library");
  return impl->lexical().stats(terms);
}

std::vector<Ranked> bm25_lists(const Index& shard, const std::vector<Bm25Query>& queries, uint64_t documents,
                               uint64_t total_length, size_t depth, const SearchParams& p) {
  const auto* impl = dynamic_cast<const IndexImpl*>(&shard);
  SIEVE_THROW_IF_NOT(impl != nullptr, "internal: not an index of this library");
  const std::shared_ptr<const Bitmap> allowed = impl->allowed(p);
  std::vector<Ranked> out;
  for (const Bm25Query& q : queries)
    out.push_back(impl->lexical().search_global(q, documents, total_length, depth,
                                                static_cast<uint32_t>(shard.size()), allowed.get()));
  return out;
}

std::shared_ptr<const Bitmap> allowed_documents(const Index& shard, const SearchParams& p) {
  const auto* impl = dynamic_cast<const IndexImpl*>(&shard);
  SIEVE_THROW_IF_NOT(impl != nullptr, "internal: not an index of this library");
  return impl->allowed(p);
}

int64_t find_stored(const Index& snapshot, const std::string& id) {
  const auto* impl = dynamic_cast<const IndexImpl*>(&snapshot);
  SIEVE_THROW_IF_NOT(impl != nullptr, "internal: not an index of this library");
  return impl->find_stored(id);
}

std::unique_ptr<Index> open_index_at(const std::string& dir, const std::string& manifest, const IndexOpenOptions& opt) {
  return std::make_unique<IndexImpl>(dir, opt, manifest);
}

const std::string& snapshot_dir(const Index& snapshot) {
  const auto* impl = dynamic_cast<const IndexImpl*>(&snapshot);
  SIEVE_THROW_IF_NOT(impl != nullptr, "internal: not an index of this library");
  return impl->dir();
}

const Manifest& snapshot_manifest(const Index& snapshot) {
  const auto* impl = dynamic_cast<const IndexImpl*>(&snapshot);
  SIEVE_THROW_IF_NOT(impl != nullptr, "internal: not an index of this library");
  return impl->manifest();
}

}  // namespace index

std::unique_ptr<Index> Index::open(const std::string& dir, const IndexOpenOptions& opt) {
  if (is_shard_set(dir)) return index::open_shard_set(dir, opt);
  SIEVE_THROW_IF_NOT(opt.remote == nullptr, "'" << dir << "' is not a shard set: only a shard set's shards can be served remotely");
  // An add may commit while we open (it replaces the manifest, then deletes the old vector
  // file): when opening fails and the manifest changed meanwhile, open the new state once more.
  const std::string manifest = path_join(dir, kManifestFile);
  std::string before = is_file(manifest) ? read_file(manifest) : "";
  try {
    return std::make_unique<IndexImpl>(dir, opt);
  } catch (const Error&) {
    if (before.empty() || !is_file(manifest) || read_file(manifest) == before) throw;
    log_info("index '" + dir + "' changed while opening; opening it again");
    return std::make_unique<IndexImpl>(dir, opt);
  }
}

std::vector<float> Index::keys_of(const std::vector<uint32_t>& docs, std::chrono::steady_clock::time_point) const {
  std::vector<float> out;
  for (uint32_t d : docs) {
    const std::vector<float> k = key(d);
    out.insert(out.end(), k.begin(), k.end());
  }
  return out;
}

std::vector<TokenStates> Index::tokens_of(const std::vector<uint32_t>& docs, size_t max_rows,
                                          std::chrono::steady_clock::time_point) const {
  // Decoding is independent per document (the accessors are thread-safe); on OpenMP's team, warm
  // from encoding the query.
  std::vector<TokenStates> out(docs.size());
  omp_ranges(docs.size(), compute_threads(), [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) out[i] = tokens(docs[i], max_rows);
  });
  return out;
}

std::optional<std::vector<float>> Index::shard_scores(const std::string&, const TokenStates&,
                                                     const std::vector<uint32_t>&,
                                                     std::chrono::steady_clock::time_point) const {
  return std::nullopt;
}

std::vector<float> ShardRemote::scores(size_t shard, const std::string&, const std::string&, const TokenStates&,
                                       const std::vector<uint32_t>&,
                                       std::chrono::steady_clock::time_point) const {
  throw ShardUnavailable("shard " + std::to_string(shard) + " does not score candidates (no verifier at the shards)");
}

}  // namespace sieve
