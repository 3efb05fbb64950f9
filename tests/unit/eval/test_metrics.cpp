// Retrieval metrics against values worked out by hand (the arithmetic is in each comment), using
// the BEIR / pytrec_eval definitions: linear gain, log2(rank + 1) discount, AP over all relevant.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <utility>
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

TEST(HitAtK, OneWhenARelevantDocIsInTheTopK) {
  const Rels rels = {{"a", 1}, {"b", 0}};
  const Ids ranked = {"x", "b", "a"};  // relevant only at rank 3 (b has grade 0)
  EXPECT_EQ(hit_at_k(ranked, rels, 1), 0.0);
  EXPECT_EQ(hit_at_k(ranked, rels, 2), 0.0);
  EXPECT_EQ(hit_at_k(ranked, rels, 3), 1.0);
  EXPECT_EQ(hit_at_k(ranked, rels, 10), 1.0);  // k beyond the list
  EXPECT_EQ(hit_at_k({}, rels, 10), 0.0);
  EXPECT_EQ(hit_at_k(ranked, {{"b", 0}, {"x", -1}}, 10), 0.0);  // nothing relevant
  EXPECT_THROW(hit_at_k(ranked, rels, 0), sieve::Error);
}

// qa: graded with ties; qb: shorter than every k; qc: only grade 0 (not judged, excluded);
// qd: judged but absent from the run (scores 0); qz: retrieved but not judged (ignored).
Run graded_run() {
  return {{"qa", {{"c", 0.9}, {"a", 0.5}, {"x", 0.5}, {"b", 0.2}, {"d", 0.2}}},
          {"qb", {{"e", 0.1}}},
          {"qc", {{"f", 1.0}}},
          {"qz", {{"z", 1.0}}}};
}
Qrels graded_qrels() {
  return {{"qa", {{"a", 2}, {"b", 1}, {"c", 0}, {"d", 1}}},
          {"qb", {{"e", 1}}},
          {"qc", {{"f", 0}}},
          {"qd", {{"g", 3}}}};
}

TEST(EvaluateRun, GradedRunWithTiesByHand) {
  // trec_eval order of qa: c (0.9), then x before a (tie at 0.5, "x" > "a"), then d before b
  // (tie at 0.2, "d" > "b"): gains 0 0 2 1 1; 3 relevant, ideal gains 2 1 1.
  //   IDCG = 2 + 1/log2(3) + 1/log2(4) = 3.130930 (also at k = 3 and 10: only 3 relevant)
  //   k=1:  all 0
  //   k=3:  DCG = 2/log2(4) = 1 -> nDCG 0.319394; RR 1/3; acc 1; recall 1/3; P 1/3
  //   k=10: DCG = 1 + 1/log2(5) + 1/log2(6) = 1.817529 -> nDCG 0.580508; RR 1/3; acc 1; recall 1;
  //         P 3/10
  //   map = (1/3 + 2/4 + 3/5) / 3 = 0.477778
  // qb [e]: every measure 1 except P@3 = 1/3 and P@10 = 1/10 (P divides by k); map 1.
  // qd: every measure 0.  qc and qz do not count: 3 queries.
  const RunEvaluation ev = evaluate_run(trec_eval_order(graded_run()), graded_qrels(), {10, 1, 3, 3});
  const double idcg = 2.0 + 1.0 / std::log2(3.0) + 0.5;
  const double qa_ndcg3 = 1.0 / idcg;
  const double qa_ndcg10 = (1.0 + 1.0 / std::log2(5.0) + 1.0 / std::log2(6.0)) / idcg;
  const double qa_map = (1.0 / 3.0 + 2.0 / 4.0 + 3.0 / 5.0) / 3.0;
  EXPECT_NEAR(qa_ndcg3, 0.319394, 1e-6);
  EXPECT_NEAR(qa_ndcg10, 0.580508, 1e-6);

  ASSERT_EQ(ev.queries, 3u);
  ASSERT_EQ(ev.per_query.size(), 3u);
  EXPECT_EQ(ev.per_query[0].query_id, "qa");
  EXPECT_EQ(ev.per_query[1].query_id, "qb");
  EXPECT_EQ(ev.per_query[2].query_id, "qd");
  EXPECT_EQ(ev.mean.size(), 16u);  // 5 measures x {1, 3, 10} (the repeated 3 is one cutoff) + map
  for (const QueryMeasures& q : ev.per_query) EXPECT_EQ(q.values.size(), 16u) << q.query_id;

  const auto& qa = ev.per_query[0].values;
  for (const char* key : {"ndcg@1", "mrr@1", "acc@1", "recall@1", "p@1"}) EXPECT_EQ(qa.at(key), 0.0) << key;
  EXPECT_NEAR(qa.at("ndcg@3"), qa_ndcg3, kTol);
  EXPECT_NEAR(qa.at("mrr@3"), 1.0 / 3.0, kTol);
  EXPECT_EQ(qa.at("acc@3"), 1.0);
  EXPECT_NEAR(qa.at("recall@3"), 1.0 / 3.0, kTol);
  EXPECT_NEAR(qa.at("p@3"), 1.0 / 3.0, kTol);
  EXPECT_NEAR(qa.at("ndcg@10"), qa_ndcg10, kTol);
  EXPECT_NEAR(qa.at("mrr@10"), 1.0 / 3.0, kTol);
  EXPECT_EQ(qa.at("acc@10"), 1.0);
  EXPECT_NEAR(qa.at("recall@10"), 1.0, kTol);
  EXPECT_NEAR(qa.at("p@10"), 0.3, kTol);
  EXPECT_NEAR(qa.at("map"), qa_map, kTol);
  const auto& qb = ev.per_query[1].values;
  EXPECT_NEAR(qb.at("p@3"), 1.0 / 3.0, kTol);
  EXPECT_NEAR(qb.at("p@10"), 0.1, kTol);
  EXPECT_NEAR(qb.at("ndcg@10"), 1.0, kTol);
  EXPECT_NEAR(qb.at("map"), 1.0, kTol);
  for (const auto& [key, value] : ev.per_query[2].values) EXPECT_EQ(value, 0.0) << "qd " << key;

  const auto& m = ev.mean;
  EXPECT_NEAR(m.at("ndcg@1"), 1.0 / 3.0, kTol);
  EXPECT_NEAR(m.at("mrr@1"), 1.0 / 3.0, kTol);
  EXPECT_NEAR(m.at("acc@1"), 1.0 / 3.0, kTol);
  EXPECT_NEAR(m.at("recall@1"), 1.0 / 3.0, kTol);
  EXPECT_NEAR(m.at("p@1"), 1.0 / 3.0, kTol);
  EXPECT_NEAR(m.at("ndcg@3"), (qa_ndcg3 + 1.0) / 3.0, kTol);
  EXPECT_NEAR(m.at("mrr@3"), 4.0 / 9.0, kTol);
  EXPECT_NEAR(m.at("acc@3"), 2.0 / 3.0, kTol);
  EXPECT_NEAR(m.at("recall@3"), 4.0 / 9.0, kTol);
  EXPECT_NEAR(m.at("p@3"), 2.0 / 9.0, kTol);
  EXPECT_NEAR(m.at("ndcg@10"), (qa_ndcg10 + 1.0) / 3.0, kTol);
  EXPECT_NEAR(m.at("mrr@10"), 4.0 / 9.0, kTol);
  EXPECT_NEAR(m.at("acc@10"), 2.0 / 3.0, kTol);
  EXPECT_NEAR(m.at("recall@10"), 2.0 / 3.0, kTol);
  EXPECT_NEAR(m.at("p@10"), 0.4 / 3.0, kTol);
  EXPECT_NEAR(m.at("map"), (qa_map + 1.0) / 3.0, kTol);
}

TEST(EvaluateRun, RanksAreTheEntriesOrder) {
  // Without trec_eval_order, qa is ranked as given: c a x b d, gains 0 2 0 1 1, first hit at rank
  // 2; map = (1/2 + 2/4 + 3/5) / 3 = 0.533333.
  const RunEvaluation ev = evaluate_run(graded_run(), graded_qrels(), {10});
  EXPECT_NEAR(ev.per_query.at(0).values.at("mrr@10"), 0.5, kTol);
  EXPECT_NEAR(ev.per_query.at(0).values.at("map"), (0.5 + 0.5 + 0.6) / 3.0, kTol);
}

TEST(EvaluateRun, MapHasNoCutoff) {
  // One relevant doc at rank 12: AP = (1/12) / 1 whatever the ks, while recall@10 is 0.
  std::vector<RunEntry> entries;
  for (int i = 0; i < 11; ++i) entries.push_back({"n" + std::to_string(i), 1.0});
  entries.push_back({"r", 0.5});
  const RunEvaluation ev = evaluate_run({{"q", entries}}, {{"q", {{"r", 1}}}}, {10});
  EXPECT_NEAR(ev.mean.at("map"), 1.0 / 12.0, kTol);
  EXPECT_EQ(ev.mean.at("recall@10"), 0.0);
}

TEST(EvaluateRun, NoJudgedQueryGivesZeroMeans) {
  const RunEvaluation ev = evaluate_run(graded_run(), {{"qc", {{"f", 0}}}}, {5});
  EXPECT_EQ(ev.queries, 0u);
  EXPECT_TRUE(ev.per_query.empty());
  EXPECT_EQ(ev.mean.size(), 6u);
  for (const auto& [key, value] : ev.mean) EXPECT_EQ(value, 0.0) << key;
}

TEST(EvaluateRun, BadCutoffsAreErrors) {
  EXPECT_THROW(evaluate_run(graded_run(), graded_qrels(), {}), sieve::Error);
  EXPECT_THROW(evaluate_run(graded_run(), graded_qrels(), {10, 0}), sieve::Error);
}

// trec_eval's ndcg_cut.10 written out naively, independently of metrics.cpp: rank the entries by
// score descending, ties by doc id descending (selection of the best remaining entry each time),
// gain = grade, discount log2(rank + 1), ideal from every grade > 0 cut at 10; per judged query.
std::map<std::string, double> naive_trec_ndcg10(const Run& run, const Qrels& qrels) {
  std::map<std::string, double> out;
  for (const auto& [qid, rels] : qrels) {
    std::vector<int> ideal;
    for (const auto& [doc, grade] : rels)
      if (grade > 0) ideal.push_back(grade);
    if (ideal.empty()) continue;
    for (size_t i = 0; i < ideal.size(); ++i)  // bubble sort, descending
      for (size_t j = 0; j + 1 < ideal.size() - i; ++j)
        if (ideal[j] < ideal[j + 1]) std::swap(ideal[j], ideal[j + 1]);
    double idcg = 0.0;
    for (size_t i = 0; i < ideal.size() && i < 10; ++i) idcg += ideal[i] / std::log2(i + 2.0);
    std::vector<RunEntry> left;
    if (run.count(qid)) left = run.at(qid);
    double dcg = 0.0;
    for (size_t rank = 1; rank <= 10 && !left.empty(); ++rank) {
      size_t best = 0;
      for (size_t i = 1; i < left.size(); ++i) {
        const bool higher = left[i].score > left[best].score;
        const bool tie_wins =
            left[i].score == left[best].score && left[i].doc_id.compare(left[best].doc_id) > 0;
        if (higher || tie_wins) best = i;
      }
      auto g = rels.find(left[best].doc_id);
      if (g != rels.end() && g->second > 0) dcg += g->second / std::log2(rank + 1.0);
      left.erase(left.begin() + static_cast<long>(best));
    }
    out[qid] = dcg / idcg;
  }
  return out;
}

TEST(EvaluateRun, Ndcg10MatchesNaiveTrecEvalOnRandomRunWithTies) {
  std::mt19937 rng(20240611);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  eval::Run run;  // qualified: inside a TEST body, Run names testing::Test::Run
  Qrels qrels;
  for (int q = 0; q < 60; ++q) {
    const std::string qid = "q" + std::to_string(q);
    // Doc ids of varying length so that byte-wise order differs from numeric order ("d9" > "d10").
    std::vector<std::string> docs;
    for (int d = 0; d < 40; ++d) docs.push_back("d" + std::to_string(d));
    std::shuffle(docs.begin(), docs.end(), rng);
    if (q % 10 != 7) {  // q7, q17, ...: judged but missing from the run
      const int n = uniform(0, 30);
      for (int i = 0; i < n; ++i) run[qid].push_back({docs[i], uniform(0, 6) / 4.0});  // many ties
    }
    std::shuffle(docs.begin(), docs.end(), rng);
    const int judged = q % 10 == 3 ? 0 : uniform(1, 25);  // q3, q13, ...: not in the qrels
    for (int i = 0; i < judged; ++i)
      qrels[qid][docs[i]] = q % 10 == 5 ? 0 : uniform(0, 3);  // q5, ...: grade 0 only
  }
  const auto expected = naive_trec_ndcg10(run, qrels);
  ASSERT_GT(expected.size(), 40u);
  const RunEvaluation ev = evaluate_run(trec_eval_order(run), qrels, {10});
  ASSERT_EQ(ev.per_query.size(), expected.size());
  double mean = 0.0;
  for (const QueryMeasures& q : ev.per_query) {
    ASSERT_TRUE(expected.count(q.query_id)) << q.query_id;
    EXPECT_NEAR(q.values.at("ndcg@10"), expected.at(q.query_id), kTol) << q.query_id;
    mean += expected.at(q.query_id);
  }
  EXPECT_NEAR(ev.mean.at("ndcg@10"), mean / static_cast<double>(expected.size()), kTol);
}

TEST(TrecEvalOrder, ScoreDescendingThenDocIdDescendingBytewise) {
  // Equal scores go by doc id, greater first, compared byte by byte: "c" > "b" > "ab" > "B" ("B" is
  // 0x42, below every lower-case letter) and "9" > "10" (not numeric); the rank order given is
  // ignored.
  const eval::Run run = {{"q1", {{"b", 1.0}, {"z", -1.0}, {"a", 2.0}, {"B", 1.0}, {"c", 1.0}, {"ab", 1.0}}},
                         {"q2", {{"10", 0.5}, {"9", 0.5}, {"x", 0.75}}},
                         {"q3", {}}};
  const eval::Run sorted = trec_eval_order(run);
  auto ids = [&](const std::string& qid) {
    Ids out;
    for (const RunEntry& e : sorted.at(qid)) out.push_back(e.doc_id);
    return out;
  };
  EXPECT_EQ(ids("q1"), (Ids{"a", "c", "b", "ab", "B", "z"}));
  EXPECT_EQ(ids("q2"), (Ids{"x", "9", "10"}));
  EXPECT_TRUE(sorted.at("q3").empty());
  EXPECT_EQ(sorted.at("q1")[0].score, 2.0);  // entries keep their scores
  EXPECT_EQ(sorted.at("q1")[5].score, -1.0);
  EXPECT_THROW(trec_eval_order({{"q", {{"a", std::nan("")}}}}), sieve::Error);
}

TEST(WriteTrecQrels, OneLinePerJudgement) {
  const Qrels qrels = {{"q10", {{"x", -1}}}, {"q1", {{"d2", 0}, {"d1", 2}}}};
  std::ostringstream out;
  write_trec_qrels(out, qrels);
  // Qrels order: "q1" < "q10", "d1" < "d2"; grades 0 and -1 are written too.
  EXPECT_EQ(out.str(), "q1 0 d1 2\nq1 0 d2 0\nq10 0 x -1\n");
  std::ostringstream empty;
  write_trec_qrels(empty, {});
  EXPECT_EQ(empty.str(), "");
  std::ostringstream spaced;  // ids with whitespace are escaped (trec_escape_id)
  write_trec_qrels(spaced, {{"q 1", {{"d", 1}}}});
  EXPECT_EQ(spaced.str(), "q%201 0 d 1\n");
  std::ostringstream bad;
  EXPECT_THROW(write_trec_qrels(bad, {{"", {{"d", 1}}}}), sieve::Error);
  EXPECT_THROW(write_trec_qrels(bad, {{"q", {{"", 1}}}}), sieve::Error);
}

}  // namespace
}  // namespace sieve::eval
