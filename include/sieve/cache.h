// A semantic cache that never serves the answer to another question (issue 60): entries are
// prompts with an opaque answer, a scope (model, system-prompt digest, tenant, ...) and an expiry,
// stored as documents of an ordinary sieve index in a folder. A lookup searches stage 1 within
// the lookup's scope, then the identity gate reads the candidates: a hit is the best candidate the
// gate accepts, never merely the nearest one. The server's /v1/cache routes, Python's sieve.Cache,
// `sieve cache` and the LangChain cache are faces of this class (docs/cache.md).
#pragma once

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sieve/encoder.h"
#include "sieve/index.h"

namespace sieve {

/// A scope: field -> value. Entries are found only by lookups of exactly the same scope.
using CacheScope = std::map<std::string, std::string>;

/// Options of SemanticCache::open.
struct CacheOptions {
  std::string model_dir;              ///< encoder; empty = the default model (or the cache's own)
  EncoderOptions encoder;             ///< device and threads
  std::string verifier = "default";   ///< the gate (resolve_verifier spec); "cosine" = a cosine cache
  /// Accept when the gate's score >= this; NaN = the verifier's calibrated threshold (required for
  /// "cosine", which has none).
  double threshold = std::numeric_limits<double>::quiet_NaN();
  size_t candidates = 8;              ///< stage-1 candidates the gate reads
  /// The scope fields a store or lookup may name; another field is refused (sieve::Error).
  std::vector<std::string> scope_fields = {"model", "system", "tenant"};
  /// Limits in Unicode code points (as JSON Schema's maxLength counts). An answer is stored in the
  /// entry's metadata, whose records hold at most 64 KiB (8,192 characters, escaped, fit).
  size_t max_prompt_chars = 4096;
  size_t max_answer_chars = 8192;
  size_t max_scope_value_chars = 256;  ///< each scope value
  /// The time, in seconds since 1970 (expiry is counted on it); null: the system clock. Tests set it.
  std::function<double()> clock;
};

/// A lookup's answer. `hit` false: a miss (the scores then are those of the best candidate, when
/// there was one, so that a caller sees how near the miss was).
struct CacheLookup {
  bool hit = false;
  std::string id, prompt, answer;   ///< the entry served (hit only)
  double score = std::nan("");      ///< the gate's score of the best candidate
  double stage1_score = std::nan("");  ///< its stage-1 (cosine) score
  double threshold = std::nan("");  ///< the gate's threshold
  size_t candidates = 0;            ///< candidates the gate read
};

/// One stored entry.
struct CacheEntry {
  std::string id, prompt, answer;
  CacheScope scope;
  double expires_at = 0;  ///< seconds since 1970; 0 = never
};

/// The cache in folder `dir` (an index, created by the first store). Thread-safe: lookups run at
/// once, stores and invalidations take turns (the index's writer). Immutable options.
class SemanticCache {
 public:
  /// Opens (or prepares to create) the cache at `dir`: the encoder and the gate are loaded here.
  /// sieve::Error for a folder that holds something else, an unknown verifier, a cosine cache
  /// without a threshold.
  static std::unique_ptr<SemanticCache> open(const std::string& dir, const CacheOptions& opt = {});
  virtual ~SemanticCache() = default;

  /// Stores `answer` for `prompt` in `scope`, expiring after `ttl_s` seconds (0: never); returns
  /// the entry's id (one prompt in one scope has one id: storing it again replaces its answer).
  /// sieve::Error naming the field for an empty or oversized prompt, an oversized answer, an
  /// unknown scope field, a negative or non-finite ttl; nothing is stored then.
  virtual std::string store(const std::string& prompt, const std::string& answer, const CacheScope& scope = {},
                            double ttl_s = 0) = 0;
  /// Looks `prompt` up in `scope` (see the class). An empty cache answers a miss.
  virtual CacheLookup lookup(const std::string& prompt, const CacheScope& scope = {}) const = 0;
  /// The entry `id` while it is live; false otherwise.
  virtual bool get(const std::string& id, CacheEntry* out) const = 0;
  /// Removes the entries `ids` (those the cache does not hold are ignored); returns how many.
  virtual size_t invalidate(const std::vector<std::string>& ids) = 0;
  /// Removes every entry whose scope has the values of `scope` for the fields it names (all of
  /// them for an empty scope); returns how many.
  virtual size_t invalidate_scope(const CacheScope& scope) = 0;
  /// Rewrites the cache's index without its expired, replaced and invalidated entries, which stay
  /// on disk, invisible, until then (expiry read at the cache's clock); lookups and stores go on
  /// meanwhile. Nothing stored yet: an empty report.
  virtual CompactReport compact() = 0;
  /// Live entries.
  virtual size_t size() const = 0;
  /// Entries on disk that no lookup sees (replaced, invalidated, expired at the cache's clock):
  /// what compact() would remove. `sieve serve --cache` compacts on its own past
  /// --compact-dead-share of them (and at least --compact-min-dead).
  virtual size_t dead() const = 0;
  virtual const CacheOptions& options() const = 0;
  /// The threshold lookups use (the option, else the gate's calibrated one).
  virtual double threshold() const = 0;
};

/// A scope from JSON text, an object of field -> string (what the server's bodies and
/// `sieve cache --scope` give); sieve::Error naming the place ("scope.model: ...") otherwise.
CacheScope cache_scope_from_json(const std::string& json);
/// The JSON every face answers: a lookup {"hit", "id", "prompt", "answer", "score", "stage1_score",
/// "threshold", "candidates"} (null where a miss has none); an entry {"id", "prompt", "answer",
/// "scope", "expires_at"}.
std::string cache_lookup_json(const CacheLookup& r);
std::string cache_entry_json(const CacheEntry& e);

/// The id of `prompt` in `scope` (what store returns): a SHA-256 over the scope's canonical form
/// and the prompt, 32 hex digits.
std::string cache_entry_id(const std::string& prompt, const CacheScope& scope);

}  // namespace sieve
