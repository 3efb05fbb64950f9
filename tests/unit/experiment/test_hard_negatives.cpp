// Hard-negative mining: the miner's rule on hand-made rankings, and on a small corpus against a
// brute-force dense ranking (every document's cosine computed one text at a time).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "experiment_test_util.h"
#include "experiment/hard_negatives.h"
#include "sieve/index.h"

namespace sieve::test {
namespace {

using experiment::HardNegativeOptions;
using experiment::MiningReport;
using experiment::Ranker;

Ranker fixed(std::map<std::string, std::vector<std::string>> lists) {
  return [lists](const std::string& q, size_t k) {
    std::vector<std::string> v = lists.at(q);
    if (v.size() > k) v.resize(k);
    return v;
  };
}

TEST(HardNegatives, EachRankerGivesItsBestUnjudgedDocumentOnce) {
  const std::vector<eval::Query> queries = {{"q1", "alpha"}, {"q2", "beta"}, {"q3", "gamma"}};
  eval::Qrels qrels;
  qrels["q1"] = {{"d1", 2}, {"d2", 1}, {"d3", 0}};  // d3 judged non-relevant: never a negative
  qrels["q2"] = {{"d5", 1}};
  qrels["q3"] = {{"d9", 0}};                        // no positive: no row
  const auto bm25 = fixed({{"alpha", {"d1", "d3", "d4", "d6"}}, {"beta", {"d5", "d7"}}, {"gamma", {"d1"}}});
  const auto dense = fixed({{"alpha", {"d4", "d2", "d8"}}, {"beta", {"d10", "d7", "d5"}}, {"gamma", {"d2"}}});
  // d10 holds the same passage as the judged d5: a copy of a positive is never its negative.
  auto text = [](const std::string& id) { return "text of " + (id == "d10" ? std::string("d5") : id); };
  MiningReport rep;
  const auto rows = experiment::mine_hard_negatives(queries, qrels, {{"bm25", bm25}, {"dense", dense}}, text,
                                                    HardNegativeOptions{}, "toy", &rep);
  ASSERT_EQ(rows.size(), 3u);  // q1 x (d1, d2), q2 x d5
  EXPECT_EQ(rows[0].anchor, "alpha");
  EXPECT_EQ(rows[0].positive, "text of d1");
  EXPECT_EQ(rows[1].positive, "text of d2");
  // BM25's first unjudged is d4 (d1 relevant, d3 judged 0); dense's d4 is taken, d2 is judged: d8.
  const std::vector<std::string> want = {"text of d4", "text of d8"};
  EXPECT_EQ(rows[0].negatives, want);
  EXPECT_EQ(rows[1].negatives, want);
  // q2: BM25 gives d7; dense has d10 (d5's text) and d7 again, so it adds nothing.
  EXPECT_EQ(rows[2].negatives, std::vector<std::string>{"text of d7"});
  EXPECT_EQ(rows[2].category, "toy");
  EXPECT_EQ(rep.queries, 2u);
  EXPECT_EQ(rep.negatives, 5u);
  EXPECT_EQ(rep.per_ranker["bm25"], 2u);
  EXPECT_EQ(rep.per_ranker["dense"], 1u);

  // Two per ranker, and a depth that hides the deeper documents.
  HardNegativeOptions two;
  two.per_ranker = 2;
  two.depth = 3;
  const auto r2 = experiment::mine_hard_negatives(queries, qrels, {{"bm25", bm25}, {"dense", dense}}, text, two, "toy");
  EXPECT_EQ(r2[0].negatives, want);  // d6 is 4th in BM25's list, beyond depth 3
}

TEST(HardNegatives, DenseNegativesAreTheBruteForceNearestUnjudgedDocuments) {
  const std::string root = make_temp_dir("hardneg");
  const TinyBeir b = make_tiny_beir(root);
  MiningReport rep;
  HardNegativeOptions opt;
  opt.per_ranker = 2;
  const auto rows = experiment::beir_triplets(b.dir, "test", b.model, root + "/cache", opt, {}, &rep);

  std::vector<std::string> doc_texts, query_texts;
  for (const auto& d : b.docs) doc_texts.push_back(d.second);
  for (const auto& q : b.queries) query_texts.push_back(q.second);
  const auto dk = keys_one_by_one(b.model, doc_texts), qk = keys_one_by_one(b.model, query_texts);
  size_t positives = 0;
  for (const auto& [qid, rels] : b.qrels)
    for (const auto& [d, g] : rels) positives += g > 0;
  ASSERT_EQ(rows.size(), positives);

  IndexOpenOptions oo;
  oo.model_dir = b.model;
  size_t row = 0;
  for (const auto& [qid, rels] : b.qrels) {
    bool any = false;
    for (const auto& [d, g] : rels) any |= g > 0;
    if (!any) continue;
    const size_t qi = std::stoul(qid.substr(1)) - 1;
    // Brute-force dense order of the unjudged documents.
    std::set<std::string> judged_texts;
    for (const auto& [d, g] : rels) judged_texts.insert(b.docs[std::stoul(d.substr(1))].second);
    std::vector<std::pair<double, size_t>> scored;
    for (size_t d = 0; d < dk.size(); ++d)
      if (!rels.count(b.docs[d].first) && !judged_texts.count(b.docs[d].second))
        scored.push_back({dot(qk[qi], dk[d]), d});
    std::sort(scored.rbegin(), scored.rend());
    const auto& negs = rows[row].negatives;
    ASSERT_GE(negs.size(), 3u) << qid;
    // Every negative is an unjudged document's text, no judged document's text, none twice.
    std::set<std::string> seen;
    for (const auto& n : negs) {
      EXPECT_TRUE(seen.insert(n).second) << qid;
      EXPECT_EQ(judged_texts.count(n), 0u) << qid << ": " << n;
    }
    // The dense negatives follow BM25's two: each is, among the documents not yet taken, one
    // whose brute-force cosine ties the best within float rounding.
    std::set<std::string> taken(negs.begin(), negs.begin() + 2);
    for (size_t k = 2; k < negs.size(); ++k) {
      double best = -2, got = -2;
      for (const auto& [s, d] : scored) {
        if (taken.count(b.docs[d].second)) continue;
        best = std::max(best, s);
        if (b.docs[d].second == negs[k]) got = s;
      }
      EXPECT_NEAR(got, best, 1e-5) << qid << " dense negative " << k - 2;
      taken.insert(negs[k]);
    }
    for (size_t r = row; r < rows.size() && rows[r].anchor == query_texts[qi]; ++r) EXPECT_EQ(rows[r].negatives, negs);
    while (row < rows.size() && rows[row].anchor == query_texts[qi]) ++row;
  }
  EXPECT_EQ(row, rows.size());
  size_t negatives = 0;
  for (const auto& r : rows) negatives += r.negatives.size();
  EXPECT_EQ(rep.negatives, negatives);
  EXPECT_EQ(rep.rows, rows.size());
}

}  // namespace
}  // namespace sieve::test
