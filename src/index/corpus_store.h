// The corpus store: each document (id, title, text) is one record of the "corpus" log.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "index/record_log.h"
#include "sieve/index.h"

namespace sieve::index {

/// Serialises a document as {u32 id_len, u32 title_len, u32 text_len, id, title, text}.
std::string encode_document(const Document& doc);
/// Inverse of encode_document; throws sieve::Error when the bytes do not parse.
Document decode_document(const uint8_t* data, size_t n);

/// Random access to the stored documents, by internal id or by external id.
class CorpusStore {
 public:
  CorpusStore(const std::string& dir, const LogState& committed);
  /// The same log grown since `prev` was opened: shares prev's id map and indexes only the
  /// records added since (an add then costs what it adds, not a map of the whole corpus).
  CorpusStore(const std::string& dir, const LogState& committed, const CorpusStore& prev);
  size_t size() const { return log_.size(); }
  Document get(size_t doc) const;
  /// Only the external id of `doc` (reads the record's id part; still checks its CRC).
  std::string id(size_t doc) const;
  /// Internal id of the latest document of `id` (an upsert appends a new one), or -1 (builds an
  /// id map on first use). Whether it is live is the index's question, not the store's.
  int64_t find(const std::string& id) const;
  void verify() const { log_.verify_data(); }

 private:
  using IdMap = std::unordered_map<std::string, uint32_t>;
  // The id map in parts, each immutable and shareable with a later store: the records of the
  // first open, then of the adds since (merged when they grow many or large).
  const std::vector<std::shared_ptr<const IdMap>>& id_parts() const;
  std::shared_ptr<const IdMap> map_records(size_t from, size_t to) const;

  RecordLogReader log_;
  mutable std::once_flag ids_once_;
  mutable std::vector<std::shared_ptr<const IdMap>> id_parts_;
};

}  // namespace sieve::index
