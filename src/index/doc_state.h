// What an index knows of each document besides its text and vectors: its metadata (the "metadata"
// log: one record per document, its expiry and its JSON object), and whether it is deleted (the
// "deletes" log: one record per delete batch, the internal ids it deleted). DocState holds them at
// one commit, immutable, and answers which documents a search may return: live (not deleted, not
// expired) and passing a filter, as a bitmap over internal ids. Internal to the library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "index/record_log.h"
#include "sieve/filter.h"
#include "sieve/index.h"

namespace sieve::index {

/// A set of internal ids, one bit each (bit i of byte i / 8, as FAISS's IDSelectorBitmap reads).
class Bitmap {
 public:
  Bitmap() = default;
  explicit Bitmap(size_t n, bool value = false);
  size_t size() const { return n_; }
  bool test(size_t i) const { return (w_[i >> 6] >> (i & 63)) & 1u; }
  void set(size_t i) { w_[i >> 6] |= uint64_t{1} << (i & 63); }
  void reset(size_t i) { w_[i >> 6] &= ~(uint64_t{1} << (i & 63)); }
  size_t count() const;
  void and_with(const Bitmap& o);
  void and_not(const Bitmap& o);
  void or_with(const Bitmap& o);
  void flip();
  /// Grows to `n` bits (new bits clear).
  void resize(size_t n);
  const uint8_t* bytes() const { return reinterpret_cast<const uint8_t*>(w_.data()); }
  /// The first set bit at or after `from`; size() when there is none.
  size_t next_set(size_t from) const;
  /// The set bits, ascending; with `first`, only those from bit `first` on.
  std::vector<uint32_t> ones(size_t first = 0) const;

 private:
  void clear_tail();
  std::vector<uint64_t> w_;
  size_t n_ = 0;
};

/// A metadata record: f64 expires_at (0 = never), then the compact JSON object (may be empty).
std::string encode_metadata_record(const Document& doc);
/// Inverse of encode_metadata_record (sieve::Error when the bytes are too few).
void decode_metadata_record(const uint8_t* data, size_t n, std::string* metadata, double* expires_at);

/// A delete record: the internal ids one batch deleted, u32 each.
std::string encode_delete_record(const std::vector<uint32_t>& docs);

/// Documents' metadata, expiry and deletion at one commit (immutable; shared by the snapshots
/// that extend it). Metadata columns are built from the log on the first filter that needs them.
class DocState {
 public:
  /// The state of `documents` documents from the logs (null: the index has no such log). The
  /// metadata log's reader is kept (its columns are read from it when first needed).
  DocState(size_t documents, std::shared_ptr<const RecordLogReader> meta, const RecordLogReader* deletes);
  /// `prev` grown to the logs' later records (an add or a delete since): what it read is shared.
  DocState(const DocState& prev, size_t documents, std::shared_ptr<const RecordLogReader> meta,
           const RecordLogReader* deletes);
  ~DocState();

  size_t documents() const { return documents_; }
  size_t deleted_count() const { return deleted_count_; }
  bool deleted(uint32_t doc) const { return doc < deleted_.size() && deleted_.test(doc); }
  /// Whether any document has an expiry.
  bool has_expiry() const;
  bool expired(uint32_t doc, double now) const;
  bool live(uint32_t doc, double now) const { return !deleted(doc) && !expired(doc, now); }
  /// The documents a search may return at `now`: live and passing `filter`. Null when that is
  /// every document (no filter, none deleted, none expired), so that search takes its plain path.
  std::shared_ptr<const Bitmap> allowed(const Filter& filter, double now) const;
  /// The live documents passing `filter`, ascending.
  std::vector<uint32_t> matching(const Filter& filter, double now) const;

  struct Segment;

 private:
  Bitmap evaluate(const Filter::Node& node) const;
  void add_segment(std::shared_ptr<const RecordLogReader> meta, size_t from);
  void read_deletes(const RecordLogReader* deletes);

  size_t documents_ = 0;
  Bitmap deleted_;
  size_t deleted_count_ = 0;
  size_t delete_records_ = 0;  // records of the deletes log read
  size_t covered_ = 0;  // metadata records [0, covered_) are in segments_
  std::vector<std::shared_ptr<Segment>> segments_;
  // The last filters' bitmaps (before deletions and expiry), by their normal form, most recent
  // first: a service that filters by one tenant or date range evaluates it once per snapshot.
  static constexpr size_t kCachedFilters = 16;
  mutable std::mutex cache_mu_;
  mutable std::vector<std::pair<std::string, std::shared_ptr<const Bitmap>>> cache_;
  std::shared_ptr<const Bitmap> evaluated(const Filter& filter) const;
};

/// Seconds since 1970 now, or `now` when it is not 0.
double clock_or(double now);

}  // namespace sieve::index
