// Corpus reader: the three formats on tiny hand-written files, every error case (the message must
// name the file and the line), counting, a 1 MB document, and public facts about the shared data.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "index/corpus_reader.h"
#include "sieve/error.h"
#include "support/test_util.h"

namespace sieve::index {
namespace {

std::string write_text(const std::string& name, const std::string& content) {
  const std::string path = sieve::test::make_temp_dir("corpus") + "/" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

std::vector<Document> read_all(const std::string& path, CorpusFormat format = CorpusFormat::Auto) {
  CorpusReader r(path, format);
  std::vector<Document> docs;
  Document d;
  while (r.next(d)) docs.push_back(d);
  return docs;
}

// Expects reading all of `path` to throw sieve::Error with "<path>:<line>:" and `needle`.
void expect_error_at(const std::string& path, size_t line, const std::string& needle) {
  try {
    read_all(path);
    ADD_FAILURE() << "no sieve::Error for " << path;
  } catch (const sieve::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path + ":" + std::to_string(line) + ": "), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

void expect_doc(const Document& d, const std::string& id, const std::string& title, const std::string& text) {
  EXPECT_EQ(d.id, id);
  EXPECT_EQ(d.title, title);
  EXPECT_EQ(d.text, text);
}

TEST(CorpusReader, ResolvesFormatByExtension) {
  EXPECT_EQ(CorpusReader::resolve("a/corpus.jsonl", CorpusFormat::Auto), CorpusFormat::Jsonl);
  EXPECT_EQ(CorpusReader::resolve("corpus.json", CorpusFormat::Auto), CorpusFormat::Jsonl);
  EXPECT_EQ(CorpusReader::resolve("collection.tsv", CorpusFormat::Auto), CorpusFormat::Tsv);
  EXPECT_EQ(CorpusReader::resolve("lines.txt", CorpusFormat::Auto), CorpusFormat::Text);
  EXPECT_EQ(CorpusReader::resolve("corpus.jsonl", CorpusFormat::Text), CorpusFormat::Text);
}

TEST(CorpusReader, BeirJsonl) {
  const auto path = write_text("corpus.jsonl",
                               "{\"_id\": \"d1\", \"title\": \"Café\", \"text\": \"naïve — 東京 😀\"}\n"
                               "\n"
                               "{\"_id\": \"d2\", \"text\": \"no title\"}\r\n"
                               "{\"_id\": 42, \"title\": null, \"text\": \"numeric id\"}\n"
                               "{\"text\": \"escaped \\u00e9 \\\"q\\\"\", \"_id\": \"d4\", \"metadata\": {\"b\": 1, \"a\": [\"x\"]}}");
  EXPECT_EQ(CorpusReader(path).format(), CorpusFormat::Jsonl);
  const auto docs = read_all(path);
  ASSERT_EQ(docs.size(), 4u);
  expect_doc(docs[0], "d1", "Caf\xC3\xA9", "na\xC3\xAFve \xE2\x80\x94 \xE6\x9D\xB1\xE4\xBA\xAC \xF0\x9F\x98\x80");
  expect_doc(docs[1], "d2", "", "no title");
  expect_doc(docs[2], "42", "", "numeric id");
  expect_doc(docs[3], "d4", "", "escaped \xC3\xA9 \"q\"");
  EXPECT_EQ(docs[3].metadata, R"({"a":["x"],"b":1})");  // checked and stored compact, keys sorted
  EXPECT_EQ(docs[0].metadata, "");
  EXPECT_EQ(CorpusReader::count(path), 4u);
}

// Metadata that is not a flat object, and an unreadable expiry, are refused naming the line and
// the field; an expiry is read as RFC 3339, seconds, or a TTL from now.
TEST(CorpusReader, MetadataAndExpiryAreChecked) {
  for (const char* bad : {R"({"_id": "x", "text": "t", "metadata": {"a": [1]}})",
                          R"({"_id": "x", "text": "t", "metadata": {"a": {"b": 1}}})",
                          R"({"_id": "x", "text": "t", "metadata": [1]})",
                          R"({"_id": "x", "text": "t", "expires_at": "soon"})",
                          R"({"_id": "x", "text": "t", "ttl_s": "1"})"}) {
    const auto path = write_text("bad.jsonl", std::string(bad) + "\n");
    EXPECT_THROW(read_all(path), sieve::Error) << bad;
  }
  const auto path = write_text("exp.jsonl", R"({"_id": "a", "text": "t", "expires_at": "1970-01-02T00:00:00Z"})" "\n"
                                            R"({"_id": "b", "text": "t", "expires_at": 5})" "\n");
  const auto docs = read_all(path);
  EXPECT_EQ(docs[0].expires_at, 86400.0);
  EXPECT_EQ(docs[1].expires_at, 5.0);
}

TEST(CorpusReader, ExplicitFormatOverridesExtension) {
  const auto path = write_text("corpus.dat", "{\"_id\": \"x\", \"text\": \"t\"}\n");
  const auto docs = read_all(path, CorpusFormat::Jsonl);
  ASSERT_EQ(docs.size(), 1u);
  expect_doc(docs[0], "x", "", "t");
}

TEST(CorpusReader, TsvHeaderInAnyColumnOrder) {
  const auto path = write_text("c.tsv", "id\ttitle\ttext\nd1\tT1\tbody one\n\nd2\t\tbody two\r\n");
  const auto docs = read_all(path);
  ASSERT_EQ(docs.size(), 2u);
  expect_doc(docs[0], "d1", "T1", "body one");
  expect_doc(docs[1], "d2", "", "body two");
  EXPECT_EQ(CorpusReader::count(path), 2u);
}

TEST(CorpusReader, TsvHeaderOtherNames) {
  const auto path = write_text("c.tsv", "DocID\tPassage\n7\tseven\n8\teight\n");
  const auto docs = read_all(path);
  ASSERT_EQ(docs.size(), 2u);
  expect_doc(docs[0], "7", "", "seven");
  expect_doc(docs[1], "8", "", "eight");
  EXPECT_EQ(CorpusReader::count(path), 2u);
}

TEST(CorpusReader, ByteOrderMarkAndBlankLinesBeforeTheHeader) {
  const auto path = write_text("c.tsv", "\xEF\xBB\xBFid\ttitle\ttext\nd1\tT1\tbody one\n");
  const auto docs = read_all(path);
  ASSERT_EQ(docs.size(), 1u);
  expect_doc(docs[0], "d1", "T1", "body one");
  EXPECT_EQ(CorpusReader::count(path), 1u);
  const auto blank_first = write_text("b.tsv", "\n\nid\ttext\ttitle\nd1\tbody\tT\n");
  const auto docs2 = read_all(blank_first);
  ASSERT_EQ(docs2.size(), 1u);
  expect_doc(docs2[0], "d1", "T", "body");
  EXPECT_EQ(CorpusReader::count(blank_first), 1u);
  const auto jsonl = write_text("c.jsonl", "\xEF\xBB\xBF{\"_id\": \"a\", \"text\": \"x\"}\n");
  ASSERT_EQ(read_all(jsonl).size(), 1u);
}

TEST(CorpusReader, TsvWithoutHeaderIsIdTextTitle) {
  const auto path = write_text("c.tsv", "a\tfirst text\tFirst Title\r\nb\tsecond text\n\n\t\nc\t\xC3\xBC\n");
  const auto docs = read_all(path);
  ASSERT_EQ(docs.size(), 3u);
  expect_doc(docs[0], "a", "First Title", "first text");
  expect_doc(docs[1], "b", "", "second text");
  expect_doc(docs[2], "c", "", "\xC3\xBC");
  EXPECT_EQ(CorpusReader::count(path), 3u);
}

TEST(CorpusReader, PlainTextIdsAreLineNumbers) {
  const auto path = write_text("lines.txt", "a\n\nb\n");
  const auto docs = read_all(path);
  ASSERT_EQ(docs.size(), 2u);
  expect_doc(docs[0], "1", "", "a");
  expect_doc(docs[1], "3", "", "b");
  EXPECT_EQ(CorpusReader::count(path), 2u);

  // whitespace-only lines are blank too; CRLF is stripped; a missing final newline is fine
  const auto path2 = write_text("lines.txt", "first line\r\n \t\n\nsecond \xC3\xA9\r\nthird");
  const auto docs2 = read_all(path2);
  ASSERT_EQ(docs2.size(), 3u);
  expect_doc(docs2[0], "1", "", "first line");
  expect_doc(docs2[1], "4", "", "second \xC3\xA9");
  expect_doc(docs2[2], "5", "", "third");
  EXPECT_EQ(CorpusReader::count(path2), 3u);
}

TEST(CorpusReader, JsonlErrorsNameFileAndLine) {
  // each bad line is the 3rd line of its file (after a good line and a blank one)
  const std::string good = "{\"_id\": \"ok\", \"text\": \"fine\"}\n\n";
  const std::pair<std::string, std::string> cases[] = {
      {"{\"_id\": \"x\", \"text\": }", "not a valid JSON line"},
      {"[\"x\", \"y\"]", "expected a JSON object"},
      {"\"just a string\"", "expected a JSON object"},
      {"{\"text\": \"t\"}", "missing field \"_id\""},
      {"{\"_id\": null, \"text\": \"t\"}", "missing field \"_id\""},
      {"{\"_id\": \"x\"}", "missing field \"text\""},
      {"{\"_id\": \"x\", \"text\": 5}", "field \"text\" must be a string"},
      {"{\"_id\": \"x\", \"title\": [\"a\"], \"text\": \"t\"}", "field \"title\" must be a string"},
      {"{\"_id\": 1.5, \"text\": \"t\"}", "field \"_id\" must be a string"},
      {"{\"_id\": \"\", \"text\": \"t\"}", "empty document id"},
      {"{\"_id\": \"  \", \"text\": \"t\"}", "empty document id"},
      {"{\"_id\": \"x\", \"text\": \"bad \xC3\x28 byte\"}", ""},  // the JSON parser or the UTF-8 check
  };
  for (const auto& [line, needle] : cases) {
    SCOPED_TRACE(line);
    expect_error_at(write_text("bad.jsonl", good + line + "\n"), 3, needle);
  }
}

TEST(CorpusReader, DuplicateIdNamesTheFirstLine) {
  const auto path = write_text("dup.jsonl",
                               "{\"_id\": \"d1\", \"text\": \"a\"}\n"
                               "{\"_id\": \"d2\", \"text\": \"b\"}\n"
                               "\n"
                               "{\"_id\": \"d1\", \"text\": \"c\"}\n");
  expect_error_at(path, 4, "duplicate document id 'd1' (first seen on line 1)");
  // a numeric id collides with the same id written as a string
  const auto path2 = write_text("dup.jsonl", "{\"_id\": \"7\", \"text\": \"a\"}\n{\"_id\": 7, \"text\": \"b\"}\n");
  expect_error_at(path2, 2, "first seen on line 1");
}

TEST(CorpusReader, TsvErrors) {
  expect_error_at(write_text("c.tsv", "a\tx\nlonely\n"), 2, "found 1 field(s)");
  expect_error_at(write_text("c.tsv", "a\tx\nb\tok\nc\tab\xC3\x28" "cd\n"), 3, "invalid UTF-8 in the text");
  expect_error_at(write_text("c.tsv", "a\tx\tT\xFF\n"), 1, "invalid UTF-8 in the title");
  expect_error_at(write_text("c.tsv", "a\tx\n\tempty id\n"), 2, "empty document id");
  expect_error_at(write_text("c.tsv", "id\ttext\na\tx\na\ty\n"), 3, "first seen on line 2");
  // a header naming no text column is refused (column 2 could be the title)
  expect_error_at(write_text("c.tsv", "id\ttitle\nonly-id\tx\n"), 1, "names no text column");
}

TEST(CorpusReader, PlainTextInvalidUtf8) {
  expect_error_at(write_text("c.txt", "fine\n\nbad \xC3\x28 line\n"), 3, "invalid UTF-8 in the text");
}

TEST(CorpusReader, MissingFile) {
  const std::string path = sieve::test::make_temp_dir("corpus") + "/nope.jsonl";
  try {
    CorpusReader r(path);
    ADD_FAILURE() << "no error";
  } catch (const sieve::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_THROW(CorpusReader::count(path), sieve::Error);
}

TEST(CorpusReader, MegabyteDocumentParsesIntact) {
  std::string text;
  for (int i = 0; i < 100'000; ++i) text += "abcdefgh\xC3\xA9";  // 10 bytes, 9 characters
  ASSERT_EQ(text.size(), 1'000'000u);
  const auto path = write_text("big.jsonl", "{\"_id\": \"small\", \"text\": \"s\"}\n{\"_id\": \"big\", \"title\": \"B\", \"text\": \"" +
                                                text + "\"}\n{\"_id\": \"after\", \"text\": \"z\"}\n");
  const auto docs = read_all(path);
  ASSERT_EQ(docs.size(), 3u);
  EXPECT_EQ(docs[1].id, "big");
  EXPECT_EQ(docs[1].title, "B");
  EXPECT_TRUE(docs[1].text == text) << "text of " << docs[1].text.size() << " bytes differs";
  expect_doc(docs[2], "after", "", "z");
}

// Public facts about the shared data (../shared/data/README.md; first lines read with head).
TEST(RealData, SciFactAndCranfieldCorpora) {
  const std::string scifact = sieve::test::shared_data("retrieval/scifact/corpus.jsonl");
  const std::string cranfield = sieve::test::shared_data("retrieval/cranfield/corpus.jsonl");
  if (scifact.empty() || cranfield.empty()) GTEST_SKIP() << "../shared/data/retrieval is absent";
  const auto docs = read_all(scifact);
  EXPECT_EQ(docs.size(), 5183u);
  EXPECT_EQ(CorpusReader::count(scifact), 5183u);
  EXPECT_EQ(docs[0].id, "4983");
  EXPECT_EQ(docs[0].title.rfind("Microstructural development of human newborn cerebral white matter", 0), 0u)
      << docs[0].title;
  EXPECT_EQ(read_all(cranfield).size(), 1400u);
  EXPECT_EQ(CorpusReader::count(cranfield), 1400u);
}

}  // namespace
}  // namespace sieve::index
