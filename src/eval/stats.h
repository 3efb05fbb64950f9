// Statistics for near-miss evaluation and seed aggregation: mean and (population) std, ROC-AUC,
// thresholds, histograms. No torch; every function is deterministic and checked against brute force.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace sieve::eval {

/// Mean and population standard deviation (ddof = 0, as NumPy's default and the paper's tables).
struct MeanStd {
  double mean = 0, std = 0;
  size_t n = 0;
};
/// NaN mean and std for an empty input.
MeanStd mean_std(const std::vector<double>& values);

/// ROC-AUC of scores where positives should be higher: P(pos > neg) + 0.5 P(pos == neg) over all
/// (positive, negative) pairs, computed by sorting in O(n log n). NaN when either side is empty.
double roc_auc(const std::vector<double>& positives, const std::vector<double>& negatives);

/// Accuracy of the rule "accept when score >= threshold" on positives (should be accepted) and
/// negatives (should be rejected): correct / (positives + negatives). NaN when both are empty.
double accuracy_at(const std::vector<double>& positives, const std::vector<double>& negatives, double threshold);

/// Balanced accuracy of the same rule: (TPR + TNR) / 2. NaN when either side is empty.
double balanced_accuracy_at(const std::vector<double>& positives, const std::vector<double>& negatives,
                            double threshold);

/// The threshold with the highest balanced accuracy on the given scores (ties: the lowest such
/// threshold). Candidates are the distinct scores and +infinity (reject all). NaN when either
/// side is empty.
double best_balanced_threshold(const std::vector<double>& positives, const std::vector<double>& negatives);

/// Fixed-width histogram over [lo, hi): bin i covers [lo + i w, lo + (i+1) w); values below lo go
/// to bin 0, values >= hi to the last bin; NaN values are skipped. Throws when bins == 0 or hi <= lo.
struct Histogram {
  double lo = 0, hi = 1;
  std::vector<size_t> counts;
};
Histogram histogram(const std::vector<double>& values, double lo, double hi, size_t bins);

/// The spread of a difference of independent means: mean = b.mean - a.mean,
/// std = sqrt(a.std^2 + b.std^2) (the paper's "Delta B - A" cells).
MeanStd difference(const MeanStd& a, const MeanStd& b);

}  // namespace sieve::eval
