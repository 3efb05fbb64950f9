// The index manifest (manifest.json): format version, counts, model identity, codec, and the
// committed state and checksum of every file. The same structure, with a corpus fingerprint,
// is the checkpoint of an interrupted build.
#pragma once

#include <cstdint>
#include <string>

#include "index/record_log.h"
#include "sieve/encoder.h"

namespace sieve::index {

/// Version 2 may keep the pooled keys only inside the vector index (`keys_in_vectors`); version 3
/// lets the vector file lag behind the documents (`vector_documents`: the keys of later, added
/// documents are read from the keys log), so that an add does not rewrite the whole vector file.
/// Version 4 adds the metadata log (`logs.metadata`: each document's expiry and metadata) and the
/// deletes log (`logs.deletes`: the internal ids each delete batch removed from view).
/// A manifest is written with the lowest version that describes it; versions 1 (always a keys
/// log) and 2 are still read.
constexpr uint32_t kIndexFormatVersion = 4;
constexpr uint32_t kOldestIndexFormatVersion = 1;
constexpr const char* kManifestFile = "manifest.json";
constexpr const char* kCheckpointFile = "checkpoint.json";
constexpr const char* kCodecFile = "codec.faiss";
constexpr const char* kLexicalDir = "lexical";
constexpr const char* kWriteLockFile = "write.lock";

/// Identity of a whole-file artefact.
struct FileSum {
  std::string file;
  uint64_t bytes = 0;
  uint32_t crc = 0;
};

struct Manifest {
  uint64_t documents = 0;
  uint64_t dim = 0;
  // the model the index was built with
  std::string model_identity;
  std::string model_path;
  std::string pooling;
  uint64_t max_length = 0;
  /// Encoder::key_grid() of the build ("fp32", "bf16", "int8-127+bf16-attention", ...; "int8-127"
  /// alone in indexes built before the attention was recorded); empty in indexes built
  /// before it was recorded (nothing is checked then).
  std::string key_grid;
  // dense keys
  std::string vector_factory;
  FileSum vectors;  ///< empty file name in a checkpoint (built at the end)
  /// The keys live only in the vector index, whose storage holds them exactly (Flat, HNSW over
  /// Flat): there is no keys log and `keys` is empty. False in checkpoints and version 1.
  bool keys_in_vectors = false;
  /// Keys held by the vector file: documents [0, vector_documents). The keys of the rest (added
  /// since the vector file was last written) are read from the keys log and searched exactly.
  uint64_t vector_documents = 0;
  /// The keys log holds documents [keys_from, documents): 0 without keys_in_vectors; with it,
  /// the first document added after the build (the log then holds added documents only).
  uint64_t keys_from = 0;
  // token store
  bool has_tokens = false;
  std::string token_codec;   ///< FAISS factory string of the codec
  uint64_t token_code_bytes = 0;
  uint64_t tokens = 0;
  FileSum codec;             ///< empty file name until the codec is trained
  /// The tokenizer's ids of each document's stored token rows are kept too (`token_ids` log):
  /// stage 2's id-reading verifiers then need no re-tokenizing. False for indexes built before.
  bool has_token_ids = false;
  /// Documents carry metadata or an expiry: the `metadata` log, one record per document
  /// (index/doc_state.h), created at the first such document (the earlier ones get empty records).
  bool has_metadata = false;
  /// Some batch deleted documents: the `deletes` log, one record per batch. `deleted` counts the
  /// documents deleted so far (replaced ones included).
  bool has_deletes = false;
  uint64_t deleted = 0;
  // logs
  LogState corpus, keys, token_log, token_ids, metadata, deletes;
  // checkpoint only: what the build is reading, to decide between resume and restart
  std::string corpus_fingerprint;
  std::string build_options;
};

/// The int8 weight levels of a key grid ("int8-127" -> 127), 0 for "fp32" or an unrecorded one.
int int8_levels_of_grid(const std::string& grid);
/// Whether keys of `encoder_grid` may sit beside (or query) an index's keys of `index_grid`: the
/// same recipe; or none recorded; or an int8 grid recorded before the attention's arithmetic was
/// ("int8-127" alone), which any int8 attention on its weight grid meets.
bool key_grids_agree(const std::string& index_grid, const std::string& encoder_grid);
/// Int8 encoder options take the grid of the index's int8 keys (unless they name one): queries
/// and added keys then meet the keys' own arithmetic.
void take_key_grid(const Manifest& m, EncoderOptions& e);
/// Refuses keys from an encoder on another grid than the index's (`what` names them in the
/// error); nothing is checked for an index that does not record its grid.
void check_key_grid(const Manifest& m, const std::string& encoder_grid, const std::string& what);

/// Writes `<dir>/<name>` atomically with a checksum over its content.
void write_manifest(const std::string& dir, const std::string& name, const Manifest& m);
/// Reads and validates `<dir>/<name>`; throws sieve::Error on a missing, damaged or
/// other-version file.
Manifest read_manifest(const std::string& dir, const std::string& name);
/// The whole-file checksum record of `<dir>/<file>`.
FileSum sum_file(const std::string& dir, const std::string& file);
/// Checks that `<dir>/<sum.file>` has the recorded size and CRC.
void check_file(const std::string& dir, const FileSum& sum);

}  // namespace sieve::index
