// The cross-encoder on the tiny random BERT fixture: its logits against an independent scalar
// forward pass (naive_bert plus a hand-written pooler and classifier), batched against one pair
// at a time, token types and truncation, the training command's folder layout and resume, the
// sieve file and the load errors. The real model against sentence-transformers is
// test_real_cross_encoder.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/checksum.h"
#include "core/file_util.h"
#include "eval/pairs.h"
#include "sieve/cross_encoder.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "sieve/model.h"
#include "sieve/pipeline.h"
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

// The cross-encoder keeps a request's deadline: it scores a few pairs at a time and stops once the
// deadline has passed (nullopt), and without one it is logits() itself.
TEST(CrossEncoder, ScoringStopsAtTheDeadline) {
  auto ce = CrossEncoder::load(last_dir());
  const auto& pairs = sample_pairs();
  using Clock = std::chrono::steady_clock;
  EXPECT_EQ(*ce->logits_until(pairs, Clock::time_point::max()), ce->logits(pairs));
  const auto chunked = ce->logits_until(pairs, Clock::now() + std::chrono::hours(1), 2);
  ASSERT_TRUE(chunked.has_value());
  const std::vector<float> all = ce->logits(pairs);
  for (size_t i = 0; i < pairs.size(); ++i) EXPECT_NEAR((*chunked)[i], all[i], 1e-5) << i;
  EXPECT_FALSE(ce->logits_until(pairs, Clock::now() - std::chrono::milliseconds(1)).has_value());
  EXPECT_FALSE(ce->score_pairs_until(pairs, Clock::now() - std::chrono::milliseconds(1)).has_value());
  // The same through the one branch the faces share (score_pairs_by_kind).
  const ResolvedVerifier rv = resolve_verifier("cross:" + last_dir(), {fixture().encoder, ""});
  auto no_fast = []() -> std::vector<float> { throw std::logic_error("a cross-encoder has no fast tier"); };
  EXPECT_FALSE(score_pairs_by_kind(rv, pairs, no_fast, Clock::now() - std::chrono::milliseconds(1)).has_value());
  EXPECT_EQ(*score_pairs_by_kind(rv, pairs, no_fast), ce->score_pairs(pairs));
  EXPECT_EQ(*score_pairs_by_kind(rv, pairs, no_fast, Clock::time_point::max(), /*logits=*/true), all);
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
  // Version 2 carries a checksum: an edited value is refused; a version 1 file has none and reads.
  write_cross_encoder_meta(d, m);
  std::string text = read_file(d + "/" + kCrossEncoderMetaFile);
  ASSERT_NE(text.find("0.625"), std::string::npos);
  text.replace(text.find("0.625"), 5, "0.125");
  write_file_atomic(d + "/" + kCrossEncoderMetaFile, text);
  test::expect_error([&] { read_cross_encoder_meta(d); }, "checksum mismatch");
  write_file_atomic(d + "/" + kCrossEncoderMetaFile,
                    R"({"format": "sieve-cross-encoder", "version": 1, "threshold": 0.25, "base_encoder": "/y"})");
  EXPECT_EQ(read_cross_encoder_meta(d).threshold, 0.25);
}

TEST(CrossEncoder, AThresholdIsKeptOnlyForTheWeightsItWasCalibratedOn) {
  const std::string d = test::make_temp_dir("cross_weights") + "/ce";
  std::filesystem::copy(last_dir(), d, std::filesystem::copy_options::recursive);
  CrossEncoderMeta m = read_cross_encoder_meta(d);
  m.threshold = 0.5;
  write_cross_encoder_meta(d, m);
  EXPECT_EQ(read_cross_encoder_meta(d).weights_sha256, sha256_file_hex(d + "/model.safetensors"));
  EXPECT_EQ(CrossEncoder::load(d)->threshold(), 0.5);
  test::flip_byte(d + "/model.safetensors", std::filesystem::file_size(d + "/model.safetensors") - 2, 4);
  EXPECT_TRUE(std::isnan(CrossEncoder::load(d)->threshold()));
  EXPECT_EQ(read_cross_encoder_meta(d).threshold, 0.5);  // the file itself is left as it was
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

// --- the cross-encoder as a verifier: cross:DIR in the pipeline and the CLI --------------------

TEST(CrossEncoderVerifier, ResolvesAndReranksStageOneHitsByTheirTexts) {
  const std::string dir = test::make_temp_dir("cross_pipeline");
  const char* texts[] = {"the dog bit the man", "the man bit the dog", "a red car is parked", "the cat sat on the mat",
                         "a man walks a dog", "blue house near the river"};
  {
    std::ofstream f(dir + "/c.tsv");
    for (int i = 0; i < 6; ++i) f << "d" << i << "\t" << texts[i] << "\n";
  }
  build_index(fixture().encoder, dir + "/c.tsv", dir + "/ix");
  auto index = Index::open(dir + "/ix");
  const ResolvedVerifier rv = resolve_verifier("cross:" + last_dir(), {fixture().encoder, ""});
  ASSERT_TRUE(rv.cross != nullptr);
  EXPECT_FALSE(rv.cosine());
  EXPECT_EQ(rv.kind(), "cross");
  EXPECT_TRUE(std::isnan(rv.threshold()));
  PipelineParams pp;
  pp.candidates = 6;
  pp.k = 6;
  pp.rerank = true;
  const std::string query = "who bit the man";
  Stage2Timing t;
  auto hits = search_verified(*index, rv, query, pp, &t);
  ASSERT_EQ(hits.size(), 6u);
  auto ce = CrossEncoder::load(last_dir());
  for (size_t i = 0; i < hits.size(); ++i) {
    const size_t doc = std::stoul(hits[i].hit.id.substr(1));
    EXPECT_NEAR(hits[i].verifier_score, ce->score(query, {texts[doc]})[0], 1e-6) << hits[i].hit.id;
    if (i > 0) EXPECT_GE(hits[i - 1].verifier_score, hits[i].verifier_score);
  }
  EXPECT_GT(t.verify, 0);
  pp.gate = true;
  test::expect_error([&] { search_verified(*index, rv, query, pp); }, "gating needs a threshold");
  pp.threshold = hits[2].verifier_score;
  EXPECT_EQ(search_verified(*index, rv, query, pp).size(), 3u);
  test::expect_error([&] { resolve_verifier("cross:", {fixture().encoder, ""}); }, "cross:DIR");
  test::expect_error([&] { resolve_verifier("cross:" + fixture().encoder, {fixture().encoder, ""}); },
                     "sieve train cross-encoder");
}

TEST(CrossEncoderVerifier, CliTrainsScoresAndCalibrates) {
  const std::string root = test::make_temp_dir("cross_cli");
  const std::string sieve = test::cli_path();
  auto r = test::run_command(sieve + " train cross-encoder -m " + fixture().encoder + " --train " + fixture().pairs +
                             " --out " + root + "/run --steps 2 --batch-size 4 --lr 1e-2 --threads 1 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\"final_dir\""), std::string::npos) << r.out;
  const std::string ce_dir = root + "/run/last";
  const std::string score = sieve + " verify score -m " + fixture().encoder + " --verifier cross:" + ce_dir +
                            " --pairs " + fixture().pairs + " 2>/dev/null";
  r = test::run_command(score);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // The scores equal the library's, in input order, with no threshold yet.
  auto ce = CrossEncoder::load(ce_dir);
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& p : eval::read_pairs(fixture().pairs)) pairs.emplace_back(p.sentence1, p.sentence2);
  const std::vector<float> want = ce->score_pairs(pairs);
  std::istringstream lines(r.out);
  size_t i = 0;
  for (std::string line; std::getline(lines, line); ++i) {
    auto j = nlohmann::json::parse(line);
    EXPECT_NEAR(j["score"].get<double>(), want[i], 1e-6) << line;
    EXPECT_TRUE(j["threshold"].is_null());
  }
  EXPECT_EQ(i, want.size());
  r = test::run_command(sieve + " verify calibrate -m " + fixture().encoder + " --verifier cross:" + ce_dir +
                        " --pairs " + fixture().pairs + " --target-precision 0.5 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const double t = nlohmann::json::parse(r.out)["threshold"].get<double>();
  EXPECT_EQ(read_cross_encoder_meta(ce_dir).threshold, t);
  EXPECT_FALSE(read_cross_encoder_meta(ce_dir).base_identity.empty());  // the rest of the file is kept
  r = test::run_command(score);
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("\"accepted\""), std::string::npos) << r.out;
  // explain needs a token map: a clear refusal.
  r = test::run_command(sieve + " explain -m " + fixture().encoder + " --verifier cross:" + ce_dir + " a b 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("no map"), std::string::npos) << r.out;
}

// ---- The cascade (issue 43's gate modes): the fast gate over every candidate, the cross-encoder
// for those whose fast score lies in the band, each rescored by cascade_score. ----

struct CascadeSetup {
  std::string model, ce, index, query;
  std::vector<std::string> texts;
  double fast_threshold = 0, cross_threshold = 0;
  CascadeBand band;
};

// A copy of the fixture encoder with an F2 gate, a copy of the trained cross-encoder, an index of
// eight texts; both thresholds at the median of the query's scores, and a band around the fast one
// that holds two candidates.
CascadeSetup make_cascade(const std::string& root) {
  CascadeSetup c;
  c.model = root + "/model";
  c.ce = root + "/ce";
  std::filesystem::copy(fixture().encoder, c.model, std::filesystem::copy_options::recursive);
  std::filesystem::copy(last_dir(), c.ce, std::filesystem::copy_options::recursive);
  c.texts = {"the dog bit the man", "the man bit the dog", "a red car is parked", "the cat sat on the mat",
             "a man walks a dog", "blue house near the river", "the dog is not old", "an old man sat"};
  {
    std::ofstream f(root + "/c.tsv");
    for (size_t i = 0; i < c.texts.size(); ++i) f << "d" << i << "\t" << c.texts[i] << "\n";
  }
  c.index = root + "/ix";
  build_index(c.model, root + "/c.tsv", c.index);
  c.query = "the dog bit a man";
  auto index = Index::open(c.index);
  VerifierConfig vc;
  vc.kind = VerifierKind::F2;
  auto f2 = Verifier::create(vc);
  PipelineParams all;
  all.candidates = all.k = c.texts.size();
  std::vector<float> fast;
  for (const auto& h : search_verified(*index, *f2, c.query, all)) fast.push_back(h.verifier_score);
  std::sort(fast.begin(), fast.end());
  c.fast_threshold = 0.5 * (fast[3] + fast[4]);
  f2->save_with_threshold(c.model + "/verifier.safetensors", c.fast_threshold);
  // Half-width halfway between the 2nd and 3rd nearest distances: 2 candidates fall inside.
  std::vector<double> d;
  for (float f : fast) d.push_back(std::abs(f - c.fast_threshold));
  std::sort(d.begin(), d.end());
  const double half = 0.5 * (d[1] + d[2]);
  c.band = {c.fast_threshold - half, c.fast_threshold + half};
  auto ce = CrossEncoder::load(c.ce);
  std::vector<float> cross = ce->score(c.query, c.texts);
  std::sort(cross.begin(), cross.end());
  c.cross_threshold = 0.5 * (cross[3] + cross[4]);
  CrossEncoderMeta m = ce->meta();
  m.threshold = c.cross_threshold;
  m.cascade_low = c.band.low;
  m.cascade_high = c.band.high;
  m.cascade_fast_sha256 = sha256_file_hex(c.model + "/verifier.safetensors");
  write_cross_encoder_meta(c.ce, m);
  return c;
}

TEST(Cascade, SearchEqualsTheFastGateWithTheCrossEncoderInsideTheBand) {
  const CascadeSetup c = make_cascade(test::make_temp_dir("cascade_search"));
  auto index = Index::open(c.index);
  const ResolvedVerifier rv = resolve_verifier("cascade:" + c.ce, {c.model, ""});
  ASSERT_TRUE(rv.cascade());
  EXPECT_TRUE(rv.calibrated);
  EXPECT_EQ(rv.kind(), "cascade");
  EXPECT_DOUBLE_EQ(rv.threshold(), c.fast_threshold);
  EXPECT_DOUBLE_EQ(rv.band.low, c.band.low);
  // The reference: each tier on its own.
  auto fast_v = Verifier::load(c.model + "/verifier.safetensors");
  auto ce = CrossEncoder::load(c.ce);
  PipelineParams all;
  all.candidates = all.k = c.texts.size();
  std::map<std::string, float> want;
  size_t inside = 0;
  for (const auto& h : search_verified(*index, *fast_v, c.query, all)) {
    const size_t doc = std::stoul(h.hit.id.substr(1));
    const float cross = ce->score(c.query, {c.texts[doc]})[0];
    want[h.hit.id] = cascade_score(h.verifier_score, cross, c.fast_threshold, c.cross_threshold, c.band);
    inside += c.band.contains(h.verifier_score);
    if (!c.band.contains(h.verifier_score)) EXPECT_EQ(want[h.hit.id], h.verifier_score);
  }
  ASSERT_EQ(inside, 2u);
  PipelineParams pp = all;
  pp.rerank = true;
  Stage2Timing st;
  const auto hits = search_verified(*index, rv, c.query, pp, &st);
  ASSERT_EQ(hits.size(), c.texts.size());
  for (size_t i = 0; i < hits.size(); ++i) {
    EXPECT_NEAR(hits[i].verifier_score, want.at(hits[i].hit.id), 1e-6) << hits[i].hit.id;
    EXPECT_EQ(hits[i].accepted, hits[i].verifier_score >= c.fast_threshold);
    if (i) EXPECT_GE(hits[i - 1].verifier_score, hits[i].verifier_score);
  }
  EXPECT_EQ(st.scored, c.texts.size());
  EXPECT_EQ(st.sent, 2u);
  EXPECT_GT(st.cross, 0);
  // Gated: exactly the accepted ones.
  pp.gate = true;
  size_t accepted = 0;
  for (const auto& [id, s] : want) accepted += s >= c.fast_threshold;
  EXPECT_EQ(search_verified(*index, rv, c.query, pp).size(), accepted);
  // Pairs scored as texts (fresh token states, not the index's sq8 ones): each tier on its own,
  // mapped where the fast score lies in the band.
  auto enc = Encoder::load(c.model);
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& t : c.texts) pairs.emplace_back(c.query, t);
  const std::vector<float> s = score_text_pairs(enc.get(), rv, pairs);
  const std::vector<float> fast = score_text_pairs(*enc, fast_v.get(), pairs);
  size_t changed = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const float cross = ce->score(c.query, {c.texts[i]})[0];
    EXPECT_NEAR(s[i], cascade_score(fast[i], cross, c.fast_threshold, c.cross_threshold, c.band), 1e-6) << i;
    changed += s[i] != fast[i];
  }
  EXPECT_GT(changed, 0u);
}

// A cascade whose cross-encoder would run past the deadline gives up (nullopt) and leaves the fast
// tier's scores as they were.
TEST(Cascade, TheCrossEncoderTierKeepsTheDeadline) {
  const CascadeSetup c = make_cascade(test::make_temp_dir("cascade_deadline"));
  const ResolvedVerifier rv = resolve_verifier("cascade:" + c.ce, {c.model, ""});
  std::vector<std::pair<std::string, std::string>> pairs;
  std::vector<float> scores;
  for (const auto& t : c.texts) {
    pairs.emplace_back(c.query, t);
    scores.push_back(static_cast<float>(c.fast_threshold));  // every pair inside the band
  }
  const std::vector<float> before = scores;
  using Clock = std::chrono::steady_clock;
  EXPECT_FALSE(apply_cascade(rv, pairs, scores, 32, Clock::now() - std::chrono::milliseconds(1)).has_value());
  EXPECT_EQ(scores, before);
  const auto sent = apply_cascade(rv, pairs, scores, 32, Clock::now() + std::chrono::hours(1));
  ASSERT_TRUE(sent.has_value());
  EXPECT_EQ(*sent, pairs.size());
  EXPECT_NE(scores, before);
}

TEST(Cascade, ABandHoldsOnlyForTheGateItWasCalibratedWith) {
  const CascadeSetup c = make_cascade(test::make_temp_dir("cascade_band"));
  // Installed as MODEL_DIR/cross-encoder, the auto gate mode (what --gate alone runs) becomes the
  // cascade; "default" stays the model's fast gate, whatever is installed beside it.
  std::filesystem::copy(c.ce, c.model + "/cross-encoder", std::filesystem::copy_options::recursive);
  EXPECT_EQ(gate_verifier_spec(GateMode::Auto, "", c.model), "cascade:" + c.model + "/cross-encoder");
  EXPECT_EQ(resolve_verifier(stage2_choice("", "", "", c.model).gate, {c.model, ""}).kind(), "cascade");
  EXPECT_EQ(stage2_choice("", "", "", c.model).rerank, "F1");
  EXPECT_EQ(resolve_verifier("default", {c.model, ""}).kind(), "F2");
  EXPECT_EQ(resolve_verifier("", {c.model, ""}).kind(), "F2");
  // Another gate file (a new threshold): the band no longer holds; auto is the gate alone, and
  // an explicit cascade refuses to search until calibrated again.
  Verifier::load(c.model + "/verifier.safetensors")->save_with_threshold(c.model + "/verifier.safetensors", 0.123);
  EXPECT_EQ(gate_verifier_spec(GateMode::Auto, "", c.model), "default");
  EXPECT_EQ(resolve_verifier("default", {c.model, ""}).kind(), "F2");
  const ResolvedVerifier stale = resolve_verifier("cascade:" + c.ce, {c.model, ""});
  EXPECT_FALSE(stale.calibrated);
  auto index = Index::open(c.index);
  test::expect_error([&] { search_verified(*index, stale, c.query, {}); }, "calibrate the cascade");
  test::expect_error([&] { resolve_verifier("cascade:", {c.model, ""}); }, "cascade:DIR");
}

TEST(Cascade, MetaFileKeepsTheBandAndRefusesABrokenOne) {
  const std::string d = test::make_temp_dir("cascade_meta");
  CrossEncoderMeta m;
  m.threshold = 0.4;
  m.cascade_low = 0.2;
  m.cascade_high = 0.6;
  m.cascade_fast_sha256 = "ab";
  m.cascade_sent = 0.1;
  m.cascade_auc = 0.9;
  write_cross_encoder_meta(d, m);
  const CrossEncoderMeta r = read_cross_encoder_meta(d);
  EXPECT_TRUE(r.has_cascade());
  EXPECT_DOUBLE_EQ(r.cascade_low, 0.2);
  EXPECT_DOUBLE_EQ(r.cascade_high, 0.6);
  EXPECT_EQ(r.cascade_fast_sha256, "ab");
  EXPECT_DOUBLE_EQ(r.cascade_sent, 0.1);
  EXPECT_DOUBLE_EQ(r.cascade_auc, 0.9);
  EXPECT_TRUE(std::isnan(r.cascade_auc_fast));
  EXPECT_EQ(nlohmann::json::parse(read_file(d + "/" + kCrossEncoderMetaFile))["version"], 4);
  EXPECT_FALSE(r.cascade_combination.valid());  // none written, none read
  // Version 4: the band's combination, every field kept.
  m.cascade_combination = {0.1, 1.1, -0.2, 0.9, 1.7, 0.6, -0.3, 0.55};
  write_cross_encoder_meta(d, m);
  const TierCombination t = read_cross_encoder_meta(d).cascade_combination;
  ASSERT_TRUE(t.valid());
  EXPECT_DOUBLE_EQ(t.mean_fast, 0.1);
  EXPECT_DOUBLE_EQ(t.scale_fast, 1.1);
  EXPECT_DOUBLE_EQ(t.mean_cross, -0.2);
  EXPECT_DOUBLE_EQ(t.scale_cross, 0.9);
  EXPECT_DOUBLE_EQ(t.w_fast, 1.7);
  EXPECT_DOUBLE_EQ(t.w_cross, 0.6);
  EXPECT_DOUBLE_EQ(t.bias, -0.3);
  EXPECT_DOUBLE_EQ(t.threshold, 0.55);
  {  // A combination without a threshold, or with a zero scale, is refused.
    auto k = nlohmann::json::parse(read_file(d + "/" + kCrossEncoderMetaFile));
    k.erase("crc32");
    k["cascade"]["combine"]["scale_cross"] = 0;
    const std::string dump = k.dump();
    k["crc32"] = crc32_hex(crc32(dump.data(), dump.size()));
    write_file_atomic(d + "/" + kCrossEncoderMetaFile, k.dump());
    test::expect_error([&] { read_cross_encoder_meta(d); }, "is not a valid combination");
    k.erase("crc32");
    k["cascade"]["combine"].erase("threshold");
    const std::string dump2 = k.dump();
    k["crc32"] = crc32_hex(crc32(dump2.data(), dump2.size()));
    write_file_atomic(d + "/" + kCrossEncoderMetaFile, k.dump());
    test::expect_error([&] { read_cross_encoder_meta(d); }, "needs a number 'threshold'");
  }
  m.cascade_combination = {};
  write_cross_encoder_meta(d, m);
  // A record without a low end is refused (its checksum recomputed, so only the content is wrong).
  auto j = nlohmann::json::parse(read_file(d + "/" + kCrossEncoderMetaFile));
  j.erase("crc32");
  j["cascade"]["low"] = nullptr;
  const std::string dump = j.dump();
  j["crc32"] = crc32_hex(crc32(dump.data(), dump.size()));
  write_file_atomic(d + "/" + kCrossEncoderMetaFile, j.dump());
  test::expect_error([&] { read_cross_encoder_meta(d); }, "a finite low and high");
}

TEST(Cascade, CliCalibratesTheBandAndSearchesByGateMode) {
  const CascadeSetup c = make_cascade(test::make_temp_dir("cascade_cli"));
  const std::string sieve = test::cli_path();
  // Calibration stores a band for this gate and reports what it measured.
  auto r = test::run_command(sieve + " verify calibrate -m " + c.model + " --verifier cascade:" + c.ce + " --pairs " +
                             fixture().pairs + " --max-sent 0.5 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_LE(j["sent"].get<double>(), 0.5);
  const CrossEncoderMeta m = read_cross_encoder_meta(c.ce);
  EXPECT_EQ(m.cascade_fast_sha256, sha256_file_hex(c.model + "/verifier.safetensors"));
  EXPECT_DOUBLE_EQ(m.cascade_low, j["band"][0].get<double>());
  EXPECT_DOUBLE_EQ(m.cascade_high, j["band"][1].get<double>());
  EXPECT_DOUBLE_EQ(m.threshold, c.cross_threshold);  // the rest of the file is kept
  // Put the test's band back, then search by gate mode: the library's answer, and the count sent.
  CrossEncoderMeta back = m;
  back.cascade_low = c.band.low;
  back.cascade_high = c.band.high;
  write_cross_encoder_meta(c.ce, back);
  const std::string search = sieve + " search --index " + c.index + " -m " + c.model + " --candidates 8 -k 8 --rerank \"" +
                             c.query + "\"";
  r = test::run_command(search + " --gate-mode cascade --cross " + c.ce + " 2>&1 >/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("cascade: sent 2 of 8 candidates"), std::string::npos) << r.out;
  r = test::run_command(search + " --gate-mode cascade --cross " + c.ce + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto index = Index::open(c.index);
  PipelineParams pp;
  pp.candidates = pp.k = 8;
  pp.rerank = pp.gate = true;
  const auto want = search_verified(*index, resolve_verifier("cascade:" + c.ce, {c.model, ""}), c.query, pp);
  const auto line = nlohmann::json::parse(r.out);
  ASSERT_EQ(line["hits"].size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(line["hits"][i]["id"], want[i].hit.id);
    EXPECT_NEAR(line["hits"][i]["verifier_score"].get<double>(), want[i].verifier_score, 1e-6);
  }
  // accurate = the cross-encoder alone; fast = the gate alone.
  r = test::run_command(search + " --gate-mode accurate --cross " + c.ce + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto ce = CrossEncoder::load(c.ce);
  for (const auto& h : nlohmann::json::parse(r.out)["hits"]) {
    const size_t doc = std::stoul(h["id"].get<std::string>().substr(1));
    EXPECT_NEAR(h["verifier_score"].get<double>(), ce->score(c.query, {c.texts[doc]})[0], 1e-6);
  }
  r = test::run_command(search + " --gate-mode fast 2>&1 >/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("cascade:"), std::string::npos) << r.out;
  // Clear refusals.
  r = test::run_command(search + " --gate-mode cascade 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("needs a cross-encoder"), std::string::npos) << r.out;
  r = test::run_command(search + " --gate-mode fast --verifier F1 2>&1");
  EXPECT_NE(r.out.find("not both"), std::string::npos) << r.out;
  r = test::run_command(search + " --gate-mode fast --cross " + c.ce + " 2>&1");
  EXPECT_NE(r.out.find("--cross goes with"), std::string::npos) << r.out;
  // Calibrating the cross-encoder's threshold again drops the band it was measured with.
  r = test::run_command(sieve + " verify calibrate -m " + c.model + " --verifier cross:" + c.ce + " --pairs " +
                        fixture().pairs + " --target-precision 0.5 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_FALSE(read_cross_encoder_meta(c.ce).has_cascade());
}

TEST(Cascade, ACombinationOfTheTiersScoresTheBand) {
  const CascadeSetup c = make_cascade(test::make_temp_dir("cascade_combined"));
  const std::string sieve = test::cli_path();
  // A combination that weighs the fast tier against the cross-encoder, as scripts/fit-tiers.py writes it.
  const std::string comb = c.ce + "/../combination.json";
  {
    std::ofstream f(comb);
    f << R"({"mean_fast": 0.2, "scale_fast": 1.3, "mean_cross": -0.4, "scale_cross": 0.8, "w_fast": 1.1,
             "w_cross": 0.9, "bias": 0.05, "threshold": 0.5, "report": {}})";
  }
  auto r = test::run_command(sieve + " verify calibrate -m " + c.model + " --verifier cascade:" + c.ce + " --pairs " +
                             fixture().pairs + " --max-sent 1 --combination " + comb + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(nlohmann::json::parse(r.out)["combined"].get<bool>());
  const CrossEncoderMeta m = read_cross_encoder_meta(c.ce);
  ASSERT_TRUE(m.cascade_combination.valid());
  EXPECT_DOUBLE_EQ(m.cascade_combination.w_cross, 0.9);
  // Every candidate in the band: search's scores are the combination of both tiers computed apart.
  CrossEncoderMeta wide = m;
  wide.cascade_low = -1;
  wide.cascade_high = 2;
  write_cross_encoder_meta(c.ce, wide);
  const ResolvedVerifier rv = resolve_verifier("cascade:" + c.ce, {c.model, ""});
  ASSERT_TRUE(rv.combination.valid());
  auto index = Index::open(c.index);
  auto fast_v = Verifier::load(c.model + "/verifier.safetensors");
  auto ce = CrossEncoder::load(c.ce);
  PipelineParams all;
  all.candidates = all.k = c.texts.size();
  std::map<std::string, float> want;
  for (const auto& h : search_verified(*index, *fast_v, c.query, all)) {
    const size_t doc = std::stoul(h.hit.id.substr(1));
    const float cross = ce->score(c.query, {c.texts[doc]})[0];
    want[h.hit.id] = cascade_score(h.verifier_score, cross, c.fast_threshold, c.cross_threshold, rv.combination, rv.band);
    // Not what the cross-encoder alone would give.
    EXPECT_NE(want[h.hit.id], cascade_score(h.verifier_score, cross, c.fast_threshold, c.cross_threshold, rv.band));
  }
  const auto hits = search_verified(*index, rv, c.query, all);
  ASSERT_EQ(hits.size(), c.texts.size());
  for (const auto& h : hits) EXPECT_NEAR(h.verifier_score, want.at(h.hit.id), 1e-6) << h.hit.id;
  // Recalibrating the band without a combination drops it; a bad file is refused by name.
  r = test::run_command(sieve + " verify calibrate -m " + c.model + " --verifier cascade:" + c.ce + " --pairs " +
                        fixture().pairs + " --max-sent 1 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_FALSE(read_cross_encoder_meta(c.ce).cascade_combination.valid());
  {
    std::ofstream f(comb);
    f << R"({"mean_fast": 0.2})";
  }
  r = test::run_command(sieve + " verify calibrate -m " + c.model + " --verifier cascade:" + c.ce + " --pairs " +
                        fixture().pairs + " --combination " + comb + " 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("(a combination of scripts/fit-tiers.py) needs a number 'scale_fast'"), std::string::npos) << r.out;
  r = test::run_command(sieve + " verify calibrate -m " + c.model + " --verifier F1 --out " + c.ce + "/../f1.safetensors" +
                        " --pairs " + fixture().pairs + " --combination " + comb + " 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("--combination belongs to a cascade"), std::string::npos) << r.out;
}

// `sieve model install-cross-encoder`: a calibrated folder becomes MODEL_DIR/cross-encoder, where
// `default` finds the cascade; checkpoints stay behind; what is not installable changes nothing.
TEST(Cascade, InstallCrossEncoderPublishesACalibratedFolderForTheModel) {
  const CascadeSetup c = make_cascade(test::make_temp_dir("cascade_install"));
  const std::string sieve = test::cli_path();
  std::filesystem::create_directories(c.ce + "/checkpoint-100");
  write_file_atomic(c.ce + "/checkpoint-100/trainer_state.json", "{}");
  EXPECT_EQ(resolve_verifier("default", {c.model, ""}).kind(), "F2");  // nothing installed yet
  auto r = test::run_command(sieve + " model install-cross-encoder " + c.ce + " -m " + c.model + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(0, r.out.find('\n')));
  EXPECT_EQ(j["installed"], c.model + "/cross-encoder");
  EXPECT_TRUE(j["band"].get<bool>());
  EXPECT_FALSE(j["replaced"].get<bool>());
  EXPECT_DOUBLE_EQ(j["threshold"].get<double>(), c.cross_threshold);
  EXPECT_TRUE(is_cross_encoder_dir(c.model + "/cross-encoder"));
  EXPECT_FALSE(std::filesystem::exists(c.model + "/cross-encoder/checkpoint-100"));
  EXPECT_FALSE(std::filesystem::exists(c.model + "/.cross-encoder.staging"));
  EXPECT_EQ(sha256_file_hex(c.model + "/cross-encoder/model.safetensors"), sha256_file_hex(c.ce + "/model.safetensors"));
  EXPECT_EQ(resolve_verifier("default", {c.model, ""}).kind(), "F2");  // "default" is the fast gate, always
  const ResolvedVerifier d = resolve_verifier(gate_verifier_spec(GateMode::Auto, "", c.model), {c.model, ""});
  EXPECT_EQ(d.kind(), "cascade");
  EXPECT_DOUBLE_EQ(d.band.low, c.band.low);
  // Again: replaced, still whole.
  r = test::run_command(sieve + " model install-cross-encoder " + c.ce + " -m " + c.model + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(nlohmann::json::parse(r.out)["replaced"].get<bool>());
  const std::string before = sha256_file_hex(c.model + "/cross-encoder/" + kCrossEncoderMetaFile);
  // Not calibrated for its weights: refused, the installed one untouched.
  const std::string raw = test::make_temp_dir("cascade_install_raw") + "/ce";
  std::filesystem::copy(c.ce, raw, std::filesystem::copy_options::recursive);
  CrossEncoderMeta none = read_cross_encoder_meta(raw);
  none.threshold = std::nan("");
  none.cascade_fast_sha256.clear();
  write_cross_encoder_meta(raw, none);
  r = test::run_command(sieve + " model install-cross-encoder " + raw + " -m " + c.model + " 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("has no threshold for its weights"), std::string::npos) << r.out;
  // Not a cross-encoder at all (the encoder itself): refused.
  r = test::run_command(sieve + " model install-cross-encoder " + c.model + " -m " + c.model + " 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("is not a cross-encoder folder"), std::string::npos) << r.out;
  EXPECT_EQ(sha256_file_hex(c.model + "/cross-encoder/" + kCrossEncoderMetaFile), before);
  // Without a band for the model's gate it installs, and says that --gate stays the fast gate.
  CrossEncoderMeta noband = read_cross_encoder_meta(c.ce);
  noband.cascade_fast_sha256.clear();
  write_cross_encoder_meta(c.ce, noband);
  r = test::run_command(sieve + " model install-cross-encoder " + c.ce + " -m " + c.model + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("--gate stays the fast gate"), std::string::npos) << r.out;
  EXPECT_EQ(gate_verifier_spec(GateMode::Auto, "", c.model), "default");
}

}  // namespace
}  // namespace sieve
