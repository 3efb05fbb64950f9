// Shard sets (internal): the manifest that names the shards of a sharded index, the searcher that
// merges them, and the hook into one shard's dense search. The public API is in sieve/index.h;
// the format in docs/formats.md ("Shard sets").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "index/fusion.h"
#include "sieve/index.h"

namespace sieve::index {

constexpr uint32_t kShardSetFormatVersion = 1;

/// One shard as the shard-set manifest records it.
struct ShardEntry {
  std::string dir;          ///< folder inside the set ("shard-000")
  uint64_t first = 0;       ///< internal id of its first document in the set
  uint64_t documents = 0;
  std::string manifest_crc;  ///< CRC-32 (hex) of its manifest.json as committed
};

/// shardset.json: what every shard shares and the list of shards, in id order.
struct ShardSetManifest {
  uint64_t documents = 0;
  uint64_t dim = 0;
  std::string model_identity, model_path, pooling;
  uint64_t max_length = 0;
  std::string vector_factory;
  bool has_tokens = false;
  std::string token_codec;
  std::string codec_crc;  ///< CRC-32 (hex) of the codec file every shard holds ("" without tokens)
  std::vector<ShardEntry> shards;
};

/// Writes `<dir>/shardset.json` atomically with a checksum over its content.
void write_shard_set_manifest(const std::string& dir, const ShardSetManifest& m);
/// Reads and validates it (format, version, checksum, contiguous ids); sieve::Error otherwise.
ShardSetManifest read_shard_set_manifest(const std::string& dir);

/// A shard's identity as its set records it (ShardEntry::manifest_crc): the CRC-32 (hex) of the
/// manifest.json in `shard_dir`. A rebuilt or other copy of the shard has another one.
std::string shard_identity(const std::string& shard_dir);
/// The identity each shard of the set at `dir` must have, in shard order (its manifest's record).
std::vector<std::string> shard_set_identities(const std::string& dir);
/// The shard's identity (shard_identity), after checking that it is the copy its set (the folder
/// above it, when that is a shard set) records: sieve::Error otherwise. What a shard server checks
/// before it serves.
std::string check_shard_in_its_set(const std::string& shard_dir);

/// Opens a shard set (Index::open calls it for a folder with shardset.json).
std::unique_ptr<Index> open_shard_set(const std::string& dir, const IndexOpenOptions& opt);

/// The dense lists of one index opened by Index::open (not a shard set) for `n` pooled query
/// vectors: the best `depth` documents of each, equal scores lower document first; only the
/// documents p's filter, deletions and expiry allow.
std::vector<Ranked> dense_lists(const Index& shard, size_t n, const float* pooled, size_t depth,
                                const SearchParams& p);

class Bitmap;
/// The documents of one index (not a shard set) a search with `p` may return: live and passing
/// p.filter; null when that is all of them.
std::shared_ptr<const Bitmap> allowed_documents(const Index& shard, const SearchParams& p);

}  // namespace sieve::index
