// Index manifest: full round trip, edits caught by the checksum, other versions, missing and
// non-JSON files, and the whole-file checksums of sum_file/check_file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "core/checksum.h"
#include "core/file_util.h"
#include <nlohmann/json.hpp>
#include "index/manifest.h"
#include "sieve/error.h"
#include "support/test_util.h"

namespace sieve::index {
namespace {

namespace fs = std::filesystem;

using sieve::test::expect_error;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
}

// Replaces the one occurrence of `from` in the file (the test fails when there is none).
void edit(const std::string& path, const std::string& from, const std::string& to) {
  std::string s = slurp(path);
  const size_t at = s.find(from);
  ASSERT_NE(at, std::string::npos) << "'" << from << "' not in " << s;
  s.replace(at, from.size(), to);
  spit(path, s);
}

LogState log_state(uint64_t records, uint64_t data_bytes, uint32_t data_crc, uint32_t index_crc) {
  LogState s;
  s.records = records;
  s.data_bytes = data_bytes;
  s.index_bytes = 32 + 16 * records;
  s.data_crc = data_crc;
  s.index_crc = index_crc;
  return s;
}

// Every field set, each to a value no other field has (the logs must agree with `documents`).
Manifest full_manifest() {
  Manifest m;
  m.documents = 3;
  m.dim = 384;
  m.model_identity = "sha256:0123abcd";
  m.model_path = "/models/mini \xC3\xA9";
  m.pooling = "mean";
  m.max_length = 256;
  m.vector_factory = "HNSW32";
  m.vectors = {"vectors.faiss", 12345, 0xCAFEBABE};
  m.vector_documents = 3;
  m.has_tokens = true;
  m.token_codec = "SQ8";
  m.token_code_bytes = 385;
  m.tokens = 777;
  m.codec = {"codec.faiss", 999, 0x12345678};
  m.corpus = log_state(3, 332, 0x11111111, 0x22222222);
  m.keys = log_state(3, 4640, 0x33333333, 0x44444444);
  m.token_log = log_state(3, 5000, 0x55555555, 0xFFFFFFFF);
  m.corpus_fingerprint = "fp:size=42";
  m.build_options = "{\"chunk_docs\":512}";
  return m;
}

void expect_log_state(const LogState& s, uint64_t records, uint64_t data_bytes, uint32_t data_crc,
                      uint32_t index_crc) {
  EXPECT_EQ(s.records, records);
  EXPECT_EQ(s.data_bytes, data_bytes);
  EXPECT_EQ(s.index_bytes, 32 + 16 * records);
  EXPECT_EQ(s.data_crc, data_crc);
  EXPECT_EQ(s.index_crc, index_crc);
}

TEST(Manifest, RoundTripsEveryField) {
  const std::string dir = sieve::test::make_temp_dir("manifest");
  write_manifest(dir, kManifestFile, full_manifest());
  const Manifest m = read_manifest(dir, kManifestFile);
  EXPECT_EQ(m.documents, 3u);
  EXPECT_EQ(m.dim, 384u);
  EXPECT_EQ(m.model_identity, "sha256:0123abcd");
  EXPECT_EQ(m.model_path, "/models/mini \xC3\xA9");
  EXPECT_EQ(m.pooling, "mean");
  EXPECT_EQ(m.max_length, 256u);
  EXPECT_EQ(m.vector_factory, "HNSW32");
  EXPECT_EQ(m.vectors.file, "vectors.faiss");
  EXPECT_EQ(m.vectors.bytes, 12345u);
  EXPECT_EQ(m.vectors.crc, 0xCAFEBABEu);
  EXPECT_TRUE(m.has_tokens);
  EXPECT_EQ(m.token_codec, "SQ8");
  EXPECT_EQ(m.token_code_bytes, 385u);
  EXPECT_EQ(m.tokens, 777u);
  EXPECT_EQ(m.codec.file, "codec.faiss");
  EXPECT_EQ(m.codec.bytes, 999u);
  EXPECT_EQ(m.codec.crc, 0x12345678u);
  expect_log_state(m.corpus, 3, 332, 0x11111111, 0x22222222);
  expect_log_state(m.keys, 3, 4640, 0x33333333, 0x44444444);
  expect_log_state(m.token_log, 3, 5000, 0x55555555, 0xFFFFFFFF);
  EXPECT_EQ(m.corpus_fingerprint, "fp:size=42");
  EXPECT_EQ(m.build_options, "{\"chunk_docs\":512}");
  // written atomically: nothing but the manifest is left in the folder
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.path().filename() == kManifestFile ? 1 : 100;
  EXPECT_EQ(files, 1u);
}

TEST(Manifest, IndexWithoutBuildSectionOrTokens) {
  const std::string dir = sieve::test::make_temp_dir("manifest");
  Manifest w = full_manifest();
  w.corpus_fingerprint.clear();
  w.build_options.clear();
  w.has_tokens = false;
  w.token_log = LogState{};  // a token log that was never created
  write_manifest(dir, kManifestFile, w);
  EXPECT_EQ(slurp(dir + "/" + kManifestFile).find("\"build\""), std::string::npos);
  const Manifest m = read_manifest(dir, kManifestFile);
  EXPECT_FALSE(m.has_tokens);
  EXPECT_EQ(m.token_log.records, 0u);
  EXPECT_EQ(m.corpus_fingerprint, "");
  EXPECT_EQ(m.build_options, "");
}

TEST(Manifest, AnyEditFailsTheChecksum) {
  const std::pair<std::string, std::string> edits[] = {
      {"\"documents\": 3", "\"documents\": 4"},
      {"\"HNSW32\"", "\"HNSW64\""},
      {"\"stored\": true", "\"stored\": false"},
      {"\"bytes\": 12345", "\"bytes\": 12346"},
  };
  for (const auto& [from, to] : edits) {
    SCOPED_TRACE(from);
    const std::string dir = sieve::test::make_temp_dir("manifest");
    write_manifest(dir, kManifestFile, full_manifest());
    edit(dir + "/" + kManifestFile, from, to);
    expect_error([&] { read_manifest(dir, kManifestFile); }, "checksum");
  }
}

TEST(Manifest, ReformattingKeepsTheChecksum) {
  // the checksum covers the content, not the layout: re-indenting is not damage
  const std::string dir = sieve::test::make_temp_dir("manifest");
  write_manifest(dir, kManifestFile, full_manifest());
  edit(dir + "/" + kManifestFile, "\"documents\": 3", "\"documents\":    3");
  EXPECT_EQ(read_manifest(dir, kManifestFile).documents, 3u);
}

// Found by fuzzing: a count too large for its type (a float to nlohmann) was converted with a
// plain cast, undefined behaviour. A manifest whose checksum vouches for such a value is refused.
TEST(Manifest, CountsOutOfRangeAreRefused) {
  for (const char* bad : {"64111111111111111111111111111111111111111111111111111111111", "-3", "2.5", "1e300"}) {
    SCOPED_TRACE(bad);
    const std::string dir = sieve::test::make_temp_dir("manifest");
    write_manifest(dir, kManifestFile, full_manifest());
    nlohmann::json j = nlohmann::json::parse(sieve::read_file(dir + "/" + kManifestFile));
    j["dim"] = nlohmann::json::parse(bad);
    j.erase("crc32");
    const std::string body = j.dump();
    j["crc32"] = sieve::crc32_hex(sieve::crc32(body.data(), body.size()));
    spit(dir + "/" + kManifestFile, j.dump(2));
    expect_error([&] { read_manifest(dir, kManifestFile); }, "'dim' is not a whole number in range");
  }
}

TEST(Manifest, OtherVersionIsRefused) {
  const std::string dir = sieve::test::make_temp_dir("manifest");
  write_manifest(dir, kManifestFile, full_manifest());
  edit(dir + "/" + kManifestFile, "\"version\": 2", "\"version\": 5");
  expect_error([&] { read_manifest(dir, kManifestFile); }, "version 5");
  edit(dir + "/" + kManifestFile, "\"version\": 5", "\"version\": 0");
  expect_error([&] { read_manifest(dir, kManifestFile); }, "version 0");
}

// Version 1 (always a keys log) is still read; version 2 may keep the keys in the vector index
// only, and then writes no keys log and needs none to agree with the document count.
TEST(Manifest, Version1IsReadAndKeysInVectorsHaveNoLog) {
  const std::string dir = sieve::test::make_temp_dir("manifest");
  write_manifest(dir, kManifestFile, full_manifest());
  auto j = nlohmann::json::parse(slurp(dir + "/" + kManifestFile));
  j["version"] = 1;
  j.erase("crc32");
  j["crc32"] = sieve::crc32_hex(sieve::crc32(j.dump().data(), j.dump().size()));
  spit(dir + "/" + kManifestFile, j.dump(2));
  Manifest old = read_manifest(dir, kManifestFile);
  EXPECT_FALSE(old.keys_in_vectors);
  expect_log_state(old.keys, 3, 4640, 0x33333333, 0x44444444);

  Manifest m = full_manifest();
  m.keys_in_vectors = true;
  m.keys = LogState{};
  m.keys_from = m.documents;
  write_manifest(dir, kManifestFile, m);
  const std::string text = slurp(dir + "/" + kManifestFile);
  EXPECT_EQ(nlohmann::json::parse(text)["logs"].count("keys"), 0u) << text;
  Manifest back = read_manifest(dir, kManifestFile);
  EXPECT_TRUE(back.keys_in_vectors);
  EXPECT_EQ(back.keys.records, 0u);
  // Without the flag, the missing keys log is damage.
  auto k = nlohmann::json::parse(text);
  k.erase("keys_in_vectors");
  k.erase("crc32");
  k["crc32"] = sieve::crc32_hex(sieve::crc32(k.dump().data(), k.dump().size()));
  spit(dir + "/" + kManifestFile, k.dump(2));
  expect_error([&] { read_manifest(dir, kManifestFile); }, "damaged manifest");
}

// Version 3: the vector file holds the first documents only (the rest have their keys in the keys
// log); with keys_in_vectors the log starts at keys_from. Written only when the file lags behind;
// counts that leave a document without a key anywhere are damage.
TEST(Manifest, Version3VectorFileBehindTheDocuments) {
  const std::string dir = sieve::test::make_temp_dir("manifest");
  Manifest m = full_manifest();
  m.keys_in_vectors = true;
  m.vector_documents = 2;
  m.keys_from = 1;
  m.keys = log_state(2, 3104, 5, 6);
  write_manifest(dir, kManifestFile, m);
  const auto j = nlohmann::json::parse(slurp(dir + "/" + kManifestFile));
  EXPECT_EQ(j["version"], 3);
  EXPECT_EQ(j["vectors"]["documents"], 2);
  EXPECT_EQ(j["keys_from"], 1);
  Manifest back = read_manifest(dir, kManifestFile);
  EXPECT_EQ(back.vector_documents, 2u);
  EXPECT_EQ(back.keys_from, 1u);
  expect_log_state(back.keys, 2, 3104, 5, 6);
  // Caught up (an add rewrote the vector file): version 2, and a version-2 reader's fields.
  m.vector_documents = 3;
  write_manifest(dir, kManifestFile, m);
  EXPECT_EQ(nlohmann::json::parse(slurp(dir + "/" + kManifestFile))["version"], 2);
  EXPECT_EQ(read_manifest(dir, kManifestFile).vector_documents, 3u);
  // Document 1 would have no key: in neither the vector file (1 key) nor the log (from 2).
  m.vector_documents = 1;
  m.keys_from = 2;
  m.keys = log_state(1, 1552, 5, 6);
  write_manifest(dir, kManifestFile, m);
  expect_error([&] { read_manifest(dir, kManifestFile); }, "record counts disagree");
}

// The token ids log (indexes built since it exists) is recorded and must agree with the documents;
// without it (older indexes) none is expected.
TEST(Manifest, TokenIdsLogIsRecordedAndChecked) {
  const std::string dir = sieve::test::make_temp_dir("manifest");
  Manifest m = full_manifest();
  EXPECT_FALSE(read_manifest((write_manifest(dir, kManifestFile, m), dir), kManifestFile).has_token_ids);
  m.has_token_ids = true;
  m.token_ids = log_state(3, 332, 7, 8);
  write_manifest(dir, kManifestFile, m);
  Manifest back = read_manifest(dir, kManifestFile);
  EXPECT_TRUE(back.has_token_ids);
  expect_log_state(back.token_ids, 3, 332, 7, 8);
  m.token_ids = log_state(2, 332, 7, 8);
  write_manifest(dir, kManifestFile, m);
  expect_error([&] { read_manifest(dir, kManifestFile); }, "record counts disagree");
}

TEST(Manifest, MissingOrForeignFiles) {
  const std::string dir = sieve::test::make_temp_dir("manifest");
  expect_error([&] { read_manifest(dir, kManifestFile); }, "not a sieve index");
  spit(dir + "/" + kManifestFile, "this is not json\n");
  expect_error([&] { read_manifest(dir, kManifestFile); }, "not valid JSON");
  spit(dir + "/" + kManifestFile, "{\"format\": \"something-else\", \"version\": 1}\n");
  expect_error([&] { read_manifest(dir, kManifestFile); }, "not a sieve index manifest");
  spit(dir + "/" + kManifestFile, "{\"format\": 8556543, \"version\": 1}\n");  // found by fuzzing
  expect_error([&] { read_manifest(dir, kManifestFile); }, "not a sieve index manifest");
  spit(dir + "/" + kManifestFile, "{\"format\": \"sieve-index\", \"version\": 1}\n");
  expect_error([&] { read_manifest(dir, kManifestFile); }, "no checksum");
}

TEST(Manifest, DisagreeingRecordCountsAreRefused) {
  const std::string dir = sieve::test::make_temp_dir("manifest");
  Manifest m = full_manifest();
  m.keys = log_state(2, 3104, 1, 2);  // 2 keys for 3 documents
  write_manifest(dir, kManifestFile, m);
  expect_error([&] { read_manifest(dir, kManifestFile); }, "record counts disagree");
}

TEST(Manifest, InconsistentLogSizesAreRefused) {
  const std::string dir = sieve::test::make_temp_dir("manifest");
  Manifest m = full_manifest();
  m.corpus.index_bytes += 1;  // not 32 + 16 * records
  write_manifest(dir, kManifestFile, m);
  expect_error([&] { read_manifest(dir, kManifestFile); }, "corpus log");
}

TEST(FileSum, SumAndCheck) {
  const std::string dir = sieve::test::make_temp_dir("filesum");
  spit(dir + "/blob.bin", "123456789");
  const FileSum s = sum_file(dir, "blob.bin");
  EXPECT_EQ(s.file, "blob.bin");
  EXPECT_EQ(s.bytes, 9u);
  EXPECT_EQ(s.crc, 0xCBF43926u);  // the standard CRC-32 check value of "123456789"
  check_file(dir, s);

  spit(dir + "/empty.bin", "");
  const FileSum e = sum_file(dir, "empty.bin");
  EXPECT_EQ(e.bytes, 0u);
  EXPECT_EQ(e.crc, 0u);
  check_file(dir, e);

  spit(dir + "/blob.bin", "123456780");  // same size, other content
  expect_error([&] { check_file(dir, s); }, "checksum");
  spit(dir + "/blob.bin", "1234567890");  // one byte longer
  expect_error([&] { check_file(dir, s); }, "10 bytes");
  fs::remove(dir + "/blob.bin");
  expect_error([&] { check_file(dir, s); }, "missing");
}

// Metadata and deletes (version 4): their logs and the deleted count round-trip; a manifest with
// neither keeps its lower version; a deleted count past the documents, or a metadata log of
// another length, is refused.
TEST(Manifest, MetadataAndDeletesAreVersion4) {
  const std::string dir = sieve::test::make_temp_dir("manifest");
  Manifest m = full_manifest();
  write_manifest(dir, kManifestFile, m);
  EXPECT_LT(nlohmann::json::parse(slurp(dir + "/" + kManifestFile))["version"].get<int>(), 4);
  m.has_metadata = true;
  m.metadata = {3, 32 + 30, 32 + 3 * 16, 7, 9};
  m.has_deletes = true;
  m.deletes = {1, 32 + 8, 32 + 16, 5, 6};
  m.deleted = 2;
  write_manifest(dir, kManifestFile, m);
  EXPECT_EQ(nlohmann::json::parse(slurp(dir + "/" + kManifestFile))["version"], 4);
  const Manifest r = read_manifest(dir, kManifestFile);
  EXPECT_TRUE(r.has_metadata && r.has_deletes);
  EXPECT_EQ(r.metadata.records, 3u);
  EXPECT_EQ(r.metadata.data_crc, 7u);
  EXPECT_EQ(r.deletes.index_bytes, 48u);
  EXPECT_EQ(r.deleted, 2u);
  m.deleted = 4;  // more than the 3 documents
  write_manifest(dir, kManifestFile, m);
  expect_error([&] { read_manifest(dir, kManifestFile); }, "record counts disagree");
  m.deleted = 2;
  m.metadata.records = 2;
  m.metadata.index_bytes = 32 + 2 * 16;
  write_manifest(dir, kManifestFile, m);
  expect_error([&] { read_manifest(dir, kManifestFile); }, "record counts disagree");
}

}  // namespace
}  // namespace sieve::index
