// A document's JSON form, read and written in one place: the corpus reader (JSON lines), the
// server's document routes, Python's dicts and the in-memory corpus of a build. Internal.
#pragma once

#include <nlohmann/json.hpp>

#include "sieve/index.h"

namespace sieve::index {

/// Reads the optional "metadata" (a flat object, checked by check_metadata), "expires_at" (an
/// RFC 3339 date-time or seconds since 1970) and "ttl_s" (seconds from `now`) of a JSON object
/// into `doc` (absent or null: none). sieve::Error naming the field on anything else.
void read_document_extras(const nlohmann::json& j, Document& doc, double now);

/// {"_id", "title", "text"} and, when set, "metadata" (the object) and "expires_at" (seconds).
nlohmann::json document_json(const Document& doc);

/// A compaction's report as the CLI prints it: {"documents_before", "documents", "removed",
/// "bytes_before", "bytes_after", "seconds"}.
nlohmann::json compact_report_json(const CompactReport& r);

}  // namespace sieve::index
