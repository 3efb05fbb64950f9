// Verifiers against naive scalar references (F0, F1, F2, the penalty), invariances that follow
// from their definitions, padding independence, F3/F4 sizes and shapes, and the file round trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>

#include <unistd.h>

#include "sieve/error.h"
#include "sieve/verify.h"
#include "support/test_util.h"
#include "verify/f4_transformer.h"
#include "verify/similarity_map.h"

namespace sieve {
namespace {

TokenStates random_tokens(size_t len, size_t d, std::mt19937& rng) {
  std::normal_distribution<float> g;
  TokenStates t;
  t.length = len;
  t.values.resize(len * d);
  for (auto& v : t.values) v = g(rng);
  return t;
}

// Plain-loop cosine map in double.
std::vector<std::vector<double>> naive_map(const TokenStates& q, const TokenStates& c, size_t d, size_t cap = 128) {
  size_t m = std::min(q.length, cap), n = std::min(c.length, cap);
  std::vector<std::vector<double>> M(m, std::vector<double>(n));
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) {
      double dot = 0, a = 0, b = 0;
      for (size_t h = 0; h < d; ++h) {
        dot += double(q.values[i * d + h]) * c.values[j * d + h];
        a += double(q.values[i * d + h]) * q.values[i * d + h];
        b += double(c.values[j * d + h]) * c.values[j * d + h];
      }
      M[i][j] = dot / std::sqrt(a * b);
    }
  return M;
}

double naive_f0(const std::vector<std::vector<double>>& M) {
  double s = 0;
  size_t n = 0;
  for (auto& row : M)
    for (double v : row) s += v, ++n;
  return s / n;
}

double naive_f1(const std::vector<std::vector<double>>& M) {
  double s = 0;
  for (auto& row : M) s += *std::max_element(row.begin(), row.end());
  return s / M.size();
}

double naive_f2(const std::vector<std::vector<double>>& M, const F2Options& o) {
  double total = 0;
  std::vector<double> pos(M.size());
  for (size_t i = 0; i < M.size(); ++i) {
    std::vector<double> w(M[i].size(), 0.0);
    double mx = -1e300, z = 0;
    for (size_t j = 0; j < M[i].size(); ++j) {
      double pen = o.lambda * std::abs(double(i) - double(j));
      if (o.bandwidth >= 0 && pen > o.bandwidth) continue;
      mx = std::max(mx, (M[i][j] - pen) / o.tau);
    }
    for (size_t j = 0; j < M[i].size(); ++j) {
      double pen = o.lambda * std::abs(double(i) - double(j));
      if (o.bandwidth >= 0 && pen > o.bandwidth) continue;
      w[j] = std::exp((M[i][j] - pen) / o.tau - mx);
      z += w[j];
    }
    double t = 0, p = 0;
    for (size_t j = 0; j < w.size(); ++j) {
      double a = z > 0 ? w[j] / z : 0;
      t += a * M[i][j];
      p += a * j;
    }
    total += t;
    pos[i] = p;
  }
  double s = total / M.size();
  if (o.gamma_mono > 0 && M.size() > 1) {
    double pen = 0;
    for (size_t i = 0; i + 1 < M.size(); ++i) pen += std::pow(std::max(0.0, pos[i] - pos[i + 1]), 2);
    s -= o.gamma_mono * pen / (M.size() - 1);
  }
  return s;
}

std::vector<const TokenStates*> ptrs(const std::vector<TokenStates>& v) {
  std::vector<const TokenStates*> p;
  for (auto& t : v) p.push_back(&t);
  return p;
}

VerifierConfig config(VerifierKind k, size_t d) {
  VerifierConfig c;
  c.kind = k;
  c.encoder_dim = d;
  return c;
}

constexpr size_t kD = 16;

TEST(Maps, QueryMapsMatchTheNaiveMapAndMasks) {
  std::mt19937 rng(11);
  TokenStates q = random_tokens(7, kD, rng);
  std::vector<TokenStates> cands = {random_tokens(3, kD, rng), random_tokens(140, kD, rng), random_tokens(1, kD, rng)};
  for (float& v : cands[0].values) v *= 40.f;  // scale must not matter
  std::vector<const TokenStates*> p;
  for (auto& c : cands) p.push_back(&c);
  verify::Maps m = verify::query_maps(q, p, kD, 128);
  ASSERT_EQ(m.M.size(0), 3);
  ASSERT_EQ(m.M.size(1), 7);
  ASSERT_EQ(m.M.size(2), 128);  // the longest candidate, capped
  for (size_t b = 0; b < cands.size(); ++b) {
    auto ref = naive_map(q, cands[b], kD);
    for (int64_t i = 0; i < 7; ++i)
      for (int64_t j = 0; j < 128; ++j) {
        bool valid = static_cast<size_t>(j) < ref[0].size();
        EXPECT_EQ(m.pair[b][i][j].item<float>(), valid ? 1.f : 0.f);
        EXPECT_NEAR(m.M[b][i][j].item<float>(), valid ? ref[i][j] : 0.0, 1e-5) << b << " " << i << " " << j;
      }
    EXPECT_EQ(m.c_mask[b].sum().item<float>(), static_cast<float>(ref[0].size()));
  }
  EXPECT_EQ(m.q_mask.sum().item<float>(), 21.f);
}

// At the real width (d = 384) and K = 100 candidates of mixed lengths, shared out over the
// threads: every entry equals the naive double-precision cosine within 1e-5.
TEST(Maps, QueryMapsAtTheRealWidthMatchTheNaiveMap) {
  constexpr size_t d = 384;
  std::mt19937 rng(5);
  TokenStates q = random_tokens(19, d, rng);
  std::vector<TokenStates> cands;
  for (size_t b = 0; b < 100; ++b) cands.push_back(random_tokens(1 + (b * 37) % 150, d, rng));
  std::vector<const TokenStates*> p;
  for (auto& c : cands) p.push_back(&c);
  verify::Maps m = verify::query_maps(q, p, d, 128);
  ASSERT_EQ(m.M.size(2), 128);
  const at::Tensor M = m.M.contiguous();
  const float* mp = M.data_ptr<float>();
  double worst = 0;
  for (size_t b = 0; b < cands.size(); ++b) {
    auto ref = naive_map(q, cands[b], d);
    for (size_t i = 0; i < 19; ++i)
      for (size_t j = 0; j < 128; ++j) {
        const double want = j < ref[i].size() ? ref[i][j] : 0.0;
        worst = std::max(worst, std::abs(mp[(b * 19 + i) * 128 + j] - want));
      }
  }
  EXPECT_LT(worst, 1e-5);
}

TEST(Verifiers, ParameterFreeMatchNaiveReferences) {
  std::mt19937 rng(1);
  TokenStates q = random_tokens(7, kD, rng);
  std::vector<TokenStates> cands;
  for (size_t len : {1u, 5u, 12u, 30u}) cands.push_back(random_tokens(len, kD, rng));  // a padded batch
  F2Options band;
  band.bandwidth = 0.25;
  band.gamma_mono = 0.7;
  for (const F2Options& f2 : {F2Options{}, band}) {
    VerifierConfig c2 = config(VerifierKind::F2, kD);
    c2.f2 = f2;
    auto f0 = Verifier::create(config(VerifierKind::F0, kD))->score(q, ptrs(cands));
    auto f1 = Verifier::create(config(VerifierKind::F1, kD))->score(q, ptrs(cands));
    auto s2 = Verifier::create(c2)->score(q, ptrs(cands));
    for (size_t i = 0; i < cands.size(); ++i) {
      auto M = naive_map(q, cands[i], kD);
      EXPECT_NEAR(f0[i], naive_f0(M), 1e-5) << i;
      EXPECT_NEAR(f1[i], naive_f1(M), 1e-5) << i;
      EXPECT_NEAR(s2[i], naive_f2(M, f2), 1e-4) << i << " band " << f2.bandwidth;
    }
  }
}

TEST(Verifiers, ConditionalPenaltyMatchesItsFormula) {
  std::mt19937 rng(2);
  TokenStates q = random_tokens(5, kD, rng);
  std::vector<TokenStates> cands = {random_tokens(6, kD, rng), q};  // the second is identical: F1 = 1
  VerifierConfig c = config(VerifierKind::F0, kD);
  c.penalty.enabled = true;
  auto s = Verifier::create(c)->score(q, ptrs(cands));
  for (size_t i = 0; i < cands.size(); ++i) {
    auto M = naive_map(q, cands[i], kD);
    double base = naive_f1(M), raw = naive_f0(M);
    double want = base - 0.5 / (1 + std::exp(-20 * (base - 0.9))) * (1 - raw);
    EXPECT_NEAR(s[i], want, 1e-5);
  }
}

TEST(Verifiers, PermutingCandidateTokensChangesOnlyF2) {
  std::mt19937 rng(3);
  TokenStates q = random_tokens(6, kD, rng), c = random_tokens(6, kD, rng);
  TokenStates rev = c;  // rows in reverse order
  for (size_t r = 0; r < c.length; ++r)
    std::copy(c.values.begin() + r * kD, c.values.begin() + (r + 1) * kD, rev.values.begin() + (c.length - 1 - r) * kD);
  for (VerifierKind k : {VerifierKind::F0, VerifierKind::F1, VerifierKind::F2}) {
    auto v = Verifier::create(config(k, kD));
    auto a = v->score(q, {&c}), b = v->score(q, {&rev});
    if (k == VerifierKind::F2) EXPECT_GT(std::abs(a[0] - b[0]), 1e-3);
    else EXPECT_NEAR(a[0], b[0], 1e-6) << verifier_kind_name(k);
  }
}

TEST(Verifiers, PaddingNeverChangesAScore) {
  std::mt19937 rng(4);
  TokenStates q = random_tokens(9, kD, rng), c = random_tokens(4, kD, rng);
  std::vector<TokenStates> batch = {c, random_tokens(60, kD, rng), random_tokens(128, kD, rng)};
  for (int k = 0; k < 5; ++k) {
    auto v = Verifier::create(config(static_cast<VerifierKind>(k), kD), 7);
    float alone = v->score(q, {&c})[0];
    float in_batch = v->score(q, ptrs(batch))[0];
    EXPECT_NEAR(alone, in_batch, 1e-5) << verifier_kind_name(static_cast<VerifierKind>(k));
  }
}

TEST(Verifiers, TokensPastTheCapAreIgnored) {
  std::mt19937 rng(5);
  TokenStates q = random_tokens(10, kD, rng), c = random_tokens(128, kD, rng);
  TokenStates longer = c;
  TokenStates extra = random_tokens(40, kD, rng);
  longer.values.insert(longer.values.end(), extra.values.begin(), extra.values.end());
  longer.length += 40;
  for (int k = 0; k < 5; ++k) {
    auto v = Verifier::create(config(static_cast<VerifierKind>(k), kD), 7);
    EXPECT_NEAR(v->score(q, {&c})[0], v->score(q, {&longer})[0], 1e-6);
  }
}

TEST(Verifiers, PaperSizesHaveThePaperParameterCounts) {
  EXPECT_EQ(Verifier::create(config(VerifierKind::F3, 384))->parameter_count(), 332545u);
  EXPECT_EQ(Verifier::create(config(VerifierKind::F4, 384))->parameter_count(), 940065u);
  EXPECT_EQ(Verifier::create(config(VerifierKind::F3, 768))->parameter_count(), 332545u);  // encoder-independent
  EXPECT_EQ(Verifier::create(config(VerifierKind::F4, 768))->parameter_count(), 3354657u);
  // The authors' class defaults: F3 32 channels x 3 blocks, F4 width 256, 2 layers, 8 heads, FFN 1024.
  VerifierConfig f3 = config(VerifierKind::F3, 384);
  f3.f3.hidden = 32;
  f3.f3.blocks = 3;
  EXPECT_EQ(Verifier::create(f3)->parameter_count(), 110337u);
  VerifierConfig f4 = config(VerifierKind::F4, 384);
  f4.f4 = {256, 2, 8, 1024, 8, true, 0.1};
  EXPECT_EQ(Verifier::create(f4)->parameter_count(), 1761537u);
  for (VerifierKind k : {VerifierKind::F0, VerifierKind::F1, VerifierKind::F2})
    EXPECT_EQ(Verifier::create(config(k, 384))->parameter_count(), 0u);
}

TEST(Verifiers, LearnedScoresAreBoundedAndDeterministic) {
  std::mt19937 rng(6);
  TokenStates q = random_tokens(12, 32, rng);
  std::vector<TokenStates> cands;
  for (size_t len : {3u, 17u, 64u, 128u, 5u}) cands.push_back(random_tokens(len, 32, rng));
  for (VerifierKind k : {VerifierKind::F3, VerifierKind::F4}) {
    auto a = Verifier::create(config(k, 32), 11), b = Verifier::create(config(k, 32), 11);
    auto sa = a->score(q, ptrs(cands)), sb = b->score(q, ptrs(cands));
    ASSERT_EQ(sa.size(), cands.size());
    for (size_t i = 0; i < sa.size(); ++i) {
      EXPECT_GE(sa[i], -1.f);
      EXPECT_LE(sa[i], 1.f);
      EXPECT_FLOAT_EQ(sa[i], sb[i]);
    }
    EXPECT_NE(sa[0], sa[1]);  // the input reaches the output
  }
}

TEST(Verifiers, SaveLoadRoundTripAndEncoderCheck) {
  std::mt19937 rng(7);
  TokenStates q = random_tokens(8, 32, rng);
  std::vector<TokenStates> cands = {random_tokens(9, 32, rng), random_tokens(40, 32, rng)};
  std::string dir = test::make_temp_dir("verifier");
  for (VerifierKind k : {VerifierKind::F2, VerifierKind::F3, VerifierKind::F4}) {
    VerifierConfig c = config(k, 32);
    c.encoder_identity = "crc32:model-a";
    c.threshold = 0.25;
    c.f2.lambda = 0.2;
    auto v = Verifier::create(c, 3);
    std::string path = dir + "/" + verifier_kind_name(k) + ".safetensors";
    v->save(path);
    auto back = Verifier::load(path, "crc32:model-a");
    EXPECT_EQ(back->config().kind, k);
    EXPECT_EQ(back->config().threshold, 0.25);
    EXPECT_EQ(back->config().f2.lambda, 0.2);
    EXPECT_EQ(back->parameter_count(), v->parameter_count());
    auto s1 = v->score(q, ptrs(cands)), s2 = back->score(q, ptrs(cands));
    for (size_t i = 0; i < s1.size(); ++i) EXPECT_FLOAT_EQ(s1[i], s2[i]);
    test::expect_error([&] { Verifier::load(path, "crc32:model-b"); }, "not for this one");
  }
  test::expect_error([&] { Verifier::load("F3"); }, "give its file");
  test::expect_error([&] { Verifier::load("F9"); }, "neither a file nor");
  EXPECT_EQ(Verifier::load("f1")->config().kind, VerifierKind::F1);
}

// Calibration writes its threshold with save_with_threshold: NaN (a NaN score got through) or an
// infinity (stored as JSON null, which no reader takes back) is refused and nothing is written.
TEST(Verifiers, SaveWithThresholdRefusesANonFiniteThreshold) {
  const std::string dir = test::make_temp_dir("verifier_threshold");
  auto v = Verifier::create(config(VerifierKind::F3, 32), 3);
  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity()}) {
    const std::string path = dir + "/bad.safetensors";
    test::expect_error([&] { v->save_with_threshold(path, bad); }, "threshold must be a finite number");
    EXPECT_FALSE(std::ifstream(path).good()) << bad;
  }
  v->save_with_threshold(dir + "/ok.safetensors", 0.375);
  EXPECT_EQ(Verifier::load(dir + "/ok.safetensors")->config().threshold, 0.375);
}

// A file named F1 in the working folder does not shadow the built-in F1: built-in names win, and
// the file is ./F1. resolve_verifier (what every face calls) follows the same rule.
TEST(Verifiers, BuiltInNamesWinOverFilesOfThatName) {
  const std::string dir = test::make_temp_dir("verifier_names");
  char was[4096];
  ASSERT_NE(::getcwd(was, sizeof was), nullptr);
  ASSERT_EQ(::chdir(dir.c_str()), 0);
  VerifierConfig c = config(VerifierKind::F4, 32);
  c.encoder_identity = "crc32:another-model";
  Verifier::create(c, 3)->save("F1");
  Verifier::create(c, 3)->save("cosine");
  EXPECT_EQ(Verifier::load("F1", "crc32:this-model")->config().kind, VerifierKind::F1);
  EXPECT_EQ(Verifier::load("f1", "crc32:this-model")->parameter_count(), 0u);
  EXPECT_EQ(Verifier::load("./F1")->config().kind, VerifierKind::F4);
  test::expect_error([&] { Verifier::load("./F1", "crc32:this-model"); }, "not for this one");
  const ResolvedVerifier f1 = resolve_verifier("F1", {"", "crc32:this-model"});
  EXPECT_FALSE(f1.file);
  EXPECT_EQ(f1.kind(), "F1");
  const ResolvedVerifier cos = resolve_verifier("cosine", {"", "crc32:this-model"});
  EXPECT_TRUE(cos.cosine());
  EXPECT_EQ(cos.kind(), "cosine");
  EXPECT_TRUE(std::isnan(cos.threshold()));
  const ResolvedVerifier file = resolve_verifier("./F1", {"", "crc32:another-model"});
  EXPECT_TRUE(file.file);
  EXPECT_EQ(file.kind(), "F4");
  test::expect_error([&] { resolve_verifier("./F1", {"", "crc32:this-model"}); }, "not for this one");
  test::expect_error([&] { resolve_verifier("./F9", {"", "crc32:this-model"}); }, "does not exist");
  test::expect_error([&] { resolve_verifier("F9", {"", "crc32:this-model"}); }, "./F9");
  ASSERT_EQ(::chdir(was), 0);
}

// Sizes out of range are refused with the field named, before libtorch builds anything (a file
// with F4 dropout 5.1 made libtorch terminate the process: found by fuzzing).
TEST(Verifiers, OutOfRangeSizesAreNamed) {
  VerifierConfig c = config(VerifierKind::F4, 32);
  c.f4.dropout = 5.1;
  test::expect_error([&] { Verifier::create(c); }, "F4 dropout must be in [0, 1), not 5.1");
  c = config(VerifierKind::F4, 32);
  c.f4.width = 30;
  c.f4.heads = 4;
  test::expect_error([&] { Verifier::create(c); }, "not a multiple of its 4 heads");
  c = config(VerifierKind::F4, 32);
  c.f4.patch = 0;
  test::expect_error([&] { Verifier::create(c); }, "F4 sizes out of range");
  c = config(VerifierKind::F3, 32);
  c.f3.dropout = std::nan("");
  test::expect_error([&] { Verifier::create(c); }, "F3 dropout");
  c = config(VerifierKind::F3, 32);
  c.f3.hidden = 1 << 20;
  test::expect_error([&] { Verifier::create(c); }, "F3 sizes out of range");
  c = config(VerifierKind::F1, 32);
  c.max_tokens = 0;
  test::expect_error([&] { Verifier::create(c); }, "max_tokens must be 1 to 4096");
}

TEST(Verifiers, F4OnTheUsedPatchesEqualsF4OnAllPatches) {
  std::mt19937 rng(9);
  TokenStates q = random_tokens(13, kD, rng);
  std::vector<TokenStates> cands = {random_tokens(5, kD, rng), random_tokens(37, kD, rng), random_tokens(70, kD, rng)};
  std::vector<const TokenStates*> p;
  for (auto& c : cands) p.push_back(&c);
  verify::Maps m = verify::query_maps(q, p, kD, 128);
  // The reference is the plain module over the full 16 x 16 grid, every position through every
  // layer (PyTorch's own attention); the cropped forward and the [CLS]-only inference path must
  // agree with it for several shapes.
  struct Shape {
    int width, layers, heads;
    bool augmented;
  };
  for (Shape sh : {Shape{32, 2, 4, true}, Shape{24, 1, 1, true}, Shape{16, 1, 2, false}, Shape{16, 3, 1, true}}) {
    at::manual_seed(3);
    F4Options o;
    o.width = sh.width;
    o.layers = sh.layers;
    o.heads = sh.heads;
    o.augmented = sh.augmented;
    verify::F4Transformer f4(o, 128);
    f4->eval();
    at::NoGradGuard no_grad;
    // PyTorch initialises attention biases to zero; random values make every term count.
    for (auto& t : f4->parameters()) t.uniform_(-0.3, 0.3);
    at::Tensor full = f4->forward(m, false), cropped = f4->forward(m, true), fast = f4->score(m);
    ASSERT_EQ(cropped.size(0), 3);
    ASSERT_EQ(fast.size(0), 3);
    for (int64_t i = 0; i < 3; ++i) {
      EXPECT_NEAR(cropped[i].item<float>(), full[i].item<float>(), 1e-5) << i << " width " << sh.width;
      EXPECT_NEAR(fast[i].item<float>(), full[i].item<float>(), 1e-5) << i << " width " << sh.width;
    }
  }
}

TEST(CosineMap, AgreesWithF0AndIsCapped) {
  std::mt19937 rng(8);
  TokenStates q = random_tokens(9, kD, rng), c = random_tokens(140, kD, rng);
  CosineMap m = cosine_map(q, c);
  EXPECT_EQ(m.m, 9u);
  EXPECT_EQ(m.n, 128u);
  double mean = 0;
  for (float v : m.values) mean += v;
  mean /= m.values.size();
  EXPECT_NEAR(mean, Verifier::load("F0")->score(q, {&c})[0], 1e-5);  // two independent paths
  std::string svg = render_map_svg(cosine_map(q, q), {"a", "<b>"}, {"c"}, "t & u");
  EXPECT_NE(svg.find("&lt;b&gt;"), std::string::npos);
  EXPECT_NE(svg.find("t &amp; u"), std::string::npos);
}

// The title is whole and fits the picture however small the map (a 3 x 2 map clipped
// "stage-1 cosine ... reject a"); the axes say which side is the query and which the candidate.
TEST(CosineMap, SvgTitleFitsAndAxesAreNamed) {
  std::mt19937 rng(9);
  TokenStates q = random_tokens(3, kD, rng), c = random_tokens(2, kD, rng);
  const std::string title = "stage-1 cosine 0.912   F4 score -0.314   reject at 0.250";
  const std::string svg = render_map_svg(cosine_map(q, c), {"[CLS]", "dog", "[SEP]"}, {"[CLS]", "[SEP]"}, title);
  EXPECT_NE(svg.find(">" + title + "</text>"), std::string::npos) << svg;
  const size_t at = svg.find("width=\"") + 7;
  const int width = std::stoi(svg.substr(at));
  // 13px bold sans-serif averages about 0.6 em per character; the title starts at x = 8.
  EXPECT_GE(width, 8 + static_cast<int>(title.size() * 13 * 0.6)) << svg.substr(0, 200);
  EXPECT_NE(svg.find(">query</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">candidate</text>"), std::string::npos) << svg;
}

}  // namespace
}  // namespace sieve
