// Fusion of the dense and BM25 lists: every expected score is worked out by hand in the comments.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "index/fusion.h"
#include "sieve/error.h"

namespace sieve::index {
namespace {

const Ranked kDense = {{7, 0.9}, {3, 0.8}, {5, 0.1}};
const Ranked kBm25 = {{3, 12.0}, {9, 10.0}};

std::vector<uint32_t> docs_of(const std::vector<Hit>& hits) {
  std::vector<uint32_t> out;
  for (const Hit& h : hits) out.push_back(h.doc);
  return out;
}

SearchParams rrf(size_t k, double rrf_k = 60) {
  SearchParams p;
  p.fusion = Fusion::Rrf;
  p.k = k;
  p.rrf_k = rrf_k;
  return p;
}

SearchParams weighted(double dense_weight, size_t k = 10) {
  SearchParams p;
  p.fusion = Fusion::Weighted;
  p.k = k;
  p.dense_weight = dense_weight;
  return p;
}

TEST(Fusion, RrfHandComputed) {
  // doc 3: dense rank 2, bm25 rank 1 -> 1/62 + 1/61; doc 7: dense rank 1 -> 1/61;
  // doc 9: bm25 rank 2 -> 1/62; doc 5: dense rank 3 -> 1/63
  const auto hits = fuse(kDense, kBm25, rrf(10));
  ASSERT_EQ(docs_of(hits), (std::vector<uint32_t>{3, 7, 9, 5}));
  EXPECT_DOUBLE_EQ(hits[0].score, 1.0 / 62 + 1.0 / 61);
  EXPECT_DOUBLE_EQ(hits[1].score, 1.0 / 61);
  EXPECT_DOUBLE_EQ(hits[2].score, 1.0 / 62);
  EXPECT_DOUBLE_EQ(hits[3].score, 1.0 / 63);

  EXPECT_EQ(hits[0].dense_rank, 2);
  EXPECT_EQ(hits[0].bm25_rank, 1);
  EXPECT_DOUBLE_EQ(hits[0].dense_score, 0.8);
  EXPECT_DOUBLE_EQ(hits[0].bm25_score, 12.0);

  EXPECT_EQ(hits[1].dense_rank, 1);
  EXPECT_EQ(hits[1].bm25_rank, 0);
  EXPECT_DOUBLE_EQ(hits[1].dense_score, 0.9);
  EXPECT_TRUE(std::isnan(hits[1].bm25_score));

  EXPECT_EQ(hits[2].dense_rank, 0);
  EXPECT_EQ(hits[2].bm25_rank, 2);
  EXPECT_TRUE(std::isnan(hits[2].dense_score));
  EXPECT_DOUBLE_EQ(hits[2].bm25_score, 10.0);

  EXPECT_EQ(hits[3].dense_rank, 3);
  EXPECT_EQ(hits[3].bm25_rank, 0);
  EXPECT_DOUBLE_EQ(hits[3].dense_score, 0.1);
  EXPECT_TRUE(std::isnan(hits[3].bm25_score));
  for (const Hit& h : hits) EXPECT_TRUE(h.id.empty());
}

TEST(Fusion, RrfConstantZero) {
  // rrf_k 0: doc 3 -> 1/2 + 1/1 = 1.5, doc 7 -> 1, doc 9 -> 1/2, doc 5 -> 1/3
  const auto hits = fuse(kDense, kBm25, rrf(10, 0));
  ASSERT_EQ(docs_of(hits), (std::vector<uint32_t>{3, 7, 9, 5}));
  EXPECT_DOUBLE_EQ(hits[0].score, 1.5);
  EXPECT_DOUBLE_EQ(hits[3].score, 1.0 / 3);
}

TEST(Fusion, KCutsTheList) {
  EXPECT_EQ(docs_of(fuse(kDense, kBm25, rrf(2))), (std::vector<uint32_t>{3, 7}));
  EXPECT_EQ(docs_of(fuse(kDense, kBm25, rrf(1))), (std::vector<uint32_t>{3}));
  EXPECT_TRUE(fuse(kDense, kBm25, rrf(0)).empty());
  EXPECT_EQ(fuse(kDense, kBm25, weighted(0.5, 3)).size(), 3u);
}

TEST(Fusion, EmptyLists) {
  EXPECT_TRUE(fuse({}, {}, rrf(10)).empty());
  // bm25 alone: ranks 1 and 2 -> 1/61 and 1/62, no dense fields
  const auto hits = fuse({}, kBm25, rrf(10));
  ASSERT_EQ(docs_of(hits), (std::vector<uint32_t>{3, 9}));
  EXPECT_DOUBLE_EQ(hits[0].score, 1.0 / 61);
  EXPECT_EQ(hits[0].dense_rank, 0);
  EXPECT_TRUE(std::isnan(hits[0].dense_score));
}

TEST(Fusion, RrfTiesBreakByLowerId) {
  // both at rank 1 of their list -> 1/61 each; doc 2 first although doc 4 is in the dense list
  const auto hits = fuse({{4, 0.5}}, {{2, 3.0}}, rrf(10));
  EXPECT_EQ(docs_of(hits), (std::vector<uint32_t>{2, 4}));
  EXPECT_DOUBLE_EQ(hits[0].score, hits[1].score);
}

TEST(Fusion, RepeatedDocumentKeepsItsBestRank) {
  // doc 3 at ranks 1 and 2 of the dense list counts once, at rank 1: 1/61
  const auto hits = fuse({{3, 0.9}, {3, 0.5}, {8, 0.4}}, {}, rrf(10));
  ASSERT_EQ(docs_of(hits), (std::vector<uint32_t>{3, 8}));
  EXPECT_DOUBLE_EQ(hits[0].score, 1.0 / 61);
  EXPECT_EQ(hits[0].dense_rank, 1);
  EXPECT_DOUBLE_EQ(hits[0].dense_score, 0.9);
}

TEST(Fusion, WeightedHandComputed) {
  // dense min-max over [0.1, 0.9]: 7 -> 1, 3 -> 0.7 / 0.8 = 0.875, 5 -> 0
  // bm25 min-max over [10, 12]: 3 -> 1, 9 -> 0
  // weight 0.5: doc 3 = 0.5 * 0.875 + 0.5 * 1 = 0.9375; doc 7 = 0.5 * 1 = 0.5;
  //             doc 5 = 0.5 * 0 = 0; doc 9 = 0.5 * 0 = 0 (tie: 5 before 9)
  const auto hits = fuse(kDense, kBm25, weighted(0.5));
  ASSERT_EQ(docs_of(hits), (std::vector<uint32_t>{3, 7, 5, 9}));
  EXPECT_NEAR(hits[0].score, 0.9375, 1e-12);
  EXPECT_NEAR(hits[1].score, 0.5, 1e-12);
  EXPECT_NEAR(hits[2].score, 0.0, 1e-12);
  EXPECT_NEAR(hits[3].score, 0.0, 1e-12);
  // raw scores and ranks are reported, not the normalised ones
  EXPECT_DOUBLE_EQ(hits[0].dense_score, 0.8);
  EXPECT_DOUBLE_EQ(hits[0].bm25_score, 12.0);
  EXPECT_EQ(hits[0].dense_rank, 2);
  EXPECT_EQ(hits[0].bm25_rank, 1);
}

TEST(Fusion, WeightedOtherWeights) {
  // weight 0.25: doc 3 = 0.25 * 0.875 + 0.75 * 1 = 0.96875; doc 7 = 0.25; docs 5 and 9 = 0
  auto hits = fuse(kDense, kBm25, weighted(0.25));
  ASSERT_EQ(docs_of(hits), (std::vector<uint32_t>{3, 7, 5, 9}));
  EXPECT_NEAR(hits[0].score, 0.96875, 1e-12);
  EXPECT_NEAR(hits[1].score, 0.25, 1e-12);
  // weight 0: only bm25 counts: doc 3 = 1; docs 5, 7, 9 = 0, in id order
  hits = fuse(kDense, kBm25, weighted(0.0));
  EXPECT_EQ(docs_of(hits), (std::vector<uint32_t>{3, 5, 7, 9}));
  EXPECT_NEAR(hits[0].score, 1.0, 1e-12);
  // weight 1: only dense counts: 7 = 1, 3 = 0.875, docs 5 and 9 = 0
  hits = fuse(kDense, kBm25, weighted(1.0));
  EXPECT_EQ(docs_of(hits), (std::vector<uint32_t>{7, 3, 5, 9}));
  EXPECT_NEAR(hits[1].score, 0.875, 1e-12);
}

SearchParams zscore(double dense_weight, size_t k = 10) {
  SearchParams p = weighted(dense_weight, k);
  p.fusion = Fusion::Zscore;
  return p;
}

TEST(Fusion, ZscoreHandComputed) {
  // dense [0.9, 0.8, 0.1]: mean 0.6, population variance (0.09 + 0.04 + 0.25) / 3, sd = sqrt(0.38 / 3)
  //   z: 7 -> 0.3 / sd, 3 -> 0.2 / sd, 5 -> -0.5 / sd (the list's lowest)
  // bm25 [12, 10]: mean 11, sd 1: 3 -> +1, 9 -> -1 (the lowest)
  // weight 0.7: doc 3 = 0.7 * 0.2 / sd + 0.3 * 1; doc 7 lacks bm25: 0.7 * 0.3 / sd + 0.3 * (-1);
  //             doc 9 lacks dense: 0.7 * (-0.5 / sd) + 0.3 * (-1); doc 5 = 0.7 * (-0.5 / sd) + 0.3 * (-1)
  const double sd = std::sqrt(0.38 / 3);
  const auto hits = fuse(kDense, kBm25, zscore(0.7));
  ASSERT_EQ(docs_of(hits), (std::vector<uint32_t>{3, 7, 5, 9}));
  EXPECT_NEAR(hits[0].score, 0.7 * 0.2 / sd + 0.3, 1e-12);
  EXPECT_NEAR(hits[1].score, 0.7 * 0.3 / sd - 0.3, 1e-12);
  EXPECT_NEAR(hits[2].score, -0.7 * 0.5 / sd - 0.3, 1e-12);
  EXPECT_NEAR(hits[3].score, -0.7 * 0.5 / sd - 0.3, 1e-12);
  EXPECT_DOUBLE_EQ(hits[0].bm25_score, 12.0);  // raw scores are reported
  // A second case, with one far outlier at the top of BM25:
  //   dense: 1 -> 0.60, 2 -> 0.50; bm25: 3 -> 100, 2 -> 2, 1 -> 1
  const Ranked d = {{1, 0.60}, {2, 0.50}}, b = {{3, 100.0}, {2, 2.0}, {1, 1.0}};
  // z, w 0.5: dense z: 1 -> +1, 2 -> -1; bm25 mean 34.33, sd 46.43: 3 -> 1.414, 2 -> -0.696, 1 -> -0.718
  //   doc 1 = 0.5 - 0.359 = 0.141; doc 2 = -0.5 - 0.348 = -0.848; doc 3 = 0.5 * (-1) + 0.707 = 0.207
  EXPECT_EQ(docs_of(fuse(d, b, zscore(0.5))), (std::vector<uint32_t>{3, 1, 2}));
}

TEST(Fusion, ZscoreOfAListWithoutSpreadIsZero) {
  auto hits = fuse({{8, 0.3}}, {{2, 4.0}, {1, 4.0}}, zscore(0.5));
  ASSERT_EQ(docs_of(hits), (std::vector<uint32_t>{1, 2, 8}));
  for (const Hit& h : hits) EXPECT_NEAR(h.score, 0.0, 1e-12);
  EXPECT_EQ(fusion_from_name("zscore"), Fusion::Zscore);
  EXPECT_STREQ(fusion_name(Fusion::Zscore), "zscore");
  EXPECT_TRUE(fusion_uses_weight(Fusion::Zscore));
  EXPECT_FALSE(fusion_uses_weight(Fusion::Rrf));
}

TEST(Fusion, WeightSlopeMovesEachQuerysWeightByTheTopZGap) {
  // kDense [0.9, 0.8, 0.1]: top z = 0.3 / sd, sd = sqrt(0.38 / 3) = 0.3559 -> 0.8429;
  // kBm25 [12, 10]: top z = +1. Gap dense - bm25 = 0.3 / sd - 1 = -0.1571.
  const double gap = 0.3 / std::sqrt(0.38 / 3) - 1.0;
  SearchParams p = weighted(0.5);
  p.weight_slope = 1.0;
  const double w = 0.5 + gap;  // 0.3429: BM25's top stands further out, so BM25 gets more weight
  EXPECT_NEAR(query_dense_weight(kDense, kBm25, p), w, 1e-12);
  auto hits = fuse(kDense, kBm25, p);
  ASSERT_EQ(docs_of(hits), (std::vector<uint32_t>{3, 7, 5, 9}));
  EXPECT_NEAR(hits[0].score, w * 0.875 + (1 - w) * 1.0, 1e-12);  // doc 3, min-max as in WeightedHandComputed
  EXPECT_NEAR(hits[1].score, w * 1.0, 1e-12);                     // doc 7, dense only
  // the same weight reaches the z-score fusion (doc 3 = w * 0.2 / sd + (1 - w) * 1)
  p.fusion = Fusion::Zscore;
  hits = fuse(kDense, kBm25, p);
  EXPECT_NEAR(hits[0].score, w * 0.2 / std::sqrt(0.38 / 3) + (1 - w), 1e-12);
  // clamped to [0, 1]: slope 10 -> 0.5 - 1.571 < 0: only BM25 counts (min-max: doc 3 -> 1, the rest 0)
  p.fusion = Fusion::Weighted;
  p.weight_slope = 10;
  EXPECT_EQ(query_dense_weight(kDense, kBm25, p), 0.0);
  hits = fuse(kDense, kBm25, p);
  EXPECT_EQ(docs_of(hits), (std::vector<uint32_t>{3, 5, 7, 9}));
  p.weight_slope = -10;
  EXPECT_EQ(query_dense_weight(kDense, kBm25, p), 1.0);
  // slope 0 is the fixed weight; an empty list has top z 0; RRF ignores the slope
  p.weight_slope = 0;
  EXPECT_EQ(query_dense_weight(kDense, kBm25, p), 0.5);
  p.weight_slope = 0.25;
  EXPECT_NEAR(query_dense_weight({}, kBm25, p), 0.5 - 0.25 * 1.0, 1e-12);
  EXPECT_NEAR(query_dense_weight(kDense, {}, p), 0.5 + 0.25 * (gap + 1.0), 1e-12);
  SearchParams r = rrf(10);
  r.weight_slope = 5;
  EXPECT_EQ(docs_of(fuse(kDense, kBm25, r)), docs_of(fuse(kDense, kBm25, rrf(10))));
  p.weight_slope = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(fuse(kDense, kBm25, p), sieve::Error);
}

TEST(Fusion, WeightedSingleElementListNormalisesToOne) {
  // a one-element list has no spread: min-max gives 1, so doc 8 scores 0.5 * 1
  auto hits = fuse({{8, 0.3}}, {}, weighted(0.5));
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_NEAR(hits[0].score, 0.5, 1e-12);
  // equal scores likewise: both docs get 1 from bm25 -> (1 - 0.5) * 1
  hits = fuse({}, {{2, 4.0}, {1, 4.0}}, weighted(0.5));
  ASSERT_EQ(docs_of(hits), (std::vector<uint32_t>{1, 2}));
  EXPECT_NEAR(hits[0].score, 0.5, 1e-12);
  EXPECT_NEAR(hits[1].score, 0.5, 1e-12);
  // in both lists: 0.5 * 1 + 0.5 * 1
  hits = fuse({{8, 0.3}}, {{8, 5.0}}, weighted(0.5));
  EXPECT_NEAR(hits[0].score, 1.0, 1e-12);
}

TEST(Fusion, InvalidParamsThrow) {
  EXPECT_THROW(fuse(kDense, kBm25, weighted(1.5)), sieve::Error);
  EXPECT_THROW(fuse(kDense, kBm25, weighted(-0.1)), sieve::Error);
  EXPECT_THROW(fuse(kDense, kBm25, weighted(std::numeric_limits<double>::quiet_NaN())), sieve::Error);
  EXPECT_THROW(fuse(kDense, kBm25, rrf(10, -1)), sieve::Error);
}

TEST(Fusion, SingleListHits) {
  const Ranked list = {{4, 2.5}, {1, 1.5}, {9, 0.5}};
  auto hits = single_list_hits(list, /*dense=*/true, 2);
  ASSERT_EQ(docs_of(hits), (std::vector<uint32_t>{4, 1}));
  EXPECT_DOUBLE_EQ(hits[0].score, 2.5);
  EXPECT_DOUBLE_EQ(hits[0].dense_score, 2.5);
  EXPECT_EQ(hits[0].dense_rank, 1);
  EXPECT_EQ(hits[1].dense_rank, 2);
  EXPECT_TRUE(std::isnan(hits[0].bm25_score));
  EXPECT_EQ(hits[0].bm25_rank, 0);

  hits = single_list_hits(list, /*dense=*/false, 10);
  ASSERT_EQ(docs_of(hits), (std::vector<uint32_t>{4, 1, 9}));
  EXPECT_DOUBLE_EQ(hits[2].score, 0.5);
  EXPECT_DOUBLE_EQ(hits[2].bm25_score, 0.5);
  EXPECT_EQ(hits[2].bm25_rank, 3);
  EXPECT_TRUE(std::isnan(hits[2].dense_score));
  EXPECT_EQ(hits[2].dense_rank, 0);

  EXPECT_TRUE(single_list_hits(list, true, 0).empty());
  EXPECT_TRUE(single_list_hits({}, true, 5).empty());
}

}  // namespace
}  // namespace sieve::index
