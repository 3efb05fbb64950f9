#include "index/manifest.h"

#include <limits>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "core/checksum.h"
#include "core/file_util.h"
#include "core/mmap_file.h"
#include "sieve/error.h"

namespace sieve::index {
namespace {

constexpr const char* kFormatName = "sieve-index";

nlohmann::json sum_to_json(const FileSum& s) { return {{"file", s.file}, {"bytes", s.bytes}, {"crc32", s.crc}}; }

template <class T>
T get(const nlohmann::json& j, const char* key, const std::string& what) {
  SIEVE_THROW_IF_NOT(j.is_object() && j.contains(key), what << ": missing field '" << key << "' (damaged manifest)");
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // nlohmann converts a float, or an integer out of T's range, with a plain cast (undefined
    // behaviour for 6.4e58: found by fuzzing); a count must be a whole number that fits.
    const nlohmann::json& v = j.at(key);
    const bool fits = v.is_number_unsigned()
                          ? v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max())
                          : v.is_number_integer() && v.get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                                (v.get<int64_t>() < 0 || static_cast<uint64_t>(v.get<int64_t>()) <=
                                                             static_cast<uint64_t>(std::numeric_limits<T>::max()));
    SIEVE_THROW_IF_NOT(fits, what << ": field '" << key << "' is not a whole number in range (damaged manifest)");
    return v.get<T>();
  }
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    SIEVE_THROW(what << ": field '" << key << "' has the wrong type (damaged manifest)");
  }
}

FileSum sum_from_json(const nlohmann::json& j, const std::string& what) {
  FileSum f{get<std::string>(j, "file", what), get<uint64_t>(j, "bytes", what), get<uint32_t>(j, "crc32", what)};
  // A file name from the manifest must name a file inside the index, never a path elsewhere.
  SIEVE_THROW_IF_NOT(f.file.find('/') == std::string::npos && f.file != "." && f.file != "..",
                     what << ": invalid file name '" << f.file << "' (damaged manifest)");
  return f;
}

}  // namespace

int int8_levels_of_grid(const std::string& grid) {
  const std::string levels = grid.substr(0, grid.find('+'));  // the attention's arithmetic follows a '+'
  if (levels == "int8-127") return 127;
  if (levels == "int8-63") return 63;
  return 0;
}

bool key_grids_agree(const std::string& index_grid, const std::string& encoder_grid) {
  if (index_grid.empty() || index_grid == encoder_grid) return true;
  // Recorded before the attention was: "int8-N" alone says nothing of it, so any attention on
  // that weight grid meets it (as it did when it was recorded).
  return index_grid.find('+') == std::string::npos && int8_levels_of_grid(index_grid) > 0 &&
         int8_levels_of_grid(encoder_grid) == int8_levels_of_grid(index_grid);
}

void take_key_grid(const Manifest& m, EncoderOptions& e) {
  const int recorded = int8_levels_of_grid(m.key_grid);
  if (e.precision == Precision::Int8 && e.int8_levels == 0 && recorded > 0) e.int8_levels = recorded;
}

void check_key_grid(const Manifest& m, const std::string& encoder_grid, const std::string& what) {
  if (key_grids_agree(m.key_grid, encoder_grid)) return;
  if (int8_levels_of_grid(m.key_grid) > 0 && int8_levels_of_grid(m.key_grid) == int8_levels_of_grid(encoder_grid))
    SIEVE_THROW(what << " would be encoded in " << encoder_grid << " but the index's keys are " << m.key_grid
                     << " (recorded at its build): the same int8 weights with another attention arithmetic (bf16 "
                        "attention needs a CPU with bf16 products), so their keys differ by more than rounding; "
                        "use --precision fp32 or rebuild the index on this CPU");
  SIEVE_THROW(what << " would be encoded in " << encoder_grid << " but the index's keys are " << m.key_grid
                   << " (recorded at its build); keys of the two differ, so one index holds one kind: open it with "
                   << "--precision " << (int8_levels_of_grid(m.key_grid) > 0 ? "int8" : m.key_grid) << " (int8 takes the index's "
                   << "grid where the CPU can), or rebuild it");
}

void write_manifest(const std::string& dir, const std::string& name, const Manifest& m) {
  nlohmann::json j = {
      {"format", kFormatName},
      {"version", 2u},
      {"documents", m.documents},
      {"dim", m.dim},
      {"model", {{"identity", m.model_identity}, {"path", m.model_path}, {"pooling", m.pooling},
                 {"max_length", m.max_length}}},
      {"vectors", {{"factory", m.vector_factory}, {"sum", sum_to_json(m.vectors)}}},
      {"tokens", {{"stored", m.has_tokens}, {"codec", m.token_codec}, {"code_bytes", m.token_code_bytes},
                  {"count", m.tokens}, {"codec_sum", sum_to_json(m.codec)}}},
      {"logs", {{"corpus", log_state_to_json(m.corpus)}, {"tokens", log_state_to_json(m.token_log)}}},
  };
  // Version 3 only when the vector file lags behind (a checkpoint has no vector file yet).
  if (!m.vectors.file.empty() && m.vector_documents != m.documents) {
    j["version"] = 3u;
    j["vectors"]["documents"] = m.vector_documents;
  }
  if (m.has_token_ids) j["logs"]["token_ids"] = log_state_to_json(m.token_ids);
  // Version 4 only with metadata or deletes.
  if (m.has_metadata || m.has_deletes) j["version"] = 4u;
  if (m.has_metadata) j["logs"]["metadata"] = log_state_to_json(m.metadata);
  if (m.has_deletes) {
    j["logs"]["deletes"] = log_state_to_json(m.deletes);
    j["deleted"] = m.deleted;
  }
  if (!m.key_grid.empty()) j["model"]["key_grid"] = m.key_grid;
  if (m.keys_in_vectors) j["keys_in_vectors"] = true;
  if (!m.keys_in_vectors || m.keys_from < m.documents) j["logs"]["keys"] = log_state_to_json(m.keys);
  if (m.keys_in_vectors && m.keys_from < m.documents) j["keys_from"] = m.keys_from;
  if (!m.corpus_fingerprint.empty()) j["build"] = {{"corpus", m.corpus_fingerprint}, {"options", m.build_options}};
  // The checksum covers the compact dump of everything else, so any edit of the file is caught.
  j["crc32"] = crc32_hex(crc32(j.dump().data(), j.dump().size()));
  write_file_atomic(path_join(dir, name), j.dump(2) + "\n");
}

Manifest read_manifest(const std::string& dir, const std::string& name) {
  std::string path = path_join(dir, name);
  SIEVE_THROW_IF_NOT(is_file(path), "'" << dir << "' is not a sieve index (no " << name << ")");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    SIEVE_THROW("'" << path << "' is not valid JSON (damaged): " << e.what());
  }
  SIEVE_THROW_IF_NOT(j.is_object() && j.contains("format") && j["format"].is_string() && j["format"] == kFormatName,
                     "'" << path << "' is not a sieve index manifest");
  SIEVE_THROW_IF_NOT(j.contains("version") && j["version"].is_number_unsigned(), "'" << path << "' has no version");
  uint32_t version = j["version"].get<uint32_t>();
  SIEVE_THROW_IF_NOT(version >= kOldestIndexFormatVersion && version <= kIndexFormatVersion,
                     "'" << dir << "' is an index of format version " << version << "; this sieve reads versions "
                         << kOldestIndexFormatVersion << " to " << kIndexFormatVersion
                         << " (rebuild it with `sieve index build`)");
  SIEVE_THROW_IF_NOT(j.contains("crc32") && j["crc32"].is_string(), "'" << path << "' has no checksum (damaged)");
  std::string want = j["crc32"].get<std::string>();
  j.erase("crc32");
  std::string dump = j.dump();
  SIEVE_THROW_IF_NOT(crc32_hex(crc32(dump.data(), dump.size())) == want,
                     "'" << path << "' is damaged (checksum mismatch)");
  const std::string what = "'" + path + "'";
  Manifest m;
  try {
    m.documents = get<uint64_t>(j, "documents", what);
    m.dim = get<uint64_t>(j, "dim", what);
    const auto& model = j.at("model");
    m.model_identity = get<std::string>(model, "identity", what);
    m.model_path = get<std::string>(model, "path", what);
    m.pooling = get<std::string>(model, "pooling", what);
    m.max_length = get<uint64_t>(model, "max_length", what);
    if (model.contains("key_grid")) m.key_grid = get<std::string>(model, "key_grid", what);
    const auto& vec = j.at("vectors");
    m.vector_factory = get<std::string>(vec, "factory", what);
    m.vectors = sum_from_json(vec.at("sum"), what);
    // Before version 3 (and in checkpoints, which have no vector file yet) the file holds every key.
    m.vector_documents = vec.contains("documents") ? get<uint64_t>(vec, "documents", what) : m.documents;
    const auto& tok = j.at("tokens");
    m.has_tokens = get<bool>(tok, "stored", what);
    m.token_codec = get<std::string>(tok, "codec", what);
    m.token_code_bytes = get<uint64_t>(tok, "code_bytes", what);
    m.tokens = get<uint64_t>(tok, "count", what);
    m.codec = sum_from_json(tok.at("codec_sum"), what);
    const auto& logs = j.at("logs");
    m.corpus = log_state_from_json(logs.at("corpus"), what + " corpus log");
    if (j.contains("keys_in_vectors")) m.keys_in_vectors = get<bool>(j, "keys_in_vectors", what);
    m.keys_from = m.keys_in_vectors ? m.documents : 0;
    if (m.keys_in_vectors && j.contains("keys_from")) m.keys_from = get<uint64_t>(j, "keys_from", what);
    if (m.keys_from < m.documents) m.keys = log_state_from_json(logs.at("keys"), what + " keys log");
    m.token_log = log_state_from_json(logs.at("tokens"), what + " tokens log");
    m.has_token_ids = logs.contains("token_ids");
    if (m.has_token_ids) m.token_ids = log_state_from_json(logs.at("token_ids"), what + " token ids log");
    m.has_metadata = logs.contains("metadata");
    if (m.has_metadata) m.metadata = log_state_from_json(logs.at("metadata"), what + " metadata log");
    m.has_deletes = logs.contains("deletes");
    if (m.has_deletes) {
      m.deletes = log_state_from_json(logs.at("deletes"), what + " deletes log");
      m.deleted = get<uint64_t>(j, "deleted", what);
    }
    if (j.contains("build")) {
      m.corpus_fingerprint = get<std::string>(j["build"], "corpus", what);
      m.build_options = get<std::string>(j["build"], "options", what);
    }
  } catch (const nlohmann::json::exception& e) {
    SIEVE_THROW(what << ": unexpected structure (damaged manifest): " << e.what());
  }
  SIEVE_THROW_IF_NOT(m.corpus.records == m.documents && m.keys_from <= m.documents &&
                         m.keys.records == m.documents - m.keys_from && m.vector_documents <= m.documents &&
                         m.keys_from <= m.vector_documents && (!m.has_tokens || m.token_log.records == m.documents) &&
                         (!m.has_token_ids || (m.has_tokens && m.token_ids.records == m.documents)) &&
                         (!m.has_metadata || m.metadata.records == m.documents) && m.deleted <= m.documents,
                     what << ": record counts disagree (damaged manifest)");
  return m;
}

FileSum sum_file(const std::string& dir, const std::string& file) {
  MappedFile f(path_join(dir, file));
  return {file, f.size(), crc32(f.data(), f.size())};
}

void check_file(const std::string& dir, const FileSum& sum) {
  std::string path = path_join(dir, sum.file);
  SIEVE_THROW_IF_NOT(is_file(path), "'" << path << "' is missing from the index");
  MappedFile f(path);
  SIEVE_THROW_IF_NOT(f.size() == sum.bytes, "'" << path << "' has " << f.size() << " bytes, the manifest says "
                                                << sum.bytes << " (damaged or truncated)");
  SIEVE_THROW_IF_NOT(crc32(f.data(), f.size()) == sum.crc, "'" << path << "' is damaged (checksum mismatch)");
}

}  // namespace sieve::index
