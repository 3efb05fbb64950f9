// Corpus store: the record layout written out by hand, round trips, damaged records, and lookup by
// internal and external id over a real log.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "index/corpus_store.h"
#include "index/record_log.h"
#include "sieve/error.h"
#include "support/test_util.h"

namespace sieve::index {
namespace {

Document decode(const std::string& bytes) {
  return decode_document(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

void expect_doc(const Document& d, const std::string& id, const std::string& title, const std::string& text) {
  EXPECT_EQ(d.id, id);
  EXPECT_EQ(d.title, title);
  EXPECT_EQ(d.text, text);
}

TEST(CorpusRecord, LayoutIsThreeLengthsThenBytes) {
  // {u32 id_len, u32 title_len, u32 text_len} little-endian, then id, title, text
  const std::string want("\x02\0\0\0\x01\0\0\0\x03\0\0\0" "abTxyz", 18);
  EXPECT_EQ(encode_document({"ab", "T", "xyz"}), want);
}

TEST(CorpusRecord, RoundTrips) {
  const std::vector<Document> docs = {
      {"d1", "", "no title"},
      {"", "", ""},
      {"id\twith tab", std::string("Ti\0tle", 6), "caf\xC3\xA9 \xF0\x9F\x98\x80 \x7F"},
      {std::string("a\0b", 3), std::string(70000, 'T'), std::string(1, '\0')},
  };
  for (const auto& d : docs) {
    const Document back = decode(encode_document(d));
    expect_doc(back, d.id, d.title, d.text);
  }
}

TEST(CorpusRecord, DamagedRecordsThrow) {
  const std::string good = encode_document({"id", "title", "text"});
  ASSERT_EQ(good.size(), 12u + 2 + 5 + 4);
  EXPECT_THROW(decode(good.substr(0, good.size() - 1)), sieve::Error);  // truncated text
  EXPECT_THROW(decode(good + "x"), sieve::Error);                       // trailing byte
  EXPECT_THROW(decode(good.substr(0, 11)), sieve::Error);               // shorter than the lengths
  EXPECT_THROW(decode(""), sieve::Error);
  std::string bad = good;
  bad[4] = 6;  // title length 6 instead of 5: the lengths no longer add up
  EXPECT_THROW(decode(bad), sieve::Error);
  // lengths {0xFFFFFFFF, 8, 4} add up to 11 = 23 - 12 bytes only in 32-bit arithmetic
  bad = std::string("\xFF\xFF\xFF\xFF\x08\0\0\0\x04\0\0\0", 12) + "idtitletext";
  ASSERT_EQ(bad.size(), good.size());
  EXPECT_THROW(decode(bad), sieve::Error);
}

class CorpusStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = sieve::test::make_temp_dir("store");
    auto w = RecordLogWriter::create(dir_, "corpus", "CORP", 0);
    for (const Document& d : std::vector<Document>{{"d1", "One", "first"}, {"d2", "", "second"}, {"x-3", "Three", ""}}) {
      const std::string rec = encode_document(d);
      w.append(rec.data(), rec.size());
    }
    state_ = w.sync();
  }
  std::string dir_;
  LogState state_;
};

TEST_F(CorpusStoreTest, GetAndFind) {
  const CorpusStore store(dir_, state_);
  ASSERT_EQ(store.size(), 3u);
  expect_doc(store.get(0), "d1", "One", "first");
  expect_doc(store.get(1), "d2", "", "second");
  expect_doc(store.get(2), "x-3", "Three", "");
  EXPECT_EQ(store.find("d1"), 0);
  EXPECT_EQ(store.find("d2"), 1);
  EXPECT_EQ(store.find("x-3"), 2);
  EXPECT_EQ(store.find("d3"), -1);
  EXPECT_EQ(store.find(""), -1);
  EXPECT_EQ(store.find("D1"), -1);
  EXPECT_THROW(store.get(3), sieve::Error);
  store.verify();
}

TEST_F(CorpusStoreTest, RefusesALogOfAnotherKind) {
  const std::string other = sieve::test::make_temp_dir("store");
  auto w = RecordLogWriter::create(other, "corpus", "TOKS", 0);
  const LogState s = w.sync();
  EXPECT_THROW(CorpusStore(other, s), sieve::Error);
}

}  // namespace
}  // namespace sieve::index
