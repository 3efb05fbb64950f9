// The cross-encoder on the tiny random BERT fixture: its logits against an independent scalar
// forward pass (naive_bert plus a hand-written pooler and classifier), batched against one pair
// at a time, token types and truncation, the training command's folder layout and resume, the
// sieve file and the load errors. The real model against sentence-transformers is
// test_real_cross_encoder.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "sieve/cross_encoder.h"
#include "sieve/error.h"
#include "sieve/model.h"
#include "sieve/safetensors.h"
#include "sieve/train.h"
#include "support/fixtures.h"
#include "support/test_util.h"
#include "unit/model/naive_bert.h"

namespace sieve {
namespace {

const std::vector<std::pair<std::string, std::string>>& sample_pairs() {
  static const std::vector<std::pair<std::string, std::string>> p = {
      {"the cat sat on the mat", "the cat sat on the mat"},
      {"the cat sat on the mat", "the dog sat on the mat"},
      {"a man is playing a guitar", "a woman is not playing a guitar"},
      {"hello", "the old house stood at the end of a long and quiet road near the river"},
      {"  leading and trailing space  ", "x"},
      {"", "an empty first text"},
      {"the quick brown fox jumps over the lazy dog again and again and again",
       "the lazy dog is jumped over by the quick brown fox"},
  };
  return p;
}

// A pair file of labelled rows made from the fixture's vocabulary.
std::string write_pairs(const std::string& dir, size_t n) {
  const std::vector<std::string> words = {"the", "cat", "dog", "sat", "on", "mat", "man", "is", "not", "a", "house", "old"};
  std::string path = dir + "/pairs.tsv";
  std::ofstream f(path);
  f << "sentence1\tsentence2\tlabel\n";
  for (size_t i = 0; i < n; ++i) {
    std::string a, b;
    for (size_t k = 0; k < 3 + i % 5; ++k) a += (k ? " " : "") + words[(i * 7 + k * 3) % words.size()];
    b = i % 2 ? a : a + " " + words[(i + 5) % words.size()];
    f << a << "\t" << b << "\t" << (i % 2) << "\n";
  }
  return path;
}

// Training options of a short run on the tiny model (one thread, no progress line).
CrossEncoderTrainOptions short_run(const std::string& model, const std::string& data, const std::string& out,
                                   size_t steps, double lr) {
  CrossEncoderTrainOptions o;
  o.model_dir = model;
  o.train_path = data;
  o.lr = lr;
  o.common.out_dir = out;
  o.common.steps = steps;
  o.common.batch_size = 4;
  o.common.progress = false;
  o.common.threads = 1;
  return o;
}

struct Fixture {
  std::string encoder, out, pairs;
};

// The tiny encoder and a cross-encoder trained from it for a few steps (a high learning rate,
// so the head moves away from its near-zero start).
const Fixture& fixture() {
  static Fixture* f = [] {
    auto* x = new Fixture;
    const std::string root = test::make_temp_dir("cross");
    x->encoder = root + "/enc";
    write_fixture_model(x->encoder, test::tiny_model_options());
    x->pairs = write_pairs(root, 24);
    x->out = root + "/out";
    train_cross_encoder(short_run(x->encoder, x->pairs, x->out, 4, 1e-2));
    return x;
  }();
  return *f;
}

std::string last_dir() { return fixture().out + "/last"; }

// The logit by plain loops: naive_bert's final states, then tanh(W_p h_cls + b_p), then w_c . p + b_c.
double naive_logit(const std::string& dir, const Encoding& e, bool zero_types = false) {
  static std::map<std::string, std::unique_ptr<test::NaiveBert>> cache;
  auto& nb = cache[dir];
  if (!nb) nb = std::make_unique<test::NaiveBert>(dir);
  std::vector<int> ids(e.ids.begin(), e.ids.end()), types(e.type_ids.begin(), e.type_ids.end());
  if (zero_types) std::fill(types.begin(), types.end(), 0);
  const auto states = nb->forward(ids, types);
  auto file = SafetensorsFile::open(dir + "/model.safetensors");
  const auto pw = file->get("bert.pooler.dense.weight").to_float(), pb = file->get("bert.pooler.dense.bias").to_float();
  const auto cw = file->get("classifier.weight").to_float(), cb = file->get("classifier.bias").to_float();
  const size_t H = states[0].size();
  double logit = cb[0];
  for (size_t i = 0; i < H; ++i) {
    double s = pb[i];
    for (size_t j = 0; j < H; ++j) s += static_cast<double>(pw[i * H + j]) * states[0][j];
    logit += static_cast<double>(cw[i]) * std::tanh(s);
  }
  return logit;
}

TEST(CrossEncoder, TrainingWritesTheHuggingFaceLayout) {
  const std::string d = last_dir();
  auto cfg = nlohmann::json::parse(read_file(d + "/config.json"));
  EXPECT_EQ(cfg["architectures"][0], "BertForSequenceClassification");
  EXPECT_EQ(cfg["id2label"].size(), 1u);
  EXPECT_TRUE(is_file(d + "/vocab.txt"));
  EXPECT_FALSE(is_file(d + "/modules.json"));  // not a sentence-transformers bi-encoder
  auto w = SafetensorsFile::open(d + "/model.safetensors");
  for (const char* k : {"bert.embeddings.word_embeddings.weight", "bert.embeddings.token_type_embeddings.weight",
                        "bert.pooler.dense.weight", "classifier.weight", "classifier.bias"})
    EXPECT_TRUE(w->contains(k)) << k;
  EXPECT_EQ(w->get("classifier.weight").shape, (std::vector<int64_t>{1, 32}));
  EXPECT_TRUE(is_cross_encoder_dir(d));
  EXPECT_FALSE(is_cross_encoder_dir(fixture().encoder));
  const CrossEncoderMeta m = read_cross_encoder_meta(d);
  EXPECT_FALSE(m.base_identity.empty());
  EXPECT_TRUE(std::isnan(m.threshold));
  auto report = nlohmann::json::parse(read_file(fixture().out + "/report.json"));
  EXPECT_EQ(report["steps"], 4);
  EXPECT_TRUE(is_file(fixture().out + "/metrics.jsonl"));
}

TEST(CrossEncoder, LogitsEqualANaiveForwardPass) {
  auto ce = CrossEncoder::load(last_dir());
  const auto& pairs = sample_pairs();
  const std::vector<float> z = ce->logits(pairs);
  const std::vector<float> s = ce->score_pairs(pairs);
  ASSERT_EQ(z.size(), pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    Encoding e = ce->tokenizer().encode_pair(pairs[i].first, pairs[i].second);
    EXPECT_NEAR(z[i], naive_logit(last_dir(), e), 1e-4) << i;
    EXPECT_NEAR(s[i], 1.0 / (1.0 + std::exp(-naive_logit(last_dir(), e))), 1e-5) << i;
  }
  // Not a constant: the pairs get different logits.
  EXPECT_GT(std::abs(z[0] - z[2]), 1e-4);
}

TEST(CrossEncoder, BatchedEqualsOnePairAtATime) {
  auto ce = CrossEncoder::load(last_dir());
  const auto& pairs = sample_pairs();
  const std::vector<float> all = ce->logits(pairs, 32), two = ce->logits(pairs, 2);
  for (size_t i = 0; i < pairs.size(); ++i) {
    const float one = ce->logits({pairs[i]}, 1)[0];
    EXPECT_NEAR(all[i], one, 1e-5) << i;
    EXPECT_NEAR(two[i], one, 1e-5) << i;
  }
  const std::vector<std::string> cands = {pairs[0].second, pairs[1].second};
  const std::vector<float> sc = ce->score(pairs[0].first, cands);
  EXPECT_NEAR(sc[0], ce->score_pairs({pairs[0]})[0], 1e-6);
}

TEST(CrossEncoder, TokenTypesMatter) {
  auto ce = CrossEncoder::load(last_dir());
  Encoding e = ce->tokenizer().encode_pair("the cat sat", "on the mat");
  // [CLS] the cat sat [SEP] -> 0; on the mat [SEP] -> 1.
  const int32_t sep = ce->tokenizer().special_tokens().sep;
  const size_t first_sep = static_cast<size_t>(std::find(e.ids.begin(), e.ids.end(), sep) - e.ids.begin());
  ASSERT_LT(first_sep + 2, e.ids.size());
  EXPECT_EQ(e.ids.back(), sep);
  for (size_t i = 0; i < e.ids.size(); ++i) EXPECT_EQ(e.type_ids[i], i <= first_sep ? 0 : 1) << i;
  const float z = ce->logits({{"the cat sat", "on the mat"}})[0];
  EXPECT_NEAR(z, naive_logit(last_dir(), e), 1e-4);
  EXPECT_GT(std::abs(z - naive_logit(last_dir(), e, /*zero_types=*/true)), 1e-3);
}

TEST(CrossEncoder, LongPairsAreCutLongestFirst) {
  CrossEncoderOptions opt;
  opt.max_length = 12;
  auto ce = CrossEncoder::load(last_dir(), opt);
  EXPECT_EQ(ce->max_length(), 12u);
  auto full = CrossEncoder::load(last_dir());
  EXPECT_EQ(full->max_length(), 64u);  // the fixture's positions cap tokenizer_config's 512
  const std::pair<std::string, std::string> p = {"the quick brown fox jumps over the lazy dog",
                                                  "a man is playing a guitar on the old house"};
  EncodeOptions eo;
  eo.max_length = 12;
  Encoding e = ce->tokenizer().encode_pair(p.first, p.second, eo);
  ASSERT_EQ(e.ids.size(), 12u);
  EXPECT_TRUE(e.truncated);
  EXPECT_NEAR(ce->logits({p})[0], naive_logit(last_dir(), e), 1e-4);
}

TEST(CrossEncoder, MetaFileRoundTripsAndIsChecked) {
  const std::string d = test::make_temp_dir("cross_meta");
  CrossEncoderMeta m;
  EXPECT_TRUE(std::isnan(read_cross_encoder_meta(d).threshold));  // absent: defaults
  m.base_encoder = "/x";
  m.threshold = 0.625;
  write_cross_encoder_meta(d, m);
  EXPECT_EQ(read_cross_encoder_meta(d).threshold, 0.625);
  EXPECT_EQ(read_cross_encoder_meta(d).base_encoder, "/x");
  write_file_atomic(d + "/" + kCrossEncoderMetaFile, R"({"format": "sieve-cross-encoder", "version": 9})");
  test::expect_error([&] { read_cross_encoder_meta(d); }, "version 9");
  write_file_atomic(d + "/" + kCrossEncoderMetaFile, R"({"format": "other"})");
  test::expect_error([&] { read_cross_encoder_meta(d); }, "not a sieve cross-encoder file");
}

TEST(CrossEncoder, RefusesAnEncoderFolder) {
  test::expect_error([&] { CrossEncoder::load(fixture().encoder); }, "sieve train cross-encoder");
  test::expect_error([&] { CrossEncoder::load("/nonexistent/ce"); }, "not found");
}

TEST(CrossEncoder, ResumeGivesTheUninterruptedRun) {
  const std::string root = test::make_temp_dir("cross_resume");
  CrossEncoderTrainOptions o = short_run(fixture().encoder, fixture().pairs, root + "/straight", 4, 1e-3);
  train_cross_encoder(o);
  o.common.out_dir = root + "/split";
  o.common.stop_after = 2;
  train_cross_encoder(o);
  o.common.stop_after = 0;
  o.common.resume = true;
  train_cross_encoder(o);
  auto a = SafetensorsFile::open(root + "/straight/last/model.safetensors");
  auto b = SafetensorsFile::open(root + "/split/last/model.safetensors");
  for (const char* k : {"classifier.weight", "bert.pooler.dense.weight", "bert.embeddings.word_embeddings.weight"}) {
    const auto x = a->get(k).to_float(), y = b->get(k).to_float();
    ASSERT_EQ(x.size(), y.size());
    double diff = 0;
    for (size_t i = 0; i < x.size(); ++i) diff = std::max(diff, std::abs(static_cast<double>(x[i]) - y[i]));
    EXPECT_LT(diff, 1e-6) << k;
  }
}

TEST(CrossEncoder, TripletFilesGivePositiveAndNegativePairs) {
  const std::string root = test::make_temp_dir("cross_triplets");
  {
    std::ofstream f(root + "/t.tsv");
    f << "anchor\tpositive\tnegative\n";
    for (int i = 0; i < 6; ++i) f << "the cat sat " << i << "\tthe cat sat on " << i << "\tthe dog sat " << i << "\n";
  }
  train_cross_encoder(short_run(fixture().encoder, root + "/t.tsv", root + "/out", 1, 2e-5));
  auto report = nlohmann::json::parse(read_file(root + "/out/report.json"));
  EXPECT_EQ(report["pairs"], 12);
}

}  // namespace
}  // namespace sieve
