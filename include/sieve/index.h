// sieve: stage 1, the persistent corpus index (dense vectors in FAISS, BM25 in Xapian, a corpus
// store and a compressed store of every document's token states for stage 2).
// The directory format is specified in docs/formats.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sieve/encoder.h"
#include "sieve/error.h"
#include "sieve/filter.h"

namespace sieve {

/// One corpus document.
struct Document {
  std::string id;
  std::string title;
  std::string text;
  /// Metadata: a flat JSON object of strings, numbers, booleans and lists of strings, as
  /// check_metadata (sieve/filter.h) accepts and gives it ("" = none). Filters read it.
  std::string metadata;
  /// The instant the document stops being visible, in seconds since 1970-01-01T00:00:00Z
  /// (0 = never): searches, find() and every face skip it from then on; compaction removes it.
  double expires_at = 0;
};

/// Corpus file layouts `sieve index build` reads.
enum class CorpusFormat {
  Auto,   ///< by extension: .jsonl -> Jsonl, .tsv -> Tsv, anything else -> Text
  Jsonl,  ///< BEIR corpus.jsonl: {"_id", "title", "text"} per line
  Tsv,    ///< id <TAB> text [<TAB> title]; a header row naming the columns is optional
  Text,   ///< one document per line; the id is the 1-based line number
};

/// Options of an index build. What shapes the index (vectors, codec, tokens) is fixed for its
/// lifetime and recorded in its manifest; add_to_index uses only format, chunk_docs, batch_size.
struct IndexBuildOptions {
  CorpusFormat format = CorpusFormat::Auto;
  /// FAISS index_factory string for the pooled keys ("Flat", "HNSW32", "IVF256,Flat", ...);
  /// "auto" = Flat below `auto_hnsw_threshold` documents, HNSW32 from there on.
  std::string vector_factory = "auto";
  size_t auto_hnsw_threshold = 20000;  // see docs/benchmarks.md: Flat costs ~0.3 µs per key per query
  int hnsw_ef_construction = 80;
  /// Token-state codec: fp32, fp16, sq8, sq4, pq (d/4 sub-quantizers of 8 bits), or a FAISS
  /// factory string of a standalone codec ("SQ6", "PQ48", ...).
  std::string token_codec = "sq8";
  size_t codec_train_tokens = 65536;  ///< token vectors sampled to train the codec
  /// A trained codec file (codec.faiss of another index) to use instead of training one: the
  /// shards of a shard set share the first shard's. Its factory must be `token_codec`'s.
  std::string token_codec_from;
  bool store_tokens = true;           ///< false: no token store (stage 2 then cannot run)
  size_t chunk_docs = 512;            ///< documents encoded and committed per step
  size_t batch_size = 32;             ///< texts per encoder forward pass
  /// Store each chunk (logs, BM25, vector index) on a second thread while the next one is
  /// encoded; false does the two in turn (the way to measure what the overlap saves).
  bool overlap = true;
  /// add: a document whose id the index holds replaces it (key, BM25 terms, token states, text,
  /// metadata and expiry, in the same commit); false: such an id is refused.
  bool upsert = false;
  bool restart = false;               ///< build: ignore an interrupted build's checkpoint
  bool force = false;                 ///< build: replace an existing index at `out`
  /// add: the keys of added documents are kept in the keys log, searched exactly, until this
  /// many have been added since the vector file was last written; then the add rewrites it with
  /// every key (0 = documents / 8 kept within 4,096 and 32,768, so that the tail's exact scan
  /// stays a few ms a query; 1 = at every add).
  size_t max_vector_tail = 0;
  /// Asked on the calling thread after each chunk is encoded; true stops the build or add with
  /// sieve::Error ("interrupted ...") once the chunks encoded so far are committed. A stopped
  /// build resumes from there when run again; a stopped add leaves the index as it was. (The
  /// Python package maps Ctrl-C to it.)
  std::function<bool()> interrupted;
};

/// How `Index::search` finds candidates.
enum class SearchMode { Dense, Bm25, Hybrid };
/// How hybrid search merges the dense and BM25 lists.
enum class Fusion {
  Rrf,       ///< reciprocal rank fusion: sum over lists of 1 / (rrf_k + rank)
  Weighted,  ///< dense_weight * minmax(dense) + (1 - dense_weight) * minmax(bm25)
  /// dense_weight * z(dense) + (1 - dense_weight) * z(bm25), z = (score - mean) / std over the
  /// list's scores: it rests on each list's bulk rather than on its best and worst score; a
  /// document one list lacks takes that list's lowest z.
  Zscore,
};
/// True for the fusions that weigh the lists by `dense_weight` (weighted, zscore).
bool fusion_uses_weight(Fusion f);

/// How a dense search limited to some documents (a filter, deletions, expiry) finds them.
enum class FilterPlan {
  Auto,  ///< the planner: Scan when few documents pass (or the index is Flat), else Walk
  Scan,  ///< score every passing document's key (exact)
  Walk,  ///< the vector index's own search, skipping documents that do not pass, widened in
         ///< proportion to how few pass (HNSW, IVF; a Flat index scans)
};

/// Per-call search knobs.
struct SearchParams {
  SearchMode mode = SearchMode::Dense;
  size_t k = 10;
  size_t depth = 0;        ///< hybrid: depth of each fused list; 0 = max(k, 100)
  int ef_search = 0;       ///< HNSW: 0 = max(64, k)
  int nprobe = 0;          ///< IVF: 0 = the value stored at build time
  Fusion fusion = Fusion::Rrf;
  double rrf_k = 60.0;
  double dense_weight = 0.5;
  /// weighted and zscore: the dense weight each query gets is dense_weight + weight_slope * (z1(dense)
  /// - z1(bm25)), clamped to [0, 1], where z1 is the z-score of a list's top score among its own
  /// scores: the list whose best hit stands further out of its own bulk gets more weight (0: one
  /// weight for every query).
  double weight_slope = 0.0;
  bool query_tokens = false;  ///< also return the query's token states (for stage 2)
  /// Only documents whose metadata passes (every hit, in every mode; empty: all). docs/filters.md.
  Filter filter;
  /// The clock expiry is read at, seconds since 1970 (0 = the system clock at the call).
  double now = 0;
  FilterPlan filter_plan = FilterPlan::Auto;
  /// The request's deadline: a shard served elsewhere (ShardRemote) is not waited for past it
  /// (ShardTimeout). Local work is not cut short. Default: none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

/// The stage-1 search a model folder recommends for itself: the "search" object of the sieve file
/// beside it (models/NAME.sieve.json, for checkpoints installed from elsewhere), else the "sieve" ->
/// "search" object of its config_sentence_transformers.json, e.g. {"mode": "hybrid", "fusion": "weighted",
/// "dense_weight": 0.1} (fields it leaves out keep SearchParams' defaults). A weak encoder can
/// declare BM25 or a BM25-heavy fusion so that the default search never loses to BM25 alone.
struct SearchRecommendation {
  bool declared = false;  ///< the folder declares one (false: dense, SearchParams' defaults)
  SearchMode mode = SearchMode::Dense;
  Fusion fusion = Fusion::Rrf;
  double rrf_k = 60.0;
  double dense_weight = 0.5;
  double weight_slope = 0.0;  ///< "dense_weight_slope" (SearchParams::weight_slope)
  size_t depth = 0;       ///< "fusion_depth": depth of each fused list (0: SearchParams' default)
  std::string note;       ///< the folder's reason, when it gives one ("note")
  /// Copies mode, fusion, rrf_k, dense_weight, weight_slope and a declared depth into `p` (k, ef_search, nprobe
  /// untouched).
  void apply(SearchParams& p) const;
};

/// Reads the recommendation of the model folder `model_dir`; sieve::Error on a malformed one
/// (unknown mode or fusion, a weight outside [0, 1], a negative rrf_k).
SearchRecommendation recommended_search(const std::string& model_dir);
/// The recommendation of `model_dir` when given, else of the model the index at `index_dir` was
/// built with (read from its manifest, without opening the index).
SearchRecommendation recommended_search_for_index(const std::string& index_dir, const std::string& model_dir = "");
/// "dense", "bm25", "hybrid" / "rrf", "weighted", "zscore", and their inverses (sieve::Error on others).
const char* search_mode_name(SearchMode m);
SearchMode search_mode_from_name(const std::string& name);
const char* fusion_name(Fusion f);
Fusion fusion_from_name(const std::string& name);

/// One result. `doc` is the internal id (0-based, dense, stable across `add`).
struct Hit {
  uint32_t doc = 0;
  std::string id;
  double score = 0;
  double dense_score = std::numeric_limits<double>::quiet_NaN();  ///< cosine, when seen by dense
  double bm25_score = std::numeric_limits<double>::quiet_NaN();   ///< BM25, when seen by BM25
  int dense_rank = 0;  ///< 1-based rank in the dense list, 0 = absent
  int bm25_rank = 0;   ///< 1-based rank in the BM25 list, 0 = absent
};

/// Result of one query.
struct SearchResult {
  std::vector<Hit> hits;
  TokenStates query_tokens;  ///< filled when SearchParams::query_tokens (L2-normalised rows)
};

/// A shard served elsewhere did not answer, or answered what cannot be (ShardRemote); the
/// server's 503.
struct ShardUnavailable : Error {
  using Error::Error;
};

/// A shard served elsewhere had not answered when the request's deadline (SearchParams::deadline)
/// passed; the server's 504. Never retried: the time is spent.
struct ShardTimeout : ShardUnavailable {
  using ShardUnavailable::ShardUnavailable;
};

/// The parts of a shard set's shards that live in other processes (Ray Serve's shard replicas,
/// python/sieve/ray_serve.py): each shard's dense search and its stored keys and token states.
/// The opener keeps the rest (BM25 over every shard's database, documents, token ids), so it
/// needs the set's folder on its file system; it never loads a shard's vectors. Internal ids are
/// the shard's own (0-based). Every call names the copy of the shard it means: `identity`, the
/// shard's manifest digest as the caller's snapshot of the set records it (index::shard_identity);
/// a remote that serves another copy refuses (ShardUnavailable), or answers from the copy named
/// when it still has it (a set written since: docs/formats.md, "Writes to a shard set"). Calls may
/// come from several threads at once: a shard set sends each
/// stage's calls to every shard at once, each on its own thread, and waits for them until the
/// request's deadline.
class ShardRemote {
 public:
  virtual ~ShardRemote() = default;
  /// Shard `shard`'s best `depth` documents for each of `n` pooled query keys (`pooled`: n x dim),
  /// best first, equal scores lower id first; p.ef_search, p.nprobe, p.filter and p.now apply (as
  /// dense_lists: the shard leaves out its deleted and expired documents itself).
  virtual std::vector<std::vector<std::pair<uint32_t, double>>> dense_lists(size_t shard, const std::string& identity,
                                                                           size_t n, size_t dim,
                                                                           const float* pooled, size_t depth,
                                                                           const SearchParams& p) const = 0;
  /// The documents' token states, the first `max_rows` rows of each (Index::tokens); waited for
  /// until `deadline` at most (time_point::max(): the remote's own timeout).
  virtual std::vector<TokenStates> tokens(size_t shard, const std::string& identity, const std::vector<uint32_t>& docs,
                                          size_t max_rows,
                                          std::chrono::steady_clock::time_point deadline) const = 0;
  /// The documents' pooled keys, docs.size() x dim floats (Index::key); waited for until `deadline`.
  virtual std::vector<float> keys(size_t shard, const std::string& identity, const std::vector<uint32_t>& docs,
                                  std::chrono::steady_clock::time_point deadline) const = 0;
  /// Stage 2 at the shard: the verifier the shard holds scores the query's token states (L2-
  /// normalised rows, as SearchResult::query_tokens) against each document's stored ones, one
  /// score per document. `verifier` is the key of the verifier the caller means (verifier_key()
  /// in sieve/verify.h); a shard that holds another refuses (ShardUnavailable), so that a score
  /// never comes from a verifier the caller did not choose. Only called when scores_at_shards().
  virtual std::vector<float> scores(size_t shard, const std::string& identity, const std::string& verifier,
                                    const TokenStates& query,
                                    const std::vector<uint32_t>& docs,
                                    std::chrono::steady_clock::time_point deadline) const;
  /// Whether the shards score candidates themselves (scores()); false: stage 2 reads their token
  /// states here (tokens()).
  virtual bool scores_at_shards() const { return false; }
};

/// Options of Index::open.
struct IndexOpenOptions {
  std::string model_dir;        ///< encoder to use; empty = the path recorded at build time
  EncoderOptions encoder;       ///< device and threads (pooling and max length come from the index)
  bool load_encoder = true;     ///< false: no query encoding (bm25 search, documents, tokens only)
  /// An encoder already loaded for this index's model (Index::shared_encoder() of an earlier
  /// snapshot of the same index), used instead of loading one: reopening to see added documents
  /// then costs no model load. Only its width is checked.
  std::shared_ptr<const Encoder> encoder_instance;
  bool verify = false;          ///< also check the CRC of every data file (reads everything)
  /// Shard sets only: where the shards' dense search, keys and token states are served (the
  /// vectors are then not loaded here). Null: every shard is opened whole in this process.
  std::shared_ptr<const ShardRemote> remote;
  /// false: the dense vectors are not loaded (search() then refuses dense and hybrid modes, and
  /// key() reads only keys added since the vector file was written). A shard set served
  /// through `remote` opens its shards so.
  bool load_vectors = true;
};

/// What an index holds.
struct IndexStats {
  size_t documents = 0;
  size_t dim = 0;
  uint64_t tokens = 0;          ///< token states stored
  std::string vector_factory;
  std::string token_codec;
  size_t token_code_bytes = 0;  ///< bytes per stored token state
  std::string model_identity;
  std::string model_path;
  /// The arithmetic of the stored keys (Encoder::key_grid() at the build: "fp32", "int8-127",
  /// "int8-63"); empty for an index built before it was recorded.
  std::string key_grid;
  uint64_t bytes_on_disk = 0;
  std::vector<std::pair<std::string, uint64_t>> file_bytes;  ///< per file or folder (per shard in a shard set)
  size_t shards = 1;            ///< indexes searched as one (a shard set: more than one)
  size_t deleted = 0;           ///< documents deleted or replaced, still on disk until compaction
  bool has_metadata = false;    ///< some document carries metadata or an expiry (the metadata log)
};

/// An opened index: a snapshot of the committed state at open. Immutable; search() and the
/// accessors may be called from several threads, and another process may `add` meanwhile (the
/// snapshot keeps its documents; reopen to see the new ones).
class Index {
 public:
  virtual ~Index() = default;
  /// Opens an index directory; throws sieve::Error when it is missing, of another format version,
  /// damaged, or when the model is not the one the index was built with.
  static std::unique_ptr<Index> open(const std::string& dir, const IndexOpenOptions& opt = {});

  virtual const IndexStats& stats() const = 0;
  virtual size_t size() const = 0;
  /// The document with internal id `doc` (sieve::Error when out of range or damaged).
  virtual Document document(uint32_t doc) const = 0;
  /// Internal id of an external id, or -1 (also for a deleted, replaced-away or expired one).
  virtual int64_t find(const std::string& id) const = 0;
  /// Whether internal id `doc` is searchable at `now` (seconds since 1970; 0 = the system
  /// clock): neither deleted, nor replaced by an upsert, nor expired.
  virtual bool live(uint32_t doc, double now = 0) const = 0;
  /// The live documents at `now` whose metadata passes `filter`, ascending.
  virtual std::vector<uint32_t> matching(const Filter& filter, double now = 0) const = 0;
  /// The decoded, L2-normalised token states the encoder produced for `doc` (sieve::Error when
  /// out of range, damaged, or the index has no token store).
  TokenStates tokens(uint32_t doc) const { return tokens(doc, SIZE_MAX); }
  /// Only the first `max_rows` of them (what a verifier reading max_tokens rows needs: the rest
  /// is not decoded). The record's checksum still covers all of it.
  virtual TokenStates tokens(uint32_t doc, size_t max_rows) const = 0;
  /// tokens(doc, max_rows) of each of `docs`, in order (one call per shard on a remote shard set,
  /// all at once: ShardTimeout when one has not answered by `deadline`; local work is not cut).
  virtual std::vector<TokenStates> tokens_of(const std::vector<uint32_t>& docs, size_t max_rows,
                                             std::chrono::steady_clock::time_point deadline =
                                                 std::chrono::steady_clock::time_point::max()) const;
  /// key(doc) of each of `docs`, docs.size() x dim floats in order (one call per shard on a remote
  /// shard set, all at once: ShardTimeout when one has not answered by `deadline`).
  virtual std::vector<float> keys_of(const std::vector<uint32_t>& docs,
                                     std::chrono::steady_clock::time_point deadline =
                                         std::chrono::steady_clock::time_point::max()) const;
  /// Stage 2 where the documents live: the scores of the shards' verifier (key `verifier`,
  /// ShardRemote::scores) for the query's token states against each of `docs`, asked of every
  /// shard at once; nullopt when this index's documents are read here (every local index, and a
  /// shard set whose remote does not score). ShardTimeout past `deadline`.
  virtual std::optional<std::vector<float>> shard_scores(const std::string& verifier, const TokenStates& query,
                                                         const std::vector<uint32_t>& docs,
                                                         std::chrono::steady_clock::time_point deadline) const;
  /// The token ids of tokens(doc)'s rows: stored beside them in indexes built since the index kept
  /// them (manifest `logs.token_ids`); in older ones, from the document's text through the
  /// encoder's tokenizer (sieve::Error when opened without the encoder, or when the text no longer
  /// gives as many tokens as were stored).
  virtual std::vector<int32_t> token_ids(uint32_t doc) const = 0;
  /// The stored pooled unit key of `doc` (dim floats).
  virtual std::vector<float> key(uint32_t doc) const = 0;
  /// The query encoder (nullptr when opened without one).
  virtual const Encoder* encoder() const = 0;
  /// The same encoder, shareable with a later snapshot (IndexOpenOptions::encoder_instance).
  virtual std::shared_ptr<const Encoder> shared_encoder() const = 0;

  /// Searches one query.
  virtual SearchResult search(const std::string& query, const SearchParams& params = {}) const = 0;
  /// Searches many queries, encoding them in batches.
  virtual std::vector<SearchResult> search_batch(const std::vector<std::string>& queries,
                                                 const SearchParams& params = {}) const = 0;
};

/// What a delete did.
struct DeleteReport {
  size_t deleted = 0;                ///< documents deleted
  std::vector<std::string> missing;  ///< ids asked for that the index does not hold (live)
  size_t documents = 0;              ///< live documents after it
};

/// How a build ended.
struct BuildReport {
  size_t documents = 0;       ///< documents in the index now
  size_t added = 0;           ///< documents encoded by this call
  size_t replaced = 0;        ///< documents an upsert replaced (deleted in the same commit)
  size_t resumed_from = 0;    ///< documents kept from an interrupted build (0 = fresh start)
  size_t truncated = 0;       ///< documents longer than the encoder's max length
  double encode_seconds = 0;  ///< time spent inside the encoder
  // Where the rest of the time went (seconds in each part; with the writer overlapping the
  // encoder, parts can sum to more than total_seconds - encode_seconds).
  double validate_seconds = 0;  ///< reading the corpus once to check it before encoding
  double store_seconds = 0;     ///< token codec and the corpus, key and token logs
  double lexical_seconds = 0;   ///< the BM25 (Xapian) database, commits included
  double vectors_seconds = 0;   ///< the vector index: training, adding the keys, saving
  double total_seconds = 0;
  std::string note;           ///< "fresh build", "resumed an interrupted build ...", "restarted: <reason>", ...
};

/// Builds an index at `out` from a corpus file with the model at `model_dir`. Written in
/// `<out>.partial` and renamed into place when complete; an interrupted build resumes from its
/// last checkpoint when called again with the same model, corpus and options.
BuildReport build_index(const std::string& model_dir, const std::string& corpus_path, const std::string& out,
                        const IndexBuildOptions& opt = {}, const EncoderOptions& enc = {});

/// Appends the documents of a corpus file to an existing index (ids must be new, or
/// IndexBuildOptions::upsert replaces the documents of ids it holds, in the same commit). Readers see the
/// old index until the new manifest is in place; an interrupted add leaves the old index intact.
BuildReport add_to_index(const std::string& index_dir, const std::string& corpus_path,
                         const IndexBuildOptions& opt = {}, const EncoderOptions& enc = {},
                         const std::string& model_dir = "");

/// build_index from documents held in memory (ids must be non-empty and unique). The batch is
/// written as a JSON-lines corpus beside `out` for the build and removed afterwards, so an
/// interrupted build resumes only when called again with the same documents.
BuildReport build_index_from_documents(const std::string& model_dir, const std::vector<Document>& docs,
                                       const std::string& out, IndexBuildOptions opt = {},
                                       const EncoderOptions& enc = {});

/// add_to_index from documents held in memory: all of the batch or none of it (ids must be
/// non-empty, unique in the batch and new to the index; sieve::Error otherwise, nothing added).
/// Loads the encoder for this one call: to add again and again, keep an IndexWriter.
/// IndexBuildOptions::upsert: ids the index holds are replaced instead of refused.
BuildReport add_documents(const std::string& index_dir, const std::vector<Document>& docs, IndexBuildOptions opt = {},
                          const EncoderOptions& enc = {}, const std::string& model_dir = "");

/// Deletes the documents of `ids` from the index at `dir`, all in one durable commit. An id the
/// index does not hold (live) refuses the batch with nothing deleted, unless `missing_ok` (it is
/// reported in DeleteReport::missing). The documents stay on disk, invisible, until compaction.
DeleteReport delete_documents(const std::string& dir, const std::vector<std::string>& ids, bool missing_ok = false);
/// Deletes every live document whose metadata passes `filter` (an empty filter is refused: delete
/// an index by removing its folder).
DeleteReport delete_matching(const std::string& dir, const Filter& filter);

/// Options of a compaction.
struct CompactOptions {
  /// HNSW build breadth of the rewritten vector index (the build's default; not recorded).
  int hnsw_ef_construction = 80;
  /// The clock expiry is read at (0: the system clock when the compaction starts).
  double now = 0;
};

/// What a compaction did.
struct CompactReport {
  size_t documents_before = 0;  ///< documents on disk before (live or not)
  size_t documents = 0;         ///< documents after (all live at `now`)
  size_t removed = 0;           ///< deleted, replaced or expired documents dropped
  uint64_t bytes_before = 0, bytes_after = 0;
  double seconds = 0;
};

/// Rewrites the index at `dir` without its deleted, replaced and expired documents: corpus, keys
/// and vector index, BM25, token store, token ids and metadata, from what is stored (nothing is
/// encoded again), so that it searches as a fresh build of the survivors would (docs/formats.md).
/// The new index is written beside it (`<dir>.compacting`) while searches and writes go on; writes
/// committed meanwhile are carried over under the write lock, then the two folders are exchanged
/// in one step (a crash at any point leaves a valid index; leftovers are removed next time).
/// Readers that opened the old index keep reading it; reopen to see the new one. Not for shard
/// sets (sieve::Error).
CompactReport compact_index(const std::string& dir, const CompactOptions& opt = {});

// ---- shard sets ------------------------------------------------------------------------------
// A shard set is a folder of N indexes (shard-000, shard-001, ...) and a manifest, shardset.json,
// that names them with their document counts and manifest checksums (docs/formats.md). Shard s
// holds the corpus's documents [first_s, first_s + documents_s) in order, so internal ids are those
// of one index over the whole corpus. Index::open opens either kind: a shard set searches every
// shard and merges (dense top-k by score, BM25 with the statistics of all shards, hybrid fused
// after the merge), and its results equal one index's over the same documents for exact vector
// search (Flat). Shards share one token codec (the first shard's), so stage 2 reads the same
// token states too. Writes go through the set (IndexWriter, add_to_index, delete_documents,
// compact_index on its folder): each id to the shard that owns it, one transaction per batch
// (docs/formats.md, "Writes to a shard set"); internal ids then are the set's current numbering.

/// True when `dir` holds a shard-set manifest.
bool is_shard_set(const std::string& dir);

/// The file that marks a shard set, and the folder of shard `s` ("shard-007").
constexpr const char* kShardSetFile = "shardset.json";
std::string shard_dir_name(size_t shard);

/// Splits a corpus file into `shards` JSON-lines corpora `<dir>/shard-000.jsonl`, ... of nearly
/// equal, contiguous parts (ids kept, text ids as `build_index` gives them), after validating it
/// whole (ids unique across the corpus). Returns the files written, in shard order.
///
/// With `align` > 1 every shard but the last starts at a multiple of `align` documents, when the
/// corpus has at least `align` x `shards` of them. The builder encodes `chunk_docs` documents at
/// a time, and an encoder's last bits depend on which texts share a batch, so shards cut at
/// chunk boundaries encode exactly the batches one index would: their keys and token states are
/// the same bits (and shard 0's first chunk trains the same token codec).
std::vector<std::string> split_corpus(const std::string& corpus_path, CorpusFormat format, size_t shards,
                                      const std::string& dir, size_t align = 1);

/// Where split_corpus cuts `total` documents into `shards` parts: shards + 1 bounds, shard s being
/// documents [bounds[s], bounds[s + 1]). A distributed build cuts with it too.
std::vector<size_t> shard_bounds(size_t total, size_t shards, size_t align = 1);

/// The options every shard of a corpus of `documents` documents is built with: "auto" vectors
/// resolved from the whole corpus's size (a shard of a large corpus gets the large corpus's
/// HNSW, not the Flat its own size would pick).
IndexBuildOptions shard_build_options(const IndexBuildOptions& opt, size_t documents);

/// Checks the `shards` shard indexes `<staging>/shard-000` .. (every one there and no more,
/// complete, same model, pooling, length, vectors and codec; with `verify`, every file's checksum)
/// and commits them as the shard set at `out`: writes the manifest, then publishes `staging` at
/// `out` (all or nothing; an existing `out` only with `force`, swapped in one step so that `out`
/// never names no set). Throws sieve::Error naming the shard that fails or is missing.
void commit_shard_set(const std::string& staging, const std::string& out, size_t shards, bool force = false,
                      bool verify = true);

/// Builds shard `shard` of a set in `<staging>/shard-XXX` from its part of the corpus, with `opt`
/// as shard_build_options gives it: shards after the first take shard 0's trained token codec
/// (so shard 0 is built first), an interrupted shard resumes, and a complete one is kept
/// (note "kept: built before"). The one step of a build that build_shard_set runs in turn and a
/// distributed build runs on many workers.
BuildReport build_shard(const std::string& model_dir, const std::string& corpus, const std::string& staging,
                        size_t shard, const IndexBuildOptions& opt, const EncoderOptions& enc = {});

/// build_index for `shards` shards on this machine, one after the other: split_corpus, the first
/// shard (which trains the token codec), the others with its codec, commit_shard_set. Work goes
/// to `<out>.partial`; a stopped build resumes shard by shard when called again.
BuildReport build_shard_set(const std::string& model_dir, const std::string& corpus_path, const std::string& out,
                            size_t shards, const IndexBuildOptions& opt = {}, const EncoderOptions& enc = {});

/// The writer of one index within a process (the server's POST /v1/documents and Python's
/// Index.add use it). It opens the index once, with its encoder; each add() encodes the batch with
/// that encoder, appends it to the open index (the vector file is rewritten only now and then:
/// IndexBuildOptions::max_vector_tail), commits, and swaps in a snapshot that shares the previous
/// one's vector index, id map and encoder, so that an add costs what it adds. add() calls are
/// serialised by one mutex: two threads adding at once take turns, and each batch is all or
/// nothing. Another process writing the same index at that moment still fails the add (sieve::Error,
/// nothing added); when another process has added since, the next add reopens first. snapshot()
/// may be called from any thread and gives the latest committed state.
class IndexWriter {
 public:
  /// Opens the index at `dir` (sieve::Error as Index::open; the encoder is required).
  explicit IndexWriter(const std::string& dir, const IndexOpenOptions& opt = {});
  ~IndexWriter();
  IndexWriter(const IndexWriter&) = delete;
  IndexWriter& operator=(const IndexWriter&) = delete;

  const std::string& dir() const;
  /// The latest committed snapshot.
  std::shared_ptr<const Index> snapshot() const;
  /// Adds `docs`: all of them or none (ids non-empty, unique in the batch and new to the index;
  /// text valid UTF-8; sieve::Error naming the document otherwise, nothing added). Returns when
  /// the batch is durable and visible in snapshot().
  BuildReport add(const std::vector<Document>& docs, const IndexBuildOptions& opt = {});
  /// add() with IndexBuildOptions::upsert: ids the index holds are replaced in the same commit.
  BuildReport upsert(const std::vector<Document>& docs, IndexBuildOptions opt = {});
  /// Deletes `ids` (delete_documents' rules), durable and visible in snapshot() on return.
  DeleteReport remove(const std::vector<std::string>& ids, bool missing_ok = false);
  /// Deletes the live documents that pass `filter` (not empty).
  DeleteReport remove_matching(const Filter& filter);
  /// compact_index on this writer's index: writes wait only while the compaction carries over
  /// what they committed meanwhile; snapshot() then gives the compacted index.
  CompactReport compact(const CompactOptions& opt = {});

 private:
  template <class Pick>
  DeleteReport delete_where(Pick&& pick);
  struct State;
  std::unique_ptr<State> s_;
};

/// What the encoder reads of a document: `title + " " + text`, or the text when there is no title.
std::string encoder_text(const Document& doc);

/// What an interrupted build compares to decide between resuming and starting afresh: the corpus's
/// absolute path, size, modification time and CRC-32 of its bytes (a folder, e.g. of Parquet
/// files: the same for every file under it, in name order; a pipe or device is not read). An edit that keeps the size, the
/// document count or even the modification time still changes it. Used by the C++ builder's
/// checkpoints and by sieve.ray's build key.
std::string corpus_fingerprint(const std::string& path);

/// The identity an index, a verifier file and a token cache record for the model they were made
/// with: "sha256:<SHA-256 of the weights file>:<16 hex digits of a SHA-256 over the config and
/// tokenizer files>". Another model, or the same model retrained, differs. Memoised per process
/// (by path, size and modification time of each file read), so repeated checks cost nothing.
std::string model_identity(const std::string& model_dir);

/// model_identity() in the scheme of `recorded`: identities written before the SHA-256 scheme
/// ("crc32:...": CRC-32s of the same files) are computed the old way, so that old indexes and
/// verifier files are still checked rather than refused. Any other recorded value: model_identity().
std::string model_identity_like(const std::string& model_dir, const std::string& recorded);

}  // namespace sieve
