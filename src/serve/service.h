// The search service behind `sieve serve`: JSON requests in, JSON responses out, independent of
// the HTTP library (serve/http_server.h binds it to sockets). Endpoints and formats:
// docs/server.md. Loads once; handle() may be called from any number of threads.
#pragma once

#include <atomic>
#include <functional>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <string>
#include <utility>
#include <vector>

#include "serve/batcher.h"
#include "serve/metrics.h"
#include "sieve/encoder.h"
#include "sieve/cache.h"
#include "sieve/index.h"
#include "sieve/pipeline.h"
#include "sieve/verify.h"

namespace sieve::serve {

struct ServeOptions {
  std::string index_dir;     ///< empty: embedding and verification only
  std::string model_dir;     ///< empty: the index's model, else the default model (default_model_dir)
  std::string verifier;      ///< a resolve_verifier spec: file, cosine, F0/F1/F2; empty: the model's shipped one, else F1
  /// The gate by mode instead of `verifier` (gate_verifier_spec): "", auto, fast, accurate or cascade;
  /// `cross` = the cross-encoder folder of accurate and cascade ("" = MODEL_DIR/cross-encoder).
  std::string gate_mode, cross;
  EncoderOptions encoder;    ///< device and threads
  BatcherOptions batching;   ///< dynamic batching (its `workers` comes from encoder_workers)
  /// Encoder workers: 0 = one per core on a CPU (encoder.threads of them when given), one on a
  /// GPU. With several, every computation is single-threaded (encoder.threads is taken as 1) and
  /// search_slots defaults to the workers.
  size_t encoder_workers = 0;
  size_t max_texts = 512;    ///< texts (or pairs) per request; more -> 422
  size_t max_k = 1000;       ///< k and candidates per query; more -> 422
  /// Searches and explanations computed at once (0: the compute threads); the others wait for a
  /// slot, so that many connections do not oversubscribe the cores.
  size_t search_slots = 0;
  /// Every request's deadline, from its arrival, when its body gives no `timeout_ms`, and the most
  /// a body may ask (more: 422); 0: no deadline. A search or explanation still waiting for a slot,
  /// or texts still waiting for the encoder, at the deadline: 504. A search whose stage 1 ends past
  /// it: stage 1's hits, flagged, without stage 2 (docs/server.md, "Limits").
  size_t request_timeout_ms = 30000;
  /// A shard set's shards served elsewhere (IndexOpenOptions::remote; Ray Serve's router).
  std::shared_ptr<const ShardRemote> remote;
  /// The shard servers' replicas as the router sees them, as JSON (HttpShardRemote::describe):
  /// /v1/info's `shard_servers`; empty: not reported.
  std::function<std::string()> shard_servers;
  /// After a write, the index is compacted in the background (IndexWriter::compact) once deleted,
  /// replaced and expired documents are this share of it and at least `compact_min_dead`; 0: never.
  double compact_dead_share = 0.3;
  size_t compact_min_dead = 1000;
  /// The semantic cache served at /v1/cache (sieve/cache.h); empty: none (those routes are 404).
  std::string cache_dir;
  /// Its gate and threshold (CacheOptions::verifier, ::threshold); its model is model_dir's.
  std::string cache_verifier = "default";
  double cache_threshold = std::numeric_limits<double>::quiet_NaN();
};

/// Checks what can be checked before the (slow) load: the index and model folders exist. Throws
/// sieve::Error naming the folder; `sieve serve` calls it before it binds and announces itself.
void check_serve_options(const ServeOptions& opt);

/// An HTTP answer: status, body, content type and extra headers.
struct Response {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

/// A request error: HTTP status, error type ("invalid_request_error", ...), message.
struct HttpError : std::runtime_error {
  HttpError(int s, std::string t, const std::string& m) : std::runtime_error(m), status(s), type(std::move(t)) {}
  int status;
  std::string type;
};

/// `{"error": {"message", "type"}}` with that status.
Response error_response(int status, const std::string& type, const std::string& message);

class Service {
 public:
  /// Loads the model, the index and the verifier; sieve::Error when one cannot be loaded.
  explicit Service(const ServeOptions& opt);
  ~Service();

  /// Every route the service answers, as (path, method); the document route is
  /// "/v1/documents/{id}". docs/openapi.json describes exactly these (a test holds it to them).
  static std::vector<std::pair<std::string, std::string>> routes();
  /// The methods `path` takes, as a 405's Allow header lists them ("GET, POST" for /; "GET" for
  /// the document route and for unknown paths).
  static std::string allowed_method(const std::string& path);
  /// Whether the route table has `method` on `path`.
  static bool allows(const std::string& path, const std::string& method);
  /// The fields a route's JSON body may hold (empty for routes without one); others are a 422.
  static const std::vector<std::string>& body_fields(const std::string& path, const std::string& method = "POST");

  /// Answers one request. `path` without the query string; `query` the decoded query parameters.
  /// Never throws: every failure is an error response.
  /// `arrived`: when the request arrived (its deadline counts from then).
  Response handle(const std::string& method, const std::string& path, const std::string& body,
                  const std::map<std::string, std::string>& query = {},
                  std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now());

  /// Counts a response that the HTTP layer produced itself (413, 401, 503 while loading).
  void count(const std::string& path, int status, double seconds);
  /// Prometheus text format: requests by endpoint and status, latency histograms, batch sizes,
  /// queue depth, documents.
  std::string metrics() const;

 private:
  using Clock = std::chrono::steady_clock;
  Response route(const std::string& method, const std::string& path, const std::string& body,
                 const std::map<std::string, std::string>& query, Clock::time_point arrived);
  /// The request's deadline: `arrived` plus the body's timeout_ms (checked against the server's
  /// maximum) or the server's request_timeout_ms; time_point::max() when there is none.
  Clock::time_point deadline_of(const nlohmann::json* body, Clock::time_point arrived) const;
  Response info() const;
  Response embeddings_openai(const std::string& body, Clock::time_point deadline);
  Response embed_tei(const std::string& body, Clock::time_point deadline);
  Response rerank_tei(const std::string& body, Clock::time_point deadline);
  Response verify(const std::string& body, Clock::time_point deadline);
  Response search(const std::string& body, Clock::time_point arrived);
  // The document routes (serve/document_routes.cpp).
  Response add_documents(const std::string& body);
  Response get_document(const std::string& id) const;
  Response put_document(const std::string& id, const std::string& body);
  Response delete_document(const std::string& id);
  Response delete_documents(const std::string& body);
  /// 404 without an index.
  void check_writable() const;
  // The cache routes (serve/cache_routes.cpp).
  Response cache_store(const std::string& body);
  Response cache_lookup(const std::string& body) const;
  Response cache_get(const std::string& id) const;
  Response cache_delete(const std::string& id);
  Response cache_delete_batch(const std::string& body);
  SemanticCache& cache() const;
  /// The index snapshot searches use now (a POST /v1/documents swaps in a newer one).
  std::shared_ptr<const Index> snapshot() const;
  /// Through the batcher; with `route`, a truncated input is logged naming the route and the
  /// inputs' positions (the encoder's own warning names no request and comes once).
  Embeddings encode(const std::vector<std::string>& texts, bool token_states, const char* route = nullptr,
                    Clock::time_point deadline = Clock::time_point::max());
  double threshold_or(double given) const;
  /// Throws sieve::Error (422) naming the first NaN or infinite verifier score ("text 2", "pair 0").
  void require_finite(const std::vector<float>& scores, const char* item) const;

  ServeOptions opt_;
  /// The index (when served): its snapshots for searches, its adds for POST /v1/documents.
  std::unique_ptr<IndexWriter> index_;
  std::unique_ptr<SemanticCache> cache_;    ///< the cache (when served)
  std::shared_ptr<const Encoder> encoder_;  ///< shared by every snapshot
  ResolvedVerifier verifier_;
  /// F1, the relevance reranker, when verifier_ is the model's calibrated gate taken by default
  /// (a gate judges identity, not relevance); else unset and verifier_ serves rerank too.
  ResolvedVerifier relevance_;
  /// What orders by relevance (rerank without gate, TEI /rerank): relevance_ when set, else verifier_.
  const ResolvedVerifier& reranker() const { return relevance_.name.empty() ? verifier_ : relevance_; }
  /// Their keys (shard_verifier_key) when the shards are served elsewhere and score their own
  /// candidates (ShardRemote::scores_at_shards); "" otherwise.
  std::string verifier_key_, relevance_key_;
  std::string model_name_;
  SearchRecommendation rec_;
  std::unique_ptr<EmbedBatcher> batcher_;

  /// Counting semaphore over search_slots.
  class Slots {
   public:
    explicit Slots(size_t n) : capacity_(n), free_(n) {}
    size_t capacity() const { return capacity_; }
    /// Takes a slot, waiting until one is free or `deadline` passes (false: no slot taken).
    bool acquire_until(std::chrono::steady_clock::time_point deadline) {
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_.wait_until(lock, deadline, [&] { return free_ > 0; })) return false;
      --free_;
      return true;
    }
    void release() {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++free_;
      }
      cv_.notify_one();
    }

   private:
    std::mutex mu_;
    std::condition_variable cv_;
    const size_t capacity_;
    size_t free_;
  };
  std::unique_ptr<Slots> slots_;

  RequestMetrics requests_;

  /// A compaction the server runs on its own, in the background (the index's, the cache's).
  struct Background {
    std::thread thread;  // the running (or last) one; guarded by compact_mu_
    std::atomic<bool> running{false};
    std::atomic<size_t> done{0};
  };
  /// Starts a background compaction when the dead share calls for one and none is running.
  void maybe_compact();
  /// The same for the cache (after a store that replaced or an invalidation; expired entries count).
  void maybe_compact_cache();
  /// Runs `compact` on `b`'s thread unless one runs; `what` names it in the log.
  void start_compaction(Background& b, const std::string& what, size_t dead,
                        std::function<CompactReport()> compact);
  std::mutex compact_mu_;
  Background index_compaction_, cache_compaction_;
};

/// The server's rule for compacting on its own: at least `min_dead` dead of `total` and at least
/// `share` of them (share <= 0: never). One rule for the index and for the cache.
bool compaction_due(size_t dead, size_t total, double share, size_t min_dead);

}  // namespace sieve::serve
