// The semantic cache's routes (sieve/cache.h, docs/cache.md): POST /v1/cache stores an entry,
// POST /v1/cache/lookup looks a prompt up, GET and DELETE /v1/cache/{id} read and remove one entry,
// POST /v1/cache/delete removes entries by ids or by scope. Thin: the library decides; the cache's
// refusals (sieve::Error naming the field) are the server's 422.
#include <utility>

#include "serve/request_json.h"
#include "serve/service.h"
#include "sieve/cache.h"

namespace sieve::serve {
namespace {

// A scope: a JSON object of strings (absent or null: the empty scope; the library's words else).
CacheScope scope_of(const json& j) {
  if (!j.contains("scope") || j.at("scope").is_null()) return {};
  return cache_scope_from_json(j.at("scope").dump());
}

std::string required_string(const json& j, const char* field) {
  if (!j.contains(field) || !j.at(field).is_string()) throw bad(std::string("'") + field + "' must be a string");
  return j.at(field).get<std::string>();
}

Response json_text(std::string body) {
  Response r;
  r.body = std::move(body);
  return r;
}

}  // namespace

SemanticCache& Service::cache() const {
  if (!cache_) throw HttpError(404, "not_found", "this server has no cache (start it with --cache DIR)");
  return *cache_;
}

void Service::maybe_compact_cache() {
  if (opt_.compact_dead_share <= 0 || cache_compaction_.running) return;
  const size_t dead = cache_->dead(), live = cache_->size();
  if (!compaction_due(dead, dead + live, opt_.compact_dead_share, opt_.compact_min_dead)) return;
  start_compaction(cache_compaction_, "cache", dead, [this] { return cache_->compact(); });
}

Response Service::cache_store(const std::string& body) {
  SemanticCache& c = cache();
  const json j = parse_object(body, fields_of("/v1/cache"));
  double ttl = 0;
  if (j.contains("ttl_s") && !j.at("ttl_s").is_null()) {
    if (!j.at("ttl_s").is_number()) throw too_much("ttl_s: a number of seconds");
    ttl = j.at("ttl_s").get<double>();
  }
  const std::string id = c.store(required_string(j, "prompt"), required_string(j, "answer"), scope_of(j), ttl);
  maybe_compact_cache();  // a replaced answer, or entries expired since, may call for it
  return json_response({{"id", id}});
}

Response Service::cache_lookup(const std::string& body) const {
  const SemanticCache& c = cache();
  const json j = parse_object(body, fields_of("/v1/cache/lookup"));
  return json_text(cache_lookup_json(c.lookup(required_string(j, "prompt"), scope_of(j))));
}

Response Service::cache_get(const std::string& id) const {
  CacheEntry e;
  if (!cache().get(id, &e)) throw HttpError(404, "not_found", "no cache entry '" + id + "'");
  return json_text(cache_entry_json(e));
}

Response Service::cache_delete(const std::string& id) {
  if (cache().invalidate({id}) == 0) throw HttpError(404, "not_found", "no cache entry '" + id + "'");
  maybe_compact_cache();
  return json_response({{"deleted", 1}});
}

Response Service::cache_delete_batch(const std::string& body) {
  SemanticCache& c = cache();
  const json j = parse_object(body, fields_of("/v1/cache/delete"));
  const bool has_ids = j.contains("ids"), has_scope = j.contains("scope");
  if (has_ids == has_scope) throw bad("give 'ids' (a list of entry ids) or 'scope' (an object), not both and not neither");
  if (has_ids) {
    if (!j.at("ids").is_array() || j.at("ids").empty()) throw bad("'ids' must be a non-empty list of entry ids");
    const size_t n = c.invalidate(strings_of(j, "ids", true));
    maybe_compact_cache();
    return json_response({{"deleted", n}});
  }
  // Never null for "everything": removing all entries takes {"scope": {}}.
  if (!j.at("scope").is_object()) throw too_much("'scope' must be an object ({} removes every entry)");
  const size_t n = c.invalidate_scope(scope_of(j));
  maybe_compact_cache();
  return json_response({{"deleted", n}});
}

}  // namespace sieve::serve
