// BEIR queries/qrels readers and TREC run files: tiny hand-written files, every error case (the
// message must name the file and line), and public facts about the real SciFact and Cranfield data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <string>

#include "eval/beir.h"
#include "eval/metrics.h"
#include "sieve/error.h"
#include "support/test_util.h"

namespace sieve::eval {
namespace {

std::string write_text(const std::string& name, const std::string& content) {
  static const std::string dir = sieve::test::make_temp_dir("eval");
  const std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

// Expects `fn` to throw sieve::Error whose message has "<path>:<line>:" and `needle`.
void expect_error_at(const std::function<void()>& fn, const std::string& path, size_t line,
                     const std::string& needle = "") {
  try {
    fn();
    ADD_FAILURE() << "no sieve::Error for " << path;
  } catch (const sieve::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path + ":" + std::to_string(line) + ":"), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

TEST(ReadQueries, JsonLinesIgnoreExtraFieldsAndBlankLines) {
  const auto path = write_text("q.jsonl",
                               "{\"_id\": \"q1\", \"text\": \"what is \\\"x\\\"?\", \"metadata\": {}}\n"
                               "\n"
                               "{\"text\": \"second\", \"_id\": \"7\"}\r\n");
  const auto q = read_queries(path);
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].id, "q1");
  EXPECT_EQ(q[0].text, "what is \"x\"?");
  EXPECT_EQ(q[1].id, "7");
  EXPECT_EQ(q[1].text, "second");
}

TEST(ReadQueries, TsvWithAndWithoutHeader) {
  for (const std::string header : {"query-id\ttext\n", "_id\ttext\n", "id\ttext\n", ""}) {
    const auto path = write_text("q.tsv", header + "a\tfirst query\textra column\nb\tsecond\r\n");
    const auto q = read_queries(path);
    ASSERT_EQ(q.size(), 2u) << header;
    EXPECT_EQ(q[0].id, "a");
    EXPECT_EQ(q[0].text, "first query");
    EXPECT_EQ(q[1].id, "b");
    EXPECT_EQ(q[1].text, "second");
  }
}

// A UTF-8 byte order mark (Windows editors write one) is not part of the first id or header.
TEST(ReadQueries, ByteOrderMarkIsSkippedInEveryLayout) {
  const std::string bom = "\xEF\xBB\xBF";
  auto j = read_queries(write_text("q.jsonl", bom + "{\"_id\": \"q1\", \"text\": \"who\"}\n"));
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0].id, "q1");
  auto t = read_queries(write_text("q.tsv", bom + "query-id\ttext\nq1\twho\n"));
  ASSERT_EQ(t.size(), 1u);  // the header is recognised, not read as a query
  EXPECT_EQ(t[0].id, "q1");
  auto p = read_queries(write_text("q.txt", bom + "who bit the man\n"));
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].text, "who bit the man");
  auto r = read_qrels(write_text("r.tsv", bom + "query-id\tcorpus-id\tscore\nq1\td1\t1\n"));
  EXPECT_EQ(r.at("q1").at("d1"), 1);
}

TEST(ReadQueries, PlainTextNumbersQueriesFromOne) {
  const auto path = write_text("q.txt", "first\n\nsecond line\nthird");
  const auto q = read_queries(path);
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(q[0].id, "1");
  EXPECT_EQ(q[1].id, "2");
  EXPECT_EQ(q[1].text, "second line");
  EXPECT_EQ(q[2].id, "3");
  EXPECT_EQ(q[2].text, "third");
}

TEST(ReadQueries, JsonErrorsNameFileAndLine) {
  const std::string ok = "{\"_id\": \"a\", \"text\": \"t\"}\n\n";  // the bad line is line 3
  struct Case {
    std::string line, needle;
  };
  for (const Case& c : std::vector<Case>{{"{\"_id\": \"b\", \"text\": ", "invalid JSON"},
                                         {"[\"b\", \"t\"]", "object"},
                                         {"{\"text\": \"t\"}", "missing \"_id\""},
                                         {"{\"_id\": \"b\"}", "missing \"text\""},
                                         {"{\"_id\": 5, \"text\": \"t\"}", "\"_id\" must be a string"},
                                         {"{\"_id\": \"b\", \"text\": null}", "\"text\" must be a string"},
                                         {"{\"_id\": \"\", \"text\": \"t\"}", "empty"},
                                         {"{\"_id\": \"a\", \"text\": \"again\"}", "duplicate"}}) {
    const auto path = write_text("bad.jsonl", ok + c.line + "\n");
    expect_error_at([&] { read_queries(path); }, path, 3, c.needle);
  }
}

TEST(ReadQueries, TsvErrorsNameFileAndLine) {
  auto path = write_text("bad.tsv", "query-id\ttext\na\tx\nno tab here\n");
  expect_error_at([&] { read_queries(path); }, path, 3, "id<TAB>text");
  path = write_text("dup.tsv", "a\tx\nb\ty\na\tz\n");
  expect_error_at([&] { read_queries(path); }, path, 3, "first on line 1");
}

TEST(ReadQueries, MissingFileNamesPath) {
  const std::string path = write_text("x", "") + "_absent.jsonl";
  try {
    read_queries(path);
    ADD_FAILURE() << "no error";
  } catch (const sieve::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(ReadQrels, BeirTsvWithGradedScores) {
  const auto path =
      write_text("qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td 1\t2\nq1\td2\t0\r\n\nq2\td3\t-1\n");
  const Qrels qrels = read_qrels(path);
  ASSERT_EQ(qrels.size(), 2u);
  EXPECT_EQ(qrels.at("q1"), (std::map<std::string, int>{{"d 1", 2}, {"d2", 0}}));  // tab-split ids
  EXPECT_EQ(qrels.at("q2").at("d3"), -1);
}

TEST(ReadQrels, TrecFourColumns) {
  const auto path = write_text("qrels.trec", "401 0 FBIS3-1 1\n401  0\tFBIS3-2   0\n402 Q0 LA-7 3\n");
  const Qrels qrels = read_qrels(path);
  EXPECT_EQ(qrels.at("401"), (std::map<std::string, int>{{"FBIS3-1", 1}, {"FBIS3-2", 0}}));
  EXPECT_EQ(qrels.at("402").at("LA-7"), 3);
}

TEST(ReadQrels, ErrorsNameFileAndLine) {
  const std::string header = "query-id\tcorpus-id\tscore\nq\td\t1\n";  // the bad line is line 3
  for (const std::string bad :
       {"q\td2\n", "q\td2\t1\textra\n", "q\td2\thigh\n", "q\td2\t1.5\n", "\td2\t1\n", "q\td\t0\n"}) {
    const auto path = write_text("bad_qrels.tsv", header + bad);
    expect_error_at([&] { read_qrels(path); }, path, 3);
  }
  auto path = write_text("bad_qrels.tsv", header + "q\td\t0\n");
  expect_error_at([&] { read_qrels(path); }, path, 3, "twice");
  // Three columns and no header: neither BEIR nor TREC.
  path = write_text("bad.trec", "1 0 d1 1\n1 d2 1\n");
  expect_error_at([&] { read_qrels(path); }, path, 2, "4 TREC columns");
  path = write_text("bad.trec", "1 0 d1 x\n");
  expect_error_at([&] { read_qrels(path); }, path, 1, "not an integer");
}

TEST(TrecRun, WritesSixColumnsWithRanksFromOne) {
  std::ostringstream out;
  write_trec_run(out, "q1", {{"d7", 2.5}, {"d3", -0.125}}, "sieve");
  EXPECT_EQ(out.str(), "q1 Q0 d7 1 2.5 sieve\nq1 Q0 d3 2 -0.125 sieve\n");
  std::ostringstream none;
  write_trec_run(none, "q1", {}, "sieve");
  EXPECT_EQ(none.str(), "");
}

TEST(TrecRun, WriteRejectsUnreadableTokens) {
  std::ostringstream out;
  EXPECT_THROW(write_trec_run(out, "", {{"d", 1.0}}, "run"), sieve::Error);
  EXPECT_THROW(write_trec_run(out, "q1", {{"", 1.0}}, "run"), sieve::Error);
  EXPECT_THROW(write_trec_run(out, "q1", {{"d", 1.0}}, ""), sieve::Error);
  EXPECT_THROW(write_trec_run(out, "q1", {{"d", 1.0}}, "my run"), sieve::Error);
  EXPECT_THROW(write_trec_run(out, "q1", {{"d", std::nan("")}}, "run"), sieve::Error);
  EXPECT_THROW(write_trec_run(out, "q1", {{"d", std::numeric_limits<double>::infinity()}}, "run"),
               sieve::Error);
}

// Ids with whitespace (BEIR's Wikipedia titles) are percent-escaped as documented, written so that
// trec_eval sees one column, and read back as they were; other ids are written unchanged.
TEST(TrecRun, IdsWithWhitespaceAreEscapedAndReadBack) {
  EXPECT_EQ(trec_escape_id("Barack Obama"), "Barack%20Obama");
  EXPECT_EQ(trec_escape_id("a\tb%c"), "a%09b%25c");
  EXPECT_EQ(trec_escape_id("50%_off"), "50%_off");  // no whitespace: unchanged, '%' too
  EXPECT_EQ(trec_unescape_id("Barack%20Obama"), "Barack Obama");
  EXPECT_EQ(trec_unescape_id("a%09b%25c"), "a\tb%c");
  EXPECT_EQ(trec_unescape_id("50%25_off"), "50%25_off");  // no whitespace escape: taken as written
  std::ostringstream run;
  write_trec_run(run, "who is Barack Obama", {{"Barack Obama", 2.0}, {"Michelle_Obama", 1.0}}, "r");
  EXPECT_EQ(run.str(), "who%20is%20Barack%20Obama Q0 Barack%20Obama 1 2 r\n"
                       "who%20is%20Barack%20Obama Q0 Michelle_Obama 2 1 r\n");
  const eval::Run back = read_trec_run(write_text("spaces.trec", run.str()));
  ASSERT_EQ(back.count("who is Barack Obama"), 1u);
  EXPECT_EQ(back.at("who is Barack Obama")[0].doc_id, "Barack Obama");
  std::ostringstream qrels;
  write_trec_qrels(qrels, {{"who is Barack Obama", {{"Barack Obama", 1}}}});
  EXPECT_EQ(qrels.str(), "who%20is%20Barack%20Obama 0 Barack%20Obama 1\n");
  const Qrels q = read_qrels(write_text("spaces.qrels", qrels.str()));
  EXPECT_EQ(q.at("who is Barack Obama").at("Barack Obama"), 1);
  // And the two files agree under the evaluation (nDCG 1: the relevant doc is first).
  EXPECT_DOUBLE_EQ(evaluate_run(back, q, {10}).mean.at("ndcg@10"), 1.0);
}

// Queries on stdin (or a file with no telling extension) are told apart by content.
TEST(Queries, StreamsAreReadByTheirContent) {
  auto read = [](const std::string& text, QueriesLayout want) {
    std::istringstream in(text);
    QueriesLayout got = QueriesLayout::Text;
    auto q = read_queries(in, "stdin", &got);
    EXPECT_EQ(static_cast<int>(got), static_cast<int>(want)) << text;
    return q;
  };
  auto j = read("\xEF\xBB\xBF\n{\"_id\": \"q7\", \"text\": \"who bit the man\"}\n{\"_id\": \"q9\", \"text\": \"b\"}\n", QueriesLayout::Jsonl);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0].id, "q7");
  EXPECT_EQ(j[0].text, "who bit the man");
  auto t = read("query-id\ttext\nq1\twho\n", QueriesLayout::Tsv);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].id, "q1");
  auto p = read("who bit the man\nthe dog\n", QueriesLayout::Text);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].id, "2");
  std::istringstream bad("{\"_id\": \"q1\"}\n");
  EXPECT_THROW(read_queries(bad, "stdin"), sieve::Error);
  // A file named without .jsonl/.tsv/.txt is sniffed the same way.
  EXPECT_EQ(read_queries(write_text("queries.json", "{\"_id\": \"a\", \"text\": \"x\"}\n"))[0].id, "a");
  EXPECT_EQ(read_queries(write_text("queries.txt", "{\"_id\": \"a\", \"text\": \"x\"}\n"))[0].id, "1");
}

TEST(TrecRun, RoundTripAndSortByRankColumn) {
  std::ostringstream out;
  // Scores survive the text form bit for bit.
  write_trec_run(out, "q1", {{"a", 0.1}, {"b", 1.0 / 3.0}, {"c", static_cast<double>(-1e-7f)}}, "r");
  write_trec_run(out, "q2", {{"z", 12.0}}, "r");
  // Lines out of order, ties at rank 2 kept in file order, extra whitespace tolerated.
  const auto path = write_text(
      "run.trec", out.str() + "q3 Q0 y 3 0.1 r\nq3 Q0 x 1 0.9 r\n\nq3\tQ0  w 2 0.5 r\nq3 Q0 v 2 0.5 r\n");
  const eval::Run run = read_trec_run(path);
  ASSERT_EQ(run.size(), 3u);
  ASSERT_EQ(run.at("q1").size(), 3u);
  EXPECT_EQ(run.at("q1")[0].doc_id, "a");
  EXPECT_EQ(run.at("q1")[0].score, 0.1);
  EXPECT_EQ(run.at("q1")[1].score, 1.0 / 3.0);
  EXPECT_EQ(run.at("q1")[2].score, static_cast<double>(-1e-7f));
  EXPECT_EQ(run.at("q2")[0].doc_id, "z");
  std::vector<std::string> q3;
  for (const auto& e : run.at("q3")) q3.push_back(e.doc_id);
  EXPECT_EQ(q3, (std::vector<std::string>{"x", "w", "v", "y"}));
}

TEST(TrecRun, ReadErrorsNameFileAndLine) {
  const std::string ok = "q Q0 d 1 1.0 r\n";
  for (const std::string bad : {"q Q0 d2 2 1.0\n", "q Q0 d2 2 1.0 r extra\n", "q Q0 d2 two 1.0 r\n",
                                "q Q0 d2 2 high r\n", "q Q0 d2 2.5 1.0 r\n"}) {
    const auto path = write_text("bad.run", ok + bad);
    expect_error_at([&] { read_trec_run(path); }, path, 2);
  }
}

// eval::Run is spelled out inside TEST bodies: a bare Run names testing::Test::Run there.
// Public facts about the shared data (../shared/data/README.md, recounted with wc -l and python).
TEST(RealData, SciFact) {
  const std::string queries_path = sieve::test::shared_data("retrieval/scifact/queries.jsonl");
  const std::string qrels_path = sieve::test::shared_data("retrieval/scifact/qrels/test.tsv");
  if (queries_path.empty() || qrels_path.empty())
    GTEST_SKIP() << "../shared/data/retrieval/scifact is absent";
  const auto queries = read_queries(queries_path);
  EXPECT_EQ(queries.size(), 1409u);  // train and test claims together
  EXPECT_EQ(queries[0].id, "0");
  EXPECT_EQ(queries[0].text, "0-dimensional biomaterials lack inductive properties.");

  const Qrels qrels = read_qrels(qrels_path);
  EXPECT_EQ(qrels.size(), 300u);  // 300 test queries
  std::set<std::string> ids;
  for (const auto& q : queries) ids.insert(q.id);
  size_t pairs = 0;
  eval::Run oracle;
  for (const auto& [qid, rels] : qrels) {
    EXPECT_TRUE(ids.count(qid)) << qid;
    pairs += rels.size();
    for (const auto& [doc, rel] : rels) {
      EXPECT_EQ(rel, 1);  // SciFact judgements are binary
      oracle[qid].push_back({doc, 1.0});
    }
  }
  EXPECT_EQ(pairs, 339u);  // 339 qrel lines
  // Returning exactly the judged docs is a perfect run.
  const Metrics m = evaluate(oracle, qrels);
  EXPECT_EQ(m.queries, 300u);
  EXPECT_DOUBLE_EQ(m.ndcg10, 1.0);
  EXPECT_DOUBLE_EQ(m.recall100, 1.0);
  EXPECT_DOUBLE_EQ(m.mrr10, 1.0);
  EXPECT_DOUBLE_EQ(m.map100, 1.0);
}

TEST(RealData, CranfieldGradedQrels) {
  const std::string queries_path = sieve::test::shared_data("retrieval/cranfield/queries.jsonl");
  const std::string qrels_path = sieve::test::shared_data("retrieval/cranfield/qrels/test.tsv");
  if (queries_path.empty() || qrels_path.empty())
    GTEST_SKIP() << "../shared/data/retrieval/cranfield is absent";
  EXPECT_EQ(read_queries(queries_path).size(), 225u);
  const Qrels qrels = read_qrels(qrels_path);
  EXPECT_EQ(qrels.size(), 225u);
  std::map<int, size_t> by_grade;
  eval::Run best_first, worst_first;
  for (const auto& [qid, rels] : qrels) {
    for (const auto& [doc, rel] : rels) {
      ++by_grade[rel];
      best_first[qid].push_back({doc, static_cast<double>(rel)});
    }
    auto& b = best_first[qid];
    std::stable_sort(b.begin(), b.end(), [](const auto& x, const auto& y) { return x.score > y.score; });
    worst_first[qid].assign(b.rbegin(), b.rend());
  }
  // 1,612 judgements graded 1..4 (4 = most relevant), counted with python.
  EXPECT_EQ(by_grade, (std::map<int, size_t>{{1, 363}, {2, 734}, {3, 387}, {4, 128}}));
  // Sorting by grade is the ideal ranking; reversing it keeps recall but loses nDCG.
  const Metrics best = evaluate(best_first, qrels), worst = evaluate(worst_first, qrels);
  EXPECT_EQ(best.queries, 225u);
  EXPECT_NEAR(best.ndcg10, 1.0, 1e-12);
  EXPECT_LT(worst.ndcg10, 0.99);
  EXPECT_DOUBLE_EQ(worst.recall100, best.recall100);
}

}  // namespace
}  // namespace sieve::eval
