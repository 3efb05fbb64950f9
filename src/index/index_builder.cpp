// `build_index` and `add_to_index`: encode a corpus in chunks, append to the logs and the BM25
// database, commit after every chunk, and build the vector index at the end.
//
// Crash safety: a build works in `<out>.partial` and records a checkpoint (the manifest of what
// is durable) after every chunk; only a finished build gets manifest.json and is renamed to
// `<out>`. An add appends past the committed end of the logs, writes a new vector file, and
// commits by replacing manifest.json; until then readers see the old index.
#include <sys/stat.h>
#include <unistd.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <stdio.h>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/checksum.h"
#include "core/file_util.h"
#include "core/log.h"
#include "core/omp_threads.h"
#include "index/corpus_reader.h"
#include "index/corpus_store.h"
#include "index/doc_state.h"
#include "index/ingest.h"
#include "index/lexical_index.h"
#include "index/manifest.h"
#include "index/write_lock.h"
#include "index/token_store.h"
#include "index/vector_index.h"
#include "sieve/encoder.h"
#include "sieve/error.h"
#include "sieve/index.h"

namespace sieve {
namespace fs = std::filesystem;
using namespace sieve::index;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Writers {
  RecordLogWriter corpus, keys, tokens, token_ids, metadata;
  bool store_keys = true;  // false: the index keeps its keys in the vector index only
  std::unique_ptr<TokenCodec> codec;  // null when tokens are not stored
  std::unique_ptr<XapianLexicalWriter> lexical;
};

// One chunk of documents with their encodings, on its way from the encoding thread to the writer.
struct Chunk {
  std::vector<Document> docs;
  Embeddings e;
};

// A bounded hand-off between the encoding thread (which pushes) and the writer (which pops).
class ChunkQueue {
 public:
  explicit ChunkQueue(size_t capacity) : capacity_(capacity) {}
  // Waits for room; false when the writer has stopped (the chunk is dropped).
  bool push(Chunk&& c) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return q_.size() < capacity_ || stopped_; });
    if (stopped_) return false;
    q_.push_back(std::move(c));
    cv_.notify_all();
    return true;
  }
  // The next chunk; nullopt once the encoding thread has closed the queue and it is empty, or
  // has stopped it.
  std::optional<Chunk> pop() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !q_.empty() || closed_ || stopped_; });
    if (q_.empty() || stopped_) return std::nullopt;
    Chunk c = std::move(q_.front());
    q_.pop_front();
    cv_.notify_all();
    return c;
  }
  void close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }
  void stop() {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Chunk> q_;
  size_t capacity_;
  bool closed_ = false, stopped_ = false;
};

// Creates the metadata log at the first document that has metadata or an expiry: the `documents`
// documents before it get empty records (no metadata, no expiry).
void start_metadata_log(const std::string& dir, Writers& w, Manifest& m, uint64_t documents) {
  w.metadata = RecordLogWriter::create(dir, "metadata", "META", 1);
  const std::string empty = encode_metadata_record(Document{});
  for (uint64_t i = 0; i < documents; ++i) w.metadata.append(empty.data(), empty.size());
  m.has_metadata = true;
  m.metadata = w.metadata.state();
}

// Stores one encoded chunk: token codes, the corpus, key and token logs, BM25, the checkpoint
// (through `commit`) and, when given, the vector index.
class ChunkWriter {
 public:
  ChunkWriter(size_t dim, const IndexBuildOptions& opt, const std::string& dir, Writers& w, Manifest& m,
              const std::function<void(const Manifest&)>& commit, index::FaissVectorIndex* vectors)
      : dim_(dim), opt_(opt), dir_(dir), w_(w), m_(m), commit_(commit), vectors_(vectors) {}

  void write(Chunk& c) {
    auto t0 = Clock::now();
    std::vector<Document>& docs = c.docs;
    Embeddings& e = c.e;
    if (w_.codec) {
      for (auto& t : e.tokens) normalize_rows(t.values.data(), t.length, dim_);
      if (m_.codec.file.empty()) {  // the first chunk: train (SQ, PQ) and save the codec
        if (!w_.codec->trained()) train_token_codec(*w_.codec, e.tokens, dim_, opt_.codec_train_tokens);
        w_.codec->save(path_join(dir_, kCodecFile));
        m_.codec = sum_file(dir_, kCodecFile);
      }
    }
    SIEVE_THROW_IF_NOT(w_.corpus.state().records + docs.size() < UINT32_MAX,
                       "an index holds at most " << UINT32_MAX - 1 << " documents");
    const uint32_t first = static_cast<uint32_t>(w_.corpus.state().records);
    if (!m_.has_metadata && std::any_of(docs.begin(), docs.end(), [](const Document& d) {
          return !d.metadata.empty() || d.expires_at != 0;
        }))
      start_metadata_log(dir_, w_, m_, first);
    for (size_t i = 0; i < docs.size(); ++i) {
      std::string record = encode_document(docs[i]);
      w_.corpus.append(record.data(), record.size());
      if (m_.has_metadata) {
        const std::string meta = encode_metadata_record(docs[i]);
        w_.metadata.append(meta.data(), meta.size());
      }
      if (w_.store_keys) w_.keys.append(e.pooled.data() + i * dim_, dim_ * sizeof(float));
      if (w_.codec) {
        const TokenStates& t = e.tokens[i];
        codes_.resize(t.length * w_.codec->code_size());
        w_.codec->encode(t.length, t.values.data(), codes_.data());
        w_.tokens.append(codes_.data(), codes_.size());
        m_.tokens += t.length;
        if (m_.has_token_ids) {  // the ids of those rows: the tokenizer's, as the encoder read them
          SIEVE_THROW_IF_NOT(e.encodings.size() == docs.size() && e.encodings[i].ids.size() >= t.length,
                             "internal: the encoder gave no token ids for document " << docs[i].id);
          w_.token_ids.append(e.encodings[i].ids.data(), t.length * sizeof(int32_t));
        }
      }
    }
    m_.corpus = w_.corpus.sync();
    if (w_.store_keys) m_.keys = w_.keys.sync();
    if (w_.codec) m_.token_log = w_.tokens.sync();
    if (m_.has_token_ids) m_.token_ids = w_.token_ids.sync();
    if (m_.has_metadata) m_.metadata = w_.metadata.sync();
    auto t1 = Clock::now();
    for (size_t i = 0; i < docs.size(); ++i) w_.lexical->put(first + static_cast<uint32_t>(i), docs[i].title, docs[i].text);
    w_.lexical->commit();
    auto t2 = Clock::now();
    m_.documents = m_.corpus.records;
    commit_(m_);
    auto t3 = Clock::now();
    if (vectors_ != nullptr) vectors_->add(docs.size(), e.pooled.data());
    store_seconds += std::chrono::duration<double>(t1 - t0).count() + std::chrono::duration<double>(t3 - t2).count();
    lexical_seconds += std::chrono::duration<double>(t2 - t1).count();
    vectors_seconds += seconds_since(t3);
    added += docs.size();
  }

  size_t added = 0;
  double store_seconds = 0, lexical_seconds = 0, vectors_seconds = 0;

 private:
  size_t dim_;
  const IndexBuildOptions& opt_;
  const std::string& dir_;
  Writers& w_;
  Manifest& m_;
  const std::function<void(const Manifest&)>& commit_;
  index::FaissVectorIndex* vectors_;
  std::vector<uint8_t> codes_;
};

// Encodes and stores the documents of `reader` after the first `skip`, committing each chunk
// through `commit` with the manifest updated to what is durable, and adding the keys to `vectors`
// when given. The calling thread reads and encodes; a writer thread stores the chunk before, so
// that storing, BM25 and the vector index overlap with encoding (the writer runs FAISS with one
// OpenMP thread, the encoder keeps its own).
void ingest(CorpusReader& reader, size_t skip, size_t total, const Encoder& enc, const IndexBuildOptions& opt,
            const std::string& dir, Writers& w, Manifest& m, const std::function<void(const Manifest&)>& commit,
            index::FaissVectorIndex* vectors, BuildReport& rep) {
  Document doc;
  for (size_t i = 0; i < skip; ++i) SIEVE_THROW_IF_NOT(reader.next(doc), "the corpus has fewer documents than the checkpoint");
  log_info("indexing " + std::to_string(total - skip) + " document(s)" +
           (skip > 0 ? " (resuming after " + std::to_string(skip) + " of " + std::to_string(total) + ")" : ""));
  Progress progress("indexing", total);
  progress.add(skip);
  ChunkWriter writer(enc.dim(), opt, dir, w, m, commit, vectors);
  ChunkQueue queue(1);
  std::exception_ptr writer_error;
  std::thread writer_thread;
  if (opt.overlap) {
    writer_thread = std::thread([&] {
      omp_set_num_threads(1);
      try {
        while (auto c = queue.pop()) {
          writer.write(*c);
          progress.add(c->docs.size());
        }
      } catch (...) {
        writer_error = std::current_exception();
        queue.stop();
      }
    });
  }
  auto stop_writer = [&](bool finish) {
    if (!opt.overlap) return;
    finish ? queue.close() : queue.stop();
    writer_thread.join();
  };
  bool interrupted = false;
  try {
    bool more = true;
    while (more) {
      Chunk c;
      std::vector<std::string> texts;
      while (c.docs.size() < opt.chunk_docs && (more = reader.next(doc))) {
        texts.push_back(encoder_text(doc));
        c.docs.push_back(std::move(doc));
      }
      if (c.docs.empty()) break;
      auto t0 = Clock::now();
      EncodeCall call;
      call.batch_size = opt.batch_size;
      call.token_states = w.codec != nullptr;
      call.warn_truncation = false;  // one warning with the total, below
      c.e = enc.encode(texts, call);
      rep.encode_seconds += seconds_since(t0);
      rep.truncated += c.e.truncated;
      if (opt.overlap) {
        if (!queue.push(std::move(c))) break;  // the writer failed
      } else {
        writer.write(c);
        progress.add(c.docs.size());
      }
      // Asked from this (the caller's) thread: Python's check must run on the thread that called.
      if (more && opt.interrupted && opt.interrupted()) {
        interrupted = true;
        break;
      }
    }
  } catch (...) {
    stop_writer(false);
    throw;
  }
  stop_writer(true);
  rep.store_seconds += writer.store_seconds;
  rep.lexical_seconds += writer.lexical_seconds;
  rep.vectors_seconds += writer.vectors_seconds;
  if (writer_error) std::rethrow_exception(writer_error);
  rep.added += writer.added;
  progress.finish();
  if (rep.truncated > 0)
    log_warn(std::to_string(rep.truncated) + " text(s) longer than " + std::to_string(enc.max_length()) +
             " tokens were truncated for the keys and token states (BM25 and the corpus store keep the whole text)");
  if (interrupted) SIEVE_THROW("interrupted after " << m.documents << " documents");
}

// Reads keys [from, from + count) of an open keys log (from <= its size; count past the end: to
// the end) as one matrix.
std::vector<float> read_keys(const RecordLogReader& keys, size_t dim, size_t from, size_t count) {
  const size_t end = from + std::min(count, keys.size() - from);
  std::vector<float> x((end - from) * dim);
  for (size_t i = from; i < end; ++i) {
    auto r = keys.record(i);
    SIEVE_THROW_IF_NOT(r.size == dim * sizeof(float), "key record " << i << " has the wrong size (damaged)");
    std::memcpy(x.data() + (i - from) * dim, r.data, r.size);
  }
  return x;
}

// Reads the stored keys of documents [from, end) as one matrix.
std::vector<float> read_keys(const std::string& dir, const Manifest& m, size_t from) {
  RecordLogReader keys(dir, "keys", "KEYS", static_cast<uint32_t>(m.dim), m.keys);
  return read_keys(keys, m.dim, from, keys.size());
}

// Empties a folder except its lock file.
void clear_dir(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename() != kWriteLockFile) fs::remove_all(e.path());
}

// Validates the whole corpus before any encoding (a bad line should not cost an hour of work);
// returns the document count. `exists` rejects ids already in the index (for add).
size_t validate_corpus(const std::string& path, CorpusFormat format,
                       const std::function<bool(const std::string&)>& exists, size_t text_id_offset = 0) {
  struct stat st {};
  SIEVE_THROW_IF_NOT(::stat(path.c_str(), &st) == 0, "cannot open corpus '" << path << "'");
  SIEVE_THROW_IF_NOT(S_ISREG(st.st_mode), "corpus '" << path << "' must be a regular file (it is read twice: "
                                                     << "validated first, then encoded), not a pipe or device");
  CorpusReader reader(path, format, text_id_offset);
  Document d;
  size_t n = 0;
  while (reader.next(d)) {
    ++n;
    SIEVE_THROW_IF_NOT(!exists || !exists(d.id), path << ": document id '" << d.id << "' is already in the index");
  }
  SIEVE_THROW_IF_NOT(n > 0, "corpus '" << path << "' has no documents");
  return n;
}

void check_ingest_options(const IndexBuildOptions& opt) {
  SIEVE_THROW_IF_NOT(opt.chunk_docs > 0 && opt.batch_size > 0, "chunk and batch sizes must be positive");
  SIEVE_THROW_IF_NOT(opt.codec_train_tokens > 0, "codec_train_tokens must be positive");
}

std::unique_ptr<Encoder> load_encoder(const std::string& model_dir, EncoderOptions enc, const Manifest* m) {
  if (m != nullptr) {
    enc.pooling = pooling_from_name(m->pooling);
    enc.max_length = m->max_length;
    take_key_grid(*m, enc);
  }
  return Encoder::load(model_dir, enc);
}

// The writers of an add, at the committed state of `m`. The keys of added documents always go to
// the keys log (started at the first added document when the build kept its keys in the vector
// index only); what an interrupted add left in BM25 is removed.
// `checked`: a reader of this process has just checked the logs at `m`'s state.
Writers open_add_writers(const std::string& dir, Manifest& m, bool checked = false) {
  Writers w;
  const uint32_t dim = static_cast<uint32_t>(m.dim);
  w.corpus = RecordLogWriter::reopen(dir, "corpus", "CORP", 0, m.corpus, checked);
  w.store_keys = true;
  if (m.keys_from < m.documents || !m.keys_in_vectors) {
    w.keys = RecordLogWriter::reopen(dir, "keys", "KEYS", dim, m.keys, checked);
  } else {
    w.keys = RecordLogWriter::create(dir, "keys", "KEYS", dim);
    m.keys = w.keys.state();
    m.keys_from = m.documents;
  }
  if (m.has_tokens) {
    check_file(dir, m.codec);
    w.codec = TokenCodec::load(path_join(dir, m.codec.file), m.dim, m.token_codec);
    w.tokens = RecordLogWriter::reopen(dir, "tokens", "TOKN", static_cast<uint32_t>(m.token_code_bytes), m.token_log,
                                       checked);
    if (m.has_token_ids) w.token_ids = RecordLogWriter::reopen(dir, "token_ids", "TKID", 4, m.token_ids, checked);
  }
  if (m.has_metadata) w.metadata = RecordLogWriter::reopen(dir, "metadata", "META", 1, m.metadata, checked);
  w.lexical = std::make_unique<XapianLexicalWriter>(path_join(dir, kLexicalDir));
  w.lexical->truncate(static_cast<uint32_t>(m.documents));
  return w;
}

// Commits an add whose documents are durable in the logs and BM25: past the tail limit the
// vector file is rewritten with every key (returned), then the manifest is replaced.
std::shared_ptr<FaissVectorIndex> commit_add(const std::string& dir, Manifest& m, const IndexBuildOptions& opt,
                                             BuildReport& rep, const std::string& manifest = kManifestFile,
                                             std::string* replaced_vectors = nullptr) {
  auto t_vectors = Clock::now();
  std::shared_ptr<FaissVectorIndex> vectors;
  const std::string old_vectors = m.vectors.file;
  if (m.documents - m.vector_documents > vector_tail_limit(opt, m.documents)) {
    check_file(dir, m.vectors);
    vectors = std::make_shared<FaissVectorIndex>(path_join(dir, m.vectors.file), m.dim);
    SIEVE_THROW_IF_NOT(vectors->size() == m.vector_documents, "'" << m.vectors.file << "' holds " << vectors->size()
                                                                   << " vectors, the manifest says " << m.vector_documents
                                                                   << " (damaged index)");
    const std::vector<float> tail = read_keys(dir, m, m.vector_documents - m.keys_from);
    log_info("writing the vector index with the " + std::to_string(m.documents - m.vector_documents) +
             " keys added since it was last written");
    vectors->add(m.documents - m.vector_documents, tail.data());
    m.vectors.file = "vectors." + std::to_string(m.documents) + ".faiss";
    vectors->save(path_join(dir, m.vectors.file));
    m.vectors = sum_file(dir, m.vectors.file);
    m.vector_documents = m.documents;
  }
  rep.vectors_seconds += seconds_since(t_vectors);
  commit_manifest(dir, m, manifest);
  if (old_vectors != m.vectors.file) {
    if (replaced_vectors != nullptr) *replaced_vectors = old_vectors;  // removed once the set commits
    else fs::remove(path_join(dir, old_vectors));
  }
  rep.documents = m.documents;
  return vectors;
}

}  // namespace

std::string corpus_fingerprint(const std::string& path) {
  struct stat st {};
  SIEVE_THROW_IF_NOT(::stat(path.c_str(), &st) == 0, "cannot read corpus '" << path << "'");
  auto one = [](const std::string& file, const struct stat& s) {
    // Only a regular file is read: a pipe or a device would block or never end (the build then
    // refuses it with its own message).
    return std::to_string(s.st_size) + ":" + std::to_string(s.st_mtim.tv_sec) + "." +
           std::to_string(s.st_mtim.tv_nsec) + ":" + (S_ISREG(s.st_mode) ? crc32_hex(crc32_file(file)) : "not-a-file");
  };
  const std::string where = fs::absolute(path).lexically_normal().string();
  if (!S_ISDIR(st.st_mode)) return where + ":" + one(path, st);
  std::vector<std::string> files;  // a folder (Parquet parts): every regular file under it, by name
  for (const auto& e : fs::recursive_directory_iterator(path))
    if (e.is_regular_file()) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::string out = where + ":folder";
  for (const std::string& f : files) {
    struct stat fs_st {};
    SIEVE_THROW_IF_NOT(::stat(f.c_str(), &fs_st) == 0, "cannot read corpus file '" << f << "'");
    out += "|" + fs::relative(f, path).string() + ":" + one(f, fs_st);
  }
  return out;
}

std::string encoder_text(const Document& d) { return d.title.empty() ? d.text : d.title + " " + d.text; }

BuildReport build_index(const std::string& model_dir, const std::string& corpus_path, const std::string& out,
                        const IndexBuildOptions& opt, const EncoderOptions& enc_opt) {
  auto t_start = Clock::now();
  SIEVE_THROW_IF_NOT(!out.empty(), "no output index path given");
  check_ingest_options(opt);
  std::string out_dir = fs::path(out).lexically_normal().string();
  if (!out_dir.empty() && out_dir.back() == '/') out_dir.pop_back();
  // An empty folder is taken as absent (made beforehand, as a mount point or by a framework).
  const auto empty_folder = [&out_dir] {
    std::error_code ec;
    return fs::is_directory(out_dir, ec) && fs::is_empty(out_dir, ec) && !ec;
  };
  SIEVE_THROW_IF_NOT(opt.force || !fs::exists(out_dir) || empty_folder(),
                     "'" << out_dir << "' already exists (use --force to replace it, or `sieve index add`)");
  const std::string staging = out_dir + ".partial";
  BuildReport rep;

  auto encoder = Encoder::load(model_dir, enc_opt);
  const size_t dim = encoder->dim();
  Manifest m;
  m.dim = dim;
  m.model_identity = model_identity(model_dir);
  m.model_path = fs::absolute(model_dir).lexically_normal().string();
  m.pooling = pooling_name(encoder->pooling());
  m.max_length = encoder->max_length();
  m.key_grid = encoder->key_grid();
  m.has_tokens = opt.store_tokens;
  m.token_codec = opt.store_tokens ? TokenCodec::factory_for(opt.token_codec, dim) : "";
  m.corpus_fingerprint = corpus_fingerprint(corpus_path);
  m.build_options = nlohmann::json{{"model", m.model_identity}, {"pooling", m.pooling}, {"max_length", m.max_length},
                                   {"key_grid", m.key_grid},
                                   {"vectors", opt.vector_factory}, {"hnsw_threshold", opt.auto_hnsw_threshold},
                                   {"ef_construction", opt.hnsw_ef_construction}, {"codec", m.token_codec},
                                   {"codec_train", opt.codec_train_tokens},
                                   {"format", int(CorpusReader::resolve(corpus_path, opt.format))}}
                        .dump();
  // A codec trained elsewhere (another shard of a shard set) is used as it is: the same file
  // gives every shard the same token codes.
  std::unique_ptr<TokenCodec> given_codec;
  if (opt.store_tokens && !opt.token_codec_from.empty()) {
    SIEVE_THROW_IF_NOT(is_file(opt.token_codec_from), "the token codec '" << opt.token_codec_from << "' does not exist");
    given_codec = TokenCodec::load(opt.token_codec_from, dim, m.token_codec);  // checks kind and training
    const std::string bytes = read_file(opt.token_codec_from);
    auto j = nlohmann::json::parse(m.build_options);
    j["codec_from"] = crc32_hex(crc32(bytes.data(), bytes.size()));
    m.build_options = j.dump();
  }

  auto t_validate = Clock::now();
  const size_t total = validate_corpus(corpus_path, opt.format, nullptr);
  rep.validate_seconds = seconds_since(t_validate);
  m.vector_factory = resolve_vector_factory(opt.vector_factory, total, opt.auto_hnsw_threshold);
  // Made now so that a bad factory string fails before any encoding. Flat takes each chunk's keys
  // as it is stored; one that needs training (IVF, PQ) is trained and filled from the stored keys
  // at the end, and so is a graph (HNSW): placing a key searches the graph, work that beside the
  // encoder took its cores (WordNet's 155k keys: 45 s on the writer thread slowed the encoder by
  // 43 s), while all at once at the end it runs on every core (16 s on two).
  FaissVectorIndex vindex(m.vector_factory, dim, opt.hnsw_ef_construction);
  const bool incremental = !vindex.needs_training() && !vindex.is_graph();
  // Resume or restart an interrupted build.
  std::optional<Manifest> ckpt;
  std::string reason;
  const bool had_staging = fs::exists(staging);
  fs::create_directories(staging);
  WriteLock lock(staging);
  if (had_staging) {
    if (opt.restart) {
      reason = "--restart given";
    } else if (!is_file(path_join(staging, kCheckpointFile))) {
      reason = "the interrupted build had not committed anything";
    } else {
      try {
        Manifest c = read_manifest(staging, kCheckpointFile);
        if (c.build_options != m.build_options) reason = "the model or options differ from the interrupted build";
        else if (c.corpus_fingerprint != m.corpus_fingerprint) reason = "the corpus file changed since the interrupted build";
        else ckpt = c;
      } catch (const Error& e) {
        reason = std::string("its checkpoint is unreadable (") + e.what() + ")";
      }
    }
    if (!ckpt) clear_dir(staging);
  }

  Writers w;
  if (ckpt) try {
    m = *ckpt;
    rep.resumed_from = m.documents;
    rep.note = "resumed an interrupted build at document " + std::to_string(m.documents) + " of " + std::to_string(total);
    w.corpus = RecordLogWriter::reopen(staging, "corpus", "CORP", 0, m.corpus);
    w.keys = RecordLogWriter::reopen(staging, "keys", "KEYS", static_cast<uint32_t>(dim), m.keys);
    if (m.has_tokens) {
      if (m.codec.file.empty()) {
        w.codec = given_codec ? std::move(given_codec) : TokenCodec::create(m.token_codec, dim);
      } else {
        check_file(staging, m.codec);
        w.codec = TokenCodec::load(path_join(staging, kCodecFile), dim, m.token_codec);
      }
      w.tokens = RecordLogWriter::reopen(staging, "tokens", "TOKN", static_cast<uint32_t>(m.token_code_bytes), m.token_log);
      if (m.has_token_ids) w.token_ids = RecordLogWriter::reopen(staging, "token_ids", "TKID", 4, m.token_ids);
    }
    if (m.has_metadata) w.metadata = RecordLogWriter::reopen(staging, "metadata", "META", 1, m.metadata);
    w.lexical = std::make_unique<XapianLexicalWriter>(path_join(staging, kLexicalDir));
    w.lexical->truncate(static_cast<uint32_t>(m.documents));
  } catch (const Error& e) {
    SIEVE_THROW("cannot resume the interrupted build in '" << staging << "': " << e.what()
                                                           << " (run again with --restart)");
  } else {
    rep.note = reason.empty() ? "fresh build" : "restarted: " + reason;
    w.corpus = RecordLogWriter::create(staging, "corpus", "CORP", 0);
    w.keys = RecordLogWriter::create(staging, "keys", "KEYS", static_cast<uint32_t>(dim));
    if (m.has_tokens) {
      w.codec = given_codec ? std::move(given_codec) : TokenCodec::create(m.token_codec, dim);
      m.token_code_bytes = w.codec->code_size();
      w.tokens = RecordLogWriter::create(staging, "tokens", "TOKN", static_cast<uint32_t>(m.token_code_bytes));
      m.has_token_ids = true;
      w.token_ids = RecordLogWriter::create(staging, "token_ids", "TKID", 4);
      m.token_ids = w.token_ids.state();
    }
    w.lexical = std::make_unique<XapianLexicalWriter>(path_join(staging, kLexicalDir));
  }
  log_info(rep.note);

  if (incremental && m.documents > 0) {  // resumed: the keys stored before the interruption
    auto t0 = Clock::now();
    std::vector<float> keys = read_keys(staging, m, 0);
    vindex.add(m.documents, keys.data());
    rep.vectors_seconds += seconds_since(t0);
  }
  CorpusReader reader(corpus_path, opt.format);
  ingest(reader, m.documents, total, *encoder, opt, staging, w, m,
         [&](const Manifest& cur) { write_manifest(staging, kCheckpointFile, cur); }, incremental ? &vindex : nullptr,
         rep);
  SIEVE_THROW_IF_NOT(m.documents == total, "the corpus changed while it was being indexed");

  auto t_vectors = Clock::now();
  if (!incremental) {
    log_info("building vector index " + m.vector_factory + " over " + std::to_string(m.documents) + " keys");
    ScopedOmpThreads threads(compute_threads());  // FAISS's OpenMP team on every compute thread
    if (vindex.needs_training()) vindex.train(m.documents, read_keys(staging, m, 0).data());
    // Added in steps read from the log: progress (a million keys into HNSW32 take minutes), and
    // no second copy of every key beside the index's own.
    Progress progress("vector index", m.documents);
    const RecordLogReader log(staging, "keys", "KEYS", static_cast<uint32_t>(m.dim), m.keys);
    constexpr size_t kStep = 16384;
    for (size_t at = 0; at < m.documents; at += kStep) {
      const std::vector<float> keys = read_keys(log, dim, at, kStep);
      const size_t n = keys.size() / dim;
      vindex.add(n, keys.data());
      progress.add(n);
    }
    progress.finish();
  }
  m.vectors.file = "vectors." + std::to_string(m.documents) + ".faiss";
  vindex.save(path_join(staging, m.vectors.file));
  m.vectors = sum_file(staging, m.vectors.file);
  rep.vectors_seconds += seconds_since(t_vectors);
  // One copy of the keys: when the vector index stores them exactly, the keys log (kept until now
  // so that an interrupted build can rebuild the vector index) is dropped after the commit.
  m.keys_in_vectors = vindex.holds_exact_keys();
  if (m.keys_in_vectors) m.keys = LogState{};
  m.vector_documents = m.documents;
  m.keys_from = m.keys_in_vectors ? m.documents : 0;

  // Commit: the manifest makes the directory an index; the rename publishes it. The checkpoint
  // stays until then, so a crash before the rename resumes with nothing left to encode.
  m.corpus_fingerprint.clear();
  m.build_options.clear();
  write_manifest(staging, kManifestFile, m);
  sync_dir(staging);
  std::optional<WriteLock> old_lock;
  if (!opt.force && empty_folder()) fs::remove(out_dir);  // still empty: nothing is replaced
  if (fs::exists(out_dir)) {
    SIEVE_THROW_IF_NOT(opt.force, "'" << out_dir << "' appeared during the build; not replacing it");
    old_lock.emplace(out_dir);  // not while an add is writing it
  }
  publish_dir(staging, out_dir);  // swapped in one step: `out` always names a complete index
  fs::remove(path_join(out_dir, kCheckpointFile));
  if (m.keys_in_vectors)
    for (const char* f : {"keys.dat", "keys.idx"}) fs::remove(path_join(out_dir, f));
  sync_dir(fs::absolute(out_dir).parent_path().string());
  rep.documents = m.documents;
  rep.total_seconds = seconds_since(t_start);
  return rep;
}

namespace {

// add_to_index on a shard set: the corpus read whole, then one set write (all of it or nothing).
BuildReport add_file_to_shard_set(const std::string& dir, const std::string& corpus_path, const IndexBuildOptions& opt,
                                  const EncoderOptions& enc_opt, const std::string& model_dir) {
  IndexOpenOptions oo;
  oo.model_dir = model_dir;
  oo.encoder = enc_opt;
  IndexWriter writer(dir, oo);
  size_t text_id_offset = 0;  // plain-text documents continue after the largest numeric id
  if (CorpusReader::resolve(corpus_path, opt.format) == CorpusFormat::Text) {
    const std::shared_ptr<const Index> snap = writer.snapshot();
    for (uint32_t i = 0; i < snap->size(); ++i) {
      const std::string id = snap->document(i).id;
      if (!id.empty() && id.size() < 19 && id.find_first_not_of("0123456789") == std::string::npos)
        text_id_offset = std::max<size_t>(text_id_offset, std::stoull(id));
    }
  }
  std::vector<Document> docs;
  CorpusReader reader(corpus_path, opt.format, text_id_offset);
  for (Document d; reader.next(d);) docs.push_back(std::move(d));
  SIEVE_THROW_IF_NOT(!docs.empty(), "corpus '" << corpus_path << "' holds no documents");
  return writer.add(docs, opt);
}

}  // namespace

BuildReport add_to_index(const std::string& index_dir, const std::string& corpus_path, const IndexBuildOptions& opt,
                         const EncoderOptions& enc_opt, const std::string& model_dir) {
  auto t_start = Clock::now();
  check_ingest_options(opt);
  SIEVE_THROW_IF_NOT(is_dir(index_dir), "index '" << index_dir << "' does not exist");
  if (is_shard_set(index_dir)) return add_file_to_shard_set(index_dir, corpus_path, opt, enc_opt, model_dir);
  check_not_a_shard(index_dir);
  SIEVE_THROW_IF_NOT(is_file(path_join(index_dir, kManifestFile)), "'" << index_dir << "' is not a sieve index");
  WriteLock lock(index_dir);
  Manifest m = read_manifest(index_dir, kManifestFile);
  std::string model = model_dir.empty() ? m.model_path : model_dir;
  std::string identity = model_identity_like(model, m.model_identity);
  SIEVE_THROW_IF_NOT(identity == m.model_identity, "the model at '" << model << "' is not the one index '" << index_dir
                                                                     << "' was built with (identity " << identity
                                                                     << " vs " << m.model_identity << ")");
  auto encoder = load_encoder(model, enc_opt, &m);
  check_key_grid(m, encoder->key_grid(), "added keys");
  size_t total, text_id_offset = 0;
  BuildReport rep;
  auto t_validate = Clock::now();
  std::vector<uint32_t> replaced;  // upsert: the live documents of ids the corpus holds
  {
    CorpusStore store(index_dir, m.corpus);
    // Plain-text documents are numbered by line; added ones continue after the largest numeric id.
    if (CorpusReader::resolve(corpus_path, opt.format) == CorpusFormat::Text) {
      for (size_t i = 0; i < store.size(); ++i) {
        std::string id = store.id(i);
        if (!id.empty() && id.size() < 19 && id.find_first_not_of("0123456789") == std::string::npos)
          text_id_offset = std::max<size_t>(text_id_offset, std::stoull(id));
      }
    }
    // Which ids the index holds: live documents only (a deleted or expired id may come back; an
    // expired copy is marked replaced so that it counts as dead for the next compaction).
    IndexOpenOptions io;
    io.load_encoder = false;
    io.load_vectors = false;
    const std::unique_ptr<Index> held = Index::open(index_dir, io);
    total = validate_corpus(corpus_path, opt.format, [&](const std::string& id) {
      if (!opt.upsert && held->find(id) >= 0) return true;
      const int64_t d = find_stored(*held, id);
      if (d >= 0) replaced.push_back(static_cast<uint32_t>(d));
      return false;
    }, text_id_offset);
  }
  rep.validate_seconds = seconds_since(t_validate);
  rep.note = "added to an index of " + std::to_string(m.documents) + " documents";
  Writers w = open_add_writers(index_dir, m);
  const size_t before = m.documents;
  const std::string fingerprint = corpus_fingerprint(corpus_path);
  CorpusReader reader(corpus_path, opt.format, text_id_offset);
  ingest(reader, 0, total, *encoder, opt, index_dir, w, m, [](const Manifest&) {}, nullptr, rep);
  // Nothing is committed yet: a corpus that changed since validation aborts here.
  SIEVE_THROW_IF_NOT(m.documents - before == total && corpus_fingerprint(corpus_path) == fingerprint,
                     "the corpus '" << corpus_path << "' changed while it was being added; nothing was added");
  std::sort(replaced.begin(), replaced.end());
  replaced.erase(std::unique(replaced.begin(), replaced.end()), replaced.end());
  append_deletes(index_dir, m, replaced);  // the replaced documents go in the add's commit
  rep.replaced = replaced.size();
  commit_add(index_dir, m, opt, rep);
  rep.documents = m.documents - m.deleted;  // live: the replaced ones no longer count
  rep.total_seconds = seconds_since(t_start);
  return rep;
}


namespace index {

size_t vector_tail_limit(const IndexBuildOptions& opt, uint64_t documents) {
  if (opt.max_vector_tail > 0) return opt.max_vector_tail - 1;
  return std::clamp<size_t>(static_cast<size_t>(documents / 8), 4096, 32768);
}

Appended append_documents(const std::string& dir, Manifest& m, const std::vector<Document>& docs, const Encoder& enc,
                          const IndexBuildOptions& opt, BuildReport& rep, bool logs_checked,
                          const std::vector<uint32_t>& replaced, const std::string& manifest) {
  check_ingest_options(opt);
  SIEVE_THROW_IF_NOT(enc.dim() == m.dim, "the encoder's dimension differs from the index's");
  check_key_grid(m, enc.key_grid(), "added keys");
  Writers w = open_add_writers(dir, m, logs_checked);
  const std::function<void(const Manifest&)> no_commit = [](const Manifest&) {};
  ChunkWriter writer(m.dim, opt, dir, w, m, no_commit, nullptr);
  Appended out;
  out.keys.reserve(docs.size() * m.dim);
  for (size_t begin = 0; begin < docs.size(); begin += opt.chunk_docs) {
    Chunk c;
    c.docs.assign(docs.begin() + begin, docs.begin() + std::min(docs.size(), begin + opt.chunk_docs));
    std::vector<std::string> texts;
    for (const Document& d : c.docs) texts.push_back(encoder_text(d));
    auto t0 = Clock::now();
    EncodeCall call;
    call.batch_size = opt.batch_size;
    call.token_states = w.codec != nullptr;
    call.warn_truncation = false;
    c.e = enc.encode(texts, call);
    rep.encode_seconds += seconds_since(t0);
    rep.truncated += c.e.truncated;
    out.keys.insert(out.keys.end(), c.e.pooled.begin(), c.e.pooled.end());
    writer.write(c);
    if (begin + opt.chunk_docs < docs.size() && opt.interrupted && opt.interrupted())
      SIEVE_THROW("interrupted after " << writer.added << " of " << docs.size() << " documents; nothing was added");
  }
  rep.store_seconds += writer.store_seconds;
  rep.lexical_seconds += writer.lexical_seconds;
  rep.added += writer.added;
  if (rep.truncated > 0)
    log_warn(std::to_string(rep.truncated) + " text(s) longer than " + std::to_string(enc.max_length()) +
             " tokens were truncated for the keys and token states (BM25 and the corpus store keep the whole text)");
  append_deletes(dir, m, replaced);  // an upsert's replaced documents go in the same commit
  out.vectors = commit_add(dir, m, opt, rep, manifest, manifest == kManifestFile ? nullptr : &out.replaced_vectors);
  return out;
}

}  // namespace index

}  // namespace sieve
