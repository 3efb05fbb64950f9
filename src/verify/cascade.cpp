// The gate's two tiers: the cascade's score and the calibration of its band.
#include <algorithm>
#include <cmath>
#include <limits>

#include "eval/stats.h"
#include "sieve/cross_encoder.h"
#include "sieve/error.h"
#include "sieve/verify.h"

namespace sieve {

void require_calibrated_cascade(const ResolvedVerifier& verifier) {
  SIEVE_THROW_IF_NOT(!verifier.cascade() || verifier.calibrated,
                     "'" << verifier.name << "' has no band for the model's gate: calibrate the cascade (sieve verify "
                                             "calibrate --verifier " << verifier.name << " --pairs DEV)");
}

float cascade_score(float fast, float cross, double fast_threshold, double cross_threshold, const CascadeBand& band) {
  if (!band.contains(fast)) return fast;
  double s;
  if (cross >= cross_threshold)
    s = cross_threshold < 1 ? fast_threshold + (band.high - fast_threshold) * (cross - cross_threshold) / (1 - cross_threshold)
                            : fast_threshold;
  else
    s = band.low + (fast_threshold - band.low) * (cross / cross_threshold);  // cross_threshold > cross >= 0
  // In float the mapped score must keep the cross-encoder's decision at the fast threshold.
  float r = static_cast<float>(s);
  if (cross >= cross_threshold)
    while (r < fast_threshold) r = std::nextafter(r, std::numeric_limits<float>::infinity());
  else
    while (r >= fast_threshold) r = std::nextafter(r, -std::numeric_limits<float>::infinity());
  return r;
}

float cascade_score(float fast, float cross, double fast_threshold, double cross_threshold,
                    const TierCombination& combination, const CascadeBand& band) {
  if (!band.contains(fast) || !combination.valid()) return cascade_score(fast, cross, fast_threshold, cross_threshold, band);
  return cascade_score(fast, combination.score(fast, cross), fast_threshold, combination.threshold, band);
}

namespace {

double auc_of(const std::vector<float>& scores, const std::vector<bool>& positive) {
  std::vector<double> pos, neg;
  for (size_t i = 0; i < scores.size(); ++i) (positive[i] ? pos : neg).push_back(scores[i]);
  return eval::roc_auc(pos, neg);
}

}  // namespace

CascadeCalibration calibrate_cascade(const std::vector<float>& fast, const std::vector<float>& cross,
                                     const std::vector<bool>& positive, double fast_threshold,
                                     double cross_threshold, double max_sent, const TierCombination& combination) {
  SIEVE_THROW_IF_NOT(fast.size() == cross.size() && fast.size() == positive.size() && !fast.empty(),
                     "the cascade's calibration needs both tiers' scores of the same labelled pairs");
  const bool combined = combination.valid();
  const double band_threshold = combined ? combination.threshold : cross_threshold;  // what decides the band
  SIEVE_THROW_IF_NOT(std::isfinite(fast_threshold) && std::isfinite(band_threshold),
                     "calibrate both tiers' thresholds before the cascade's band");
  SIEVE_THROW_IF_NOT(band_threshold > 0 && band_threshold <= 1,
                     (combined ? "the combination's" : "the cross-encoder's") << " threshold must lie in (0, 1]");
  SIEVE_THROW_IF_NOT(max_sent >= 0 && max_sent <= 1, "the share sent must lie in [0, 1]");
  const bool has_pos = std::find(positive.begin(), positive.end(), true) != positive.end();
  const bool has_neg = std::find(positive.begin(), positive.end(), false) != positive.end();
  SIEVE_THROW_IF_NOT(has_pos && has_neg, "the cascade's calibration needs positive and negative pairs");
  for (size_t i = 0; i < fast.size(); ++i)
    SIEVE_THROW_IF_NOT(std::isfinite(fast[i]) && std::isfinite(cross[i]),
                       "the cascade's calibration needs finite scores: pair " << i << " (0-based) has "
                                                                              << fast[i] << " / " << cross[i]);
  // Distances of the fast scores from the threshold, nearest first: a band of half-width d sends
  // every pair within d.
  std::vector<double> dist(fast.size());
  for (size_t i = 0; i < fast.size(); ++i) dist[i] = std::abs(double(fast[i]) - fast_threshold);
  std::sort(dist.begin(), dist.end());
  CascadeCalibration best;
  best.auc_fast = auc_of(fast, positive);
  best.auc_cross = auc_of(cross, positive);
  best.auc_cascade = best.auc_fast;  // the empty band: the fast tier alone
  const size_t n = fast.size();
  std::vector<float> mixed(n);
  for (int pct = 1; pct <= 100 && pct <= static_cast<int>(std::floor(max_sent * 100 + 1e-9)); ++pct) {
    const size_t count = static_cast<size_t>(std::floor(n * pct / 100.0));
    if (count == 0) continue;
    const double d = dist[count - 1];
    CascadeBand band{fast_threshold - d, fast_threshold + d};
    size_t sent = 0;
    for (size_t i = 0; i < n; ++i) {
      sent += band.contains(fast[i]);
      mixed[i] = cascade_score(fast[i], cross[i], fast_threshold, cross_threshold, combination, band);
    }
    if (double(sent) / n > max_sent + 1e-12) break;  // ties at the edge sent more than allowed
    const double auc = auc_of(mixed, positive);
    if (auc > best.auc_cascade + 1e-12) {
      best.auc_cascade = auc;
      best.band = band;
      best.sent = double(sent) / n;
    }
  }
  return best;
}

}  // namespace sieve
