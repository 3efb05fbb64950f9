// Training data: CSV/TSV/JSONL readers checked against hand-written rows (quoting, embedded
// newlines, BOM, CRLF, skipped rows, errors naming file and line), BEIR train pairs from a tiny
// hand-made folder and from the real SciFact, and the batch sampler's contract (no repeated text
// in a batch, every row once per epoch, determinism, exact resume).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sieve/error.h"
#include "support/test_util.h"
#include "train/train_data.h"

namespace sieve::train {
namespace {

// Writes `content` byte for byte as `name` in a fresh temp folder and returns its path.
std::string write(const std::string& name, const std::string& content) {
  const std::string path = test::make_temp_dir("train") + "/" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

TrainExample ex(const std::string& a, const std::string& p, std::vector<std::string> negs = {},
                const std::string& category = "") {
  TrainExample e;
  e.anchor = a;
  e.positive = p;
  e.negatives = std::move(negs);
  e.category = category;
  return e;
}

// Compares every field, so a failure says which row and field differ.
void expect_examples(const std::vector<TrainExample>& got, const std::vector<TrainExample>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].anchor, want[i].anchor) << "row " << i;
    EXPECT_EQ(got[i].positive, want[i].positive) << "row " << i;
    EXPECT_EQ(got[i].negatives, want[i].negatives) << "row " << i;
    EXPECT_EQ(got[i].category, want[i].category) << "row " << i;
  }
}

// Expects a sieve::Error whose message contains "<path>:<line>:" and `needle`.
void expect_error_at(const std::function<void()>& fn, const std::string& path, size_t line, const std::string& needle) {
  const std::string msg = test::error_of(fn);
  ASSERT_FALSE(msg.empty()) << "no sieve::Error for " << path;
  EXPECT_NE(msg.find(path + ":" + std::to_string(line) + ":"), std::string::npos) << msg;
  EXPECT_NE(msg.find(needle), std::string::npos) << msg;
}

// --- read_training_file -------------------------------------------------------------------------

TEST(ReadTrainingFile, CsvTripletsWithQuotesAndEmbeddedNewline) {
  const std::string path = write("t.csv",
                                 "Anchor,POSITIVE,negative,Category\n"
                                 "\"the dog, brown\",a brown dog,\"he said \"\"no\"\"\",negation\n"
                                 "\"first line\nsecond line\",p2,n2,\n"
                                 "a3,p3,n3\n");  // no category field: it reads as ""
  size_t skipped = 99;
  const auto rows = read_training_file(path, false, &skipped);
  expect_examples(rows, {ex("the dog, brown", "a brown dog", {"he said \"no\""}, "negation"),
                         ex("first line\nsecond line", "p2", {"n2"}), ex("a3", "p3", {"n3"})});
  EXPECT_EQ(skipped, 0u);
}

TEST(ReadTrainingFile, CsvLineNumbersCountEmbeddedNewlines) {
  // The short row is on physical line 4: the record before it spans lines 2 and 3.
  const std::string path = write("t.csv", "anchor,positive,negative\n\"a\nb\",p,n\nonly,two\n");
  expect_error_at([&] { read_training_file(path); }, path, 4, "2 field(s), the header has 3");
  const std::string open = write("u.csv", "anchor,positive,negative\na,p,n\n\"never closed,p,n\nx,y,z\n");
  expect_error_at([&] { read_training_file(open); }, open, 3, "unterminated quoted field");
}

TEST(ReadTrainingFile, TripletColumnsWinOverPairColumns) {
  const std::string path = write("t.tsv",
                                 "sentence1\tsentence2\tanchor\tpositive\tnegative\n"
                                 "s1\ts2\ta\tp\tn\n");
  expect_examples(read_training_file(path), {ex("a", "p", {"n"})});
  // identity only rewrites pairs; triplets stay as they are.
  expect_examples(read_training_file(path, true), {ex("a", "p", {"n"})});
}

TEST(ReadTrainingFile, TsvPairsPlainAndIdentity) {
  const std::string path = write("p.tsv",
                                 "category\tOriginal\tnear_miss\n"
                                 "negation\tThe door is open.\tThe door is not open.\n"
                                 "\n"
                                 "spatial\tA cat on a mat.\tA mat on a cat.\n");
  expect_examples(read_training_file(path, false),
                  {ex("The door is open.", "The door is not open.", {}, "negation"),
                   ex("A cat on a mat.", "A mat on a cat.", {}, "spatial")});
  // The paper's Model B rows: anchor = positive = original, negative = the near-miss.
  expect_examples(read_training_file(path, true),
                  {ex("The door is open.", "The door is open.", {"The door is not open."}, "negation"),
                   ex("A cat on a mat.", "A cat on a mat.", {"A mat on a cat."}, "spatial")});
  // The other aliases of eval::read_pairs.
  for (const std::string header : {"sentence1\tsentence2", "premise\thypothesis", "query\tcandidate", "text1\ttext2"}) {
    expect_examples(read_training_file(write("q.tsv", header + "\nx\ty\n")), {ex("x", "y")});
  }
}

TEST(ReadTrainingFile, TsvFieldsQuotedAsPythonsCsvWritesThem) {
  // As in ../shared/data/nearmiss/sugarcrepe.tsv; a field with a lone quote inside is plain text.
  const std::string path = write("p.tsv",
                                 "original\tnear_miss\n"
                                 "\"A sign reads \"\"Pub\"\".\"\tA sign.\n"
                                 "\"Hi\" she said \"bye\"\t\"\"\"quoted\"\"\"\n");
  expect_examples(read_training_file(path), {ex("A sign reads \"Pub\".", "A sign."),
                                             ex("\"Hi\" she said \"bye\"", "\"quoted\"")});
}

TEST(ReadTrainingFile, BlankRequiredFieldsAreSkippedAndCounted) {
  const std::string path = write("t.csv",
                                 "anchor,positive,negative,category\n"
                                 "a1,p1,n1,c\n"
                                 ",p2,n2,c\n"       // empty anchor
                                 "a3,   ,n3,c\n"    // whitespace-only positive
                                 "a4,p4,,c\n"       // empty negative
                                 "a5,p5,n5,\n");    // empty category is optional
  size_t skipped = 0;
  expect_examples(read_training_file(path, false, &skipped), {ex("a1", "p1", {"n1"}, "c"), ex("a5", "p5", {"n5"})});
  EXPECT_EQ(skipped, 3u);
  // The identity rewrite needs both sentences too.
  const std::string pairs = write("p.tsv", "sentence1\tsentence2\nx\t\n\ty\nx\ty\n");
  expect_examples(read_training_file(pairs, true, &skipped), {ex("x", "x", {"y"})});
  EXPECT_EQ(skipped, 2u);
}

TEST(ReadTrainingFile, SeveralNegativeColumns) {
  const std::string path = write("t.csv", "anchor,positive,negative,negative_2,negative3\na,p,n1,n2,n3\n");
  expect_examples(read_training_file(path), {ex("a", "p", {"n1", "n2", "n3"})});
}

TEST(ReadTrainingFile, BomAndCrlfReadAsPlainFiles) {
  const std::vector<TrainExample> want = {ex("a 1", "p, 1", {"n\n1"}), ex("a2", "p2", {"n2"})};
  const std::string body = "anchor,positive,negative\n\"a 1\",\"p, 1\",\"n\n1\"\na2,p2,n2\n";
  std::string crlf;
  for (char c : body) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  expect_examples(read_training_file(write("t.csv", body)), want);
  expect_examples(read_training_file(write("t.csv", "\xEF\xBB\xBF" + crlf)), want);  // CRLF inside quotes too
  // A CRLF TSV with a BOM: the first column name is still found and no field keeps a '\r'.
  expect_examples(read_training_file(write("p.tsv", "\xEF\xBB\xBFsentence1\tsentence2\r\nx\ty\r\n")), {ex("x", "y")});
  expect_examples(read_training_file(write("j.jsonl", "\xEF\xBB\xBF{\"sentence1\": \"x\", \"sentence2\": \"y\"}\r\n")),
                  {ex("x", "y")});
}

TEST(ReadTrainingFile, HeaderErrorsNameTheFile) {
  const std::string path = write("bad.csv", "anchor,negative\na,n\n");  // no positive, no pair columns
  expect_error_at([&] { read_training_file(path); }, path, 1, "the header needs the columns anchor, positive");
  // (anchor, positive) alone is a pair, as sentence-transformers' datasets name them.
  expect_examples(read_training_file(write("ap.csv", "anchor,positive\na,p\n")), {ex("a", "p")});
  const std::string blank_first = write("bad.tsv", "\n\nfoo\tbar\n");
  expect_error_at([&] { read_training_file(blank_first); }, blank_first, 3, "'foo', 'bar'");
  const std::string empty = write("empty.tsv", "");
  test::expect_error([&] { read_training_file(empty); }, empty + ": empty file");
  test::expect_error([&] { read_training_file("/nonexistent/train.csv"); }, "'/nonexistent/train.csv' does not exist");
}

TEST(ReadTrainingFile, JsonLines) {
  const std::string path = write("t.jsonl",
                                 "{\"anchor\": \"a1\", \"positive\": \"p1\", \"negative\": \"n1\", \"category\": \"c\"}\n"
                                 "{\"anchor\": \"a2\", \"positive\": null, \"negative\": \"n2\"}\n"   // null: skipped
                                 "{\"anchor\": \"a3\", \"negative\": \"n3\"}\n"                       // missing: skipped
                                 "\n"
                                 "{\"Anchor\": \"a4\", \"Positive\": \"p4\", \"negative\": [\"n4\", \"m4\"]}\n"
                                 "{\"sentence1\": \"s1\", \"sentence2\": \"s2\", \"extra\": 1}\n"
                                 "{\"something\": \"else\"}\n");                                      // no known key
  size_t skipped = 0;
  expect_examples(read_training_file(path, false, &skipped),
                  {ex("a1", "p1", {"n1"}, "c"), ex("a4", "p4", {"n4", "m4"}), ex("s1", "s2")});
  EXPECT_EQ(skipped, 3u);
  expect_examples(read_training_file(path, true, &skipped),
                  {ex("a1", "p1", {"n1"}, "c"), ex("a4", "p4", {"n4", "m4"}), ex("s1", "s1", {"s2"})});
}

TEST(ReadTrainingFile, JsonLinesErrors) {
  const std::string array = write("t.jsonl", "{\"sentence1\": \"x\", \"sentence2\": \"y\"}\n\n[\"x\", \"y\"]\n");
  expect_error_at([&] { read_training_file(array); }, array, 3, "expected a JSON object");
  const std::string broken = write("t.jsonl", "{\"sentence1\": \"x\",\n");
  expect_error_at([&] { read_training_file(broken); }, broken, 1, "invalid JSON");
  const std::string number = write("t.jsonl", "{\"anchor\": \"a\", \"positive\": 3, \"negative\": \"n\"}\n");
  expect_error_at([&] { read_training_file(number); }, number, 1, "\"positive\" must be a string");
  const std::string unknown = write("t.jsonl", "{\"q\": \"a\", \"d\": \"b\"}\n{\"q\": \"c\"}\n");
  expect_error_at([&] { read_training_file(unknown); }, unknown, 1, "no line has the keys");
}

// --- BEIR -----------------------------------------------------------------------------------------

// A BEIR folder with two titled passages, one without a title (null) and one with an empty title.
std::string write_beir(const std::string& qrels) {
  const std::string dir = test::make_temp_dir("beir");
  std::ofstream(dir + "/corpus.jsonl", std::ios::binary)
      << "{\"_id\": \"d1\", \"title\": \"Dogs\", \"text\": \"Dogs bark.\"}\n"
      << "{\"_id\": \"d2\", \"title\": \"\", \"text\": \"Cats purr.\"}\r\n"
      << "{\"_id\": \"d3\", \"text\": \"Birds sing.\", \"title\": null}\n"
      << "{\"_id\": 4, \"title\": \"Fish\", \"text\": \"Fish swim.\"}\n";
  std::ofstream(dir + "/queries.jsonl", std::ios::binary)
      << "{\"_id\": \"q1\", \"text\": \"what barks?\"}\n"
      << "{\"_id\": \"q2\", \"text\": \"what purrs?\", \"metadata\": {}}\n"
      << "{\"_id\": \"q3\", \"text\": \"unjudged\"}\n";
  ::mkdir((dir + "/qrels").c_str(), 0755);
  std::ofstream(dir + "/qrels/train.tsv", std::ios::binary) << qrels;
  std::ofstream(dir + "/qrels/test.tsv", std::ios::binary) << "query-id\tcorpus-id\tscore\nq3\td3\t1\n";
  return dir;
}

TEST(ReadBeirTrainPairs, TinyFolder) {
  const std::string dir = write_beir("query-id\tcorpus-id\tscore\n"
                                     "q2\td2\t1\n"
                                     "q1\td1\t2\n"
                                     "q1\td2\t0\n"  // score 0: not a positive
                                     "q1\t4\t1\n"
                                     "q2\td3\t1\n");
  // Ordered by query id, then doc id; title + " " + text only when the title is not empty.
  expect_examples(read_beir_train_pairs(dir), {ex("what barks?", "Fish Fish swim."), ex("what barks?", "Dogs Dogs bark."),
                                               ex("what purrs?", "Cats purr."), ex("what purrs?", "Birds sing.")});
  expect_examples(read_beir_train_pairs(dir, "test"), {ex("unjudged", "Birds sing.")});
  // A directory is read as a BEIR folder (train split); identity makes no sense for it.
  EXPECT_EQ(read_training_data(dir).size(), 4u);
  test::expect_error([&] { read_training_data(dir, true); }, "is a BEIR folder");
}

TEST(ReadBeirTrainPairs, UnknownIdsAndMissingFiles) {
  const std::string dir_q = write_beir("query-id\tcorpus-id\tscore\nq1\td1\t1\nq9\td1\t1\n");
  test::expect_error([&] { read_beir_train_pairs(dir_q); }, "query id 'q9' is not in " + dir_q + "/queries.jsonl");
  const std::string dir_d = write_beir("query-id\tcorpus-id\tscore\nq1\td9\t1\n");
  test::expect_error([&] { read_beir_train_pairs(dir_d); }, "doc id 'd9' (judged for query 'q1') is not in");
  // An unknown doc with score 0 is not needed, so it is no error.
  EXPECT_TRUE(read_beir_train_pairs(write_beir("query-id\tcorpus-id\tscore\nq1\td9\t0\n")).empty());
  test::expect_error([&] { read_beir_train_pairs(dir_d, "dev"); }, "qrels/dev.tsv");
  test::expect_error([&] { read_beir_train_pairs("/nonexistent/beir"); }, "'/nonexistent/beir' does not exist");
  const std::string bad_corpus = write_beir("query-id\tcorpus-id\tscore\nq1\td1\t1\n");
  std::ofstream(bad_corpus + "/corpus.jsonl", std::ios::binary) << "{\"_id\": \"d1\", \"text\": \"x\"}\n[1]\n";
  expect_error_at([&] { read_beir_train_pairs(bad_corpus); }, bad_corpus + "/corpus.jsonl", 2, "expected a JSON object");
}

TEST(ReadBeirTrainPairs, SharedSciFactTrainSplit) {
  const std::string dir = test::shared_data("retrieval/scifact");
  if (dir.empty()) GTEST_SKIP() << "../shared/data/retrieval/scifact is absent";
  const auto pairs = read_beir_train_pairs(dir);
  // 919 train qrels (data README), all with score > 0: `awk -F'\t' 'NR>1 && $3>0' qrels/train.tsv | wc -l`
  // prints 919, the same as without the score filter.
  EXPECT_EQ(pairs.size(), 919u);
  // Query "0" judges doc 31715818 (first data line of qrels/train.tsv); the lowest query id sorts first.
  ASSERT_FALSE(pairs.empty());
  EXPECT_EQ(pairs[0].anchor, "0-dimensional biomaterials lack inductive properties.");
  EXPECT_EQ(pairs[0].positive.rfind("New opportunities: the use of nanotechnologies to manipulate and track stem "
                                    "cells. Nanotechnologies are emerging platforms",
                                    0),
            0u)
      << pairs[0].positive.substr(0, 200);
}

TEST(ReadTrainingFile, SharedSugarCrepeAsIdentityTriplets) {
  const std::string path = test::shared_data("nearmiss/sugarcrepe.tsv");
  if (path.empty()) GTEST_SKIP() << "../shared/data/nearmiss is absent";
  size_t skipped = 0;
  const auto rows = read_training_file(path, true, &skipped);
  EXPECT_EQ(rows.size() + skipped, 7511u);  // the data README's count
  EXPECT_EQ(skipped, 0u);
  // Its first quoted line (grep '"' sugarcrepe.tsv): Python's csv quoting is undone.
  const auto it = std::find_if(rows.begin(), rows.end(), [](const TrainExample& e) {
    return e.anchor == "A street sign reads \"Bacchanalia\" above a stop sign.";
  });
  ASSERT_NE(it, rows.end());
  EXPECT_EQ(it->positive, it->anchor);
  EXPECT_EQ(it->negatives, std::vector<std::string>{"A street sign with a glittering \"Bacchanalia\" above a stop sign."});
  EXPECT_EQ(it->category, "add_att");
}

// --- BatchSampler -----------------------------------------------------------------------------------

std::vector<TrainExample> distinct_rows(size_t n) {
  std::vector<TrainExample> rows;
  for (size_t i = 0; i < n; ++i) {
    const std::string s = std::to_string(i);
    rows.push_back(ex("a" + s, "p" + s, {"n" + s}));
  }
  return rows;
}

// Fails when two rows of `batch` share a text (a row may repeat its own text).
void expect_no_shared_text(const std::vector<TrainExample>& data, const std::vector<size_t>& batch, size_t size) {
  ASSERT_EQ(batch.size(), size);
  std::map<std::string, size_t> owner;
  for (size_t r : batch) {
    ASSERT_LT(r, data.size());
    std::set<std::string> texts = {data[r].anchor, data[r].positive};
    texts.insert(data[r].negatives.begin(), data[r].negatives.end());
    for (const std::string& t : texts) {
      const auto [it, inserted] = owner.emplace(t, r);
      EXPECT_TRUE(inserted) << "'" << t << "' is in rows " << it->second << " and " << r << " of one batch";
    }
  }
}

TEST(BatchSampler, RefusesDataThatCannotFormABatch) {
  const auto rows = distinct_rows(4);
  test::expect_error([&] { BatchSampler(rows, 0, 1); }, "batch size must be at least 1");
  test::expect_error([&] { BatchSampler(rows, 5, 1); }, "4 training example(s) cannot fill a batch of 5");
  // Every row shares its anchor: no two rows can be in one batch.
  const std::vector<TrainExample> same = {ex("q", "p1"), ex("q", "p2"), ex("q", "p3")};
  test::expect_error([&] { BatchSampler(same, 2, 1); }, "no batch of 2 rows without a repeated text");
  // A batch of one is fine, and so is a single row whose anchor is its own positive.
  BatchSampler one(same, 1, 1);
  EXPECT_EQ(one.next().size(), 1u);
  const std::vector<TrainExample> identity = {ex("x", "x", {"y"}), ex("z", "z", {"w"})};
  BatchSampler both(identity, 2, 1);
  auto b = both.next();
  std::sort(b.begin(), b.end());
  EXPECT_EQ(b, (std::vector<size_t>{0, 1}));
}

TEST(BatchSampler, NoTextTwiceInABatchOverThreeEpochsWithRepeatedAnchors) {
  // 30 rows, 10 anchors used three times each, some positives shared too, identity rows included.
  std::vector<TrainExample> rows;
  for (size_t i = 0; i < 30; ++i) {
    const std::string s = std::to_string(i);
    if (i % 7 == 0) {
      rows.push_back(ex("id" + s, "id" + s, {"nm" + s}));
    } else {
      rows.push_back(ex("q" + std::to_string(i % 10), "p" + std::to_string(i % 13), {"n" + s}));
    }
  }
  const size_t batch = 6;
  BatchSampler sampler(rows, batch, 42);
  std::vector<size_t> uses(rows.size(), 0);
  size_t batches = 0;
  while (sampler.epoch() < 3) {
    ASSERT_LT(batches, 1000u) << "the sampler does not move through its epochs";
    const auto b = sampler.next();
    ++batches;
    expect_no_shared_text(rows, b, batch);
    for (size_t r : b) ++uses[r];
    // Never more than once per epoch begun.
    for (size_t r = 0; r < rows.size(); ++r) ASSERT_LE(uses[r], sampler.epoch() + 1) << "row " << r;
  }
  for (size_t r = 0; r < rows.size(); ++r) EXPECT_GE(uses[r], 2u) << "row " << r << " starved";
}

TEST(BatchSampler, EveryExampleOncePerEpochWithoutRepeats) {
  const auto rows = distinct_rows(12);
  BatchSampler sampler(rows, 4, 7);
  for (size_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<size_t> seen;
    for (int i = 0; i < 3; ++i) {
      const auto b = sampler.next();
      EXPECT_EQ(sampler.epoch(), epoch);
      seen.insert(seen.end(), b.begin(), b.end());
    }
    std::sort(seen.begin(), seen.end());
    std::vector<size_t> all(12);
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    EXPECT_EQ(seen, all) << "epoch " << epoch;
  }
  // 10 rows in batches of 4: batches straddle epochs, yet 10 batches use each row exactly 4 times.
  const auto ten = distinct_rows(10);
  BatchSampler straddle(ten, 4, 7);
  std::vector<size_t> uses(10, 0);
  for (int i = 0; i < 10; ++i)
    for (size_t r : straddle.next()) ++uses[r];
  EXPECT_EQ(uses, std::vector<size_t>(10, 4));
  EXPECT_EQ(straddle.epoch(), 3u);
}

TEST(BatchSampler, RowsThatKeepWaitingDoNotPileUp) {
  // 10 rows share the anchor "q": a batch holds one of them, so most wait epoch after epoch.
  // A waiting row stands for its next epoch's use instead of being queued once more per epoch.
  std::vector<TrainExample> rows = distinct_rows(10);
  for (size_t i = 0; i < 10; ++i) rows.push_back(ex("q", "qp" + std::to_string(i)));
  BatchSampler s(rows, 4, 3);
  std::vector<size_t> uses(rows.size(), 0);
  for (int i = 0; i < 300; ++i) {
    const auto b = s.next();
    expect_no_shared_text(rows, b, 4);
    for (size_t r : b) ++uses[r];
    // The state lists the rows in line: "order <count> <rows...>".
    const std::string st = s.state();
    const size_t at = st.find("\norder ");
    ASSERT_NE(at, std::string::npos);
    ASSERT_LE(std::stoul(st.substr(at + 7)), rows.size()) << "batch " << i;
  }
  for (size_t r = 0; r < rows.size(); ++r) EXPECT_GE(uses[r], 1u) << "row " << r << " never used";
}

std::vector<std::vector<size_t>> take(BatchSampler& s, int n) {
  std::vector<std::vector<size_t>> out;
  for (int i = 0; i < n; ++i) out.push_back(s.next());
  return out;
}

TEST(BatchSampler, DeterministicPerSeed) {
  const auto rows = distinct_rows(50);
  BatchSampler a(rows, 8, 123), b(rows, 8, 123), c(rows, 8, 124);
  const auto from_a = take(a, 20);
  EXPECT_EQ(from_a, take(b, 20));
  EXPECT_NE(from_a, take(c, 20));
  // The first batch is not simply rows 0..7 in order.
  EXPECT_NE(from_a[0], (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(BatchSampler, StateRoundTrip) {
  std::vector<TrainExample> rows = distinct_rows(13);
  rows.push_back(ex("a0", "other", {"x"}));  // shares an anchor: deferrals are part of the state
  rows.push_back(ex("y", "p1", {"z"}));
  BatchSampler s(rows, 4, 99);
  take(s, 5);  // crosses the first epoch boundary (15 rows, 4 per batch)
  const std::string saved = s.state();
  const size_t epoch = s.epoch();
  const auto expected = take(s, 5);
  BatchSampler fresh(rows, 4, 1);  // another seed: everything must come from the state
  fresh.restore(saved);
  EXPECT_EQ(fresh.epoch(), epoch);
  EXPECT_EQ(take(fresh, 5), expected);
  EXPECT_EQ(fresh.state(), s.state());
  // Restoring rewinds a sampler that went on.
  s.restore(saved);
  EXPECT_EQ(take(s, 5), expected);
}

TEST(BatchSampler, RestoreRejectsForeignStates) {
  const auto rows = distinct_rows(12);
  BatchSampler s(rows, 4, 5);
  const std::string saved = s.state();
  BatchSampler other_batch(rows, 3, 5);
  test::expect_error([&] { other_batch.restore(saved); }, "saved with batch size 4");
  std::vector<TrainExample> changed = rows;
  changed[3].positive = "changed";
  BatchSampler other_data(changed, 4, 5);
  test::expect_error([&] { other_data.restore(saved); }, "other training data");
  BatchSampler fewer(distinct_rows(11), 4, 5);
  test::expect_error([&] { fewer.restore(saved); }, "saved for 12 examples");
  test::expect_error([&] { s.restore("not a state"); }, "batch sampler state");
  test::expect_error([&] { s.restore(saved.substr(0, saved.size() / 2)); }, "batch sampler state");
  // A failed restore leaves the sampler unchanged.
  EXPECT_EQ(s.state(), saved);
}

TEST(BatchSampler, GreedyDeadEndStillGivesFullBatches) {
  // Row 0 shares a text with each of the others; rows 1 and 2 form the only valid batch of two.
  const std::vector<TrainExample> rows = {ex("x", "y"), ex("x", "z"), ex("w", "y")};
  for (uint64_t seed = 0; seed < 6; ++seed) {
    BatchSampler s(rows, 2, seed);
    for (int i = 0; i < 10; ++i) {
      auto b = s.next();
      std::sort(b.begin(), b.end());
      EXPECT_EQ(b, (std::vector<size_t>{1, 2})) << "seed " << seed << " batch " << i;
    }
  }
}

}  // namespace
}  // namespace sieve::train
