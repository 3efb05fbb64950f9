// The Mlp gate (issue 43): its features on hand-made pairs whose values are worked out by hand,
// against plain loops on random states, both directions averaged; its score against a plain loop
// over its weights (with and without the hidden layer); its file (version 7) read back equal, and
// the refusal of a file whose features are not this sieve's, of a non-positive scale, of
// mismatched sizes, and of the kind without a file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "core/file_util.h"
#include "sieve/error.h"
#include "sieve/safetensors.h"
#include "sieve/tokenizer.h"
#include "sieve/verify.h"
#include "support/test_util.h"
#include "unit/verify/token_ids_util.h"
#include "verify/map_scores.h"
#include "verify/similarity_map.h"

namespace sieve {
namespace {

constexpr size_t kD = test::kIdsDim;
using test::ptrs;
using test::tokens_with_ids;

size_t col(const std::string& name) {
  const auto& n = gate_feature_names();
  const auto it = std::find(n.begin(), n.end(), name);
  EXPECT_NE(it, n.end()) << name;
  return static_cast<size_t>(it - n.begin());
}

// One unit row per token: token id k's state is the basis vector e_k (the same word, the same state).
TokenStates basis_tokens(const std::vector<int32_t>& ids) {
  TokenStates t;
  t.length = ids.size();
  t.values.assign(ids.size() * kD, 0.f);
  for (size_t i = 0; i < ids.size(); ++i) t.values[i * kD + static_cast<size_t>(ids[i])] = 1.f;
  t.ids = ids;
  return t;
}

MlpGateOptions options() {
  MlpGateOptions o;
  o.cue_ids = {{7}, {8, 9}};  // "not" is 7; "n't" is the run 8 9
  o.voice_ids = {6};          // "by"
  o.conj_ids = {5};           // "and"
  return o;
}

TEST(GateFeatures, ARoleSwapByHand) {
  // "a b c" against "c b a": every word kept, every state matched, the order reversed.
  const TokenStates q = basis_tokens({1, 2, 3}), c = basis_tokens({3, 2, 1});
  const auto f = gate_features(q, {&c}, options(), 64, /*symmetric=*/false)[0];
  ASSERT_EQ(f.size(), gate_feature_names().size());
  EXPECT_NEAR(f[col("pooled")], 1.0, 1e-6);  // the same bag of states
  EXPECT_NEAR(f[col("f0")], 3.0 / 9.0, 1e-6);
  EXPECT_NEAR(f[col("f1")], 1.0, 1e-6);
  EXPECT_NEAR(f[col("row_min")], 1.0, 1e-6);
  EXPECT_NEAR(f[col("row_low")], 1.0, 1e-6);
  EXPECT_NEAR(f[col("id_share")], 1.0, 1e-6);
  EXPECT_NEAR(f[col("bigram_share")], 0.0, 1e-6);  // (1,2), (2,3): the candidate holds (3,2), (2,1)
  EXPECT_EQ(f[col("cue_gap")], 0.f);
  EXPECT_EQ(f[col("crossed")], 1.f);
  EXPECT_EQ(f[col("voice")], 0.f);
  EXPECT_NEAR(f[col("order_gap")], 1.0, 1e-6);    // crossed, same voice, share 1
  EXPECT_NEAR(f[col("discordant")], 1.0, 1e-6);   // all three pairs inverted
  EXPECT_NEAR(f[col("len_ratio")], 0.0, 1e-6);
  EXPECT_NEAR(f[col("displacement")], 2.0 / 3.0, 1e-6);  // rows 0, 1, 2 -> columns 2, 1, 0
}

TEST(GateFeatures, ANegatedPassiveByHand) {
  // "a b c" against "c 6 a 8 9 4": one id (4) new, the voice word (6) and the cue run "n't" added.
  const TokenStates q = basis_tokens({1, 2, 3}), c = basis_tokens({3, 6, 1, 8, 9, 4});
  const auto f = gate_features(q, {&c}, options(), 64, false)[0];
  EXPECT_NEAR(f[col("f1")], 2.0 / 3.0, 1e-6);         // rows a and c matched, b nowhere
  EXPECT_NEAR(f[col("row_min")], 0.0, 1e-6);
  EXPECT_NEAR(f[col("id_share")], 2.0 / 3.0, 1e-6);
  EXPECT_EQ(f[col("cue_gap")], 1.f);                  // one run, counted once
  EXPECT_EQ(f[col("crossed")], 1.f);
  EXPECT_EQ(f[col("voice")], 1.f);
  EXPECT_EQ(f[col("order_gap")], 0.f);                // the reordering a passive explains
  EXPECT_NEAR(f[col("discordant")], 1.0, 1e-6);
  EXPECT_NEAR(f[col("len_ratio")], std::log(2.0), 1e-6);
  EXPECT_NEAR(f[col("pooled")], 2.0 / std::sqrt(3.0 * 6.0), 1e-6);
  // F2 at tau 0.1 puts almost all of row b's weight nowhere special: its value is a mean of zeros.
  EXPECT_NEAR(f[col("f2")], 2.0 / 3.0, 1e-3);
}

TEST(GateFeatures, ASwappedCoordinationByHand) {
  // "a and b c" / "b and a c": the one reordered pair sits on both sides of "and", swapped.
  const TokenStates q = basis_tokens({1, 5, 2, 3}), c = basis_tokens({2, 5, 1, 3});
  const auto f = gate_features(q, {&c}, options(), 64, false)[0];
  EXPECT_EQ(f[col("crossed")], 1.f);
  EXPECT_NEAR(f[col("discordant")], 0.5, 1e-6);  // "and" counts too: (a, and), (a, b), (and, b) of six pairs
  EXPECT_NEAR(f[col("conj_swap")], 1.0, 1e-6);
  // "a and b c" / "a and c b": the reordered pair (b, c) lies after "and" on both sides.
  const TokenStates c2 = basis_tokens({1, 5, 3, 2});
  EXPECT_NEAR(gate_features(q, {&c2}, options(), 64, false)[0][col("conj_swap")], 0.0, 1e-6);
  // Two reordered pairs, one across "and": (a, b) and (c, d) in "a and b c d" / "b and a d c".
  const TokenStates q3 = basis_tokens({1, 5, 2, 3, 4}), c3 = basis_tokens({2, 5, 1, 4, 3});
  EXPECT_NEAR(gate_features(q3, {&c3}, options(), 64, false)[0][col("conj_swap")], 0.5, 1e-6);
  // The role swap of ARoleSwapByHand has no conjunction.
  const TokenStates r = basis_tokens({1, 2, 3}), rc = basis_tokens({3, 2, 1});
  EXPECT_EQ(gate_features(r, {&rc}, options(), 64, false)[0][col("conj_swap")], 0.f);
}

// Issue 57: questions, wh-words, numbers and opposite words, by hand. Ids: 10 "?", 11 "why", 12
// "how", 13 "1998", 14 "1999", 15 "above", 4 "below", 2 "reduced", 3 "increased".
MlpGateOptions question_options() {
  MlpGateOptions o = options();
  o.question_ids = {10};
  o.wh_ids = {11, 12};
  o.number_ids = {13, 14};
  o.opposite_ids = {{2, 3}, {3, 2}, {4, 15}, {15, 4}};
  return o;
}

TEST(GateFeatures, QuestionsWhWordsNumbersAndOppositesByHand) {
  const MlpGateOptions o = question_options();
  auto f = [&](const std::vector<int32_t>& a, const std::vector<int32_t>& b, bool symmetric = false) {
    const TokenStates q = basis_tokens(a), c = basis_tokens(b);
    return gate_features(q, {&c}, o, 64, symmetric)[0];
  };
  // "why a b ?" / "how a b ?": both questions, the wh-word changed.
  auto x = f({11, 1, 2, 10}, {12, 1, 2, 10});
  EXPECT_EQ(x[col("question")], 1.f);
  EXPECT_EQ(x[col("wh_gap")], 1.f);
  EXPECT_EQ(x[col("num_gap")], 0.f);
  EXPECT_EQ(x[col("opposite")], 0.f);
  // One side a question, the same wh-word: half a question, no gap.
  x = f({11, 1, 2, 10}, {11, 1, 2});
  EXPECT_EQ(x[col("question")], 0.5f);
  EXPECT_EQ(x[col("wh_gap")], 0.f);
  // "a in 1998" / "a in 1999": one number of the query missing; the same number: none.
  EXPECT_EQ(f({1, 2, 13}, {1, 2, 14})[col("num_gap")], 1.f);
  EXPECT_EQ(f({1, 2, 13}, {1, 13, 2})[col("num_gap")], 0.f);
  // "the cup is above the shelf" / "... below ...": one opposite pair; "reduced" / "increased" too.
  EXPECT_EQ(f({1, 2, 15, 3}, {1, 2, 4, 3})[col("opposite")], 1.f);
  EXPECT_EQ(f({1, 2, 6}, {1, 3, 6})[col("opposite")], 1.f);
  // Both words on both sides ("above and below" / "below and above"), or one word only: none.
  EXPECT_EQ(f({15, 5, 4}, {4, 5, 15})[col("opposite")], 0.f);
  EXPECT_EQ(f({1, 15, 3}, {1, 3})[col("opposite")], 0.f);
  // Symmetric: the mean of both directions (num_gap counts the query's numbers only).
  EXPECT_EQ(f({1, 13}, {1}, true)[col("num_gap")], 0.5f);
  // Without the word lists (a gate fitted before issue 57) these features stay 0.
  const TokenStates q = basis_tokens({11, 1, 15, 13, 10}), c = basis_tokens({12, 1, 4, 14, 10});
  const auto old = gate_features(q, {&c}, options(), 64, false)[0];
  for (const char* n : {"question", "wh_gap", "num_gap", "opposite"}) EXPECT_EQ(old[col(n)], 0.f) << n;
}

TEST(GateFeatures, TheLexiconOfARealVocabulary) {
  // mlp_gate_lexicon on a WordPiece vocabulary written here: the question mark, the wh-words, every
  // all-digit entry (with or without "##") and the months, the opposite pairs both ways.
  const std::vector<std::string> vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "drug", "reduced",
                                          "increased", "mortality", "?", "why", "how", "1998", "##12", "above",
                                          "below", "may", "june", "cup", "not", "by", "and"};
  const auto tok = make_wordpiece_tokenizer(vocab);
  auto id = [&](const std::string& w) { return static_cast<int32_t>(std::find(vocab.begin(), vocab.end(), w) - vocab.begin()); };
  const MlpGateOptions l = mlp_gate_lexicon(*tok);
  EXPECT_EQ(l.question_ids, std::vector<int32_t>{id("?")});
  EXPECT_EQ(l.wh_ids, (std::vector<int32_t>{id("why"), id("how")}));
  EXPECT_EQ(l.number_ids, (std::vector<int32_t>{id("1998"), id("##12"), id("june")}));  // "may" is the modal
  auto has = [&](const std::string& a, const std::string& b) {
    return std::binary_search(l.opposite_ids.begin(), l.opposite_ids.end(), std::make_pair(id(a), id(b)));
  };
  EXPECT_TRUE(has("reduced", "increased"));
  EXPECT_TRUE(has("increased", "reduced"));
  EXPECT_TRUE(has("above", "below"));
  EXPECT_TRUE(has("below", "above"));
  EXPECT_FALSE(has("cup", "drug"));
  EXPECT_TRUE(std::is_sorted(l.opposite_ids.begin(), l.opposite_ids.end()));
  // The gate's other lists come with it.
  EXPECT_EQ(l.conj_ids, std::vector<int32_t>{id("and")});
  EXPECT_EQ(l.voice_ids, std::vector<int32_t>{id("by")});
  // A fitted gate given to it keeps its features and weights; its word lists are replaced, not added to.
  MlpGateOptions fitted;
  fitted.features = {"pooled"};
  fitted.weights = {0.25};
  fitted.skip_weights = {1.5};
  fitted.veto = true;
  fitted.question_ids = {999};
  fitted.opposite_ids = {{998, 997}};
  const MlpGateOptions kept = mlp_gate_lexicon(*tok, fitted);
  EXPECT_EQ(kept.features, fitted.features);
  EXPECT_EQ(kept.weights, fitted.weights);
  EXPECT_EQ(kept.skip_weights, fitted.skip_weights);
  EXPECT_TRUE(kept.veto);
  EXPECT_EQ(kept.question_ids, l.question_ids);
  EXPECT_EQ(kept.opposite_ids, l.opposite_ids);
  // "the drug reduced mortality ?" / "the drug increased mortality ?": the opposite pair counted.
  auto ids = [&](const std::string& text) {
    std::vector<int32_t> out;
    for (const auto& p : tok->tokenize(text)) out.push_back(p.id);
    return out;
  };
  const std::vector<int32_t> a = ids("the drug reduced mortality?"), b = ids("the drug increased mortality?");
  TokenStates qa, qb;
  for (auto* t : {&qa, &qb}) {
    const auto& v = t == &qa ? a : b;
    t->length = v.size();
    t->ids = v;
    t->values.assign(v.size() * 4, 0.5f);
  }
  const auto f = gate_features(qa, {&qb}, l, 64, true)[0];
  EXPECT_EQ(f[col("opposite")], 1.f);
  EXPECT_EQ(f[col("question")], 1.f);
}

TEST(GateFeatures, SymmetricIsTheMeanOfBothDirections) {
  std::mt19937 rng(3);
  const TokenStates q = tokens_with_ids(7, rng), c = tokens_with_ids(11, rng);
  const auto qc = gate_features(q, {&c}, options(), 64, false)[0];
  const auto cq = gate_features(c, {&q}, options(), 64, false)[0];
  const auto sym = gate_features(q, {&c}, options(), 64, true)[0];
  const auto sym_back = gate_features(c, {&q}, options(), 64, true)[0];
  double moved = 0;
  for (size_t k = 0; k < qc.size(); ++k) {
    EXPECT_NEAR(sym[k], (qc[k] + cq[k]) / 2, 1e-5) << gate_feature_names()[k];
    EXPECT_NEAR(sym[k], sym_back[k], 1e-5) << gate_feature_names()[k];
    moved = std::max(moved, std::fabs(static_cast<double>(qc[k] - cq[k])));
  }
  EXPECT_GT(moved, 1e-2);  // the directions differ, so averaging them is seen
}

TEST(GateFeatures, RowsAgainstAPlainLoop) {
  // The map's features of a batch against a loop over each pair's own cosine matrix.
  std::mt19937 rng(11);
  const TokenStates q = tokens_with_ids(9, rng);
  std::vector<TokenStates> cands = {tokens_with_ids(5, rng), tokens_with_ids(14, rng), tokens_with_ids(9, rng)};
  const auto rows = gate_features(q, ptrs(cands), options(), 64, false);
  ASSERT_EQ(rows.size(), 3u);
  auto cosine = [](const float* a, const float* b) {
    double d = 0, na = 0, nb = 0;
    for (size_t h = 0; h < kD; ++h) {
      d += double(a[h]) * b[h];
      na += double(a[h]) * a[h];
      nb += double(b[h]) * b[h];
    }
    return d / std::sqrt(na * nb);
  };
  for (size_t b = 0; b < cands.size(); ++b) {
    const TokenStates& c = cands[b];
    double f0 = 0, f1 = 0, row_min = 1e9;
    for (size_t i = 0; i < q.length; ++i) {
      double best = -1e9;
      for (size_t j = 0; j < c.length; ++j) {
        const double m = cosine(&q.values[i * kD], &c.values[j * kD]);
        f0 += m;
        best = std::max(best, m);
      }
      f1 += best;
      row_min = std::min(row_min, best);
    }
    std::vector<float> qs(kD, 0.f), cs(kD, 0.f);
    for (size_t i = 0; i < q.length; ++i)
      for (size_t h = 0; h < kD; ++h) qs[h] += q.values[i * kD + h];
    for (size_t j = 0; j < c.length; ++j)
      for (size_t h = 0; h < kD; ++h) cs[h] += c.values[j * kD + h];
    EXPECT_NEAR(rows[b][col("f0")], f0 / double(q.length * c.length), 1e-5);
    EXPECT_NEAR(rows[b][col("f1")], f1 / double(q.length), 1e-5);
    EXPECT_NEAR(rows[b][col("row_min")], row_min, 1e-5);
    EXPECT_NEAR(rows[b][col("pooled")], cosine(qs.data(), cs.data()), 1e-5);
    // F0, F1, F2 at both settings and the cue gap against the differentiable reference (ATen).
    const verify::Maps m = verify::query_maps(q, {&c}, kD, 64);
    EXPECT_NEAR(rows[b][col("f2")], verify::f2_score(m, {0.0, 0.1, -1, 0}).item<float>(), 1e-5);
    EXPECT_NEAR(rows[b][col("f2_pos")], verify::f2_score(m, {0.1, 0.1, -1, 0}).item<float>(), 1e-5);
    EXPECT_NEAR(rows[b][col("f0")], verify::f0_score(m).item<float>(), 1e-5);
    EXPECT_NEAR(rows[b][col("f1")], verify::f1_score(m).item<float>(), 1e-5);
    EXPECT_NEAR(rows[b][col("cue_gap")], verify::cue_gap(m, options().cue_ids).item<float>(), 1e-6);
    // Each candidate alone gives the same row as in the batch (padding does not leak).
    const auto alone = gate_features(q, {&c}, options(), 64, false)[0];
    for (size_t k = 0; k < alone.size(); ++k) EXPECT_NEAR(alone[k], rows[b][k], 1e-5) << gate_feature_names()[k];
  }
}

VerifierConfig mlp_config(bool symmetric, size_t hidden = 3, size_t features = gate_feature_names().size()) {
  VerifierConfig c;
  c.kind = VerifierKind::Mlp;
  c.max_tokens = 64;
  c.encoder_dim = kD;
  c.encoder_identity = "sha256:test";
  c.symmetric = symmetric;
  c.mlp = question_options();
  const size_t F = features;
  c.mlp.features.assign(gate_feature_names().begin(), gate_feature_names().begin() + static_cast<std::ptrdiff_t>(F));
  for (size_t k = 0; k < F; ++k) {
    c.mlp.mean.push_back(0.1 * double(k));
    c.mlp.scale.push_back(0.5 + 0.05 * double(k));
  }
  for (size_t u = 0; u < hidden; ++u) {
    c.mlp.hidden_bias.push_back(0.1 * double(u) - 0.1);
    for (size_t k = 0; k < F; ++k) c.mlp.hidden_weights.push_back(((u + k) % 3 ? -0.3 : 0.4) + 0.01 * double(k));
  }
  for (size_t k = 0; k < (hidden > 0 ? hidden : F); ++k) c.mlp.weights.push_back((k % 2 ? -1.0 : 1.0) * (0.2 + 0.1 * double(k)));
  c.mlp.bias = 0.3;
  return c;
}

TEST(MlpGate, ScoreIsTheSigmoidOfItsWeights) {
  std::mt19937 rng(5);
  const TokenStates q = tokens_with_ids(8, rng);
  std::vector<TokenStates> cands = {tokens_with_ids(6, rng), tokens_with_ids(10, rng)};
  const size_t F = gate_feature_names().size();
  for (size_t hidden : {size_t{0}, size_t{3}})
    for (bool symmetric : {false, true}) {
      const VerifierConfig c = mlp_config(symmetric, hidden);
      auto v = Verifier::create(c);
      EXPECT_EQ(v->parameter_count(), hidden > 0 ? hidden * F + 2 * hidden + 1 : F + 1);
      const auto s = v->score(q, ptrs(cands));
      const auto x = gate_features(q, ptrs(cands), c.mlp, 64, symmetric);
      for (size_t b = 0; b < cands.size(); ++b) {
        std::vector<double> z(F);
        for (size_t k = 0; k < F; ++k) z[k] = (x[b][k] - c.mlp.mean[k]) / c.mlp.scale[k];
        double logit = c.mlp.bias;
        if (hidden == 0) {
          for (size_t k = 0; k < F; ++k) logit += c.mlp.weights[k] * z[k];
        } else {
          for (size_t u = 0; u < hidden; ++u) {
            double a = c.mlp.hidden_bias[u];
            for (size_t k = 0; k < F; ++k) a += c.mlp.hidden_weights[u * F + k] * z[k];
            logit += c.mlp.weights[u] * std::tanh(a);
          }
        }
        EXPECT_NEAR(s[b], 1.0 / (1.0 + std::exp(-logit)), 1e-6) << hidden << " " << symmetric;
      }
      if (symmetric) EXPECT_NEAR(v->score(cands[0], {&q})[0], s[0], 1e-6);  // either side may be the query
    }
}

TEST(MlpGate, AnOlderFileReadsItsPrefixAndSkipWeightsAddALinearPath) {
  // A gate fitted on the first 17 features (issue 43's files) is written as version 7 and scores
  // from those columns alone; skip weights add w . z to the logit (version 8).
  const std::string dir = test::make_temp_dir("mlp_gate_prefix");
  std::mt19937 rng(21);
  const TokenStates q = tokens_with_ids(8, rng), cand = tokens_with_ids(6, rng);
  for (bool skip : {false, true}) {
    VerifierConfig c = mlp_config(false, 3, 17);
    if (skip)
      for (size_t k = 0; k < 17; ++k) c.mlp.skip_weights.push_back(k == 0 ? 0.7 : 0.0);
    auto v = Verifier::create(c);
    const std::string path = dir + "/prefix.safetensors";
    v->save(path);
    auto f = SafetensorsFile::open(path);
    EXPECT_EQ(nlohmann::json::parse(f->metadata().at("sieve_verifier")).at("format_version"), skip ? 8 : 7);
    auto back = Verifier::load(path, "sha256:test");
    EXPECT_EQ(back->config().mlp.skip_weights, c.mlp.skip_weights);
    const auto x = gate_features(q, {&cand}, c.mlp, 64, false)[0];
    std::vector<double> z(17);
    for (size_t k = 0; k < 17; ++k) z[k] = (x[k] - c.mlp.mean[k]) / c.mlp.scale[k];
    double logit = c.mlp.bias + (skip ? 0.7 * z[0] : 0.0);
    for (size_t u = 0; u < 3; ++u) {
      double a = c.mlp.hidden_bias[u];
      for (size_t k = 0; k < 17; ++k) a += c.mlp.hidden_weights[u * 17 + k] * z[k];
      logit += c.mlp.weights[u] * std::tanh(a);
    }
    EXPECT_NEAR(back->score(q, {&cand})[0], 1.0 / (1.0 + std::exp(-logit)), 1e-6) << skip;
  }
  // The veto form: logit = skip . z + skip_bias - softplus(weights . h + bias), against a plain loop;
  // its file is version 8 and reads back the same.
  VerifierConfig veto = mlp_config(false, 3, 21);
  veto.mlp.skip_weights.assign(21, 0.0);
  veto.mlp.skip_weights[0] = 1.3;
  veto.mlp.skip_bias = -0.4;
  veto.mlp.veto = true;
  auto vv = Verifier::create(veto);
  const std::string vpath = dir + "/veto.safetensors";
  vv->save(vpath);
  auto vback = Verifier::load(vpath, "sha256:test");
  EXPECT_TRUE(vback->config().mlp.veto);
  EXPECT_EQ(vback->config().mlp.skip_bias, -0.4);
  const auto vx = gate_features(q, {&cand}, veto.mlp, 64, false)[0];
  std::vector<double> vz(21);
  for (size_t k = 0; k < 21; ++k) vz[k] = (vx[k] - veto.mlp.mean[k]) / veto.mlp.scale[k];
  double u = veto.mlp.bias;
  for (size_t h = 0; h < 3; ++h) {
    double a = veto.mlp.hidden_bias[h];
    for (size_t k = 0; k < 21; ++k) a += veto.mlp.hidden_weights[h * 21 + k] * vz[k];
    u += veto.mlp.weights[h] * std::tanh(a);
  }
  const double vlogit = 1.3 * vz[0] - 0.4 - std::log(1.0 + std::exp(u));
  EXPECT_NEAR(vback->score(q, {&cand})[0], 1.0 / (1.0 + std::exp(-vlogit)), 1e-6);
  VerifierConfig no_base = veto;
  no_base.mlp.skip_weights.clear();
  test::expect_error([&] { Verifier::create(no_base); }, "veto gate needs the skip weights");
  // Skip weights of another length are refused.
  VerifierConfig bad = mlp_config(false, 3, 17);
  bad.mlp.skip_weights = {1.0, 2.0};
  test::expect_error([&] { Verifier::create(bad); }, "skip weights");
}

TEST(MlpGate, FileRoundTripAndRefusals) {
  const std::string dir = test::make_temp_dir("mlp_gate");
  std::mt19937 rng(8);
  const TokenStates q = tokens_with_ids(8, rng), c = tokens_with_ids(6, rng);
  auto v = Verifier::create(mlp_config(true));
  const std::string path = dir + "/mlp.safetensors";
  v->save_with_threshold(path, 0.5);
  auto f = SafetensorsFile::open(path);
  const auto meta = nlohmann::json::parse(f->metadata().at("sieve_verifier"));
  EXPECT_EQ(meta.at("format_version"), 8);  // its features past the first 17 need version 8
  EXPECT_EQ(meta.at("kind"), "mlp");
  auto back = Verifier::load(path, "sha256:test");
  EXPECT_EQ(back->config().kind, VerifierKind::Mlp);
  EXPECT_TRUE(back->config().symmetric);
  EXPECT_EQ(back->config().threshold, 0.5);
  EXPECT_EQ(back->config().mlp.cue_ids, mlp_config(true).mlp.cue_ids);
  EXPECT_EQ(back->config().mlp.hidden_weights, mlp_config(true).mlp.hidden_weights);
  EXPECT_EQ(back->config().mlp.question_ids, mlp_config(true).mlp.question_ids);
  EXPECT_EQ(back->config().mlp.wh_ids, mlp_config(true).mlp.wh_ids);
  EXPECT_EQ(back->config().mlp.number_ids, mlp_config(true).mlp.number_ids);
  EXPECT_EQ(back->config().mlp.opposite_ids, mlp_config(true).mlp.opposite_ids);
  EXPECT_EQ(back->score(q, {&c})[0], v->score(q, {&c})[0]);
  // Another feature set (a file of an older or newer sieve), a zero scale: refused with the reason.
  auto edited = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = meta;
    edit(j);
    const std::string p = dir + "/edited.safetensors";
    write_safetensors(p, {}, {{"sieve_verifier", j.dump()}});
    return p;
  };
  test::expect_error([&] { Verifier::load(edited([](nlohmann::json& j) { j["mlp"]["features"][0] = "cosine"; })); }, "not this sieve's");
  test::expect_error([&] { Verifier::load(edited([](nlohmann::json& j) { j["mlp"]["scale"][2] = 0.0; })); }, "positive scale");
  test::expect_error([&] { Verifier::load(edited([](nlohmann::json& j) { j["mlp"]["hidden_bias"].push_back(0.0); })); },
                     "hidden weights");
  test::expect_error([&] { Verifier::load(edited([](nlohmann::json& j) { j.erase("mlp"); })); }, "without its weights");
  test::expect_error([&] { Verifier::load(edited([](nlohmann::json& j) { j["encoder_identity"] = ""; })); }, "encoder identity");
  test::expect_error([&] { Verifier::load("mlp"); }, "learned weights");
  VerifierConfig bad = mlp_config(false);
  bad.mlp.weights.pop_back();
  test::expect_error([&] { Verifier::create(bad); }, "weights");
}

}  // namespace
}  // namespace sieve

namespace sieve {
namespace {

// Stage 2's two jobs, one rule (issue 45): without a named verifier the gate is the model's shipped
// one and reranking alone is F1; a named verifier serves both (the CLI's and the server's tests
// check the faces follow it).
TEST(Stage2Spec, GateTakesTheShippedGateRerankTakesF1NamedServesBoth) {
  EXPECT_EQ(stage2_verifier_spec("", true), "default");
  EXPECT_EQ(stage2_verifier_spec("", false), "F1");
  EXPECT_EQ(stage2_verifier_spec("my.safetensors", false), "my.safetensors");
  EXPECT_EQ(stage2_verifier_spec("cross:ce", true), "cross:ce");
}

}  // namespace
}  // namespace sieve
