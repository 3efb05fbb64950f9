#include "eval/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sieve/error.h"

namespace sieve::eval {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Sorting needs a strict weak order, which a NaN score breaks; a NaN score is a caller bug upstream.
std::vector<double> sorted_scores(const std::vector<double>& scores, const char* what) {
  for (double s : scores) SIEVE_THROW_IF_NOT(!std::isnan(s), what << ": NaN score");
  std::vector<double> out = scores;
  std::sort(out.begin(), out.end());
  return out;
}

// How many elements of the sorted `v` are >= t.
size_t count_at_least(const std::vector<double>& v, double t) {
  return static_cast<size_t>(v.end() - std::lower_bound(v.begin(), v.end(), t));
}

}  // namespace

MeanStd mean_std(const std::vector<double>& values) {
  MeanStd r;
  r.n = values.size();
  if (values.empty()) {
    r.mean = r.std = kNaN;
    return r;
  }
  const double n = static_cast<double>(values.size());
  double sum = 0.0;
  for (double v : values) sum += v;
  r.mean = sum / n;
  // Two passes: the sum of squared deviations does not cancel the way E[x^2] - E[x]^2 does.
  double ss = 0.0;
  for (double v : values) ss += (v - r.mean) * (v - r.mean);
  r.std = std::sqrt(ss / n);
  return r;
}

double roc_auc(const std::vector<double>& positives, const std::vector<double>& negatives) {
  if (positives.empty() || negatives.empty()) return kNaN;
  const std::vector<double> neg = sorted_scores(negatives, "roc_auc");
  for (double p : positives) SIEVE_THROW_IF_NOT(!std::isnan(p), "roc_auc: NaN score");
  // For each positive, the negatives strictly below it win the pair and the equal ones tie (0.5).
  // Counted in halves so that the sum stays an exact integer until the final division.
  double halves = 0.0;
  for (double p : positives) {
    const auto lo = std::lower_bound(neg.begin(), neg.end(), p);
    const auto hi = std::upper_bound(lo, neg.end(), p);
    halves += 2.0 * static_cast<double>(lo - neg.begin()) + static_cast<double>(hi - lo);
  }
  return halves / (2.0 * static_cast<double>(positives.size()) * static_cast<double>(neg.size()));
}

double accuracy_at(const std::vector<double>& positives, const std::vector<double>& negatives,
                   double threshold) {
  const size_t total = positives.size() + negatives.size();
  if (total == 0) return kNaN;
  const auto accepted =
      std::count_if(positives.begin(), positives.end(), [&](double s) { return s >= threshold; });
  const auto rejected =
      std::count_if(negatives.begin(), negatives.end(), [&](double s) { return !(s >= threshold); });
  return static_cast<double>(accepted + rejected) / static_cast<double>(total);
}

double balanced_accuracy_at(const std::vector<double>& positives, const std::vector<double>& negatives,
                            double threshold) {
  if (positives.empty() || negatives.empty()) return kNaN;
  const auto accepted =
      std::count_if(positives.begin(), positives.end(), [&](double s) { return s >= threshold; });
  const auto rejected =
      std::count_if(negatives.begin(), negatives.end(), [&](double s) { return !(s >= threshold); });
  const double tpr = static_cast<double>(accepted) / static_cast<double>(positives.size());
  const double tnr = static_cast<double>(rejected) / static_cast<double>(negatives.size());
  return (tpr + tnr) / 2.0;
}

double best_balanced_threshold(const std::vector<double>& positives, const std::vector<double>& negatives) {
  if (positives.empty() || negatives.empty()) return kNaN;
  const std::vector<double> pos = sorted_scores(positives, "best_balanced_threshold");
  const std::vector<double> neg = sorted_scores(negatives, "best_balanced_threshold");
  std::vector<double> candidates = pos;
  candidates.insert(candidates.end(), neg.begin(), neg.end());
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  candidates.push_back(std::numeric_limits<double>::infinity());
  // (TP/P + TN/N) / 2 ranks thresholds like TP*N + TN*P, an exact integer: two thresholds with the
  // same balanced accuracy compare equal, so the "lowest threshold wins ties" rule is not left to
  // rounding.
  const unsigned long long P = pos.size(), N = neg.size();
  double best = candidates.front();
  unsigned long long best_score = 0;
  bool first = true;
  for (double t : candidates) {  // ascending, so only a strictly better score moves `best`
    const unsigned long long tp = count_at_least(pos, t);
    const unsigned long long tn = N - count_at_least(neg, t);
    const unsigned long long score = tp * N + tn * P;
    if (first || score > best_score) {
      best = t;
      best_score = score;
      first = false;
    }
  }
  return best;
}

Histogram histogram(const std::vector<double>& values, double lo, double hi, size_t bins) {
  SIEVE_THROW_IF_NOT(bins > 0, "histogram needs at least one bin");
  SIEVE_THROW_IF_NOT(std::isfinite(lo) && std::isfinite(hi) && hi > lo,
                     "histogram range [" << lo << ", " << hi << ") must be finite with hi > lo");
  Histogram h;
  h.lo = lo;
  h.hi = hi;
  h.counts.assign(bins, 0);
  const double nb = static_cast<double>(bins);
  for (double v : values) {
    if (std::isnan(v)) continue;
    size_t bin;
    if (v < lo) {
      bin = 0;
    } else if (v >= hi) {
      bin = bins - 1;
    } else {
      // Rounding can put a value just below hi at index `bins`; clamp it into the last bin.
      bin = std::min(static_cast<size_t>((v - lo) / (hi - lo) * nb), bins - 1);
    }
    ++h.counts[bin];
  }
  return h;
}

MeanStd difference(const MeanStd& a, const MeanStd& b) {
  MeanStd d;
  d.mean = b.mean - a.mean;
  d.std = std::sqrt(a.std * a.std + b.std * b.std);
  // Only as many values back the difference as the smaller side has.
  d.n = std::min(a.n, b.n);
  return d;
}

}  // namespace sieve::eval
