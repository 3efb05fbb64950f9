// Record logs: CRC-32 against its published check values, write/read round trips, reopening at an
// older commit (an interrupted append), and every kind of damage the reader must refuse.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/checksum.h"
#include "index/record_log.h"
#include "sieve/error.h"
#include "support/test_util.h"

namespace sieve::index {
namespace {

namespace fs = std::filesystem;

using sieve::test::expect_error;

std::string record_string(const RecordLogReader& r, size_t i) {
  auto rec = r.record(i);
  return std::string(reinterpret_cast<const char*>(rec.data), rec.size);
}

void flip_byte(const std::string& path, size_t offset) { test::flip_byte(path, offset, static_cast<char>(0xFF)); }

void write_u32_at(const std::string& path, size_t offset, uint32_t v) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f.is_open()) << path;
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(reinterpret_cast<const char*>(&v), 4);
}

std::string str(const char* s, size_t n) { return std::string(s, n); }

TEST(Crc32, PublishedCheckValues) {
  EXPECT_EQ(crc32("123456789", 9), 0xCBF43926u);  // the standard CRC-32 check value
  EXPECT_EQ(crc32("", 0), 0u);
  EXPECT_EQ(crc32("The quick brown fox jumps over the lazy dog", 43), 0x414FA339u);
  EXPECT_EQ(crc32_hex(0x414FA339u), "414fa339");
  EXPECT_EQ(crc32_hex(0x0000ABCDu), "0000abcd");
}

TEST(Crc32, ContinuesAcrossPieces) {
  const std::string a = "The quick brown fox ", b = "jumps over the lazy dog";
  EXPECT_EQ(crc32(b.data(), b.size(), crc32(a.data(), a.size())), 0x414FA339u);
  EXPECT_EQ(crc32("6789", 4, crc32("12345", 5)), 0xCBF43926u);
}

TEST(LogState, JsonRoundTrip) {
  LogState s;
  s.records = 3;
  s.data_bytes = 100;
  s.index_bytes = 32 + 3 * 16;
  s.data_crc = 0xDEADBEEF;
  s.index_crc = 0xFFFFFFFF;
  const nlohmann::json j = log_state_to_json(s);
  EXPECT_EQ(j.at("records"), 3);
  EXPECT_EQ(j.at("data_bytes"), 100);
  EXPECT_EQ(j.at("index_bytes"), 80);
  EXPECT_EQ(j.at("data_crc32"), 0xDEADBEEFu);
  EXPECT_EQ(j.at("index_crc32"), 0xFFFFFFFFu);
  // through text, as the manifest stores it
  const LogState t = log_state_from_json(nlohmann::json::parse(j.dump()), "test");
  EXPECT_EQ(t.records, 3u);
  EXPECT_EQ(t.data_bytes, 100u);
  EXPECT_EQ(t.index_bytes, 80u);
  EXPECT_EQ(t.data_crc, 0xDEADBEEFu);
  EXPECT_EQ(t.index_crc, 0xFFFFFFFFu);
}

TEST(LogState, JsonErrors) {
  // a never-created log is all zeros and is accepted
  EXPECT_EQ(log_state_from_json(log_state_to_json(LogState{}), "empty").records, 0u);
  const nlohmann::json good = nlohmann::json::parse(
      R"({"records": 1, "data_bytes": 40, "index_bytes": 48, "data_crc32": 1, "index_crc32": 2})");
  EXPECT_EQ(log_state_from_json(good, "good").data_bytes, 40u);
  auto with = [&](const char* key, const nlohmann::json& v) {
    nlohmann::json j = good;
    j[key] = v;
    return j;
  };
  expect_error([&] { log_state_from_json(with("records", "1"), "the corpus log"); }, "the corpus log");
  expect_error([&] { log_state_from_json(with("data_bytes", -40), "x"); }, "'data_bytes'");
  nlohmann::json missing = good;
  missing.erase("index_crc32");
  expect_error([&] { log_state_from_json(missing, "x"); }, "'index_crc32'");
  expect_error([&] { log_state_from_json(nlohmann::json::array(), "x"); }, "'records'");
  // index_bytes must be 32 + 16 * records, data_bytes at least the header (values unsigned, as
  // parsed from text)
  expect_error([&] { log_state_from_json(with("index_bytes", 64u), "x"); }, "inconsistent");
  expect_error([&] { log_state_from_json(with("data_bytes", 31u), "x"); }, "inconsistent");
}

TEST(RecordLog, RoundTripVariedSizes) {
  const std::string dir = sieve::test::make_temp_dir("log");
  std::string big(9'000'000, '\0');  // larger than the 8 MiB write buffer: flushed mid-append
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31 + 7);
  const std::vector<std::string> recs = {"", "a", str("x\0y", 3), std::string(1000, 'q'), big, "", "tail!"};
  auto w = RecordLogWriter::create(dir, "t", "TEST", 42);
  for (const auto& r : recs) w.append(r.data(), r.size());
  const LogState s = w.sync();
  EXPECT_EQ(s.records, 7u);
  EXPECT_EQ(s.data_bytes, 32u + 0 + 1 + 3 + 1000 + 9'000'000 + 0 + 5);
  EXPECT_EQ(s.index_bytes, 32u + 7 * 16);
  EXPECT_EQ(fs::file_size(dir + "/t.dat"), s.data_bytes);
  EXPECT_EQ(fs::file_size(dir + "/t.idx"), s.index_bytes);
  EXPECT_EQ(s.data_crc, crc32_file(dir + "/t.dat"));
  EXPECT_EQ(s.index_crc, crc32_file(dir + "/t.idx"));

  RecordLogReader r(dir, "t", "TEST", 42, s);
  ASSERT_EQ(r.size(), recs.size());
  for (size_t i = 0; i < recs.size(); ++i) EXPECT_EQ(record_string(r, i), recs[i]) << "record " << i;
  r.verify_data();
  expect_error([&] { r.record(7); }, "out of range");
}

TEST(RecordLog, EmptyLog) {
  const std::string dir = sieve::test::make_temp_dir("log");
  const LogState s = RecordLogWriter::create(dir, "t", "TEST", 0).sync();
  EXPECT_EQ(s.records, 0u);
  EXPECT_EQ(s.data_bytes, 32u);
  EXPECT_EQ(s.index_bytes, 32u);
  RecordLogReader r(dir, "t", "TEST", 0, s);
  EXPECT_EQ(r.size(), 0u);
  r.verify_data();
}

TEST(RecordLog, ReopenAtOlderCommitDropsUncommittedRecords) {
  const std::string dir = sieve::test::make_temp_dir("log");
  LogState old_state, lost_state;
  {
    auto w = RecordLogWriter::create(dir, "t", "TEST", 1);
    for (const char* r : {"one", "two", "three"}) w.append(r, std::strlen(r));
    old_state = w.sync();  // the manifest records this commit ...
    for (const char* r : {"lost-4", "lost-5"}) w.append(r, std::strlen(r));
    lost_state = w.sync();  // ... and the process dies before recording this one
  }
  EXPECT_EQ(old_state.data_bytes, 32u + 3 + 3 + 5);
  EXPECT_EQ(lost_state.records, 5u);

  auto w = RecordLogWriter::reopen(dir, "t", "TEST", 1, old_state);
  EXPECT_EQ(w.state().records, 3u);
  EXPECT_EQ(w.state().data_bytes, old_state.data_bytes);
  EXPECT_EQ(w.state().data_crc, old_state.data_crc);
  EXPECT_EQ(fs::file_size(dir + "/t.dat"), old_state.data_bytes);  // the lost tail is cut off
  EXPECT_EQ(fs::file_size(dir + "/t.idx"), old_state.index_bytes);
  w.append("four", 4);
  const LogState s = w.sync();
  EXPECT_EQ(s.records, 4u);
  EXPECT_EQ(s.data_bytes, 32u + 3 + 3 + 5 + 4);
  EXPECT_EQ(s.index_bytes, 32u + 4 * 16);

  RecordLogReader r(dir, "t", "TEST", 1, s);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(record_string(r, 0), "one");
  EXPECT_EQ(record_string(r, 1), "two");
  EXPECT_EQ(record_string(r, 2), "three");
  EXPECT_EQ(record_string(r, 3), "four");
  r.verify_data();
  // the lost commit no longer describes the files
  expect_error([&] { RecordLogReader(dir, "t", "TEST", 1, lost_state); }, "truncated");
}

TEST(RecordLog, ReopenRefusesADamagedPrefix) {
  const std::string dir = sieve::test::make_temp_dir("log");
  auto w = RecordLogWriter::create(dir, "t", "TEST", 1);
  w.append("abc", 3);
  const LogState s = w.sync();
  flip_byte(dir + "/t.idx", 32 + 8);  // the size field of record 0
  expect_error([&] { RecordLogWriter::reopen(dir, "t", "TEST", 1, s); }, "damaged");
}

// A log of three records: "alpha" at data offset 32, "bravo-bravo" at 37, "charlie" at 48.
class DamagedLog : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = sieve::test::make_temp_dir("damage");
    auto w = RecordLogWriter::create(dir_, "t", "TEST", 5);
    for (const char* r : {"alpha", "bravo-bravo", "charlie"}) w.append(r, std::strlen(r));
    state_ = w.sync();
    ASSERT_EQ(state_.data_bytes, 32u + 5 + 11 + 7);
  }
  RecordLogReader open() const { return RecordLogReader(dir_, "t", "TEST", 5, state_); }
  std::string dat() const { return dir_ + "/t.dat"; }
  std::string idx() const { return dir_ + "/t.idx"; }
  std::string dir_;
  LogState state_;
};

TEST_F(DamagedLog, FlippedPayloadByteFailsOnlyThatRecord) {
  flip_byte(dat(), 37 + 3);  // inside "bravo-bravo"
  const RecordLogReader r = open();
  EXPECT_EQ(record_string(r, 0), "alpha");
  EXPECT_EQ(record_string(r, 2), "charlie");
  expect_error([&] { r.record(1); }, "damaged");
  expect_error([&] { r.record(1); }, "record 1");
  expect_error([&] { r.verify_data(); }, "damaged");
}

TEST_F(DamagedLog, VerifyDataCatchesAFlippedHeaderPadding) {
  flip_byte(dat(), 30);  // unused header bytes: no record covers them, the file CRC does
  const RecordLogReader r = open();
  EXPECT_EQ(record_string(r, 1), "bravo-bravo");
  expect_error([&] { r.verify_data(); }, "t.dat");
}

TEST_F(DamagedLog, FlippedIndexByteFailsOpen) {
  flip_byte(idx(), 32 + 16 + 12);  // the CRC field of record 1
  expect_error([&] { open(); }, "damaged");
  expect_error([&] { open(); }, "t.idx");
}

TEST_F(DamagedLog, TruncatedDataFailsOpen) {
  fs::resize_file(dat(), state_.data_bytes - 1);
  expect_error([&] { open(); }, "truncated");
}

TEST_F(DamagedLog, TruncatedIndexFailsOpen) {
  fs::resize_file(idx(), state_.index_bytes - 16);
  expect_error([&] { open(); }, "truncated");
}

TEST_F(DamagedLog, FileShorterThanHeaderFailsOpen) {
  fs::resize_file(dat(), 10);
  expect_error([&] { open(); }, "too short");
}

TEST_F(DamagedLog, BadMagicFailsOpen) {
  flip_byte(dat(), 0);
  expect_error([&] { open(); }, "bad magic");
}

TEST_F(DamagedLog, OtherVersionFailsOpen) {
  write_u32_at(dat(), 8, 2);
  expect_error([&] { open(); }, "version 2");
}

TEST_F(DamagedLog, WrongKindOrParameterFailsOpen) {
  expect_error([&] { RecordLogReader(dir_, "t", "TOKS", 5, state_); }, "another kind");
  expect_error([&] { RecordLogReader(dir_, "t", "TEST", 6, state_); }, "parameter 5");
}

TEST_F(DamagedLog, SwappedFilesFailOpen) {
  // the .idx header differs from the .dat header only in its role field
  fs::copy_file(idx(), dat(), fs::copy_options::overwrite_existing);
  expect_error([&] { open(); }, "another kind");
}

TEST_F(DamagedLog, MissingFileFailsOpen) {
  fs::remove(idx());
  expect_error([&] { open(); }, "t.idx");
}

}  // namespace
}  // namespace sieve::index
