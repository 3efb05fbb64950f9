// A disk cache of a frozen encoder's token states for verifier training: each distinct text is
// encoded once, stored as float16 rows, and read back memory-mapped by every later epoch, run
// and verifier kind that uses the same encoder and token cap.
//
// Files, in the cache folder, named by a hash of (encoder identity, token cap):
//   <key>.states  records: rows x dim float16 states, then rows int32 token ids
//   <key>.index   a header line "sieve-token-cache <version> <dim> <max_length> <identity>", then
//                 one line per record: text hash (FNV-1a, 16 hex), text length, offset, rows, CRC-32
// Records are appended (states first, index line after, both flushed), so an interrupted run
// leaves at worst an unindexed tail, which is never read. Each record's CRC-32 is checked when it
// is read. An flock on <key>.lock serialises the processes that share a cache (the ranks of a
// data-parallel run): one encodes, the others wait and then read what it appended.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/mmap_file.h"
#include "sieve/encoder.h"

namespace sieve::train {

class TokenStateCache {
 public:
  /// Opens (creating the folder and files when needed) the cache of `encoder_identity` at token
  /// cap `max_length`, whose states are `dim` wide. Throws sieve::Error when the files exist but
  /// do not match (another format version, width or identity) or cannot be read.
  TokenStateCache(const std::string& dir, const std::string& encoder_identity, size_t dim, size_t max_length);

  /// Encodes the texts that are not cached yet with `encoder` (chunks of 256, a progress bar when
  /// `progress`) and appends them; then maps the states file again.
  void add(const Encoder& encoder, const std::vector<std::string>& texts, bool progress);

  bool contains(const std::string& text) const;
  /// A cached text's states (float32, with ids); throws sieve::Error when it is not cached or its
  /// record fails its checksum.
  TokenStates get(const std::string& text) const;
  size_t size() const { return entries_.size(); }
  /// Texts found in the cache when it was opened (a measure of reuse).
  size_t reused() const { return reused_; }
  const std::string& states_path() const { return states_path_; }

 private:
  struct Entry {
    uint64_t offset = 0;
    uint32_t rows = 0, crc = 0;
  };
  static std::string key(const std::string& text);
  void remap();
  void load_index();  // (re)reads the index; the caller holds the lock

  std::string index_path_, states_path_, lock_path_, header_;
  size_t dim_;
  std::unordered_map<std::string, Entry> entries_;  // key(text) -> record
  MappedFile map_;
  size_t reused_ = 0;
};

}  // namespace sieve::train
