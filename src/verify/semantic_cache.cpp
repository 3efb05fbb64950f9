// SemanticCache (sieve/cache.h): entries are documents of an ordinary index in the cache's folder:
// the prompt is the text; the metadata holds the answer, the scope's canonical form ("scope": what
// a lookup filters on, so that no lookup sees another scope's entries) and each scope field
// ("scope_FIELD": what invalidation by a partial scope filters on); the TTL is the document's
// expiry. The index is created by the first store (HNSW32 vectors, token states for the gate).
#include "sieve/cache.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "core/checksum.h"
#include "core/file_util.h"
#include "sieve/error.h"
#include "sieve/filter.h"
#include "sieve/index.h"
#include "sieve/model.h"
#include "sieve/pipeline.h"
#include "sieve/verify.h"

namespace sieve {
namespace {

using json = nlohmann::json;

constexpr const char* kAnswer = "answer";
constexpr const char* kScope = "scope";
constexpr const char* kFieldPrefix = "scope_";

std::string canonical_scope(const CacheScope& scope) { return json(scope).dump(); }  // std::map: sorted keys

// Unicode code points of UTF-8 text: the bytes that do not continue a sequence.
size_t code_points(const std::string& s) {
  size_t n = 0;
  for (const unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}


class CacheImpl final : public SemanticCache {
 public:
  CacheImpl(const std::string& dir, const CacheOptions& opt) : dir_(dir), opt_(opt) {
    SIEVE_THROW_IF_NOT(opt_.candidates > 0, "a cache's lookups read at least one candidate (candidates > 0)");
    for (const std::string& f : opt_.scope_fields)
      SIEVE_THROW_IF_NOT(!f.empty() && f.find_first_of("$.") == std::string::npos,
                         "scope field '" << f << "': a name without '$' or '.'");
    if (exists()) {
      open_writer(opt_.model_dir);
      model_dir_ = writer_->snapshot()->stats().model_path;
      if (!opt_.model_dir.empty()) model_dir_ = resolve_model_dir(opt_.model_dir);
      identity_ = writer_->snapshot()->stats().model_identity;
    } else {
      SIEVE_THROW_IF_NOT(!is_dir(dir_) || std::filesystem::is_empty(dir_),
                         "'" << dir_ << "' is neither a sieve cache nor an empty folder");
      model_dir_ = resolve_model_dir(opt_.model_dir);
      identity_ = model_identity(model_dir_);
    }
    gate_ = resolve_verifier(opt_.verifier, VerifierContext{model_dir_, identity_});
    threshold_ = std::isnan(opt_.threshold) ? gate_.threshold() : opt_.threshold;
    SIEVE_THROW_IF_NOT(!std::isnan(threshold_), "the cache's gate '" << gate_.name
                                                                     << "' has no calibrated threshold: give one");
  }

  std::string store(const std::string& prompt, const std::string& answer, const CacheScope& scope,
                    double ttl_s) override {
    check_prompt(prompt);
    SIEVE_THROW_IF_NOT(code_points(answer) <= opt_.max_answer_chars, "answer: " << code_points(answer)
                                                                               << " characters, more than the "
                                                                               << opt_.max_answer_chars << " a cache takes");
    check_scope(scope);
    SIEVE_THROW_IF_NOT(std::isfinite(ttl_s) && ttl_s >= 0 && ttl_s <= 1e10,
                       "ttl_s: must be a number of seconds from 0 (never expires) to 1e10");
    json meta = {{kAnswer, answer}, {kScope, canonical_scope(scope)}};
    for (const auto& [field, value] : scope) meta[kFieldPrefix + field] = value;
    Document d;
    d.id = cache_entry_id(prompt, scope);
    d.text = prompt;
    const std::string stored = meta.dump();
    SIEVE_THROW_IF_NOT(stored.size() <= 65536, "answer: " << stored.size()
                                                          << " bytes once escaped with its scope, more than an entry's "
                                                             "65536");
    d.metadata = check_metadata(stored);
    d.expires_at = ttl_s > 0 ? now() + ttl_s : 0;
    std::lock_guard<std::mutex> lock(create_mu_);
    if (!writer_ && !exists()) {  // the first store creates the index with this entry
      IndexBuildOptions bo;
      bo.vector_factory = "HNSW32";
      build_index_from_documents(model_dir_, {d}, dir_, bo, opt_.encoder);
      open_writer(model_dir_);
    } else {
      if (!writer_) open_writer(model_dir_);  // created by another process since this cache opened
      IndexBuildOptions bo;
      bo.upsert = true;
      writer_->add({d}, bo);
    }
    return d.id;
  }

  CacheLookup lookup(const std::string& prompt, const CacheScope& scope) const override {
    check_prompt(prompt);
    check_scope(scope);
    CacheLookup out;
    out.threshold = threshold_;
    const std::shared_ptr<const Index> ix = snapshot();
    if (!ix) return out;  // nothing stored yet
    PipelineParams p;
    p.stage1.mode = SearchMode::Dense;
    p.stage1.now = now();
    p.stage1.filter = Filter::parse(json{{kScope, canonical_scope(scope)}}.dump());
    p.candidates = opt_.candidates;
    p.k = opt_.candidates;
    p.rerank = true;  // best gate score first
    p.threshold = threshold_;
    const std::vector<VerifiedHit> hits = search_verified(*ix, gate_, prompt, p);
    out.candidates = hits.size();
    if (hits.empty()) return out;
    const VerifiedHit& best = hits.front();
    out.score = best.verifier_score;
    out.stage1_score = best.hit.score;
    if (!(best.verifier_score >= threshold_)) return out;
    const Document d = ix->document(best.hit.doc);
    out.hit = true;
    out.id = d.id;
    out.prompt = d.text;
    out.answer = json::parse(d.metadata).value(kAnswer, "");
    return out;
  }

  bool get(const std::string& id, CacheEntry* out) const override {
    const std::shared_ptr<const Index> ix = snapshot();
    if (!ix) return false;
    const int64_t doc = ix->find(id);
    if (doc < 0) return false;
    const Document d = ix->document(static_cast<uint32_t>(doc));
    if (d.expires_at > 0 && d.expires_at <= now()) return false;
    const json meta = json::parse(d.metadata);
    out->id = d.id;
    out->prompt = d.text;
    out->answer = meta.value(kAnswer, "");
    out->scope = json::parse(meta.value(kScope, "{}")).get<CacheScope>();
    out->expires_at = d.expires_at;
    return true;
  }

  size_t invalidate(const std::vector<std::string>& ids) override {
    if (ids.empty()) return 0;
    std::lock_guard<std::mutex> lock(create_mu_);
    if (!writer_) return 0;
    return writer_->remove(ids, /*missing_ok=*/true).deleted;
  }

  size_t invalidate_scope(const CacheScope& scope) override {
    check_scope(scope);
    json f = json::object();
    for (const auto& [field, value] : scope) f[kFieldPrefix + field] = value;
    if (scope.empty()) f[kScope] = {{"$exists", true}};  // every entry
    std::lock_guard<std::mutex> lock(create_mu_);
    if (!writer_) return 0;
    return writer_->remove_matching(Filter::parse(f.dump())).deleted;
  }

  CompactReport compact() override {
    IndexWriter* w = nullptr;
    {
      std::lock_guard<std::mutex> lock(create_mu_);
      if (!writer_ && exists()) open_writer(model_dir_);
      w = writer_.get();  // never replaced once made
    }
    if (w == nullptr) return {};
    CompactOptions co;
    co.now = now();
    return w->compact(co);
  }

  size_t size() const override {
    const std::shared_ptr<const Index> ix = snapshot();
    return ix ? ix->matching(Filter{}, now()).size() : 0;
  }
  size_t dead() const override {
    const std::shared_ptr<const Index> ix = snapshot();
    return ix ? ix->size() - std::min(ix->size(), ix->matching(Filter{}, now()).size()) : 0;
  }
  const CacheOptions& options() const override { return opt_; }
  double threshold() const override { return threshold_; }

 private:
  bool exists() const { return is_file(path_join(dir_, "manifest.json")); }
  double now() const {
    if (opt_.clock) return opt_.clock();
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
  // The writer of the cache's index (the caller holds create_mu_ or is the constructor).
  void open_writer(const std::string& model_dir) const {
    IndexOpenOptions o;
    o.model_dir = model_dir;
    o.encoder = opt_.encoder;
    writer_ = std::make_unique<IndexWriter>(dir_, o);
  }
  // The latest snapshot; null while nothing is stored (an index another process created since
  // this cache opened is opened here).
  std::shared_ptr<const Index> snapshot() const {
    std::lock_guard<std::mutex> lock(create_mu_);
    if (!writer_ && exists()) open_writer(model_dir_);
    return writer_ ? writer_->snapshot() : nullptr;
  }
  void check_prompt(const std::string& prompt) const {
    SIEVE_THROW_IF_NOT(!prompt.empty(), "prompt: empty");
    SIEVE_THROW_IF_NOT(code_points(prompt) <= opt_.max_prompt_chars, "prompt: " << code_points(prompt)
                                                                              << " characters, more than the "
                                                                              << opt_.max_prompt_chars << " a cache takes");
  }
  void check_scope(const CacheScope& scope) const {
    for (const auto& [field, value] : scope) {
      const size_t chars = code_points(value);
      SIEVE_THROW_IF_NOT(chars <= opt_.max_scope_value_chars,
                         "scope." << field << ": " << chars << " characters, more than the "
                                  << opt_.max_scope_value_chars << " a scope value may hold");
      SIEVE_THROW_IF_NOT(std::find(opt_.scope_fields.begin(), opt_.scope_fields.end(), field) != opt_.scope_fields.end(),
                         "scope." << field << ": not a scope field of this cache (its fields: " << [&] {
                           std::string all;
                           for (const std::string& f : opt_.scope_fields) all += (all.empty() ? "" : ", ") + f;
                           return all;
                         }() << ")");
    }
  }

  std::string dir_;
  CacheOptions opt_;
  std::string model_dir_, identity_;
  ResolvedVerifier gate_;
  double threshold_ = 0;
  mutable std::mutex create_mu_;  // guards writer_ (created by the first store)
  mutable std::unique_ptr<IndexWriter> writer_;
};

}  // namespace

CacheScope cache_scope_from_json(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception&) {
    SIEVE_THROW("scope: not JSON (an object of field -> string)");
  }
  SIEVE_THROW_IF_NOT(j.is_object(), "scope: an object of field -> string");
  CacheScope out;
  for (const auto& [k, v] : j.items()) {
    SIEVE_THROW_IF_NOT(v.is_string(), "scope." << k << ": a string (scope values are compared exactly)");
    out[k] = v.get<std::string>();
  }
  return out;
}

namespace {
json maybe_number(double x) { return std::isnan(x) ? json(nullptr) : json(x); }
}  // namespace

std::string cache_lookup_json(const CacheLookup& r) {
  const auto when_hit = [&](const std::string& v) { return r.hit ? json(v) : json(nullptr); };
  return json{{"hit", r.hit},
              {"id", when_hit(r.id)},
              {"prompt", when_hit(r.prompt)},
              {"answer", when_hit(r.answer)},
              {"score", maybe_number(r.score)},
              {"stage1_score", maybe_number(r.stage1_score)},
              {"threshold", maybe_number(r.threshold)},
              {"candidates", r.candidates}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string cache_entry_json(const CacheEntry& e) {
  return json{{"id", e.id},
              {"prompt", e.prompt},
              {"answer", e.answer},
              {"scope", e.scope},
              {"expires_at", e.expires_at > 0 ? json(e.expires_at) : json(nullptr)}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string cache_entry_id(const std::string& prompt, const CacheScope& scope) {
  const std::string key = canonical_scope(scope) + "\n" + prompt;
  return sha256_hex(key.data(), key.size()).substr(0, 32);
}

std::unique_ptr<SemanticCache> SemanticCache::open(const std::string& dir, const CacheOptions& opt) {
  return std::make_unique<CacheImpl>(dir, opt);
}

}  // namespace sieve
