// Sentence-pair files: TSV and CSV with headers, column aliases, quoting, errors with line numbers.
#include <gtest/gtest.h>

#include <fstream>

#include "eval/pairs.h"
#include "sieve/error.h"
#include "support/test_util.h"

namespace sieve::eval {
namespace {

std::string write(const std::string& name, const std::string& content) {
  std::string path = test::make_temp_dir("pairs") + "/" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

TEST(Pairs, TsvWithAliasesAndExtraColumns) {
  auto p = read_pairs(write("p.tsv", "score\tpremise\thypothesis\n4.5\tA man runs.\tA person runs.\n\n0\tx\ty\r\n"));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].sentence1, "A man runs.");
  EXPECT_EQ(p[0].sentence2, "A person runs.");
  EXPECT_EQ(p[0].label, "4.5");
  EXPECT_EQ(p[1].sentence2, "y");
  EXPECT_EQ(p[1].category, "");
}

TEST(Pairs, CsvQuoting) {
  auto p = read_pairs(write("p.csv", "sentence1,sentence2,category\n\"a, b\",\"he said \"\"no\"\"\",negation\nplain,text,\n"));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].sentence1, "a, b");
  EXPECT_EQ(p[0].sentence2, "he said \"no\"");
  EXPECT_EQ(p[0].category, "negation");
  EXPECT_EQ(p[1].sentence1, "plain");
  EXPECT_EQ(split_csv_line("x,,\"\""), (std::vector<std::string>{"x", "", ""}));
}

// TSV written by Python's csv writer (quoting=QUOTE_MINIMAL, delimiter tab): a field holding a
// quote is quoted and its quotes doubled; the reader gives the text Python's csv reader gives.
TEST(Pairs, TsvFieldsQuotedByPythonsCsvWriter) {
  auto p = read_pairs(write("q.tsv", "sentence1\tsentence2\tcategory\n"
                                     "\"A sign reads \"\"Pub\"\".\"\tA sign says pub.\tparaphrase\n"
                                     "\"Hello,\" he said\t\"\"\"Yes\"\"\"\tx\n"));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].sentence1, "A sign reads \"Pub\".");
  EXPECT_EQ(p[0].sentence2, "A sign says pub.");
  EXPECT_EQ(p[1].sentence1, "\"Hello,\" he said");  // quoted at the start only: not csv quoting, kept
  EXPECT_EQ(p[1].sentence2, "\"Yes\"");
  std::string lone = "\"a\"b\"";  // a lone quote inside: not csv quoting, kept
  unquote_tsv_field(lone);
  EXPECT_EQ(lone, "\"a\"b\"");
}

TEST(Pairs, JsonLinesWithAliases) {
  // The corpus's pairs.jsonl (anchor/positive), a triplet row (its negative is sentence2), numbers
  // as labels, a blank line and a BOM.
  auto p = read_pairs(write("p.jsonl",
                            "\xEF\xBB\xBF{\"anchor\":\"a dog\",\"positive\":\"a hound\",\"category\":\"synonym\"}\n\n"
                            "{\"anchor\":\"x\",\"positive\":\"x\",\"negative\":\"not x\"}\n"
                            "{\"sentence1\":\"s\",\"sentence2\":\"t\",\"label\":1}\r\n"));
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].sentence1, "a dog");
  EXPECT_EQ(p[0].sentence2, "a hound");
  EXPECT_EQ(p[0].category, "synonym");
  EXPECT_EQ(p[1].sentence2, "not x");
  EXPECT_EQ(p[2].label, "1");
  test::expect_error([] { read_pairs(write("p.jsonl", "{\"anchor\":\"a\"}\n")); }, ":1: needs a sentence1 and a sentence2");
  test::expect_error([] { read_pairs(write("p.jsonl", "\n[1, 2]\n")); }, ":2: not a JSON object");
  test::expect_error([] { read_pairs(write("p.jsonl", "{\"anchor\": \n")); }, ":1: not a JSON object");
}

TEST(Pairs, Errors) {
  test::expect_error([] { read_pairs(write("p.tsv", "a\tb\nx\ty\n")); }, ":1: the header needs a sentence1");
  test::expect_error([] { read_pairs(write("p.tsv", "sentence1\tsentence2\nonly one\n")); }, ":2: 1 field(s)");
  test::expect_error([] { read_pairs(write("p.csv", "sentence1,sentence2\n\"open,x\n")); }, ":2: unterminated quoted field");
  test::expect_error([] { read_pairs(write("p.tsv", "")); }, "a header row is required");
  test::expect_error([] { read_pairs("/nonexistent/p.tsv"); }, "cannot open");
}

TEST(Pairs, SharedNearMissFile) {
  std::string path = test::shared_data("nearmiss/sugarcrepe.tsv");
  if (path.empty()) GTEST_SKIP() << "../shared/data/nearmiss is absent";
  auto p = read_pairs(path);
  EXPECT_EQ(p.size(), 7511u);  // the README's count
  EXPECT_FALSE(p[0].category.empty());
}

}  // namespace
}  // namespace sieve::eval
