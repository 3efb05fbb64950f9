// Statistics against hand-worked values and brute force: ROC-AUC against a count over every
// (positive, negative) pair, the best threshold against a scan of every candidate.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "eval/stats.h"
#include "sieve/error.h"

namespace sieve::eval {
namespace {

using Scores = std::vector<double>;
constexpr double kTol = 1e-12;
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TEST(MeanStd, PopulationStdByHand) {
  // mean 40 / 8 = 5; squared deviations 9 1 1 1 0 0 4 16 = 32; population variance 32 / 8 = 4.
  const MeanStd r = mean_std({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_EQ(r.n, 8u);
  EXPECT_NEAR(r.mean, 5.0, kTol);
  EXPECT_NEAR(r.std, 2.0, kTol);  // the sample std (ddof 1) would be sqrt(32 / 7) = 2.138
  const MeanStd one = mean_std({0.25});
  EXPECT_EQ(one.n, 1u);
  EXPECT_EQ(one.mean, 0.25);
  EXPECT_EQ(one.std, 0.0);
  // Large offset: the deviations 1, -1 must survive (a naive E[x^2] - E[x]^2 loses them).
  const MeanStd big = mean_std({1e9 + 1, 1e9 - 1});
  EXPECT_NEAR(big.mean, 1e9, 1e-6);
  EXPECT_NEAR(big.std, 1.0, 1e-6);
  const MeanStd none = mean_std({});
  EXPECT_EQ(none.n, 0u);
  EXPECT_TRUE(std::isnan(none.mean));
  EXPECT_TRUE(std::isnan(none.std));
}

TEST(RocAuc, HandExamples) {
  EXPECT_EQ(roc_auc({3, 4}, {1, 2}), 1.0);          // perfect
  EXPECT_EQ(roc_auc({1, 2}, {3, 4}), 0.0);          // inverted
  EXPECT_EQ(roc_auc({0.5, 0.5}, {0.5, 0.5}), 0.5);  // all equal: every pair ties
  // Pairs: (0.8, 0.4) 1, (0.8, 0.2) 1, (0.4, 0.4) 0.5, (0.4, 0.2) 1 -> 3.5 / 4.
  EXPECT_NEAR(roc_auc({0.8, 0.4}, {0.4, 0.2}), 0.875, kTol);
  // One positive against three negatives, one of them tied: (2 + 0.5) / 3.
  EXPECT_NEAR(roc_auc({1.0}, {0.0, 1.0, -kInf}), 2.5 / 3.0, kTol);
  EXPECT_TRUE(std::isnan(roc_auc({}, {1.0})));
  EXPECT_TRUE(std::isnan(roc_auc({1.0}, {})));
  EXPECT_TRUE(std::isnan(roc_auc({}, {})));
  EXPECT_THROW(roc_auc({kNaN}, {1.0}), sieve::Error);
  EXPECT_THROW(roc_auc({1.0}, {kNaN}), sieve::Error);
}

TEST(RocAuc, MatchesPairCountOnRandomDataWithTies) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    const int np = std::uniform_int_distribution<int>(1, 40)(rng);
    const int nn = std::uniform_int_distribution<int>(1, 40)(rng);
    std::uniform_int_distribution<int> level(0, 9);  // 10 levels: plenty of ties
    Scores pos, neg;
    for (int i = 0; i < np; ++i) pos.push_back((level(rng) + 1) / 10.0);  // positives a bit higher
    for (int i = 0; i < nn; ++i) neg.push_back(level(rng) / 10.0);
    double wins = 0.0;
    for (double p : pos)
      for (double n : neg) wins += p > n ? 1.0 : (p == n ? 0.5 : 0.0);
    EXPECT_NEAR(roc_auc(pos, neg), wins / (np * nn), kTol) << "trial " << trial;
  }
}

// Positives {0.9, 0.6, 0.3}, negatives {0.5, 0.2}; "accept when score >= t".
const Scores kPos = {0.9, 0.6, 0.3};
const Scores kNeg = {0.5, 0.2};

TEST(Thresholds, AccuracyByHand) {
  // t = 0.5: accepts 0.9, 0.6 (TP 2) and 0.5 (a negative at the threshold is accepted: TN 1).
  EXPECT_NEAR(accuracy_at(kPos, kNeg, 0.5), 3.0 / 5.0, kTol);
  EXPECT_NEAR(balanced_accuracy_at(kPos, kNeg, 0.5), (2.0 / 3.0 + 1.0 / 2.0) / 2.0, kTol);
  // t = 0.6: TP 2, TN 2.
  EXPECT_NEAR(accuracy_at(kPos, kNeg, 0.6), 4.0 / 5.0, kTol);
  EXPECT_NEAR(balanced_accuracy_at(kPos, kNeg, 0.6), (2.0 / 3.0 + 1.0) / 2.0, kTol);
  // t = +inf rejects all: TP 0, TN 2; t = -inf accepts all: TP 3, TN 0.
  EXPECT_NEAR(accuracy_at(kPos, kNeg, kInf), 2.0 / 5.0, kTol);
  EXPECT_NEAR(balanced_accuracy_at(kPos, kNeg, kInf), 0.5, kTol);
  EXPECT_NEAR(accuracy_at(kPos, kNeg, -kInf), 3.0 / 5.0, kTol);
  // One side empty: plain accuracy is defined, balanced is not.
  EXPECT_NEAR(accuracy_at({}, kNeg, 0.3), 0.5, kTol);  // rejects 0.2 only
  EXPECT_TRUE(std::isnan(balanced_accuracy_at({}, kNeg, 0.3)));
  EXPECT_TRUE(std::isnan(balanced_accuracy_at(kPos, {}, 0.3)));
  EXPECT_TRUE(std::isnan(accuracy_at({}, {}, 0.3)));
}

TEST(Thresholds, BestBalancedByHand) {
  // Candidates 0.2 0.3 0.5 0.6 0.9 inf; (TPR, TNR): (1, 0) (1, 1/2) (2/3, 1/2) (2/3, 1) (1/3, 1)
  // (0, 1); balanced 0.5 0.75 0.583 0.833 0.667 0.5 -> 0.6.
  EXPECT_EQ(best_balanced_threshold(kPos, kNeg), 0.6);
  // Pos {2, 4}, neg {1, 3}: t = 2 gives (1, 1/2) and t = 4 gives (1/2, 1), both 0.75: lowest wins.
  EXPECT_EQ(best_balanced_threshold({2, 4}, {1, 3}), 2.0);
  // Inverted scores: every candidate scores at most 0.5, first reached at the lowest, t = 0.
  EXPECT_EQ(best_balanced_threshold({0}, {1}), 0.0);
  // A score equal to the threshold is accepted: t = 5 accepts both positives and the negative 5,
  // (1, 1/2) = 0.75, against t = 1 (1, 0) and t = inf (0, 1).
  EXPECT_EQ(best_balanced_threshold({5, 5}, {5, 1}), 5.0);
  EXPECT_TRUE(std::isnan(best_balanced_threshold({}, {1})));
  EXPECT_TRUE(std::isnan(best_balanced_threshold({1}, {})));
  EXPECT_THROW(best_balanced_threshold({kNaN}, {1}), sieve::Error);
}

TEST(Thresholds, BestBalancedMatchesScanOfEveryCandidate) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 50; ++trial) {
    std::uniform_int_distribution<int> size(1, 25), level(0, 12);
    Scores pos, neg, candidates = {kInf};
    for (int i = size(rng); i > 0; --i) pos.push_back(level(rng) / 4.0);
    for (int i = size(rng); i > 0; --i) neg.push_back(level(rng) / 4.0);
    for (double s : pos) candidates.push_back(s);
    for (double s : neg) candidates.push_back(s);
    // Balanced accuracy in exact integer form TP * N + TN * P; best value, then lowest threshold.
    long best_score = -1;
    double best = kNaN;
    for (double t : candidates) {
      long tp = 0, tn = 0;
      for (double s : pos) tp += s >= t;
      for (double s : neg) tn += s < t;
      const long score = tp * static_cast<long>(neg.size()) + tn * static_cast<long>(pos.size());
      if (score > best_score || (score == best_score && t < best)) {
        best_score = score;
        best = t;
      }
    }
    EXPECT_EQ(best_balanced_threshold(pos, neg), best) << "trial " << trial;
  }
}

TEST(Histogram, EdgesOutliersAndNaN) {
  // [0, 1) in 4 bins of 0.25: 0 and -3 -> bin 0; 0.25, 0.49 -> 1; 0.5 -> 2; 0.75, 1 (== hi) and 2
  // -> 3; -inf -> 0, +inf -> 3; NaN skipped.
  const Histogram h = histogram({0.0, 0.25, 0.5, 0.75, 1.0, -3.0, kNaN, 0.49, 2.0, -kInf, kInf}, 0.0, 1.0, 4);
  EXPECT_EQ(h.lo, 0.0);
  EXPECT_EQ(h.hi, 1.0);
  EXPECT_EQ(h.counts, (std::vector<size_t>{3, 2, 1, 4}));
  // Bins of width 0.5 over [-1, 0): the value just below hi stays in the last bin.
  EXPECT_EQ(histogram({-1.0, -0.5, std::nextafter(0.0, -1.0)}, -1.0, 0.0, 2).counts,
            (std::vector<size_t>{1, 2}));
  EXPECT_EQ(histogram({}, 0.0, 1.0, 3).counts, (std::vector<size_t>{0, 0, 0}));
  EXPECT_THROW(histogram({0.5}, 0.0, 1.0, 0), sieve::Error);
  EXPECT_THROW(histogram({0.5}, 1.0, 1.0, 2), sieve::Error);
  EXPECT_THROW(histogram({0.5}, 1.0, 0.0, 2), sieve::Error);
  EXPECT_THROW(histogram({0.5}, kNaN, 1.0, 2), sieve::Error);
}

TEST(Difference, MeansSubtractAndStdsAddInQuadrature) {
  const MeanStd a{0.5, 0.3, 3}, b{0.75, 0.4, 5};
  const MeanStd d = difference(a, b);
  EXPECT_NEAR(d.mean, 0.25, kTol);  // b - a
  EXPECT_NEAR(d.std, 0.5, kTol);    // sqrt(0.09 + 0.16)
  EXPECT_EQ(d.n, 3u);
  EXPECT_NEAR(difference(b, a).mean, -0.25, kTol);
}

}  // namespace
}  // namespace sieve::eval
