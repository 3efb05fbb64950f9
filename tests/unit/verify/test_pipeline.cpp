// Gate calibration (hand-computed cases and synthetic distributions) and the two-stage pipeline
// against stage 1 and a plain-loop MaxSim on the encoder's own token states.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>

#include "sieve/encoder.h"
#include "sieve/error.h"
#include "index/manifest.h"
#include "sieve/pipeline.h"
#include "support/fixtures.h"
#include "support/test_util.h"

namespace sieve {
namespace {

TEST(Calibration, HandComputedThresholds) {
  // scores 0.9 P, 0.8 N, 0.7 P, 0.6 P, 0.5 N. Precision at each threshold, high to low:
  // 0.9: 1/1; 0.8: 1/2; 0.7: 2/3; 0.6: 3/4; 0.5: 3/5.
  std::vector<float> s = {0.7f, 0.5f, 0.9f, 0.6f, 0.8f};
  std::vector<bool> p = {true, false, true, true, false};
  Calibration c = calibrate_threshold(s, p, 0.75);
  EXPECT_TRUE(c.reached);
  EXPECT_FLOAT_EQ(c.threshold, 0.6f);  // the lowest threshold with precision >= 0.75: recall 3/3
  EXPECT_DOUBLE_EQ(c.precision, 0.75);
  EXPECT_DOUBLE_EQ(c.recall, 1.0);
  c = calibrate_threshold(s, p, 0.8);
  EXPECT_FLOAT_EQ(c.threshold, 0.9f);  // only 0.9 reaches 0.8: recall 1/3
  EXPECT_DOUBLE_EQ(c.recall, 1.0 / 3);
  EXPECT_EQ(c.positives, 3u);
  EXPECT_EQ(c.negatives, 2u);
  // Ties are accepted together: 0.7 P, 0.7 N, 0.6 P -> 0.7: 1/2, 0.6: 2/3.
  c = calibrate_threshold({0.7f, 0.7f, 0.6f}, {true, false, true}, 0.6);
  EXPECT_FLOAT_EQ(c.threshold, 0.6f);
  EXPECT_NEAR(c.precision, 2.0 / 3, 1e-12);
  // Unreachable: 0.9 N, 0.8 P -> best precision 1/2 at 0.8, reported as not reached.
  c = calibrate_threshold({0.9f, 0.8f}, {false, true}, 1.0);
  EXPECT_FALSE(c.reached);
  EXPECT_FLOAT_EQ(c.threshold, 0.8f);
  EXPECT_DOUBLE_EQ(c.precision, 0.5);
  // Balanced: 4 positives, 2 near-misses. Scores 0.9 P, 0.8 N, 0.7 P, 0.6 P, 0.5 N, 0.4 P.
  // Thresholds: 0.9 TPR 1/4 FPR 0 -> 1; 0.8 TPR 1/4 FPR 1/2 -> 1/3; 0.7 2/4, 1/2 -> 1/2;
  // 0.6 3/4, 1/2 -> 3/5; 0.5 3/4, 1 -> 3/7; 0.4 1, 1 -> 1/2. Unbalanced at 0.6: 3/4.
  const std::vector<float> bs = {0.9f, 0.8f, 0.7f, 0.6f, 0.5f, 0.4f};
  const std::vector<bool> bp = {true, false, true, true, false, true};
  c = calibrate_threshold(bs, bp, 0.6, true);
  EXPECT_FLOAT_EQ(c.threshold, 0.6f);
  EXPECT_NEAR(c.precision, 3.0 / 5, 1e-12);
  EXPECT_DOUBLE_EQ(c.recall, 0.75);
  c = calibrate_threshold(bs, bp, 0.61, true);
  EXPECT_FLOAT_EQ(c.threshold, 0.9f);
  c = calibrate_threshold(bs, bp, 0.61, false);  // plain precision at 0.4 is 4/6
  EXPECT_FLOAT_EQ(c.threshold, 0.4f);
  test::expect_error([] { calibrate_threshold({0.1f}, {false}, 0.9); }, "at least one positive");
  test::expect_error([] { calibrate_threshold({0.1f}, {true}, 0.0); }, "target precision");
}

TEST(Calibration, BalancedAccuracyByHand) {
  // Scores 0.9 P, 0.8 N, 0.7 P, 0.6 P, 0.5 N, 0.4 P (4 positives, 2 near-misses). TPR - FPR at
  // each threshold: 0.9 1/4; 0.8 1/4 - 1/2; 0.7 2/4 - 1/2; 0.6 3/4 - 1/2 = 1/4; 0.5 3/4 - 1;
  // 0.4 1 - 1 = 0. Best 1/4, at 0.9 and at 0.6: the tie keeps the higher threshold.
  const std::vector<float> s = {0.9f, 0.8f, 0.7f, 0.6f, 0.5f, 0.4f};
  const std::vector<bool> p = {true, false, true, true, false, true};
  Calibration c = calibrate_balanced_accuracy(s, p);
  EXPECT_FLOAT_EQ(c.threshold, 0.9f);
  EXPECT_DOUBLE_EQ(c.recall, 0.25);
  EXPECT_DOUBLE_EQ(c.precision, 1.0);
  EXPECT_TRUE(c.reached);
  // One more positive at 0.55 makes 0.55 the best: TPR 4/5, FPR 1/2 -> 0.3 (0.9: 1/5).
  std::vector<float> s2 = s;
  std::vector<bool> p2 = p;
  s2.push_back(0.55f);
  p2.push_back(true);
  c = calibrate_balanced_accuracy(s2, p2);
  EXPECT_FLOAT_EQ(c.threshold, 0.55f);
  EXPECT_DOUBLE_EQ(c.recall, 0.8);
  EXPECT_NEAR(c.precision, 0.8 / 1.3, 1e-12);
  // Against a brute force over every distinct score on random data.
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0, 1);
  for (int round = 0; round < 20; ++round) {
    std::vector<float> r;
    std::vector<bool> l;
    for (int i = 0; i < 60; ++i) {
      l.push_back(i % 3 != 0);
      r.push_back(std::round((u(rng) + (l.back() ? 0.3f : 0.0f)) * 20) / 20);  // ties
    }
    long best = -1000000;  // J * 40 * 20 = 20 tp - 40 fp (40 positives, 20 near-misses): exact
    float best_t = 0;
    for (float t : r) {
      long tp = 0, fp = 0;
      for (size_t i = 0; i < r.size(); ++i) (l[i] ? tp : fp) += r[i] >= t;
      const long j = 20 * tp - 40 * fp;
      if (j > best || (j == best && t > best_t)) best = j, best_t = t;
    }
    EXPECT_FLOAT_EQ(calibrate_balanced_accuracy(r, l).threshold, best_t) << round;
  }
  test::expect_error([] { calibrate_balanced_accuracy({0.1f, 0.2f}, {true, true}); }, "positive and near-miss");
  test::expect_error([&] { calibrate_balanced_accuracy({0.1f, std::nanf("")}, {true, false}); }, "finite scores");
}

// A NaN breaks the sort's strict weak ordering (undefined behaviour) and would end up as the
// stored threshold: non-finite scores are refused, naming the first one's position.
TEST(Calibration, RefusesNonFiniteScores) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<bool> p = {true, false, true, false, true};
  test::expect_error([&] { calibrate_threshold({0.9f, 0.5f, nan, 0.7f, nan}, p, 0.75); }, "score at position 2 (0-based) is nan");
  test::expect_error([&] { calibrate_threshold({nan, 0.5f, 0.8f, 0.7f, 0.6f}, p, 0.75, true); }, "position 0 (0-based) is nan");
  test::expect_error([&] { calibrate_threshold({0.9f, 0.5f, 0.8f, -inf, 0.6f}, p, 0.75); }, "position 3 (0-based) is -inf");
  test::expect_error([&] { calibrate_threshold({0.9f, 0.5f, 0.8f, 0.7f, inf}, p, 0.75); }, "position 4 (0-based) is inf");
}

TEST(Calibration, SyntheticDistributionsHitTheTarget) {
  std::mt19937 rng(5);
  std::normal_distribution<float> pos(0.8f, 0.1f), neg(0.5f, 0.12f);
  auto draw = [&](size_t n, std::vector<float>& s, std::vector<bool>& p) {
    for (size_t i = 0; i < n; ++i) {
      bool is_pos = i % 3 != 0;  // 2:1 positives
      s.push_back(is_pos ? pos(rng) : neg(rng));
      p.push_back(is_pos);
    }
  };
  std::vector<float> s, held;
  std::vector<bool> p, held_p;
  draw(20000, s, p);
  draw(20000, held, held_p);
  for (double target : {0.9, 0.95, 0.99}) {
    Calibration c = calibrate_threshold(s, p, target);
    ASSERT_TRUE(c.reached);
    EXPECT_GE(c.precision, target);
    // On fresh pairs from the same distributions the gate keeps (about) the requested precision.
    size_t tp = 0, fp = 0;
    for (size_t i = 0; i < held.size(); ++i)
      if (held[i] >= c.threshold) (held_p[i] ? tp : fp) += 1;
    double precision = double(tp) / double(tp + fp);
    EXPECT_NEAR(precision, target, 0.01) << "target " << target;
  }
}

TEST(Calibration, Labels) {
  for (const char* t : {"1", "TRUE", "same", "entailment", "Paraphrase"}) EXPECT_TRUE(parse_identity_label(t)) << t;
  for (const char* f : {"0", "false", "contradiction", "neutral", "near_miss"}) EXPECT_FALSE(parse_identity_label(f)) << f;
  test::expect_error([] { parse_identity_label("maybe"); }, "not an identity label");
}

// MaxSim in plain loops over fp32 token states (the reference for the pipeline's F1).
double maxsim(const TokenStates& q, const TokenStates& c, size_t d) {
  double total = 0;
  for (size_t i = 0; i < q.length; ++i) {
    double best = -2;
    for (size_t j = 0; j < c.length; ++j) {
      double dot = 0, a = 0, b = 0;
      for (size_t h = 0; h < d; ++h) {
        dot += double(q.values[i * d + h]) * c.values[j * d + h];
        a += double(q.values[i * d + h]) * q.values[i * d + h];
        b += double(c.values[j * d + h]) * c.values[j * d + h];
      }
      best = std::max(best, dot / std::sqrt(a * b));
    }
    total += best;
  }
  return total / q.length;
}

TEST(Pipeline, VerifiesReranksAndGatesStageOneHits) {
  std::string dir = test::make_temp_dir("pipeline");
  std::string model = dir + "/model";
  write_fixture_model(model, test::tiny_model_options());
  const char* texts[] = {"the dog bit the man", "the man bit the dog", "a red car is parked", "the cat sat on the mat",
                         "a man walks a dog", "blue house near the river", "the dog did not bite the man"};
  {
    std::ofstream f(dir + "/c.tsv");
    for (int i = 0; i < 7; ++i) f << "d" << i << "\t" << texts[i] << "\n";
  }
  build_index(model, dir + "/c.tsv", dir + "/ix");
  auto index = Index::open(dir + "/ix");
  auto f1 = Verifier::load("F1");
  PipelineParams pp;
  pp.candidates = 7;
  pp.k = 7;
  pp.rerank = false;
  const std::string query = "who bit the man";
  auto stage1 = index->search(query, SearchParams{SearchMode::Dense, 7});
  auto kept = search_verified(*index, *f1, query, pp);
  ASSERT_EQ(kept.size(), 7u);
  auto enc = Encoder::load(model);
  EncodeCall call;
  call.token_states = true;
  std::vector<std::string> all = {query};
  for (const char* t : texts) all.push_back(t);
  Embeddings e = enc->encode(all, call);
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(kept[i].hit.id, stage1.hits[i].id);  // no rerank: stage-1 order
    EXPECT_EQ(kept[i].stage1_rank, i + 1);
    size_t doc = std::stoul(kept[i].hit.id.substr(1));
    // The stored tokens are SQ8-compressed: within the codec's error of the fp32 reference.
    EXPECT_NEAR(kept[i].verifier_score, maxsim(e.tokens[0], e.tokens[doc + 1], e.dim), 0.01) << kept[i].hit.id;
  }
  pp.rerank = true;
  auto reranked = search_verified(*index, *f1, query, pp);
  for (size_t i = 1; i < reranked.size(); ++i) EXPECT_GE(reranked[i - 1].verifier_score, reranked[i].verifier_score);
  // Gate at the median verifier score: exactly the candidates at or above it survive.
  std::vector<float> sc;
  for (const auto& h : kept) sc.push_back(h.verifier_score);
  std::sort(sc.begin(), sc.end());
  pp.gate = true;
  pp.threshold = sc[3];
  auto gated = search_verified(*index, *f1, query, pp);
  EXPECT_EQ(gated.size(), 4u);
  for (const auto& h : gated) EXPECT_GE(h.verifier_score, sc[3]);
  pp.threshold = std::numeric_limits<double>::quiet_NaN();
  test::expect_error([&] { search_verified(*index, *f1, query, pp); }, "gating needs a threshold");
  // The "cosine" verifier reads the stored keys: it must give the dense stage-1 scores (FAISS).
  pp.gate = false;
  pp.rerank = false;
  auto cos = search_verified_cosine(*index, query, pp);
  ASSERT_EQ(cos.size(), stage1.hits.size());
  for (size_t i = 0; i < cos.size(); ++i) EXPECT_NEAR(cos[i].verifier_score, stage1.hits[i].score, 1e-5);
}

// F1 with the score of candidate `at` replaced by `bad` (what a broken learned verifier gives).
class PoisonedVerifier final : public Verifier {
 public:
  PoisonedVerifier(size_t at, float bad) : inner_(Verifier::load("F1")), at_(at), bad_(bad) {}
  const VerifierConfig& config() const override { return inner_->config(); }
  size_t parameter_count() const override { return 0; }
  using Verifier::score;
  std::vector<float> score(const TokenStates& query, const std::vector<const TokenStates*>& candidates,
                           ScoreTiming* timing) const override {
    std::vector<float> s = inner_->score(query, candidates, timing);
    if (at_ < s.size()) s[at_] = bad_;
    return s;
  }
  void save(const std::string&) const override {}
  void save_with_threshold(const std::string&, double) const override {}
  void save_for_encoder(const std::string&, const std::string&) const override {}

 private:
  std::unique_ptr<Verifier> inner_;
  size_t at_;
  float bad_;
};

// A NaN score breaks the rerank's ordering (undefined behaviour) and the gate's comparison (a NaN
// is silently rejected): the pipeline refuses it, naming the candidate.
TEST(Pipeline, RefusesNonFiniteVerifierScores) {
  std::string dir = test::make_temp_dir("pipeline_nan");
  write_fixture_model(dir + "/model", test::tiny_model_options());
  {
    std::ofstream f(dir + "/c.tsv");
    const char* texts[] = {"the dog bit the man", "the man bit the dog", "a red car is parked", "the cat sat on the mat"};
    for (int i = 0; i < 4; ++i) f << "d" << i << "\t" << texts[i] << "\n";
  }
  build_index(dir + "/model", dir + "/c.tsv", dir + "/ix");
  auto index = Index::open(dir + "/ix");
  PipelineParams pp;
  pp.candidates = 4;
  pp.k = 4;
  const std::string query = "who bit the man";
  EXPECT_EQ(search_verified(*index, PoisonedVerifier(99, 0), query, pp).size(), 4u);  // nothing poisoned
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (bool rerank : {true, false})
    for (bool gate : {false, true}) {
      pp.rerank = rerank;
      pp.gate = gate;
      pp.threshold = gate ? 0.5 : std::numeric_limits<double>::quiet_NaN();
      test::expect_error([&] { search_verified(*index, PoisonedVerifier(2, nan), query, pp); },
                         "score of candidate 2 (0-based; stage-1 rank 3");
      test::expect_error([&] { search_verified(*index, PoisonedVerifier(0, -inf), query, pp); }, "is -inf");
    }
}

// explain_pair's decision compares the score with the threshold: a NaN would read as "reject".
TEST(Explain, RefusesANonFiniteVerifierScore) {
  std::string dir = test::make_temp_dir("explain_nan");
  write_fixture_model(dir + "/model", test::tiny_model_options());
  auto enc = Encoder::load(dir + "/model");
  const std::string q = "the dog bit the man", c = "the man bit the dog";
  const PoisonedVerifier clean(99, 0), with_nan(0, std::numeric_limits<float>::quiet_NaN()),
      with_inf(0, -std::numeric_limits<float>::infinity());
  EXPECT_EQ(explain_pair(*enc, &clean, q, c, -2.0).decision, "accept");  // F1 scores lie in [-1, 1]
  for (double threshold : {0.5, std::numeric_limits<double>::quiet_NaN()}) {
    test::expect_error([&] { explain_pair(*enc, &with_nan, q, c, threshold); }, "verifier's score of this pair is nan");
    test::expect_error([&] { explain_pair(*enc, &with_inf, q, c, threshold); }, "verifier's score of this pair is -inf");
  }
}

TEST(Pipeline, ExactMatchVerifierGetsTheDocumentsTokenIds) {
  std::string dir = test::make_temp_dir("pipeline_em");
  std::string model = dir + "/model";
  write_fixture_model(model, test::tiny_model_options());
  const char* texts[] = {"the dog bit the man", "the man bit the dog", "a red car is parked", "the cat sat on the mat"};
  {
    std::ofstream f(dir + "/c.tsv");
    for (int i = 0; i < 4; ++i) f << "d" << i << "\t" << texts[i] << "\n";
  }
  build_index(model, dir + "/c.tsv", dir + "/ix");
  auto index = Index::open(dir + "/ix");
  auto enc = Encoder::load(model);
  EncodeCall call;
  call.token_states = true;
  std::vector<std::string> all = {"the dog bit the man"};
  for (const char* t : texts) all.push_back(t);
  Embeddings e = enc->encode(all, call);
  for (uint32_t doc = 0; doc < 4; ++doc) {
    const size_t i = std::stoul(index->document(doc).id.substr(1)) + 1;
    // The ids the encoder saw for this text (the vocabulary's, through its own tokenizer call).
    EXPECT_EQ(index->token_ids(doc), e.encodings[i].ids);
    EXPECT_EQ(e.tokens[i].ids, e.encodings[i].ids);
    EXPECT_EQ(index->token_ids(doc).size(), index->tokens(doc).length);
    EXPECT_TRUE(index->tokens(doc).ids.empty());  // the states; the ids are asked apart
  }
  VerifierConfig c;
  c.kind = VerifierKind::F4;
  c.encoder_dim = enc->dim();
  c.encoder_identity = index->stats().model_identity;
  c.f4.exact_match = true;
  auto v = Verifier::create(c, 5);
  PipelineParams pp;
  pp.candidates = 4;
  pp.k = 4;
  pp.rerank = false;
  auto kept = search_verified(*index, *v, all[0], pp);
  ASSERT_EQ(kept.size(), 4u);
  for (const auto& h : kept) {
    const size_t i = std::stoul(h.hit.id.substr(1)) + 1;
    // Against the fp32 states with the encoder's ids (the stored ones are SQ8-compressed).
    EXPECT_NEAR(h.verifier_score, v->score(e.tokens[0], {&e.tokens[i]})[0], 0.02) << h.hit.id;
  }
  TokenStates bare = index->tokens(0);
  test::expect_error([&] { v->score(e.tokens[0], {&bare}); }, "token ids");
  IndexOpenOptions bare_open;
  bare_open.load_encoder = false;
  auto no_encoder = Index::open(dir + "/ix", bare_open);
  EXPECT_EQ(no_encoder->token_ids(0), index->token_ids(0));  // stored: no tokenizer needed
  // An index from before the ids were kept re-tokenizes the text (the same ids), with the encoder.
  index::Manifest m = index::read_manifest(dir + "/ix", index::kManifestFile);
  ASSERT_TRUE(m.has_token_ids);
  m.has_token_ids = false;
  index::write_manifest(dir + "/ix", index::kManifestFile, m);
  auto old = Index::open(dir + "/ix");
  for (uint32_t doc = 0; doc < 4; ++doc)
    EXPECT_EQ(old->token_ids(doc), e.encodings[std::stoul(old->document(doc).id.substr(1)) + 1].ids);
  auto old_bare = Index::open(dir + "/ix", bare_open);
  test::expect_error([&] { old_bare->token_ids(0); }, "encoder");
}

}  // namespace
}  // namespace sieve

namespace sieve {
namespace {

TEST(GateQuestionNote, QuestionsGetTheNoteStatementsDoNot) {
  for (const char* q : {"who bit the man", "  What causes scurvy?", "Does aspirin prevent heart attacks",
                        "aspirin prevents heart attacks?", "HOW do vaccines work"})
    EXPECT_NE(gate_question_note(q).find("looks like a question"), std::string::npos) << q;
  for (const char* q : {"the dog bit the man", "aspirin prevents heart attacks", "", "   ", "whoever wins gets a prize",
                        "Island of the day", "the question is how"})
    EXPECT_EQ(gate_question_note(q), "") << q;
}

}  // namespace
}  // namespace sieve
