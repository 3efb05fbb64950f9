#include "serve/service.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "core/file_util.h"
#include "core/log.h"
#include "index/fan_out.h"
#include "serve/openapi_spec.h"
#include "serve/request_json.h"
#include "serve/web_page.h"
#include "sieve/error.h"

#include <unistd.h>
#include <cstdio>
#include <thread>

namespace sieve::serve {

namespace {

// The most a request's timeout_ms may ask when the server sets no limit (--request-timeout-ms 0):
// a day. The served spec says so.
constexpr size_t kMaxRequestTimeoutMs = 86400000;

// Every route: path, method and the fields its JSON body may hold (none: no JSON body). One
// table for routing, for the 422 on unknown fields and for the test that holds docs/openapi.json
// to the service.
struct RouteSpec {
  std::string path, method;
  std::vector<std::string> fields;
};
const std::vector<std::string> kTeiEmbedFields = {"inputs", "normalize", "truncate", "truncation_direction", "prompt_name"};
const std::vector<RouteSpec>& route_table() {
  static const std::vector<RouteSpec> table = {
      {"/health", "GET", {}},
      {"/", "GET", {}},
      // TEI's own aliases of /embed for an embedding model: its root route (LangChain's
      // HuggingFaceEndpointEmbeddings posts there) and SageMaker's /invocations.
      {"/", "POST", kTeiEmbedFields},
      {"/invocations", "POST", kTeiEmbedFields},
      {"/openapi.json", "GET", {}},
      {"/v1/info", "GET", {}},
      {"/metrics", "GET", {}},
      {"/v1/embeddings", "POST", {"input", "model", "encoding_format", "dimensions", "user"}},
      {"/embed", "POST", kTeiEmbedFields},
      {"/rerank", "POST", {"query", "texts", "return_text", "raw_scores", "truncate", "truncation_direction"}},
      {"/v1/verify", "POST", {"pairs", "threshold"}},
      {"/v1/search", "POST",
       {"query", "queries", "k", "mode", "fusion", "candidates", "gate", "rerank", "threshold", "verifier", "with_text",
        "timeout_ms", "filter"}},
      {"/v1/documents", "POST", {"documents", "upsert"}},
      {"/v1/documents/delete", "POST", {"ids", "filter", "missing_ok"}},
      {"/v1/documents/{id}", "DELETE", {}},
      {"/v1/documents/{id}", "GET", {}},
      {"/v1/documents/{id}", "PUT", {"title", "text", "metadata", "expires_at", "ttl_s"}},
      {"/v1/cache", "POST", {"prompt", "answer", "scope", "ttl_s"}},
      {"/v1/cache/lookup", "POST", {"prompt", "scope"}},
      {"/v1/cache/delete", "POST", {"ids", "scope"}},
      {"/v1/cache/{id}", "DELETE", {}},
      {"/v1/cache/{id}", "GET", {}},
      {"/v1/explain", "POST", {"query", "candidate", "threshold", "timeout_ms"}},
      {"/v1/explain.svg", "GET", {}},
  };
  return table;
}
}  // namespace

const std::vector<std::string>& fields_of(const std::string& path, const std::string& method) {
  for (const RouteSpec& r : route_table())
    if (r.path == path && r.method == method) return r.fields;
  static const std::vector<std::string> none;
  for (const RouteSpec& r : route_table())
    if (r.path == path) return none;
  throw std::logic_error("internal: no route " + path);
}

Response json_response(const json& j, int status) {
  Response r;
  r.status = status;
  r.body = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

std::vector<std::pair<std::string, std::string>> Service::routes() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const RouteSpec& r : route_table()) out.emplace_back(r.path, r.method);
  return out;
}

const std::vector<std::string>& Service::body_fields(const std::string& path, const std::string& method) {
  return fields_of(path, method);
}

std::string Service::allowed_method(const std::string& path) {
  std::string methods;
  for (const RouteSpec& r : route_table())
    if (r.path == path) methods += (methods.empty() ? "" : ", ") + r.method;
  if (!methods.empty()) return methods;
  return is_cache_entry_path(path) ? "DELETE, GET" : "DELETE, GET, PUT";  // /v1/cache/{id}, /v1/documents/{id}
}

bool is_cache_entry_path(const std::string& path) {
  static const std::string kPrefix = "/v1/cache/";
  return path.size() > kPrefix.size() && path.compare(0, kPrefix.size(), kPrefix) == 0 && path != "/v1/cache/{id}" &&
         path != "/v1/cache/lookup" && path != "/v1/cache/delete";
}

bool Service::allows(const std::string& path, const std::string& method) {
  static const std::string kDocPrefix = "/v1/documents/", kCachePrefix = "/v1/cache/";
  if (path.size() > kDocPrefix.size() && path.compare(0, kDocPrefix.size(), kDocPrefix) == 0 && path != "/v1/documents/{id}" &&
      path != "/v1/documents/delete")
    return method == "GET" || method == "PUT" || method == "DELETE";
  if (is_cache_entry_path(path)) return method == "GET" || method == "DELETE";
  for (const RouteSpec& r : route_table())
    if (r.path == path && r.method == method) return true;
  return false;
}

Response error_response(int status, const std::string& type, const std::string& message) {
  return json_response({{"error", {{"message", message}, {"type", type}}}}, status);
}

void check_serve_options(const ServeOptions& opt) {
  if (!opt.index_dir.empty()) {
    SIEVE_THROW_IF_NOT(is_dir(opt.index_dir), "index '" << opt.index_dir << "' does not exist");
    SIEVE_THROW_IF_NOT(is_file(path_join(opt.index_dir, "manifest.json")) || is_shard_set(opt.index_dir),
                       "'" << opt.index_dir << "' is not a sieve index (no manifest.json nor shardset.json)");
  }
  if (!opt.model_dir.empty())
    SIEVE_THROW_IF_NOT(is_dir(opt.model_dir), "model folder '" << opt.model_dir << "' does not exist");
  check_stage2_choice(opt.verifier, opt.gate_mode, opt.cross);
  if (!opt.cross.empty()) SIEVE_THROW_IF_NOT(is_dir(opt.cross), "cross-encoder folder '" << opt.cross << "' does not exist");
  const bool cross = opt.verifier.rfind(kCrossVerifierPrefix, 0) == 0;
  if (cross)
    SIEVE_THROW_IF_NOT(is_dir(opt.verifier.substr(std::string(kCrossVerifierPrefix).size())),
                       "cross-encoder folder of '" << opt.verifier << "' does not exist");
  else if (!opt.verifier.empty() && opt.verifier.find('/') != std::string::npos)
    SIEVE_THROW_IF_NOT(is_file(opt.verifier), "verifier file '" << opt.verifier << "' does not exist");
}

Service::Service(const ServeOptions& opt) : opt_(opt) {
  // Several encoder workers: each batch, and each search, on one core. On 2 cores this gave
  // /v1/embeddings 1.5x the sentences/s of one 2-thread worker at 16 connections (one shared
  // pass stalls whenever a request thread takes one of its cores) and stage 2 1.7x the queries/s
  // from 4 connections on (docs/benchmarks.md). The default on a CPU: one worker per core.
  opt_.batching.workers = opt_.encoder_workers;
  if (opt_.batching.workers == 0) {
    const bool cpu = opt_.encoder.device.empty() || opt_.encoder.device == "cpu";
    const int cores = opt_.encoder.threads > 0 ? opt_.encoder.threads
                                               : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    opt_.batching.workers = cpu ? static_cast<size_t>(cores) : 1;
  }
  if (opt_.batching.workers > 1) opt_.encoder.threads = 1;
  if (!opt_.index_dir.empty()) {
    IndexOpenOptions oo;
    oo.model_dir = opt_.model_dir;
    oo.encoder = opt_.encoder;
    oo.remote = opt_.remote;
    index_ = std::make_unique<IndexWriter>(opt_.index_dir, oo);
    encoder_ = index_->snapshot()->shared_encoder();
    rec_ = recommended_search_for_index(opt_.index_dir, opt_.model_dir);
  } else {
    encoder_ = Encoder::load(resolve_model_dir(opt_.model_dir), opt_.encoder);
  }
  model_name_ = encoder_->info().dir;
  if (!opt_.cache_dir.empty()) {
    CacheOptions co;
    co.model_dir = opt_.model_dir;
    co.encoder = opt_.encoder;
    co.verifier = opt_.cache_verifier;
    co.threshold = opt_.cache_threshold;
    cache_ = SemanticCache::open(opt_.cache_dir, co);
  }
  // A verifier file is checked against the encoder that feeds it, with or without an index.
  const VerifierContext context{encoder_->info().dir,
                                index_ ? index_->snapshot()->stats().model_identity : model_identity(encoder_->info().dir)};
  // Two jobs kept apart (stage2_choice): without a named verifier the gate mode's gate (auto when
  // none) gates and F1 orders by relevance (rerank alone, TEI /rerank); a named one serves both.
  const Stage2Choice choice = stage2_choice(opt_.verifier, opt_.gate_mode, opt_.cross, encoder_->info().dir);
  const std::string& gate_spec = choice.gate;
  const std::string& rerank_spec = choice.rerank;
  verifier_ = resolve_verifier(gate_spec, context);
  require_calibrated_cascade(verifier_);  // at start-up, not on the first request
  if (rerank_spec != gate_spec) relevance_ = resolve_verifier(rerank_spec, context);
  if (opt_.remote && opt_.remote->scores_at_shards()) {  // stage 2 at the shards
    verifier_key_ = shard_verifier_key(verifier_, context);
    relevance_key_ = relevance_.name.empty() ? verifier_key_ : shard_verifier_key(relevance_, context);
  }
  batcher_ = std::make_unique<EmbedBatcher>(*encoder_, opt_.batching);
  const size_t default_slots = opt_.batching.workers > 1 ? opt_.batching.workers
                                                         : static_cast<size_t>(std::max(1, compute_threads()));
  slots_ = std::make_unique<Slots>(opt_.search_slots ? opt_.search_slots : default_slots);
}

Service::~Service() {
  std::lock_guard<std::mutex> lock(compact_mu_);
  for (Background* b : {&index_compaction_, &cache_compaction_})
    if (b->thread.joinable()) b->thread.join();  // a compaction under way finishes (or fails) first
}

std::shared_ptr<const Index> Service::snapshot() const { return index_ ? index_->snapshot() : nullptr; }

Embeddings Service::encode(const std::vector<std::string>& texts, bool token_states, const char* route,
                           Clock::time_point deadline) {
  Embeddings e = batcher_->encode(texts, token_states, deadline);
  if (route != nullptr && e.truncated > 0) {
    std::string which;
    size_t listed = 0;
    for (size_t i = 0; i < e.encodings.size() && listed < 10; ++i)
      if (e.encodings[i].truncated) which += (listed++ ? ", " : "") + std::to_string(i);
    if (listed < e.truncated) which += ", ...";
    log_warn(std::string(route) + ": " + std::to_string(e.truncated) + " of " + std::to_string(texts.size()) +
             " input(s) longer than the model's " + std::to_string(encoder_->max_length()) +
             " tokens were truncated (input " + which + ")");
  }
  return e;
}

void Service::require_finite(const std::vector<float>& scores, const char* item) const {
  // A NaN breaks the rerank's sort (undefined behaviour) and fails every threshold comparison
  // (a silent "reject"); JSON has no NaN either. A verifier that gives one is broken: say where.
  for (size_t i = 0; i < scores.size(); ++i)
    SIEVE_THROW_IF_NOT(std::isfinite(scores[i]), "the verifier (" << verifier_.name << ") scored " << item << " " << i
                                                                  << " (0-based) " << scores[i]
                                                                  << ": scores must be finite numbers (check the verifier file)");
}

double Service::threshold_or(double given) const { return std::isnan(given) ? verifier_.threshold() : given; }

Response Service::handle(const std::string& method, const std::string& path, const std::string& body,
                         const std::map<std::string, std::string>& query, Clock::time_point arrived) {
  const auto t0 = std::chrono::steady_clock::now();
  Response r;
  try {
    r = route(method, path, body, query, arrived);
  } catch (const HttpError& e) {
    r = error_response(e.status, e.type, e.what());
    if (e.status == 405) r.headers.emplace_back("Allow", allowed_method(path));
  } catch (const DeadlineExceeded& e) {
    r = error_response(504, "deadline_exceeded", e.what());
  } catch (const QueueFull& e) {
    r = error_response(503, "overloaded", e.what());
    r.headers.emplace_back("Retry-After", "1");
  } catch (const ShardTimeout& e) {  // a shard served elsewhere had not answered by the deadline
    r = error_response(504, "deadline_exceeded", e.what());
  } catch (const ShardUnavailable& e) {  // a shard served elsewhere (Ray Serve) failed
    r = error_response(503, "shard_unavailable", e.what());
    r.headers.emplace_back("Retry-After", "1");
  } catch (const Error& e) {
    r = error_response(422, "invalid_request_error", e.what());
  } catch (const std::exception& e) {
    r = error_response(500, "server_error", e.what());
  }
  count(path, r.status, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return r;
}

void Service::count(const std::string& path, int status, double seconds) { requests_.count(path, status, seconds); }

Service::Clock::time_point Service::deadline_of(const json* body, Clock::time_point arrived) const {
  size_t ms = opt_.request_timeout_ms;
  if (body && body->contains("timeout_ms") && !body->at("timeout_ms").is_null()) {
    const size_t most = opt_.request_timeout_ms ? opt_.request_timeout_ms : kMaxRequestTimeoutMs;
    try {
      ms = count_of(*body, "timeout_ms", ms, most);
    } catch (const HttpError& e) {
      if (e.status != 422) throw;
      throw too_much(std::string(e.what()) + " ms, the server's maximum (sieve serve --request-timeout-ms)");
    }
  }
  if (ms == 0) return Clock::time_point::max();
  return arrived + std::chrono::milliseconds(ms);
}

namespace {

// A search slot taken until the deadline (504 when it passes first), given back on return.
class SlotHold {
 public:
  template <class Slots>
  SlotHold(Slots& slots, std::chrono::steady_clock::time_point deadline, std::chrono::steady_clock::time_point arrived)
      : release_([&slots] { slots.release(); }) {
    if (!slots.acquire_until(deadline)) {
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - arrived);
      throw DeadlineExceeded("the request's deadline passed after " + std::to_string(waited.count()) +
                             " ms, before a search slot was free (the server is busy; retry, or give a larger timeout_ms)");
    }
  }
  ~SlotHold() { release_(); }
  SlotHold(const SlotHold&) = delete;
  SlotHold& operator=(const SlotHold&) = delete;

 private:
  std::function<void()> release_;
};

}  // namespace

Response Service::route(const std::string& method, const std::string& path, const std::string& body,
                        const std::map<std::string, std::string>& query, Clock::time_point arrived) {
  static const std::string kDocPrefix = "/v1/documents/";
  // One cache entry by id (/v1/cache/lookup and /v1/cache/delete are the POST routes).
  if (is_cache_entry_path(path)) {
    const std::string id = path.substr(std::string("/v1/cache/").size());
    if (method == "GET") return cache_get(id);
    if (method == "DELETE") return cache_delete(id);
    throw HttpError(405, "method_not_allowed", "/v1/cache/{id} takes GET or DELETE, not " + method);
  }
  if (path == "/v1/cache" && method == "POST") return cache_store(body);
  if (path == "/v1/cache/lookup" && method == "POST") return cache_lookup(body);
  if (path == "/v1/cache/delete" && method == "POST") return cache_delete_batch(body);
  // One document by id. /v1/documents/delete is the batch delete (POST only): a document whose id
  // is "delete" is reached through the batch routes (POST /v1/documents, .../delete with its id).
  if (path.size() > kDocPrefix.size() && path.compare(0, kDocPrefix.size(), kDocPrefix) == 0 &&
      path != "/v1/documents/delete") {
    const std::string id = path.substr(kDocPrefix.size());
    if (method == "GET") return get_document(id);
    if (method == "PUT") return put_document(id, body);
    if (method == "DELETE") return delete_document(id);
    throw HttpError(405, "method_not_allowed", "/v1/documents/{id} takes GET, PUT or DELETE, not " + method);
  }
  const RouteSpec* found = nullptr;
  bool known = false;
  for (const RouteSpec& r : route_table()) {
    known = known || path == r.path;
    if (path == r.path && method == r.method) found = &r;
  }
  if (!known || path == "/v1/documents/{id}" || path == "/v1/cache/{id}") throw HttpError(404, "not_found", "no route " + path);
  if (!found) throw HttpError(405, "method_not_allowed", path + " takes " + allowed_method(path) + ", not " + method);
  if (path == "/health") return json_response({{"status", "ok"}});
  if (path == "/openapi.json") {
    // docs/openapi.json, with what only the running server knows: the one `dimensions` it takes
    // and the largest token id of its vocabulary.
    static const json spec = json::parse(openapi_spec());
    json served = spec;
    served["components"]["schemas"]["EmbeddingsRequest"]["properties"]["dimensions"]["oneOf"][0]["enum"] = {encoder_->dim()};
    served["components"]["schemas"]["TokenId"]["maximum"] = encoder_->info().config.vocab_size - 1;
    for (const char* schema : {"SearchRequest", "ExplainRequest"}) {  // the most a timeout_ms may ask
      json& t = served["components"]["schemas"][schema]["properties"]["timeout_ms"]["oneOf"][0];
      t["maximum"] = opt_.request_timeout_ms ? opt_.request_timeout_ms : kMaxRequestTimeoutMs;
    }
    return json_response(served);
  }
  if (path == "/" && method == "GET") {
    Response r;
    r.body = web_page();
    r.content_type = "text/html; charset=utf-8";
    return r;
  }
  if ((path == "/v1/explain" || path == "/v1/explain.svg") && verifier_.cross)
    throw bad("the server's verifier is a cross-encoder, which reads texts: there is no token map to explain");
  // Explanations run the encoder and the verifier: at most search_slots at once, as searches.
  if (path == "/v1/explain") {
    const json j = parse_object(body, fields_of("/v1/explain"));
    SlotHold slot(*slots_, deadline_of(&j, arrived), arrived);
    if (!j.contains("query") || !j.at("query").is_string() || !j.contains("candidate") || !j.at("candidate").is_string())
      throw bad("'query' and 'candidate' must be strings");
    const Explanation x = explain_pair(*encoder_, verifier_.verifier.get(), j.at("query").get<std::string>(),
                                       j.at("candidate").get<std::string>(), number_of(j, "threshold", std::nan("")));
    Response r;
    r.body = explanation_json(x);
    return r;
  }
  if (path == "/v1/explain.svg") {
    auto q = query.find("query"), c = query.find("candidate");
    if (q == query.end() || c == query.end()) throw bad("give ?query=...&candidate=...");
    SlotHold slot(*slots_, deadline_of(nullptr, arrived), arrived);
    Response r;
    r.body = explanation_svg(explain_pair(*encoder_, verifier_.verifier.get(), q->second, c->second, std::nan("")));
    r.content_type = "image/svg+xml";
    return r;
  }
  if (path == "/v1/info") return info();
  if (path == "/metrics") {
    Response r;
    r.body = metrics();
    r.content_type = "text/plain; version=0.0.4";
    return r;
  }
  const Clock::time_point deadline = deadline_of(nullptr, arrived);
  if (path == "/v1/embeddings") return embeddings_openai(body, deadline);
  if (path == "/embed" || path == "/" || path == "/invocations") return embed_tei(body, deadline);
  if (path == "/rerank") return rerank_tei(body, deadline);
  if (path == "/v1/verify") return verify(body, deadline);
  if (path == "/v1/documents") return add_documents(body);
  if (path == "/v1/documents/delete") return delete_documents(body);
  return search(body, arrived);
}

Response Service::info() const {
  const ModelInfo& mi = encoder_->info();
  json j = {{"model",
             {{"path", mi.dir},
              {"model_type", mi.config.model_type},
              {"dim", encoder_->dim()},
              {"max_length", encoder_->max_length()},
              {"pooling", pooling_name(encoder_->pooling())}}},
            {"verifier",
             {{"name", verifier_.name},
              {"kind", verifier_.kind()},
              {"threshold", std::isnan(verifier_.threshold()) ? json(nullptr) : json(verifier_.threshold())}}},
            {"limits", {{"max_texts", opt_.max_texts}, {"max_k", opt_.max_k}, {"max_batch", opt_.batching.max_batch},
                        {"max_queue", opt_.batching.max_queue}, {"request_timeout_ms", opt_.request_timeout_ms}}},
            {"compute", {{"encoder_workers", opt_.batching.workers}, {"threads", compute_threads()}, {"search_slots", slots_->capacity()}}}};
  if (auto index = snapshot()) {
    const IndexStats& s = index->stats();
    j["model"]["identity"] = s.model_identity;
    j["index"] = {{"path", opt_.index_dir}, {"documents", index->size()}, {"tokens", s.tokens},
                  {"vector_factory", s.vector_factory}, {"token_codec", s.token_codec},
                  {"deleted", s.deleted}, {"compacting", index_compaction_.running.load()}, {"compactions", index_compaction_.done.load()}};
    j["defaults"] = {{"mode", search_mode_name(rec_.mode)}, {"fusion", fusion_name(rec_.fusion)},
                     {"rrf_k", rec_.rrf_k}, {"dense_weight", rec_.dense_weight},
                     {"dense_weight_slope", rec_.weight_slope}, {"k", 10}, {"candidates", 100}};
  } else {
    j["index"] = nullptr;
  }
  if (cache_)
    j["cache"] = {{"path", opt_.cache_dir}, {"entries", cache_->size()}, {"dead", cache_->dead()},
                  {"threshold", cache_->threshold()}, {"compacting", cache_compaction_.running.load()},
                  {"compactions", cache_compaction_.done.load()}};
  if (opt_.shard_servers) j["shard_servers"] = json::parse(opt_.shard_servers());
  return json_response(j);
}

Response Service::verify(const std::string& body, Clock::time_point deadline) {
  const json j = parse_object(body, fields_of("/v1/verify"));
  if (!j.contains("pairs") || !j.at("pairs").is_array()) throw bad("'pairs' must be an array of [query, candidate]");
  const json& pairs = j.at("pairs");
  if (pairs.empty()) throw bad("'pairs' is empty");
  if (pairs.size() > opt_.max_texts) throw too_much(std::to_string(pairs.size()) + " pairs, more than the limit " + std::to_string(opt_.max_texts));
  std::vector<std::string> texts;
  for (const auto& p : pairs) {
    if (p.is_array() && p.size() == 2 && p[0].is_string() && p[1].is_string()) {
      texts.push_back(p[0].get<std::string>());
      texts.push_back(p[1].get<std::string>());
    } else if (p.is_object() && p.contains("query") && p.contains("candidate") && p["query"].is_string() &&
               p["candidate"].is_string()) {
      texts.push_back(p["query"].get<std::string>());
      texts.push_back(p["candidate"].get<std::string>());
    } else {
      throw bad("each pair must be [query, candidate] or {\"query\", \"candidate\"} (strings)");
    }
  }
  const double threshold = threshold_or(number_of(j, "threshold", std::nan("")));
  std::vector<float> scores;
  std::vector<std::pair<std::string, std::string>> text_pairs;
  for (size_t i = 0; i + 1 < texts.size(); i += 2) text_pairs.emplace_back(texts[i], texts[i + 1]);
  auto got = score_pairs_by_kind(
      verifier_, text_pairs,
      [&] { return score_pairs(verifier_.verifier.get(), encode(texts, !verifier_.cosine(), nullptr, deadline)); },
      deadline);
  if (!got) throw DeadlineExceeded("the request's deadline passed while the cross-encoder scored the pairs");
  scores = std::move(*got);
  require_finite(scores, "pair");
  json results = json::array();
  for (const float s : scores) {
    results.push_back({{"score", s}, {"accepted", std::isnan(threshold) || s >= threshold}});
  }
  return json_response({{"results", results},
                        {"threshold", std::isnan(threshold) ? json(nullptr) : json(threshold)},
                        {"verifier", verifier_.name}});
}

Response Service::search(const std::string& body, Clock::time_point arrived) {
  const std::shared_ptr<const Index> ix = snapshot();  // this request's snapshot
  if (!ix) throw HttpError(404, "not_found", "this server has no index (start it with --index)");
  const json j = parse_object(body, fields_of("/v1/search"));
  const Clock::time_point deadline = deadline_of(&j, arrived);
  std::vector<std::string> queries = strings_of(j, "queries", false);
  if (j.contains("query")) {
    if (!queries.empty()) throw bad("give 'query' or 'queries', not both");
    queries = strings_of(j, "query", true);
  }
  if (queries.empty()) throw bad("missing field 'query' (or 'queries')");
  if (queries.size() > opt_.max_texts) throw too_much(std::to_string(queries.size()) + " queries, more than the limit " + std::to_string(opt_.max_texts));
  SearchParams sp;
  rec_.apply(sp);
  sp.deadline = deadline;  // shards served elsewhere are not waited for past it (stage 1 alone too)
  sp.k = count_of(j, "k", 10, opt_.max_k);
  try {
    if (j.contains("mode")) sp.mode = search_mode_from_name(string_of(j, "mode", ""));
    if (j.contains("fusion")) sp.fusion = fusion_from_name(string_of(j, "fusion", ""));
  } catch (const Error& e) {
    throw bad(e.what());
  }
  PipelineParams pp;
  pp.candidates = count_of(j, "candidates", 100, opt_.max_k);
  pp.gate = bool_of(j, "gate", false);
  pp.rerank = bool_of(j, "rerank", false);
  pp.threshold = number_of(j, "threshold", std::nan(""));
  pp.k = sp.k;
  pp.stage1 = sp;
  pp.deadline = deadline;
  // Gating with no threshold, given or calibrated: the request is fine, the server's verifier
  // cannot do it (409, as a write to a shard set), not a malformed request.
  if (pp.gate && std::isnan(threshold_or(pp.threshold)))
    throw HttpError(409, "conflict", "gating needs a threshold: the server's verifier (" + verifier_.name +
                                         ") has none calibrated; give \"threshold\" or calibrate it (sieve verify calibrate)");
  const bool stage2 = bool_of(j, "verifier", pp.gate || pp.rerank);
  const ResolvedVerifier& stage2_verifier = pp.rerank && !pp.gate ? reranker() : verifier_;
  pp.shard_verifier = &stage2_verifier == &verifier_ ? verifier_key_ : relevance_key_;
  sp.filter = filter_of(j);
  pp.stage1.filter = sp.filter;
  HitJsonOptions ho;  // the keys `sieve search` prints, at full precision
  ho.text = bool_of(j, "with_text", false);
  SlotHold slot(*slots_, deadline, arrived);  // 504 when the deadline passes first
  json results = json::array();
  bool cut = false;
  for (size_t qi = 0; qi < queries.size(); ++qi) {
    const std::string& q = queries[qi];
    const auto t0 = Clock::now();
    const index::ShardWait waited0 = index::shard_wait();  // this thread's wait for shard calls so far
    json hits = json::array();
    json timings;
    int stages_run = stage2 ? 2 : 1;
    // Shards served elsewhere that have not answered stage 1 by the deadline (ShardTimeout: stage 2's
    // are caught in the pipeline, which answers stage 1's hits): the query was not searched, as a
    // query the deadline reached before it began, rather than a 504.
    auto not_searched = [&] {
      stages_run = 0;
      hits = json::array();
      timings = {{"total_ms", 1000 * std::chrono::duration<double>(Clock::now() - t0).count()}};
    };
    if (qi > 0 && t0 >= deadline) {
      stages_run = 0;  // not searched: the deadline passed while earlier queries ran
      timings = {{"total_ms", 0.0}};
    } else if (stage2) {
      Stage2Timing st;
      std::optional<std::vector<VerifiedHit>> found;
      try {
        found = search_verified(*ix, stage2_verifier, q, pp, &st);
      } catch (const ShardTimeout&) {
        not_searched();
      }
      if (found) {
        const std::vector<VerifiedHit>& vh = *found;
        if (st.skipped) {  // stage 1 ended past the deadline: its hits, unverified
          stages_run = 1;
          for (size_t r = 0; r < vh.size(); ++r) hits.push_back(json(hit_json(*ix, vh[r].hit, r + 1, ho)));
        } else {
          for (size_t r = 0; r < vh.size(); ++r) hits.push_back(json(hit_json(*ix, vh[r], r + 1, ho)));
        }
        const double total = std::chrono::duration<double>(Clock::now() - t0).count();
        timings = {{"stage1_ms", 1000 * (total - st.decode - st.map - st.verify - st.cross)},
                   {"decode_ms", 1000 * st.decode}, {"map_ms", 1000 * st.map}, {"verifier_ms", 1000 * st.verify},
                   {"total_ms", 1000 * total}};
        if (stage2_verifier.cascade() && !st.skipped) {  // what the cascade sent to its cross-encoder
          timings["cross_ms"] = 1000 * st.cross;
          timings["sent_to_cross"] = st.sent;
          timings["scored"] = st.scored;
        }
      }
    } else {
      try {
        SearchResult sr = ix->search(q, sp);
        for (size_t r = 0; r < sr.hits.size(); ++r) hits.push_back(json(hit_json(*ix, sr.hits[r], r + 1, ho)));
        timings = {{"total_ms", 1000 * std::chrono::duration<double>(Clock::now() - t0).count()}};
      } catch (const ShardTimeout&) {
        not_searched();
      }
    }
    if (opt_.remote && timings.is_object()) {  // where a router's time went: waiting for its shards
      const index::ShardWait w = index::shard_wait();
      timings["shards_ms"] = 1000 * (w.seconds - waited0.seconds);
      timings["shard_fanouts"] = w.fanouts - waited0.fanouts;
    }
    json result = {{"query", q}, {"hits", hits}, {"timings", timings}};
    if (pp.gate && stage2 && stages_run == 2)
      if (const std::string note = gate_question_note(q); !note.empty()) result["note"] = note;
    if (stages_run < (stage2 ? 2 : 1)) {
      result["deadline_exceeded"] = true;
      result["stages_run"] = stages_run;
      cut = true;
    }
    results.push_back(std::move(result));
  }
  json out = {{"results", results},
              {"mode", search_mode_name(sp.mode)},
              {"verifier", stage2 ? json(stage2_verifier.name) : json(nullptr)}};
  if (cut) out["deadline_exceeded"] = true;
  return json_response(out);
}

std::string Service::metrics() const {
  std::ostringstream o;
  o << requests_.prometheus();
  const BatcherStats bs = batcher_->stats();
  std::vector<double> bounds;  // texts per pass: 1, 2, 4, ..., then +Inf
  for (size_t b = 0; b + 1 < bs.batch_sizes.size(); ++b) bounds.push_back(static_cast<double>(size_t{1} << b));
  o << "# HELP sieve_batch_size Texts per encoder forward pass (dynamic batching).\n"
    << "# TYPE sieve_batch_size histogram\n"
    << prometheus_histogram("sieve_batch_size", "", bounds, bs.batch_sizes, static_cast<double>(bs.texts));
  o << "# HELP sieve_queue_texts Texts waiting for the encoder.\n# TYPE sieve_queue_texts gauge\n"
    << "sieve_queue_texts " << bs.queued_texts << "\n";
  o << "# HELP sieve_encoder_busy_seconds_total Time the batching worker spent encoding.\n"
    << "# TYPE sieve_encoder_busy_seconds_total counter\n"
    << "sieve_encoder_busy_seconds_total " << bs.busy_seconds << "\n";
  const auto ix = snapshot();
  o << "# HELP sieve_documents Documents in the index.\n# TYPE sieve_documents gauge\n"
    << "sieve_documents " << (ix ? ix->size() : 0) << "\n";
  return o.str();
}

}  // namespace sieve::serve
