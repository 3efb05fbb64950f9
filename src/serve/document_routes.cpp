// The document routes of the service: POST /v1/documents (add, or upsert), GET, PUT and DELETE of
// /v1/documents/{id}, and POST /v1/documents/delete (by ids or by filter). Every write goes
// through the index's one IndexWriter: a batch is all or nothing, durable before the answer, and
// seen by every search that starts after it.
#include <cmath>
#include <set>

#include "core/log.h"
#include "index/doc_state.h"
#include "index/document_json.h"
#include "serve/request_json.h"
#include "serve/service.h"
#include "sieve/filter.h"
#include "sieve/index.h"

namespace sieve::serve {
namespace {

// One document of a write: `d` holds title, text and optional metadata and expiry (and, in a
// batch, its id: `id` empty); `where` names it in errors.
Document document_of(const json& d, const std::string& where, std::string id) {
  if (!d.is_object()) throw bad(where + " must be an object");
  static const std::set<std::string> kFields = {"_id", "id", "title", "text", "metadata", "expires_at", "ttl_s"};
  for (const auto& [key, value] : d.items())
    if (!kFields.count(key) || (!id.empty() && (key == "_id" || key == "id")))
      throw too_much(where + ": unknown field '" + key + "' (accepted: " + (id.empty() ? "_id or id, " : "") +
                     "title, text, metadata, expires_at, ttl_s)");
  if (id.empty()) {
    if (d.contains("_id") && d.contains("id")) throw bad(where + ": give \"_id\" or \"id\", not both");
    id = d.contains("_id") ? string_of(d, "_id", "") : string_of(d, "id", "");
    if (id.empty()) throw bad(where + " needs a non-empty \"_id\"");
  }
  if (!d.contains("text") || !d.at("text").is_string()) throw bad(where + " needs a \"text\" string");
  Document doc;
  doc.id = id;
  doc.title = string_of(d, "title", "");
  doc.text = d.at("text").get<std::string>();
  try {
    index::read_document_extras(d, doc, index::clock_or(0));
  } catch (const Error& e) {
    throw too_much(where + ": " + e.what());
  }
  return doc;
}

json delete_json(const DeleteReport& r) {  // (the routes call maybe_compact after a delete)
  return {{"deleted", r.deleted}, {"missing", r.missing}, {"documents", r.documents}};
}

}  // namespace

bool compaction_due(size_t dead, size_t total, double share, size_t min_dead) {
  return share > 0 && dead > 0 && dead >= min_dead && static_cast<double>(dead) >= share * static_cast<double>(total);
}

void Service::start_compaction(Background& b, const std::string& what, size_t dead,
                               std::function<CompactReport()> compact) {
  std::lock_guard<std::mutex> lock(compact_mu_);
  if (b.running.exchange(true)) return;
  if (b.thread.joinable()) b.thread.join();  // the last one, finished
  b.thread = std::thread([&b, what, dead, compact = std::move(compact)] {
    try {
      const CompactReport r = compact();
      log_info("compacted the " + what + " in the background: " + std::to_string(r.removed) + " dead entries removed, " +
               std::to_string(r.bytes_before - std::min(r.bytes_before, r.bytes_after)) + " bytes returned");
      ++b.done;
    } catch (const std::exception& e) {
      log_warn("background compaction of the " + what + "'s " + std::to_string(dead) + " dead entries failed: " + e.what());
    }
    b.running = false;
  });
}

void Service::maybe_compact() {
  if (opt_.compact_dead_share <= 0 || index_compaction_.running) return;
  const std::shared_ptr<const Index> ix = snapshot();
  const size_t dead = ix->stats().deleted;  // deleted and replaced (expired ones go too, uncounted)
  if (!compaction_due(dead, ix->size(), opt_.compact_dead_share, opt_.compact_min_dead)) return;
  start_compaction(index_compaction_, "index", dead, [this] { return index_->compact(); });
}

void Service::check_writable() const {
  if (!snapshot()) throw HttpError(404, "not_found", "this server has no index (start it with --index)");
}

Response Service::add_documents(const std::string& body) {
  check_writable();
  const json j = parse_object(body, fields_of("/v1/documents"));
  if (!j.contains("documents") || !j.at("documents").is_array()) throw bad("'documents' must be an array of {\"_id\", \"title\", \"text\"}");
  const json& docs = j.at("documents");
  if (docs.empty()) throw bad("'documents' is empty");
  if (docs.size() > opt_.max_texts) throw too_much(std::to_string(docs.size()) + " documents, more than the limit " + std::to_string(opt_.max_texts));
  const bool upsert = bool_of(j, "upsert", false);
  const std::shared_ptr<const Index> before = snapshot();
  std::set<std::string> ids;
  std::vector<Document> batch;
  for (size_t i = 0; i < docs.size(); ++i) {
    Document d = document_of(docs[i], "documents[" + std::to_string(i) + "]", "");
    if (!ids.insert(d.id).second) throw HttpError(409, "conflict", "id '" + d.id + "' appears twice in this batch");
    if (!upsert && before->find(d.id) >= 0)
      throw HttpError(409, "conflict", "id '" + d.id + "' is already in the index (\"upsert\": true replaces it)");
    batch.push_back(std::move(d));
  }
  // The batch becomes visible (whole) when its manifest is committed, and durable before this
  // answers. The writer checks the ids again under its lock (a concurrent add may have taken one).
  BuildReport rep;
  try {
    IndexBuildOptions o;
    o.upsert = upsert;
    rep = index_->add(batch, o);
  } catch (const Error& e) {
    if (std::string(e.what()).find("is already in the index") != std::string::npos)
      throw HttpError(409, "conflict", e.what());
    throw;
  }
  json added = json::array();
  for (const Document& d : batch) added.push_back(d.id);
  if (rep.replaced > 0) maybe_compact();
  return json_response({{"added", rep.added}, {"replaced", rep.replaced}, {"documents", rep.documents}, {"ids", added}});
}

Response Service::get_document(const std::string& id) const {
  const std::shared_ptr<const Index> ix = snapshot();
  if (!ix) throw HttpError(404, "not_found", "this server has no index (start it with --index)");
  const int64_t doc = ix->find(id);
  if (doc < 0) throw HttpError(404, "not_found", "no document '" + id + "'");
  return json_response(index::document_json(ix->document(static_cast<uint32_t>(doc))));
}

Response Service::put_document(const std::string& id, const std::string& body) {
  check_writable();
  const json j = parse_object(body, fields_of("/v1/documents/{id}", "PUT"));
  std::vector<Document> batch = {document_of(j, "the document", id)};
  const BuildReport rep = index_->upsert(batch);
  if (rep.replaced > 0) maybe_compact();
  return json_response({{"_id", id}, {"created", rep.replaced == 0}, {"documents", rep.documents}});
}

Response Service::delete_document(const std::string& id) {
  check_writable();
  try {
    const DeleteReport r = index_->remove({id});
    maybe_compact();
    return json_response(delete_json(r));
  } catch (const Error& e) {
    if (std::string(e.what()).find("not in the index") != std::string::npos)
      throw HttpError(404, "not_found", "no document '" + id + "'");
    throw;
  }
}

Response Service::delete_documents(const std::string& body) {
  check_writable();
  const json j = parse_object(body, fields_of("/v1/documents/delete"));
  // Strict as the spec: 'ids' a list, 'filter' an object, exactly one of them.
  const bool has_ids = j.contains("ids");
  if (has_ids && !j.at("ids").is_array()) throw bad("'ids' must be a list of document ids");
  if (j.contains("filter") && !j.at("filter").is_object()) throw too_much("'filter' must be a JSON object");
  const Filter f = filter_of(j);
  const bool missing_ok = bool_of(j, "missing_ok", false);
  if (has_ids == !f.empty())
    throw bad("give 'ids' (a list of document ids) or a non-empty 'filter', not both and not neither");
  if (!f.empty()) {
    const DeleteReport r = index_->remove_matching(f);
    maybe_compact();
    return json_response(delete_json(r));
  }
  const std::vector<std::string> ids = strings_of(j, "ids", true);
  if (ids.empty()) throw bad("'ids' is empty");
  if (ids.size() > opt_.max_texts) throw too_much(std::to_string(ids.size()) + " ids, more than the limit " + std::to_string(opt_.max_texts));
  try {
    const DeleteReport r = index_->remove(ids, missing_ok);
    maybe_compact();
    return json_response(delete_json(r));
  } catch (const Error& e) {
    if (std::string(e.what()).find("not in the index") != std::string::npos) throw HttpError(404, "not_found", e.what());
    throw;
  }
}

}  // namespace sieve::serve
