// Retrieval metrics against values worked out by hand (the arithmetic is in each comment), using
// the BEIR / pytrec_eval definitions: linear gain, log2(rank + 1) discount, AP over all relevant.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "eval/metrics.h"
#include "sieve/error.h"

namespace sieve::eval {
namespace {

using Ids = std::vector<std::string>;
using Rels = std::map<std::string, int>;
constexpr double kTol = 1e-12;

TEST(Ndcg, GradedRelevanceUsesLinearGain) {
  const Rels rels = {{"d1", 3}, {"d2", 2}, {"d3", 1}, {"d4", 0}};
  const Ids ranked = {"d3", "d1", "x", "d2", "d4"};  // gains 1, 3, 0, 2, 0
  // DCG@5  = 1/log2(2) + 3/log2(3) + 0/log2(4) + 2/log2(5) + 0/log2(6) = 1 + 1.89279 + 0.86135 = 3.75414
  // IDCG@5 = 3/log2(2) + 2/log2(3) + 1/log2(4) = 3 + 1.26186 + 0.5 = 4.76186   (d4 has grade 0)
  // nDCG@5 = 3.75414 / 4.76186 = 0.788377  (2^rel - 1 gains would give 0.714222 instead)
  const double expected = (1.0 + 3.0 / std::log2(3.0) + 2.0 / std::log2(5.0)) /
                          (3.0 + 2.0 / std::log2(3.0) + 1.0 / std::log2(4.0));
  EXPECT_NEAR(ndcg_at_k(ranked, rels, 5), expected, kTol);
  EXPECT_NEAR(ndcg_at_k(ranked, rels, 5), 0.7883773914853737, 1e-9);
  // k beyond the list: nothing more to gain and the ideal list has only 3 grades, so same value.
  EXPECT_NEAR(ndcg_at_k(ranked, rels, 100), expected, kTol);
}

TEST(Ndcg, CutoffSmallerThanList) {
  const Rels rels = {{"d1", 3}, {"d2", 2}, {"d3", 1}};
  const Ids ranked = {"d3", "d1", "x", "d2"};
  // DCG@2  = 1/log2(2) + 3/log2(3) = 1 + 1.89279 = 2.89279
  // IDCG@2 = 3/log2(2) + 2/log2(3) = 3 + 1.26186 = 4.26186 (ideal cut at k too)
  // nDCG@2 = 0.678762
  EXPECT_NEAR(ndcg_at_k(ranked, rels, 2), 0.6787622294601761, 1e-9);
  // nDCG@1 = 1/3 (d3 at rank 1 with gain 1 vs the ideal d1 with gain 3)
  EXPECT_NEAR(ndcg_at_k(ranked, rels, 1), 1.0 / 3.0, kTol);
}

TEST(Ndcg, TiedGradesInAnyOrderAreIdeal) {
  const Rels rels = {{"a", 2}, {"b", 2}, {"c", 1}};
  // Both orders have DCG = 2/1 + 2/log2(3) + 1/2 = IDCG.
  EXPECT_NEAR(ndcg_at_k({"a", "b", "c"}, rels, 10), 1.0, kTol);
  EXPECT_NEAR(ndcg_at_k({"b", "a", "c"}, rels, 10), 1.0, kTol);
  // Swapping a grade-2 doc below the grade-1 doc is not ideal:
  // DCG = 2 + 1/log2(3) + 2/2 = 3.63093; IDCG = 2 + 2/log2(3) + 1/2 = 3.76186; nDCG = 0.965196
  EXPECT_NEAR(ndcg_at_k({"a", "c", "b"}, rels, 10),
              (2.0 + 1.0 / std::log2(3.0) + 1.0) / (2.0 + 2.0 / std::log2(3.0) + 0.5), kTol);
}

TEST(Metrics, NonPositiveGradesAreNotRelevant) {
  const Rels rels = {{"a", -1}, {"b", 1}, {"c", 0}};
  const Ids ranked = {"a", "b", "c"};  // gains 0, 1, 0; one relevant doc (b)
  // nDCG@3 = (1/log2(3)) / (1/log2(2)) = 0.630930
  EXPECT_NEAR(ndcg_at_k(ranked, rels, 3), 1.0 / std::log2(3.0), kTol);
  EXPECT_NEAR(recall_at_k(ranked, rels, 3), 1.0, kTol);             // 1 of 1
  EXPECT_NEAR(precision_at_k(ranked, rels, 3), 1.0 / 3.0, kTol);    // 1 of 3
  EXPECT_NEAR(reciprocal_rank_at_k(ranked, rels, 3), 0.5, kTol);    // first hit at rank 2
  EXPECT_NEAR(average_precision_at_k(ranked, rels, 3), 0.5, kTol);  // (1/2) / 1
}

TEST(Metrics, RecallPrecisionRankAndAp) {
  const Rels rels = {{"d1", 1}, {"d2", 1}, {"d3", 1}, {"d4", 1}};  // 4 relevant, d4 never retrieved
  const Ids ranked = {"x", "d1", "y", "d2", "d3", "z"};            // hits at ranks 2, 4, 5
  // k = 5: recall 3/4, P 3/5, RR 1/2, AP = (1/2 + 2/4 + 3/5) / 4 = 1.6 / 4 = 0.4
  EXPECT_NEAR(recall_at_k(ranked, rels, 5), 0.75, kTol);
  EXPECT_NEAR(precision_at_k(ranked, rels, 5), 0.6, kTol);
  EXPECT_NEAR(reciprocal_rank_at_k(ranked, rels, 5), 0.5, kTol);
  EXPECT_NEAR(average_precision_at_k(ranked, rels, 5), 0.4, kTol);
  // k = 3: only the hit at rank 2: recall 1/4, P 1/3, AP = (1/2) / 4 = 0.125
  EXPECT_NEAR(recall_at_k(ranked, rels, 3), 0.25, kTol);
  EXPECT_NEAR(precision_at_k(ranked, rels, 3), 1.0 / 3.0, kTol);
  EXPECT_NEAR(average_precision_at_k(ranked, rels, 3), 0.125, kTol);
  // k = 1: rank 1 is not relevant, so RR@1 = 0
  EXPECT_NEAR(reciprocal_rank_at_k(ranked, rels, 1), 0.0, kTol);
  // k = 10 over 6 retrieved docs: P divides by k, as pytrec_eval's P_10 does: 3/10
  EXPECT_NEAR(precision_at_k(ranked, rels, 10), 0.3, kTol);
}

TEST(Metrics, NoRelevantDocsGiveZero) {
  for (const Rels& rels : {Rels{}, Rels{{"a", 0}, {"b", -2}}}) {
    const Ids ranked = {"a", "b"};
    EXPECT_EQ(ndcg_at_k(ranked, rels, 10), 0.0);
    EXPECT_EQ(recall_at_k(ranked, rels, 10), 0.0);
    EXPECT_EQ(precision_at_k(ranked, rels, 10), 0.0);
    EXPECT_EQ(reciprocal_rank_at_k(ranked, rels, 10), 0.0);
    EXPECT_EQ(average_precision_at_k(ranked, rels, 10), 0.0);
  }
  // An empty ranking against real judgements scores 0 as well.
  EXPECT_EQ(ndcg_at_k({}, {{"a", 1}}, 10), 0.0);
}

TEST(Metrics, DuplicatesCountOnlyAtFirstPosition) {
  const Rels rels = {{"a", 1}, {"b", 1}};
  const Ids ranked = {"a", "a", "b"};  // gains 1, 0, 1
  // nDCG@3 = (1 + 0 + 1/log2(4)) / (1 + 1/log2(3)) = 1.5 / 1.63093 = 0.919721
  EXPECT_NEAR(ndcg_at_k(ranked, rels, 3), 1.5 / (1.0 + 1.0 / std::log2(3.0)), kTol);
  EXPECT_NEAR(recall_at_k(ranked, rels, 2), 0.5, kTol);  // only a, once: 1/2
  EXPECT_NEAR(precision_at_k(ranked, rels, 3), 2.0 / 3.0, kTol);
  // AP@3 = (1/1 + 2/3) / 2 = 0.833333
  EXPECT_NEAR(average_precision_at_k(ranked, rels, 3), (1.0 + 2.0 / 3.0) / 2.0, kTol);
  // A duplicated relevant doc never lifts recall above 1 nor nDCG above the ideal.
  EXPECT_NEAR(ndcg_at_k({"a", "a", "a", "a"}, {{"a", 1}}, 4), 1.0, kTol);
}

TEST(Metrics, ZeroCutoffIsAnError) {
  EXPECT_THROW(ndcg_at_k({"a"}, {{"a", 1}}, 0), sieve::Error);
  EXPECT_THROW(precision_at_k({"a"}, {{"a", 1}}, 0), sieve::Error);
  EXPECT_THROW(evaluate_cutoffs({}, {}, {0}), sieve::Error);
}

// q1 and q2 are retrieved, q3 has no relevant doc (excluded from the means), q4 is judged but
// missing from the run (counts as 0), q9 is retrieved but not judged (ignored): 3 queries.
Run sample_run() {
  return {{"q1", {{"b", 0.9}, {"a", 0.5}}}, {"q2", {{"x", 0.8}, {"c", 0.7}}}, {"q9", {{"z", 1.0}}}};
}
Qrels sample_qrels() {
  return {{"q1", {{"a", 1}, {"b", 2}}}, {"q2", {{"c", 1}}}, {"q3", {{"d", 0}}}, {"q4", {{"e", 1}}}};
}

TEST(Evaluate, AveragesOverJudgedQueries) {
  // q1 [b a], gains 2 1 = ideal: nDCG 1, recall 1, RR 1, AP (1/1 + 2/2)/2 = 1, P@10 2/10
  // q2 [x c], gains 0 1: nDCG (1/log2 3)/1 = 0.630930, recall 1, RR 1/2, AP (1/2)/1, P@10 1/10
  // q4: all 0
  const Metrics m = evaluate(sample_run(), sample_qrels());
  EXPECT_EQ(m.queries, 3u);
  EXPECT_NEAR(m.ndcg10, (1.0 + 1.0 / std::log2(3.0)) / 3.0, kTol);  // 0.543643
  EXPECT_NEAR(m.recall100, 2.0 / 3.0, kTol);
  EXPECT_NEAR(m.mrr10, 1.5 / 3.0, kTol);
  EXPECT_NEAR(m.map100, 1.5 / 3.0, kTol);
  EXPECT_NEAR(m.p10, 0.3 / 3.0, kTol);
}

TEST(Evaluate, PerQueryLimitCutsEachList) {
  // Limit 1: q1 [b], gain 2: nDCG 2 / (2 + 1/log2 3) = 0.760188, recall 1/2, RR 1, AP (1/1)/2,
  // P@10 1/10; q2 [x]: all 0; q4: all 0.
  const Metrics m = evaluate(sample_run(), sample_qrels(), 1);
  EXPECT_EQ(m.queries, 3u);
  EXPECT_NEAR(m.ndcg10, 2.0 / (2.0 + 1.0 / std::log2(3.0)) / 3.0, kTol);
  EXPECT_NEAR(m.recall100, 0.5 / 3.0, kTol);
  EXPECT_NEAR(m.mrr10, 1.0 / 3.0, kTol);
  EXPECT_NEAR(m.map100, 0.5 / 3.0, kTol);
  EXPECT_NEAR(m.p10, 0.1 / 3.0, kTol);
}

TEST(Evaluate, EmptyQrelsGiveZeroQueries) {
  const Metrics m = evaluate(sample_run(), {});
  EXPECT_EQ(m.queries, 0u);
  EXPECT_EQ(m.ndcg10, 0.0);
  EXPECT_EQ(m.p10, 0.0);
}

TEST(EvaluateCutoffs, EachKeyPerCutoff) {
  const auto r = evaluate_cutoffs(sample_run(), sample_qrels(), {1, 2, 2});
  EXPECT_EQ(r.size(), 10u);  // 5 metrics x {1, 2}; the repeated 2 is one cutoff
  // k = 1: q1 [b]: nDCG 2/2 = 1, recall 1/2, RR 1, AP (1/1)/2, P 1; q2 [x] and q4: 0.
  EXPECT_NEAR(r.at("ndcg@1"), 1.0 / 3.0, kTol);
  EXPECT_NEAR(r.at("recall@1"), 0.5 / 3.0, kTol);
  EXPECT_NEAR(r.at("mrr@1"), 1.0 / 3.0, kTol);
  EXPECT_NEAR(r.at("map@1"), 0.5 / 3.0, kTol);
  EXPECT_NEAR(r.at("p@1"), 1.0 / 3.0, kTol);
  // k = 2: q1 all 1; q2: nDCG 1/log2 3, recall 1, RR 1/2, AP 1/2, P 1/2; q4: 0.
  EXPECT_NEAR(r.at("ndcg@2"), (1.0 + 1.0 / std::log2(3.0)) / 3.0, kTol);
  EXPECT_NEAR(r.at("recall@2"), 2.0 / 3.0, kTol);
  EXPECT_NEAR(r.at("mrr@2"), 1.5 / 3.0, kTol);
  EXPECT_NEAR(r.at("map@2"), 1.5 / 3.0, kTol);
  EXPECT_NEAR(r.at("p@2"), 1.5 / 3.0, kTol);
}

TEST(EvaluateCutoffs, AgreesWithEvaluate) {
  const auto r = evaluate_cutoffs(sample_run(), sample_qrels(), {10, 100});
  const Metrics m = evaluate(sample_run(), sample_qrels());
  EXPECT_DOUBLE_EQ(r.at("ndcg@10"), m.ndcg10);
  EXPECT_DOUBLE_EQ(r.at("recall@100"), m.recall100);
  EXPECT_DOUBLE_EQ(r.at("mrr@10"), m.mrr10);
  EXPECT_DOUBLE_EQ(r.at("map@100"), m.map100);
  EXPECT_DOUBLE_EQ(r.at("p@10"), m.p10);
}

}  // namespace
}  // namespace sieve::eval
