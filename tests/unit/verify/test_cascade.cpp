// The cascade's arithmetic: its score mapping against hand-computed values, its band calibration
// against a brute-force search with an O(n^2) ROC-AUC, and the gate modes' names and specs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "sieve/verify.h"
#include "support/test_util.h"

namespace sieve {
namespace {

TEST(CascadeScore, HandComputedValues) {
  const CascadeBand band{0.3, 0.7};
  const double tf = 0.5, tc = 0.6;
  // Outside the band the fast score stands, whatever the cross-encoder says.
  EXPECT_FLOAT_EQ(cascade_score(0.9f, 0.0f, tf, tc, band), 0.9f);
  EXPECT_FLOAT_EQ(cascade_score(0.1f, 1.0f, tf, tc, band), 0.1f);
  // Inside: [0, tc) -> [0.3, 0.5), [tc, 1] -> [0.5, 0.7].
  EXPECT_NEAR(cascade_score(0.45f, 0.6f, tf, tc, band), 0.5, 1e-6);
  EXPECT_NEAR(cascade_score(0.45f, 1.0f, tf, tc, band), 0.7, 1e-6);
  EXPECT_NEAR(cascade_score(0.45f, 0.8f, tf, tc, band), 0.5 + 0.2 * 0.2 / 0.4, 1e-6);
  EXPECT_NEAR(cascade_score(0.55f, 0.3f, tf, tc, band), 0.3 + 0.2 * 0.5, 1e-6);
  EXPECT_NEAR(cascade_score(0.55f, 0.0f, tf, tc, band), 0.3, 1e-6);
  // The band's edges are inside.
  EXPECT_NEAR(cascade_score(0.3f, 0.0f, tf, tc, band), 0.3, 1e-6);
  EXPECT_NEAR(cascade_score(0.7f, 0.0f, tf, tc, band), 0.3, 1e-6);
  // An empty band sends nothing.
  EXPECT_FLOAT_EQ(cascade_score(0.5f, 0.0f, tf, tc, CascadeBand{}), 0.5f);
}

TEST(CascadeScore, InsideTheBandTheCrossEncoderDecidesAndOrders) {
  const CascadeBand band{0.2, 0.9};
  const double tf = 0.4, tc = 0.35;
  float last = -1;
  for (int i = 0; i <= 1000; ++i) {
    const float cross = i / 1000.0f;
    const float s = cascade_score(0.5f, cross, tf, tc, band);
    EXPECT_EQ(s >= tf, cross >= tc) << cross;  // accepted at the fast threshold iff the cross-encoder accepts
    EXPECT_GE(s, band.low - 1e-6);
    EXPECT_LE(s, band.high + 1e-6);
    EXPECT_GE(s, last) << cross;  // monotone in the cross-encoder's score
    last = s;
  }
}

// ROC-AUC by definition: P(pos > neg) + P(pos == neg) / 2 over every pair.
double naive_auc(const std::vector<float>& s, const std::vector<bool>& pos) {
  double num = 0, den = 0;
  for (size_t i = 0; i < s.size(); ++i)
    for (size_t j = 0; j < s.size(); ++j)
      if (pos[i] && !pos[j]) {
        num += s[i] > s[j] ? 1 : s[i] == s[j] ? 0.5 : 0;
        den += 1;
      }
  return num / den;
}

struct Labelled {
  std::vector<float> fast, cross;
  std::vector<bool> positive;
};

// Fast scores that are noisy near 0.5; a cross-encoder that is right (`cross_good`) or random.
Labelled make_pairs(size_t n, bool cross_good, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  Labelled l;
  for (size_t i = 0; i < n; ++i) {
    const bool p = i % 2 == 0;
    const float far = u(rng) < 0.6f ? 1.0f : 0.0f;  // 60 % of the pairs are easy for the fast tier
    const float fast = far > 0 ? (p ? 0.8f + 0.2f * u(rng) : 0.2f * u(rng)) : 0.4f + 0.2f * u(rng);
    const float cross = cross_good ? (p ? 0.6f + 0.4f * u(rng) : 0.5f * u(rng)) : u(rng);
    l.fast.push_back(fast);
    l.cross.push_back(cross);
    l.positive.push_back(p);
  }
  return l;
}

// The cascade's score as docs/cli.md states it, written out here in double (not cascade_score,
// which the search under test calls): outside the band the fast score; inside, the cross-encoder's
// [0, tc) mapped linearly onto [low, tf) and [tc, 1] onto [tf, high].
double naive_cascade(float fast, float cross, double tf, double tc, const CascadeBand& band) {
  if (!(fast >= band.low && fast <= band.high)) return fast;
  if (cross >= tc) return tf + (band.high - tf) * (cross - tc) / (1 - tc);
  return band.low + (tf - band.low) * cross / tc;
}

// The calibration's search, written out plainly: every whole percent up to max_sent.
CascadeCalibration brute_force(const Labelled& l, double tf, double tc, double max_sent) {
  CascadeCalibration best;
  best.auc_fast = naive_auc(l.fast, l.positive);
  best.auc_cross = naive_auc(l.cross, l.positive);
  best.auc_cascade = best.auc_fast;
  std::vector<double> d;
  for (float f : l.fast) d.push_back(std::abs(f - tf));
  std::sort(d.begin(), d.end());
  for (int pct = 1; pct <= int(max_sent * 100 + 1e-9); ++pct) {
    const size_t count = size_t(std::floor(l.fast.size() * pct / 100.0));
    if (!count) continue;
    const CascadeBand band{tf - d[count - 1], tf + d[count - 1]};
    std::vector<float> s;
    size_t sent = 0;
    for (size_t i = 0; i < l.fast.size(); ++i) {
      sent += l.fast[i] >= band.low && l.fast[i] <= band.high;
      s.push_back(static_cast<float>(naive_cascade(l.fast[i], l.cross[i], tf, tc, band)));
    }
    if (double(sent) / l.fast.size() > max_sent) break;
    const double auc = naive_auc(s, l.positive);
    if (auc > best.auc_cascade + 1e-12) {
      best = {band, double(sent) / l.fast.size(), best.auc_fast, best.auc_cross, auc};
    }
  }
  return best;
}

TEST(CalibrateCascade, EqualsABruteForceSearch) {
  for (bool good : {true, false})
    for (double max_sent : {0.0, 0.1, 0.25, 0.5}) {
      const Labelled l = make_pairs(400, good, 7);
      const CascadeCalibration c = calibrate_cascade(l.fast, l.cross, l.positive, 0.5, 0.55, max_sent);
      const CascadeCalibration b = brute_force(l, 0.5, 0.55, max_sent);
      EXPECT_NEAR(c.auc_fast, b.auc_fast, 1e-12);
      EXPECT_NEAR(c.auc_cross, b.auc_cross, 1e-12);
      EXPECT_NEAR(c.auc_cascade, b.auc_cascade, 1e-12) << good << " " << max_sent;
      EXPECT_DOUBLE_EQ(c.band.low, b.band.low);
      EXPECT_DOUBLE_EQ(c.band.high, b.band.high);
      EXPECT_DOUBLE_EQ(c.sent, b.sent);
      EXPECT_LE(c.sent, max_sent);
    }
}

TEST(CalibrateCascade, SendsTheUncertainPairsToAGoodCrossEncoderAndNothingToABadOne) {
  const Labelled good = make_pairs(400, true, 11);
  const CascadeCalibration g = calibrate_cascade(good.fast, good.cross, good.positive, 0.5, 0.55, 0.5);
  EXPECT_GT(g.sent, 0.2);
  EXPECT_GT(g.auc_cascade, g.auc_fast + 0.05);
  EXPECT_LE(g.band.low, 0.5);
  EXPECT_GE(g.band.high, 0.5);
  // Nearly every noisy fast score (0.4-0.6) lies inside the chosen band, every easy one outside.
  EXPECT_LE(g.band.low, 0.42);
  EXPECT_GE(g.band.high, 0.58);
  EXPECT_GT(g.band.low, 0.2);
  EXPECT_LT(g.band.high, 0.8);
  // A cross-encoder that guesses cannot beat the fast tier on the pairs it would get.
  const Labelled bad = make_pairs(400, false, 11);
  const CascadeCalibration b = calibrate_cascade(bad.fast, bad.cross, bad.positive, 0.5, 0.55, 0.5);
  EXPECT_LT(b.auc_cascade, g.auc_cascade);
  // max_sent 0: the fast tier alone, an empty band.
  const CascadeCalibration none = calibrate_cascade(good.fast, good.cross, good.positive, 0.5, 0.55, 0.0);
  EXPECT_GT(none.band.low, none.band.high);
  EXPECT_EQ(none.sent, 0);
  EXPECT_DOUBLE_EQ(none.auc_cascade, none.auc_fast);
}

// The combination of the two tiers: p = sigma(bias + w_f z_f + w_c z_c), z the standardised logits.
TEST(TierCombination, HandComputedValues) {
  TierCombination t;
  EXPECT_FALSE(t.valid());  // no threshold: none
  t.mean_fast = 0.5;
  t.scale_fast = 2;
  t.mean_cross = -1;
  t.scale_cross = 0.5;
  t.w_fast = 1.5;
  t.w_cross = 0.8;
  t.bias = -0.25;
  t.threshold = 0.6;
  EXPECT_TRUE(t.valid());
  // fast 0.8: logit ln 4 = 1.386294; cross 0.3: logit ln(3/7) = -0.847298.
  const double zf = (std::log(4.0) - 0.5) / 2, zc = (std::log(3.0 / 7.0) + 1) / 0.5;
  EXPECT_NEAR(t.score(0.8f, 0.3f), 1 / (1 + std::exp(-(-0.25 + 1.5 * zf + 0.8 * zc))), 1e-6);
  // Scores at 0 and 1 are clamped to [1e-6, 1 - 1e-6], never infinite.
  const double lo = std::log(1e-6 / (1 - 1e-6));
  EXPECT_NEAR(t.score(0.0f, 1.0f), 1 / (1 + std::exp(-(-0.25 + 1.5 * (lo - 0.5) / 2 + 0.8 * (-lo + 1) / 0.5))), 1e-6);
  TierCombination bad = t;
  bad.scale_cross = 0;
  EXPECT_FALSE(bad.valid());
  // In the band, the combination decides at its own threshold, mapped onto the fast one.
  const CascadeBand band{0.3, 0.7};
  EXPECT_FLOAT_EQ(cascade_score(0.9f, 0.0f, 0.5, 0.99, t, band), 0.9f);  // outside: the fast score
  for (float cross : {0.01f, 0.2f, 0.5f, 0.9f, 0.99f}) {
    const float s = cascade_score(0.45f, cross, 0.5, 0.99, t, band);  // 0.99: the cross-encoder's, unused
    EXPECT_FLOAT_EQ(s, cascade_score(0.45f, t.score(0.45f, cross), 0.5, 0.6, band));
    EXPECT_EQ(s >= 0.5f, t.score(0.45f, cross) >= 0.6f) << cross;
    // Without a combination, the cross-encoder alone decides, at its own threshold.
    EXPECT_FLOAT_EQ(cascade_score(0.45f, cross, 0.5, 0.99, TierCombination{}, band),
                    cascade_score(0.45f, cross, 0.5, 0.99, band));
  }
}

TEST(CalibrateCascade, WithACombinationEqualsABruteForceSearch) {
  TierCombination t;
  t.w_fast = 1.0;
  t.w_cross = 1.2;
  t.scale_fast = t.scale_cross = 1.5;
  t.threshold = 0.45;
  for (double max_sent : {0.1, 0.5, 1.0}) {
    const Labelled l = make_pairs(300, true, 17);
    // The brute force with the combination's p in place of the cross-encoder's score.
    Labelled mapped = l;
    for (size_t i = 0; i < l.fast.size(); ++i) mapped.cross[i] = t.score(l.fast[i], l.cross[i]);
    const CascadeCalibration b = brute_force(mapped, 0.5, t.threshold, max_sent);
    const CascadeCalibration c = calibrate_cascade(l.fast, l.cross, l.positive, 0.5, 0.99, max_sent, t);
    EXPECT_NEAR(c.auc_cascade, b.auc_cascade, 1e-12) << max_sent;
    EXPECT_DOUBLE_EQ(c.band.low, b.band.low);
    EXPECT_DOUBLE_EQ(c.band.high, b.band.high);
    EXPECT_NEAR(c.auc_cross, naive_auc(l.cross, l.positive), 1e-12);  // the cross-encoder's own, reported
  }
  // Sending every pair, the cascade ranks as the combination itself.
  const Labelled l = make_pairs(300, true, 19);
  const CascadeCalibration all = calibrate_cascade(l.fast, l.cross, l.positive, 0.5, 0.99, 1.0, t);
  std::vector<float> p;
  for (size_t i = 0; i < l.fast.size(); ++i) p.push_back(t.score(l.fast[i], l.cross[i]));
  EXPECT_GE(all.auc_cascade, naive_auc(p, l.positive) - 1e-12);
}

TEST(CalibrateCascade, RefusesWhatItCannotCalibrate) {
  const Labelled l = make_pairs(20, true, 3);
  test::expect_error([&] { calibrate_cascade(l.fast, l.cross, l.positive, std::nan(""), 0.5); }, "thresholds");
  test::expect_error([&] { calibrate_cascade(l.fast, {0.5f}, l.positive, 0.5, 0.5); }, "same labelled pairs");
  test::expect_error([&] { calibrate_cascade(l.fast, l.cross, std::vector<bool>(20, true), 0.5, 0.5); },
                     "positive and negative");
  std::vector<float> nan_fast = l.fast;
  nan_fast[3] = std::nanf("");
  test::expect_error([&] { calibrate_cascade(nan_fast, l.cross, l.positive, 0.5, 0.5); }, "pair 3");
}

TEST(GateMode, NamesAndSpecs) {
  for (const char* n : {"auto", "fast", "accurate", "cascade"}) EXPECT_STREQ(gate_mode_name(gate_mode_from_name(n)), n);
  test::expect_error([] { gate_mode_from_name("turbo"); }, "auto, fast, accurate or cascade");
  const std::string model = test::make_temp_dir("gate_mode") + "/model";
  std::filesystem::create_directories(model);
  EXPECT_EQ(gate_verifier_spec(GateMode::Auto, "", model), "default");
  test::expect_error([&] { gate_verifier_spec(GateMode::Fast, "", model); }, "ships no verifier.safetensors");
  test::expect_error([&] { gate_verifier_spec(GateMode::Cascade, "", model); }, "needs a cross-encoder");
  EXPECT_EQ(gate_verifier_spec(GateMode::Accurate, "/x/ce", model), "cross:/x/ce");
  EXPECT_EQ(gate_verifier_spec(GateMode::Cascade, "/x/ce", model), "cascade:/x/ce");
  std::ofstream(model + "/verifier.safetensors") << "x";
  EXPECT_EQ(gate_verifier_spec(GateMode::Fast, "", model), model + "/verifier.safetensors");
  // MODEL_DIR/cross-encoder counts as installed only when it is a cross-encoder's folder.
  std::filesystem::create_directories(model + "/cross-encoder");
  EXPECT_EQ(installed_cross_encoder(model), "");
  std::ofstream(model + "/cross-encoder/config.json")
      << R"({"architectures": ["BertForSequenceClassification"], "id2label": {"0": "LABEL_0"}})";
  EXPECT_EQ(installed_cross_encoder(model), model + "/cross-encoder");
  EXPECT_EQ(gate_verifier_spec(GateMode::Cascade, "", model), "cascade:" + model + "/cross-encoder");
}

}  // namespace
}  // namespace sieve
