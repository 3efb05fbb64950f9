// Near-miss and pooled-space evaluation against brute force: cosines of texts encoded one at a
// time, AUC by counting ordered pairs, per-category means and wins counted by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <fstream>

#include "eval/pairs.h"
#include "experiment/nearmiss_eval.h"
#include "experiment/space_eval.h"
#include "nearmiss/perturb.h"
#include "experiment_test_util.h"
#include "sieve/verify.h"

namespace sieve::test {
namespace {

// Every rewrite kind of the generator counts as a positive wherever a command is not told
// otherwise; every structural kind counts as a near-miss.
TEST(PairEval, DefaultPositivesAreTheGeneratorsRewriteKinds) {
  const auto& pos = eval::default_positive_categories();
  for (int k = 0; k <= static_cast<int>(nearmiss::Kind::PassiveRoleSwap); ++k) {
    const auto kind = static_cast<nearmiss::Kind>(k);
    const bool listed = std::find(pos.begin(), pos.end(), nearmiss::kind_name(kind)) != pos.end();
    EXPECT_EQ(listed, nearmiss::is_positive(kind)) << nearmiss::kind_name(kind);
  }
  EXPECT_EQ(eval::default_positive_categories_list().substr(0, 16), "synonym,passive,");
}

struct Row {
  std::string s1, s2, category;
};

std::string write_pairs(const std::string& dir, const std::vector<Row>& rows) {
  const std::string path = dir + "/pairs.tsv";
  std::ofstream f(path);
  f << "sentence1\tsentence2\tcategory\n";
  for (const auto& r : rows) f << r.s1 << "\t" << r.s2 << "\t" << r.category << "\n";
  return path;
}

double cosine(const std::string& model, const std::string& a, const std::string& b) {
  const auto k = keys_one_by_one(model, {a, b});
  return dot(k[0], k[1]);
}

double brute_auc(const std::vector<double>& pos, const std::vector<double>& neg) {
  double wins = 0;
  for (double p : pos)
    for (double n : neg) wins += p > n ? 1.0 : p == n ? 0.5 : 0.0;
  return wins / (pos.size() * neg.size());
}

const std::vector<Row> kRows = {
    {"the dog bit the man", "the man bit the dog", "role_swap"},
    {"the dog bit the man", "the dog did not bite the man", "negation"},
    {"the dog bit the man", "the hound bit the man", "synonym"},
    {"the cat sat on the mat", "the mat sat on the cat", "role_swap"},
    {"the cat sat on the mat", "the cat did not sit on the mat", "negation"},
    {"the cat sat on the mat", "the cat rested on the mat", "synonym"},
    {"a red car in the city", "a car in the red city", "binding_swap"},
    {"a red car in the city", "a red automobile in the city", "paraphrase"},
    {"water under the old tree", "water over the old tree", "spatial"},
    {"the light is green", "the light is not green", "neutral"},
};

class PairEvalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("paireval");
    model_ = dir_ + "/model";
    write_fixture_model(model_, tiny_model_options(11));
  }
  std::string dir_, model_;
};

TEST_F(PairEvalTest, CosineScoresAucAndMarginMatchBruteForce) {
  const auto pairs = eval::read_pairs(write_pairs(dir_, kRows));
  experiment::NearMissEvalOptions o;
  o.gamma = 0.01;
  const auto e = experiment::evaluate_nearmisses(model_, pairs, {{"cosine", nullptr}}, o);
  EXPECT_EQ(e.positives, 3u);   // synonym x2, paraphrase
  EXPECT_EQ(e.nearmisses, 6u);  // role_swap x2, negation x2, binding_swap, spatial
  EXPECT_EQ(e.ignored, 1u);     // neutral
  EXPECT_FALSE(e.identity_positives);
  ASSERT_EQ(e.scorers.size(), 1u);
  const auto& s = e.scorers[0];

  std::vector<double> pos, neg;
  std::map<std::string, std::vector<double>> by_cat;
  std::map<std::string, double> para;  // the positive of each sentence1
  for (const auto& r : kRows) {
    const double c = cosine(model_, r.s1, r.s2);
    if (r.category == "synonym" || r.category == "paraphrase") {
      pos.push_back(c);
      para.emplace(r.s1, c);
    }
  }
  size_t margin = 0, with_ref = 0;
  for (const auto& r : kRows) {
    if (r.category == "synonym" || r.category == "paraphrase" || r.category == "neutral") continue;
    const double c = cosine(model_, r.s1, r.s2);
    neg.push_back(c);
    by_cat[r.category].push_back(c);
    // The reference is the paraphrase of the same sentence, else the identity pair (cosine 1).
    const double ref = para.count(r.s1) ? para.at(r.s1) : 1.0;
    margin += ref >= c + 0.01;
    ++with_ref;
  }
  EXPECT_NEAR(s.overall.auc, brute_auc(pos, neg), 1e-6);
  EXPECT_NEAR(s.overall.margin_rate, double(margin) / with_ref, 1e-12);
  ASSERT_EQ(s.categories.size(), 4u);
  for (const auto& c : s.categories) {
    const auto& v = by_cat.at(c.category);
    double mean = 0, var = 0;
    for (double x : v) mean += x / v.size();
    for (double x : v) var += (x - mean) * (x - mean) / v.size();
    EXPECT_NEAR(c.score.mean, mean, 1e-6) << c.category;
    EXPECT_NEAR(c.score.std, std::sqrt(var), 1e-5) << c.category;
    EXPECT_NEAR(c.auc, brute_auc(pos, v), 1e-6) << c.category;
  }
  // No file threshold for the cosine: chosen on the even-numbered pairs, measured on the odd ones.
  EXPECT_EQ(s.threshold_source, "held-out half");
  // The threshold is the best balanced accuracy on the even-numbered pairs (lowest on ties).
  const std::vector<double> cp = {pos[0], pos[2]}, cn = {neg[0], neg[2], neg[4]};
  std::vector<double> cands = {std::numeric_limits<double>::infinity()};
  cands.insert(cands.end(), cp.begin(), cp.end());
  cands.insert(cands.end(), cn.begin(), cn.end());
  double best_t = 0, best_b = -1;
  for (double t : cands) {
    double tpr = 0, tnr = 0;
    for (double x : cp) tpr += (x >= t) / double(cp.size());
    for (double x : cn) tnr += (x < t) / double(cn.size());
    const double b = (tpr + tnr) / 2;
    if (b > best_b + 1e-12 || (std::abs(b - best_b) <= 1e-12 && t < best_t)) {
      best_b = b;
      best_t = t;
    }
  }
  EXPECT_NEAR(s.threshold, best_t, 1e-6);
  const std::vector<double> tp = {pos[1]}, tn = {neg[1], neg[3], neg[5]};
  double correct = 0;
  for (double x : tp) correct += x >= s.threshold;
  for (double x : tn) correct += x < s.threshold;
  EXPECT_NEAR(s.accuracy, correct / 4.0, 1e-12);
}

TEST_F(PairEvalTest, WithoutPositivesTheIdentityPairIsThePositive) {
  std::vector<Row> rows;
  for (const auto& r : kRows)
    if (r.category == "role_swap" || r.category == "negation") rows.push_back(r);
  const auto e = experiment::evaluate_nearmisses(model_, eval::read_pairs(write_pairs(dir_, rows)),
                                                 {{"cosine", nullptr}}, {});
  EXPECT_TRUE(e.identity_positives);
  EXPECT_EQ(e.positives, 2u);  // two distinct sentence1
  EXPECT_NEAR(e.scorers[0].positives.mean, 1.0, 1e-5);
  // Every near-miss of a random model is below 1 - gamma unless it is nearly identical.
  std::vector<double> neg;
  for (const auto& r : rows) neg.push_back(cosine(model_, r.s1, r.s2));
  size_t margin = 0;
  for (double c : neg) margin += 1.0 >= c + 0.05 - 1e-6;
  EXPECT_NEAR(e.scorers[0].overall.margin_rate, double(margin) / neg.size(), 1e-12);
}

TEST_F(PairEvalTest, VerifierScoresAreNaiveMaxSimAndTheFileThresholdIsUsed) {
  const auto pairs = eval::read_pairs(write_pairs(dir_, kRows));
  VerifierConfig vc;
  vc.kind = VerifierKind::F1;
  const std::string file = dir_ + "/f1.safetensors";
  Verifier::create(vc)->save_with_threshold(file, 0.5);
  auto f1 = Verifier::load(file);
  const auto e = experiment::evaluate_nearmisses(model_, pairs, {{"cosine", nullptr}, {"F1", f1.get()}}, {});
  ASSERT_EQ(e.scorers.size(), 2u);
  const auto& s = e.scorers[1];
  EXPECT_EQ(s.threshold_source, "file");
  EXPECT_DOUBLE_EQ(s.threshold, 0.5);

  auto enc = Encoder::load(model_);
  EncodeCall call;
  call.token_states = true;
  auto maxsim = [&](const std::string& a, const std::string& b) {
    const Embeddings ex = enc->encode({a}, call), ey = enc->encode({b}, call);
    const size_t d = ex.dim;
    double sum = 0;
    for (size_t i = 0; i < ex.tokens[0].length; ++i) {
      double best = -2;
      for (size_t j = 0; j < ey.tokens[0].length; ++j) {
        double dd = 0, na = 0, nb = 0;
        for (size_t h = 0; h < d; ++h) {
          const double p = ex.tokens[0].values[i * d + h], q = ey.tokens[0].values[j * d + h];
          dd += p * q;
          na += p * p;
          nb += q * q;
        }
        best = std::max(best, dd / std::sqrt(na * nb));
      }
      sum += best;
    }
    return sum / ex.tokens[0].length;
  };
  std::vector<double> neg;
  size_t rejected = 0;
  for (const auto& r : kRows) {
    if (r.category == "role_swap" || r.category == "negation" || r.category == "binding_swap" ||
        r.category == "spatial") {
      neg.push_back(maxsim(r.s1, r.s2));
      rejected += neg.back() < 0.5;
    }
  }
  double mean = 0;
  for (double x : neg) mean += x / neg.size();
  EXPECT_NEAR(s.overall.score.mean, mean, 1e-5);
  EXPECT_NEAR(s.overall.accuracy, double(rejected) / neg.size(), 1e-12);
}

// A token codec changes only what the candidates' token states are read as: fp32 keeps every
// verifier score (to rounding), a coarse codec moves them, and the pooled cosine never changes.
TEST_F(PairEvalTest, TokenCodecActsOnTheCandidatesTokenStatesOnly) {
  const auto pairs = eval::read_pairs(write_pairs(dir_, kRows));
  VerifierConfig vc;
  vc.kind = VerifierKind::F1;
  auto f1 = Verifier::create(vc);
  const std::vector<experiment::Scorer> scorers = {{"cosine", nullptr}, {"F1", f1.get()}};
  const auto exact = experiment::evaluate_nearmisses(model_, pairs, scorers, {});
  experiment::NearMissEvalOptions o;
  o.token_codec = "fp32";
  const auto same = experiment::evaluate_nearmisses(model_, pairs, scorers, o);
  EXPECT_EQ(same.token_codec, "Flat");
  EXPECT_NEAR(same.scorers[1].overall.score.mean, exact.scorers[1].overall.score.mean, 1e-6);
  EXPECT_NEAR(same.scorers[1].positives.mean, exact.scorers[1].positives.mean, 1e-6);
  o.token_codec = "RES16x1";  // 16 centroids, one bit per component: coarse
  o.codec_train_tokens = 1000;
  const auto coarse = experiment::evaluate_nearmisses(model_, pairs, scorers, o);
  EXPECT_EQ(coarse.token_code_bytes, 2 + Encoder::load(model_)->dim() / 8);
  EXPECT_GT(std::abs(coarse.scorers[1].overall.score.mean - exact.scorers[1].overall.score.mean), 1e-4);
  EXPECT_EQ(coarse.scorers[0].overall.score.mean, exact.scorers[0].overall.score.mean);
  EXPECT_EQ(experiment::nearmiss_json(coarse).at("token_codec").at("factory"), "RES16x1");
}

TEST_F(PairEvalTest, NoNearMissIsAnError) {
  const auto pairs = eval::read_pairs(write_pairs(dir_, {{"a b", "a c", "synonym"}}));
  expect_error([&] { experiment::evaluate_nearmisses(model_, pairs, {{"cosine", nullptr}}, {}); }, "no near-miss");
}

TEST_F(PairEvalTest, SpaceCountsWinsFromPerPairDeltas) {
  const std::string model_b = dir_ + "/model_b";
  write_fixture_model(model_b, tiny_model_options(12));
  const auto pairs = eval::read_pairs(write_pairs(dir_, kRows));
  experiment::SpaceEvalOptions o;
  o.tie_band = 0.001;
  const auto s = experiment::evaluate_space(model_, model_b, pairs, o);
  std::map<std::string, std::array<size_t, 3>> wins;  // b, a, ties
  std::map<std::string, std::vector<double>> delta;
  size_t overall_n = 0, overall_b = 0;  // positives (synonym, paraphrase) stay out of "overall"
  for (const auto& r : kRows) {
    const double d = cosine(model_b, r.s1, r.s2) - cosine(model_, r.s1, r.s2);
    delta[r.category].push_back(d);
    wins[r.category][d < -0.001 ? 0 : d > 0.001 ? 1 : 2]++;
    if (r.category != "synonym" && r.category != "paraphrase") {
      ++overall_n;
      overall_b += d < -0.001;
    }
  }
  ASSERT_EQ(s.categories.size(), wins.size());
  size_t total = 0;
  for (const auto& c : s.categories) {
    EXPECT_EQ(c.b_wins, wins[c.category][0]) << c.category;
    EXPECT_EQ(c.a_wins, wins[c.category][1]) << c.category;
    EXPECT_EQ(c.ties, wins[c.category][2]) << c.category;
    double mean = 0;
    for (double d : delta[c.category]) mean += d / delta[c.category].size();
    EXPECT_NEAR(c.delta.mean, mean, 1e-5) << c.category;
    size_t in_hist = 0;
    for (size_t n : c.hist_a.counts) in_hist += n;
    EXPECT_EQ(in_hist, c.n);
    total += c.n;
  }
  EXPECT_EQ(total, kRows.size());
  EXPECT_EQ(s.overall.n, overall_n);
  EXPECT_EQ(s.overall.b_wins, overall_b);
  EXPECT_NEAR(s.overall.b_win_rate, double(overall_b) / overall_n, 1e-12);
}

}  // namespace
}  // namespace sieve::test
