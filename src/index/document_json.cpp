// index/document_json.h.
#include "index/document_json.h"

#include <limits>
#include <string>

#include "sieve/error.h"
#include "sieve/filter.h"

namespace sieve::index {

void read_document_extras(const nlohmann::json& j, Document& doc, double now) {
  doc.metadata.clear();
  doc.expires_at = 0;
  if (auto it = j.find("metadata"); it != j.end() && !it->is_null()) doc.metadata = check_metadata(it->dump());
  std::string at;
  if (auto e = j.find("expires_at"); e != j.end() && !e->is_null()) {
    SIEVE_THROW_IF_NOT(e->is_string() || e->is_number(),
                       "expires_at must be an RFC 3339 date-time or seconds since 1970");
    at = e->is_string() ? e->get<std::string>() : e->dump();
    SIEVE_THROW_IF_NOT(!at.empty(), "expires_at is empty (give an RFC 3339 date-time, seconds since 1970, or null)");
  }
  double ttl = std::numeric_limits<double>::quiet_NaN();
  if (auto t = j.find("ttl_s"); t != j.end() && !t->is_null()) {
    SIEVE_THROW_IF_NOT(t->is_number(), "ttl_s must be a number of seconds");
    ttl = t->get<double>();
  }
  doc.expires_at = expiry_instant(at, ttl, now);
}

nlohmann::json document_json(const Document& doc) {
  nlohmann::json j = {{"_id", doc.id}, {"title", doc.title}, {"text", doc.text}};
  if (!doc.metadata.empty()) j["metadata"] = nlohmann::json::parse(doc.metadata);
  if (doc.expires_at != 0) j["expires_at"] = doc.expires_at;
  return j;
}

nlohmann::json compact_report_json(const CompactReport& r) {
  return {{"documents_before", r.documents_before}, {"documents", r.documents}, {"removed", r.removed},
          {"bytes_before", r.bytes_before},         {"bytes_after", r.bytes_after}, {"seconds", r.seconds}};
}

}  // namespace sieve::index
