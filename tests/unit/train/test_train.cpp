// Training: the losses against hand-computed values and finite differences, the schedule, and
// short real training runs of a generated tiny model (the loss falls and retrieval improves on a
// synthetic pairing task; checkpoints load as models; a resumed run equals an uninterrupted one).
#include <gtest/gtest.h>

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <set>

#include "sieve/encoder.h"
#include "sieve/index.h"
#include "sieve/verify.h"
#include "sieve/safetensors.h"
#include "sieve/train.h"
#include "support/fixtures.h"
#include "support/test_util.h"
#include "model/bert.h"
#include "train/losses.h"
#include "train/mlm.h"
#include "train/trainable_encoder.h"

namespace sieve {
namespace {

// Cross-entropy of one row of logits with target t, in double.
double ce(const std::vector<double>& logits, size_t t) {
  double mx = logits[0];
  for (double v : logits) mx = std::max(mx, v);
  double z = 0;
  for (double v : logits) z += std::exp(v - mx);
  return -(logits[t] - mx - std::log(z));
}

double cosd(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) d += a[i] * b[i], na += a[i] * a[i], nb += b[i] * b[i];
  return d / std::sqrt(na * nb);
}

at::Tensor to_tensor(const std::vector<std::vector<double>>& rows) {
  at::Tensor t = at::empty({static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size())}, at::kDouble);
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < rows[i].size(); ++j) t[i][j] = rows[i][j];
  return t;
}

TEST(Losses, MnrlMatchesHandComputedCrossEntropy) {
  // Two anchors, their positives, and one hard negative per row (both are columns for everyone).
  std::vector<std::vector<double>> a = {{1, 0, 0}, {0, 2, 0}};
  std::vector<std::vector<double>> c = {{1, 1, 0}, {0, 1, 1}, {1, 0, 1}, {0, 3, 0.5}};
  const double scale = 10;
  double expect = 0;
  for (size_t i = 0; i < 2; ++i) {
    std::vector<double> logits;
    for (auto& col : c) logits.push_back(scale * cosd(a[i], col));
    expect += ce(logits, i) / 2;
  }
  EXPECT_NEAR(train::mnrl_loss(to_tensor(a), to_tensor(c), scale).item<double>(), expect, 1e-9);
  // Symmetric: positives against anchors, averaged with the forward direction.
  double back = 0;
  for (size_t i = 0; i < 2; ++i) {
    std::vector<double> logits;
    for (auto& an : a) logits.push_back(scale * cosd(c[i], an));
    back += ce(logits, i) / 2;
  }
  EXPECT_NEAR(train::mnrl_loss(to_tensor(a), to_tensor(c), scale, true).item<double>(), (expect + back) / 2, 1e-9);
}

TEST(Losses, MnrlGradientMatchesFiniteDifferences) {
  at::manual_seed(5);
  at::Tensor a = at::randn({3, 4}, at::kDouble).requires_grad_(true);
  at::Tensor c = at::randn({5, 4}, at::kDouble);
  train::mnrl_loss(a, c, 7.0).backward();
  at::Tensor g = a.grad().clone();
  const double h = 1e-6;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      at::Tensor p = a.detach().clone(), m = a.detach().clone();
      p[i][j] += h;
      m[i][j] -= h;
      double fd = (train::mnrl_loss(p, c, 7.0).item<double>() - train::mnrl_loss(m, c, 7.0).item<double>()) / (2 * h);
      EXPECT_NEAR(g[i][j].item<double>(), fd, 1e-6) << i << "," << j;
    }
}

TEST(Losses, VerifierInfoNceUsesOnlyTheOwnNegative) {
  std::vector<std::vector<double>> S = {{0.9, 0.1, 0.3}, {0.2, 0.8, 0.4}, {0.5, 0.5, 0.7}};
  std::vector<double> neg = {0.6, -0.2, 0.75};
  const double tau = 0.1;
  double expect = 0;
  for (size_t i = 0; i < 3; ++i) {
    std::vector<double> logits;
    for (double s : S[i]) logits.push_back(s / tau);
    logits.push_back(neg[i] / tau);
    expect += ce(logits, i) / 3;
  }
  at::Tensor n = at::tensor(neg, at::kDouble);
  EXPECT_NEAR(train::verifier_infonce(to_tensor(S), n, tau).item<double>(), expect, 1e-9);
}

TEST(Losses, VerifierPointwiseByHand) {
  // Scores 0.3 and -0.1 for the own positives, 0.2 and 0.05 for the own negatives, tau 0.5:
  // -log sigmoid(0.6) - log sigmoid(-0.2) - log(1 - sigmoid(0.4)) - log(1 - sigmoid(0.1)), over 4.
  auto sig = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  const double expect =
      -(std::log(sig(0.6)) + std::log(sig(-0.2)) + std::log(1 - sig(0.4)) + std::log(1 - sig(0.1))) / 4;
  at::Tensor pos = at::tensor(std::vector<double>{0.3, -0.1}, at::kDouble);
  at::Tensor neg = at::tensor(std::vector<double>{0.2, 0.05}, at::kDouble);
  EXPECT_NEAR(train::verifier_pointwise(pos, neg, 0.5).item<double>(), expect, 1e-12);
  // The first row as a share of a batch of 2: its own part of the same mean.
  const double first = -(std::log(sig(0.6)) + std::log(1 - sig(0.4))) / 4;
  EXPECT_NEAR(train::verifier_pointwise(pos.narrow(0, 0, 1), neg.narrow(0, 0, 1), 0.5, 2).item<double>(), first,
              1e-12);
}

TEST(Losses, VerifierLabelledBceByHand) {
  // Scores 0.3 (label 1), 0.2 (label 0), -0.1 (label 1), tau 0.5:
  // -log sigmoid(0.6) - log(1 - sigmoid(0.4)) - log sigmoid(-0.2), over 3.
  auto sig = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  const double expect = -(std::log(sig(0.6)) + std::log(1 - sig(0.4)) + std::log(sig(-0.2))) / 3;
  at::Tensor s = at::tensor(std::vector<double>{0.3, 0.2, -0.1}, at::kDouble);
  at::Tensor y = at::tensor(std::vector<double>{1, 0, 1}, at::kDouble);
  EXPECT_NEAR(train::verifier_labelled_bce(s, y, 0.5).item<double>(), expect, 1e-12);
  // The first two rows as a share of a batch of 3: their part of the same mean.
  const double share = -(std::log(sig(0.6)) + std::log(1 - sig(0.4))) / 3;
  EXPECT_NEAR(train::verifier_labelled_bce(s.narrow(0, 0, 2), y.narrow(0, 0, 2), 0.5, 3).item<double>(), share, 1e-12);
}

TEST(Losses, LinearScheduleByHand) {
  // 100 steps, 10 of warm-up: 0, 0.1, ..., 0.9, then 1.0 at step 10 falling to 1/90 at step 99.
  EXPECT_DOUBLE_EQ(train::linear_schedule(0, 100, 10), 0.0);
  EXPECT_DOUBLE_EQ(train::linear_schedule(5, 100, 10), 0.5);
  EXPECT_DOUBLE_EQ(train::linear_schedule(10, 100, 10), 1.0);
  EXPECT_DOUBLE_EQ(train::linear_schedule(55, 100, 10), 0.5);
  EXPECT_DOUBLE_EQ(train::linear_schedule(99, 100, 10), 1.0 / 90);
  EXPECT_DOUBLE_EQ(train::linear_schedule(100, 100, 10), 0.0);
  EXPECT_DOUBLE_EQ(train::linear_schedule(3, 10, 0), 0.7);
}

// A pairing task a random model cannot solve: the positive of "w1 w2 w3" is the same words
// through a fixed substitution (no token shared), so only training can align them.
struct PairTask {
  std::vector<std::pair<std::string, std::string>> pairs;
};

PairTask make_task(size_t n, uint64_t seed) {
  const std::vector<std::string> left = {"man", "woman", "dog", "cat", "bird", "car", "house", "tree", "city",
                                         "river", "table", "chair", "book", "child", "water", "fire"};
  const std::vector<std::string> right = {"red", "blue", "green", "yellow", "black", "white", "big", "small",
                                          "old", "new", "good", "bad", "hot", "cold", "fast", "slow"};
  std::mt19937_64 rng(seed);
  PairTask t;
  std::set<std::string> seen;
  while (t.pairs.size() < n) {
    std::string a, p;
    for (int w = 0; w < 3; ++w) {
      size_t k = rng() % left.size();
      a += (w ? " " : "") + left[k];
      p += (w ? " " : "") + right[k];
    }
    if (seen.insert(a).second) t.pairs.emplace_back(a, p);
  }
  return t;
}

// Top-1 accuracy of anchor -> positive among all the task's positives, with a loaded encoder.
double accuracy(const Encoder& enc, const PairTask& t) {
  std::vector<std::string> a, p;
  for (auto& [x, y] : t.pairs) a.push_back(x), p.push_back(y);
  Embeddings ea = enc.encode(a), ep = enc.encode(p);
  size_t right = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    size_t best = 0;
    double best_s = -2;
    for (size_t j = 0; j < p.size(); ++j) {
      double s = 0;
      for (size_t h = 0; h < ea.dim; ++h) s += double(ea.pooled[i * ea.dim + h]) * ep.pooled[j * ep.dim + h];
      if (s > best_s) best_s = s, best = j;
    }
    right += best == i;
  }
  return double(right) / a.size();
}

std::string write_task(const std::string& dir, const PairTask& t) {
  std::string path = dir + "/pairs.tsv";
  std::ofstream out(path);
  out << "sentence1\tsentence2\n";
  for (auto& [a, p] : t.pairs) out << a << "\t" << p << "\n";
  return path;
}

EncoderTrainOptions tiny_run(const std::string& model, const std::string& data, const std::string& out) {
  EncoderTrainOptions o;
  o.model_dir = model;
  o.train_path = data;
  o.lr = 3e-3;
  o.scale = 20;
  o.common.out_dir = out;
  o.common.batch_size = 16;
  o.common.steps = 150;
  o.common.log_every = 10;
  o.common.threads = 1;
  o.common.progress = false;
  return o;
}

TEST(EncoderTraining, LossFallsAndRetrievalImprovesOnASyntheticTask) {
  std::string dir = test::make_temp_dir("train_enc");
  write_fixture_model(dir + "/model", test::tiny_model_options(3));
  PairTask task = make_task(64, 1);
  std::string data = write_task(dir, task);
  double before = accuracy(*Encoder::load(dir + "/model"), task);
  TrainReport r = train_encoder(tiny_run(dir + "/model", data, dir + "/out"));
  EXPECT_EQ(r.steps, 150u);
  EXPECT_LT(r.last_loss, 0.5 * r.first_loss) << "first " << r.first_loss << " last " << r.last_loss;
  // The written model directory loads with the inference encoder (another code path).
  double after = accuracy(*Encoder::load(dir + "/out/last"), task);
  std::printf("top-1 accuracy on 64 pairs: before %.3f, after %.3f; loss %.3f -> %.3f\n", before, after,
              r.first_loss, r.last_loss);
  EXPECT_LT(before, 0.3);
  EXPECT_GT(after, before + 0.3);
  EXPECT_TRUE(std::filesystem::exists(dir + "/out/metrics.jsonl"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/out/checkpoint-150/optimizer.pt"));
}

TEST(EncoderTraining, SavedWeightsEqualTheTrainedModule) {
  std::string dir = test::make_temp_dir("train_save");
  write_fixture_model(dir + "/model", test::tiny_model_options(4));
  train::TrainableEncoder enc(dir + "/model", 0, c10::Device("cpu"));
  {
    at::NoGradGuard g;
    for (auto& p : enc.model()->parameters()) p.add_(0.01);
  }
  enc.save(dir + "/saved");
  // The inference encoder reading the saved directory agrees with the training module in eval mode.
  enc.model()->eval();
  at::NoGradGuard g;
  at::Tensor mine = enc.embed({"the dog bit the man", "a cat"});
  Embeddings e = Encoder::load(dir + "/saved")->encode({"the dog bit the man", "a cat"});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t h = 0; h < 32; ++h) EXPECT_NEAR(mine[i][h].item<float>(), e.pooled[i * 32 + h], 1e-5);
  // And differs from the original model (the change was saved, not the source weights).
  Embeddings orig = Encoder::load(dir + "/model")->encode({"the dog bit the man"});
  double diff = 0;
  for (int64_t h = 0; h < 32; ++h) diff += std::abs(orig.pooled[h] - e.pooled[h]);
  EXPECT_GT(diff, 1e-3);
}

// length_buckets against every way of cutting the sorted lengths into consecutive chunks.
TEST(EncoderTraining, LengthBucketsAreTheCheapestCutOfTheSortedLengths) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 40; ++trial) {
    const size_t n = 1 + rng() % 11, cost = rng() % 3 == 0 ? 0 : 1 + rng() % 40;
    std::vector<size_t> len(n);
    for (auto& l : len) l = 1 + rng() % 128;
    std::sort(len.begin(), len.end());
    auto cost_of = [&](const std::vector<size_t>& ends) {
      size_t c = 0, begin = 0;
      for (size_t e : ends) c += (e - begin) * len[e - 1] + cost, begin = e;
      return c;
    };
    size_t best = SIZE_MAX;
    for (uint32_t mask = 0; mask < (1u << (n - 1)); ++mask) {  // bit i: a cut after text i
      std::vector<size_t> ends;
      for (size_t i = 0; i + 1 < n; ++i)
        if (mask >> i & 1) ends.push_back(i + 1);
      ends.push_back(n);
      best = std::min(best, cost_of(ends));
    }
    const std::vector<size_t> got = train::length_buckets(len, cost);
    ASSERT_FALSE(got.empty());
    EXPECT_EQ(got.back(), n);
    EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));
    EXPECT_EQ(cost_of(got), best) << "trial " << trial;
  }
}

// embed() runs texts of very different lengths in separate chunks and returns them in the
// callers' order: each key equals the text embedded on its own.
TEST(EncoderTraining, EmbeddingInLengthChunksEqualsEmbeddingEachTextAlone) {
  std::string dir = test::make_temp_dir("train_chunks");
  write_fixture_model(dir + "/model", test::tiny_model_options(4));
  train::TrainableEncoder enc(dir + "/model", 0, c10::Device("cpu"));
  enc.model()->eval();
  at::NoGradGuard g;
  std::vector<std::string> texts;
  std::string long_text;
  for (int i = 0; i < 60; ++i) long_text += i % 2 ? " man" : " dog bit the";
  for (int i = 0; i < 9; ++i) texts.push_back(i % 3 == 0 ? long_text + " " + std::to_string(i) : "a cat " + std::to_string(i));
  const at::Tensor all = enc.embed(texts);
  ASSERT_EQ(all.size(0), 9);
  for (size_t i = 0; i < texts.size(); ++i) {
    const at::Tensor one = enc.embed({texts[i]});
    EXPECT_LT((all[static_cast<int64_t>(i)] - one[0]).abs().max().item<float>(), 1e-5) << i;
  }
  EXPECT_EQ(enc.embed({}).size(0), 0);
}

// Max |a - b| over the tensors both files hold, and the max |a| (for scale).
std::pair<double, double> max_tensor_diff(const std::string& a_file, const std::string& b_file) {
  auto a = SafetensorsFile::open(a_file), b = SafetensorsFile::open(b_file);
  double d = 0, scale = 0;
  size_t common = 0;
  for (const auto& n : a->names()) {
    if (!b->contains(n)) continue;
    ++common;
    auto x = a->get(n).to_float(), y = b->get(n).to_float();
    for (size_t i = 0; i < x.size(); ++i) {
      d = std::max(d, double(std::abs(x[i] - y[i])));
      scale = std::max(scale, double(std::abs(x[i])));
    }
  }
  EXPECT_GT(common, 10u);
  return {d, scale};
}

TEST(EncoderTraining, ResumedRunEqualsUninterruptedRun) {
  std::string dir = test::make_temp_dir("train_resume");
  write_fixture_model(dir + "/model", test::tiny_model_options(5));
  std::string data = write_task(dir, make_task(48, 2));
  auto straight = tiny_run(dir + "/model", data, dir + "/straight");
  straight.common.steps = 20;
  train_encoder(straight);
  auto part = straight;
  part.common.out_dir = dir + "/parts";
  part.common.stop_after = 12;
  TrainReport first = train_encoder(part);
  EXPECT_EQ(first.steps, 12u);
  part.common.stop_after = 0;
  part.common.resume = true;
  TrainReport second = train_encoder(part);
  EXPECT_EQ(second.steps, 20u);
  EXPECT_LT(max_tensor_diff(dir + "/straight/last/model.safetensors", dir + "/parts/last/model.safetensors").first, 1e-6);
  // Sanity: training did move the weights (a resume that restarted from scratch would not match).
  EXPECT_GT(max_tensor_diff(dir + "/model/model.safetensors", dir + "/straight/last/model.safetensors").first, 1e-3);
}

TEST(EncoderTraining, TwoProcessDataParallelGradientsEqualOneProcess) {
  // The same global batch of 8 through `sieve train encoder` in one process and in two (Gloo,
  // 4 rows each); without dropout the summed gradients equal the single-process gradients up to
  // summation order. (Weights after AdamW are not compared: Adam turns rounding noise in
  // near-zero gradients into whole steps.)
  std::string dir = test::make_temp_dir("train_dp");
  write_fixture_model(dir + "/model", test::tiny_model_options(11));
  std::string data = write_task(dir, make_task(48, 5));
  const std::string base = test::cli_path() + " train encoder -m " + dir + "/model --train " + data +
                           " --steps 3 --batch-size 8 --lr 3e-3 --dropout 0 --threads 1 --log-every 1";
  auto one = test::run_command(base + " --out " + dir + "/one --dump-gradients " + dir + "/g1.safetensors");
  ASSERT_EQ(one.exit_code, 0) << one.out;
  auto two = test::run_command(base + " --world-size 2 --out " + dir + "/two --dump-gradients " + dir + "/g2.safetensors");
  ASSERT_EQ(two.exit_code, 0) << two.out;
  EXPECT_EQ(std::count(two.out.begin(), two.out.end(), '\n'), 1) << "only rank 0 reports: " << two.out;
  auto [diff, scale] = max_tensor_diff(dir + "/g1.safetensors", dir + "/g2.safetensors");
  std::printf("gradients: max |1 process - 2 processes| %.3g, max |gradient| %.3g\n", diff, scale);
  EXPECT_GT(scale, 1e-3);
  EXPECT_LT(diff, 1e-5 * std::max(1.0, scale));
  // Both runs trained (the weights moved from the start).
  EXPECT_GT(max_tensor_diff(dir + "/model/model.safetensors", dir + "/two/last/model.safetensors").first, 1e-4);
}

TEST(EncoderTraining, BadInputsFailBeforeTraining) {
  std::string dir = test::make_temp_dir("train_bad");
  write_fixture_model(dir + "/model", test::tiny_model_options(6));
  std::string data = write_task(dir, make_task(8, 3));
  auto o = tiny_run(dir + "/model", data, dir + "/out");
  test::expect_error([&] { train_encoder(o); }, "fewer than one batch");
  o.common.batch_size = 4;
  o.train_path = dir + "/missing.tsv";
  test::expect_error([&] { train_encoder(o); }, "missing.tsv");
  o.train_path = data;
  o.common.resume = true;
  test::expect_error([&] { train_encoder(o); }, "no checkpoint");
  EXPECT_FALSE(std::filesystem::exists(dir + "/out/last"));
}

// Identity triplets whose negative is the anchor's words reversed (a role swap): only a verifier
// that reads order can tell them apart.
std::string write_swaps(const std::string& dir, size_t n, uint64_t seed) {
  const std::vector<std::string> w = {"man", "woman", "dog", "cat", "bird", "car", "house", "tree", "city", "river"};
  std::mt19937_64 rng(seed);
  std::string path = dir + "/swaps.tsv";
  std::ofstream out(path);
  out << "sentence1\tsentence2\n";
  std::set<std::string> seen;
  while (seen.size() < n) {
    size_t a = rng() % w.size(), b = rng() % w.size();
    if (a == b) continue;
    std::string s1 = "the " + w[a] + " saw the " + w[b], s2 = "the " + w[b] + " saw the " + w[a];
    if (seen.insert(s1).second) out << s1 << "\t" << s2 << "\n";
  }
  return path;
}

VerifierTrainOptions tiny_verifier_run(const std::string& model, const std::string& data, const std::string& out,
                                       VerifierKind kind, VerifierRegime regime) {
  VerifierTrainOptions o;
  o.model_dir = model;
  o.train_path = data;
  o.verifier.kind = kind;
  o.verifier.max_tokens = 16;
  o.verifier.f3.hidden = 4;
  o.verifier.f3.blocks = 1;
  o.verifier.f3.mlp_hidden = 8;
  o.verifier.f4.width = 16;
  o.verifier.f4.heads = 2;
  o.regime = regime;
  o.lr_verifier = 3e-3;
  o.lr_encoder = 1e-3;
  o.common.out_dir = out;
  o.common.batch_size = 8;
  o.common.steps = 60;
  o.common.log_every = 10;
  o.common.threads = 1;
  o.common.progress = false;
  return o;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A role-swapped pair scored by `trained` and by the verifier training started from (the same
// config and seed, fresh weights), with the encoder of `model`.
std::pair<float, float> trained_and_initial_scores(const Verifier& trained, const std::string& model, uint64_t seed) {
  VerifierConfig init = trained.config();
  init.threshold = std::numeric_limits<double>::quiet_NaN();
  auto fresh = Verifier::create(init, seed);
  EncodeCall call;
  call.token_states = true;
  Embeddings e = Encoder::load(model)->encode({"the dog saw the cat", "the cat saw the dog"}, call);
  return {trained.score(e.tokens[0], {&e.tokens[1]})[0], fresh->score(e.tokens[0], {&e.tokens[1]})[0]};
}

TEST(VerifierTraining, FrozenLearnsTheVerifierAndLeavesTheEncoderAlone) {
  std::string dir = test::make_temp_dir("train_ver_frozen");
  write_fixture_model(dir + "/model", test::tiny_model_options(7));
  std::string data = write_swaps(dir, 40, 1);
  const std::string before = file_bytes(dir + "/model/model.safetensors");
  auto o = tiny_verifier_run(dir + "/model", data, dir + "/out", VerifierKind::F4, VerifierRegime::Frozen);
  TrainReport r = train_verifier(o);
  EXPECT_EQ(r.steps, 60u);
  EXPECT_LT(r.last_loss, r.first_loss) << r.first_loss << " -> " << r.last_loss;
  EXPECT_EQ(file_bytes(dir + "/model/model.safetensors"), before);
  EXPECT_FALSE(std::filesystem::exists(dir + "/out/encoder"));
  // The file loads for the untouched encoder, and its weights moved away from the initial ones.
  auto trained = Verifier::load(dir + "/out/verifier.safetensors", model_identity(dir + "/model"));
  const auto [a, b] = trained_and_initial_scores(*trained, dir + "/model", o.common.seed);
  EXPECT_NE(a, b);
}

TEST(VerifierTraining, EndToEndChangesTheEncoderAndNamesIt) {
  std::string dir = test::make_temp_dir("train_ver_e2e");
  write_fixture_model(dir + "/model", test::tiny_model_options(8));
  std::string data = write_swaps(dir, 24, 2);
  auto o = tiny_verifier_run(dir + "/model", data, dir + "/out", VerifierKind::F1, VerifierRegime::EndToEnd);
  o.common.steps = 15;
  TrainReport r = train_verifier(o);
  EXPECT_FALSE(r.skipped);
  EXPECT_NE(file_bytes(dir + "/out/encoder/model.safetensors"), file_bytes(dir + "/model/model.safetensors"));
  // The verifier names the trained encoder, not the starting one.
  EXPECT_NO_THROW(Verifier::load(dir + "/out/verifier.safetensors", model_identity(dir + "/out/encoder")));
  EXPECT_EQ(Verifier::load(dir + "/out/verifier.safetensors")->config().kind, VerifierKind::F1);
}

// Two steps of `sieve train verifier` on the tiny model (batch 8, no dropout), once with the flags
// `first` and once with `second`: the dumped gradients (verifier and encoder) must agree.
void expect_same_gradients(const std::string& dir, const std::string& data, const std::string& first,
                           const std::string& second) {
  const std::string base = test::cli_path() + " train verifier -m " + dir + "/model --train " + data +
                           " --max-tokens 16 --f4-width 16 --f4-heads 2 --steps 2 --batch-size 8 --dropout 0"
                           " --verifier-dropout 0 --threads 1 ";
  for (int run : {1, 2}) {
    const std::string n = std::to_string(run);
    auto r = test::run_command(base + (run == 1 ? first : second) + " --out " + dir + "/run" + n +
                               " --dump-gradients " + dir + "/g" + n + ".safetensors");
    ASSERT_EQ(r.exit_code, 0) << (run == 1 ? first : second);
  }
  auto [diff, scale] = max_tensor_diff(dir + "/g1.safetensors", dir + "/g2.safetensors");
  std::printf("[%s] vs [%s]: max difference %.3g, max |gradient| %.3g\n", first.c_str(), second.c_str(), diff, scale);
  EXPECT_GT(scale, 1e-4) << second;
  EXPECT_LT(diff, 1e-5 * std::max(1.0, scale)) << second;
  std::filesystem::remove_all(dir + "/run1");
  std::filesystem::remove_all(dir + "/run2");
}

TEST(VerifierTraining, TwoProcessDataParallelGradientsEqualOneProcess) {
  // F4 frozen (with and without the pointwise term, whose rows are the rank's share), F1 end to
  // end, and F4 with the exact-match channel (token ids gathered with the positives) both ways,
  // batch 8 split 4 + 4 over two processes: the summed gradients equal one process's.
  std::string dir = test::make_temp_dir("train_ver_dp");
  write_fixture_model(dir + "/model", test::tiny_model_options(12));
  std::string data = write_swaps(dir, 24, 6);
  for (std::string mode :
       {"--kind F4 --regime frozen", "--kind F4 --regime frozen --pointwise-weight 1", "--kind F1 --regime end-to-end",
        "--kind F4 --regime frozen --exact-match", "--kind F4 --regime end-to-end --exact-match"})
    expect_same_gradients(dir, data, mode, mode + " --world-size 2");
}

TEST(VerifierTraining, ScoringInSharesGivesTheGradientsOfOnePass) {
  // Batch 8 has 8 x 9 maps a step; --maps-per-pass 9 scores one anchor row at a time (and 20, two
  // rows then a remainder). F4 frozen with the pointwise term, F1 end to end (the encoder's
  // gradient gathered through the leaves, against one pass straight through), F4 end to end with
  // the exact-match channel, and two processes in shares: every gradient equals one pass's.
  // F3 is left out: its batch norm normalises per share by design.
  std::string dir = test::make_temp_dir("train_ver_shares");
  write_fixture_model(dir + "/model", test::tiny_model_options(13));
  std::string data = write_swaps(dir, 24, 7);
  for (auto [kind, shares] : std::vector<std::pair<std::string, std::string>>{
           {"--kind F4 --regime frozen --pointwise-weight 1", "--maps-per-pass 9"},
           {"--kind F1 --regime end-to-end", "--maps-per-pass 20"},
           {"--kind F4 --regime end-to-end --exact-match", "--maps-per-pass 9"},
           {"--kind F4 --regime end-to-end", "--maps-per-pass 1 --world-size 2"}})
    expect_same_gradients(dir, data, kind + " --maps-per-pass 1000", kind + " " + shares);
}

TEST(VerifierTraining, FrozenParameterFreeIsSkipped) {
  std::string dir = test::make_temp_dir("train_ver_skip");
  write_fixture_model(dir + "/model", test::tiny_model_options(9));
  std::string data = write_swaps(dir, 16, 3);
  TrainReport r = train_verifier(
      tiny_verifier_run(dir + "/model", data, dir + "/out", VerifierKind::F2, VerifierRegime::Frozen));
  EXPECT_TRUE(r.skipped);
  EXPECT_EQ(r.steps, 0u);
  EXPECT_EQ(Verifier::load(dir + "/out/verifier.safetensors")->config().kind, VerifierKind::F2);
}

TEST(VerifierTraining, F3TrainsFrozen) {
  std::string dir = test::make_temp_dir("train_ver_f3");
  write_fixture_model(dir + "/model", test::tiny_model_options(10));
  std::string data = write_swaps(dir, 16, 4);
  auto o = tiny_verifier_run(dir + "/model", data, dir + "/out", VerifierKind::F3, VerifierRegime::Frozen);
  o.common.steps = 30;
  o.common.log_every = 5;
  TrainReport r = train_verifier(o);
  EXPECT_EQ(r.steps, 30u);
  EXPECT_LT(r.last_loss, r.first_loss) << r.first_loss << " -> " << r.last_loss;
  auto trained = Verifier::load(dir + "/out/verifier.safetensors", model_identity(dir + "/model"));
  // By hand, for tiny_verifier_run's F3 (3 input channels: M, row max, column max; hidden 4,
  // kernel 3, one block, MLP 8): conv 3*4*3*3 + 4 = 112, batch norm 4 + 4 = 8 (running
  // statistics are buffers), fc1 4*8 + 8 = 40, fc2 8 + 1 = 9.
  EXPECT_EQ(trained->parameter_count(), 112u + 8u + 40u + 9u);
  // Training moved the weights: the same pair scores differently from the untrained verifier
  // of the same seed.
  const auto [a, b] = trained_and_initial_scores(*trained, dir + "/model", o.common.seed);
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace sieve

namespace sieve {
namespace {

TEST(Mlm, PackingFillsSequencesInOrderWithinDocuments) {
  // Two documents; sequences of 6 = [CLS] + 4 tokens + [SEP]; no sequence crosses a document.
  std::vector<std::vector<std::vector<int32_t>>> docs = {{{10, 11, 12}, {13, 14}, {15}}, {{20, 21, 22, 23, 24}}};
  auto seqs = train::pack_sequences(docs, 6, 1, 2);
  std::vector<std::vector<int32_t>> expect = {{1, 10, 11, 12, 13, 2}, {1, 14, 15, 2}, {1, 20, 21, 22, 23, 2}, {1, 24, 2}};
  EXPECT_EQ(seqs, expect);
}

TEST(Mlm, MaskingRatesAndNeverSpecials) {
  // 64 x 128 ids in [5, 1000); specials 1 ([CLS]) and 2 ([SEP]) at the ends; the last 28
  // positions are padding.
  const int64_t B = 64, L = 128, V = 1000;
  at::Tensor ids = at::randint(5, V, {B, L}, at::kLong);
  ids.select(1, 0).fill_(1);
  ids.select(1, 99).fill_(2);
  at::Tensor mask = at::ones({B, L}, at::kLong);
  mask.narrow(1, 100, 28).fill_(0);
  ids.narrow(1, 100, 28).fill_(0);
  at::Generator gen = at::detail::createCPUGenerator(123);
  train::Masked m = train::mask_tokens(ids, mask, {1, 2, 0, 3}, 3, V, 0.15, gen);
  double chosen = 0, masked = 0, random = 0, kept = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < L; ++j) {
      int64_t lab = m.labels[b][j].item<int64_t>(), in = m.input[b][j].item<int64_t>(), id = ids[b][j].item<int64_t>();
      if (j == 0 || j == 99 || j >= 100) {
        EXPECT_EQ(lab, -100) << "special or padding chosen at " << j;
        EXPECT_EQ(in, id);
        continue;
      }
      if (lab == -100) {
        EXPECT_EQ(in, id);
        continue;
      }
      EXPECT_EQ(lab, id);
      ++chosen;
      if (in == 3) ++masked;
      else if (in == id) ++kept;
      else ++random;
    }
  const double eligible = B * 98.0;
  // 6,272 eligible positions: 15% chosen (sd ~0.45%), then 80/10/10 (sd ~1.3% / ~1%).
  EXPECT_NEAR(chosen / eligible, 0.15, 0.02);
  EXPECT_NEAR(masked / chosen, 0.8, 0.04);
  EXPECT_NEAR(random / chosen, 0.1, 0.035);
  EXPECT_NEAR(kept / chosen, 0.1, 0.035);
}

TEST(Mlm, HfInitStatistics) {
  at::manual_seed(1);
  train::MlmHead head(64, 500, 1e-12);
  BertOptions bo;
  bo.config.hidden_size = 64;
  bo.config.num_attention_heads = 2;
  bo.config.num_hidden_layers = 1;
  bo.config.intermediate_size = 128;
  bo.config.vocab_size = 500;
  BertModel model(bo);
  train::hf_init(*model, 0.02, 0);
  auto p = model->named_parameters();
  at::Tensor w = p["embeddings.word_embeddings.weight"];
  EXPECT_EQ(w[0].abs().sum().item<double>(), 0.0);  // padding row
  EXPECT_NEAR(w.narrow(0, 1, 499).std().item<double>(), 0.02, 0.001);
  EXPECT_EQ(p["embeddings.LayerNorm.weight"].min().item<double>(), 1.0);
  EXPECT_EQ(p["encoder.layer.0.attention.self.query.bias"].abs().max().item<double>(), 0.0);
  EXPECT_NEAR(p["encoder.layer.0.intermediate.dense.weight"].std().item<double>(), 0.02, 0.001);
}

TEST(Mlm, LossFallsOnATinyCorpusAndTheModelLoads) {
  std::string dir = test::make_temp_dir("train_mlm");
  std::vector<std::string> vocab = builtin_fixture_vocab(0);
  {
    std::ofstream v(dir + "/vocab.txt");
    for (const auto& t : vocab) v << t << "\n";
    // A repetitive corpus: the masked word is predictable from its neighbours.
    std::ofstream t(dir + "/text.txt");
    const char* s[] = {"the dog ran to the river", "the cat sat on the chair", "a bird saw the old tree",
                       "the man gave the book to the child"};
    for (int i = 0; i < 200; ++i) t << s[i % 4] << "\n" << (i % 10 == 9 ? "\n" : "");
  }
  MlmTrainOptions o;
  o.vocab_file = dir + "/vocab.txt";
  o.text_files = {dir + "/text.txt"};
  o.config.hidden_size = 32;
  o.config.num_hidden_layers = 1;
  o.config.num_attention_heads = 2;
  o.config.intermediate_size = 64;
  o.config.max_position_embeddings = 64;
  o.seq_len = 32;
  o.lr = 2e-3;
  o.common.out_dir = dir + "/out";
  o.common.steps = 120;
  o.common.batch_size = 8;
  o.common.log_every = 20;
  o.common.threads = 1;
  o.common.progress = false;
  TrainReport r = train_mlm(o);
  std::printf("MLM loss %.3f -> %.3f\n", r.first_loss, r.last_loss);
  EXPECT_LT(r.last_loss, 0.7 * r.first_loss);
  // The written directory is a working encoder (BertForMaskedLM names, "bert." prefix).
  auto enc = Encoder::load(dir + "/out/last");
  Embeddings e = enc->encode({"the dog ran to the river"});
  EXPECT_EQ(e.dim, 32u);
  auto f = SafetensorsFile::open(dir + "/out/last/model.safetensors");
  EXPECT_TRUE(f->contains("cls.predictions.bias"));
  EXPECT_TRUE(f->contains("bert.embeddings.word_embeddings.weight"));
  // Data parallel through the CLI: two processes share each batch and agree on one model.
  auto two = test::run_command(test::cli_path() + " train mlm --vocab " + dir + "/vocab.txt --text " + dir +
                               "/text.txt --hidden 32 --layers 1 --heads 2 --ffn 64 --max-positions 64 --seq-len 32"
                               " --steps 4 --batch-size 8 --threads 1 --world-size 2 --out " + dir + "/dp");
  ASSERT_EQ(two.exit_code, 0);
  EXPECT_EQ(std::count(two.out.begin(), two.out.end(), '\n'), 1) << two.out;
  EXPECT_EQ(Encoder::load(dir + "/dp/last")->dim(), 32u);
}

}  // namespace
}  // namespace sieve
