// Verifier training on labelled pairs (the pairs objective) and the disk cache of frozen token
// states: the cache returns what the encoder gives (to float16 rounding), reuses it on reopening
// and refuses a corrupted or foreign file; the BCE objective learns a labelled role-swap task,
// reads triplets as two labelled pairs, and refuses unlabelled pairs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "sieve/encoder.h"
#include "sieve/index.h"
#include "sieve/train.h"
#include "sieve/verify.h"
#include "support/fixtures.h"
#include "support/test_util.h"
#include "train/token_cache.h"

namespace sieve {
namespace {

std::vector<std::string> sentences(size_t n, uint64_t seed) {
  const std::vector<std::string> w = {"man", "woman", "dog", "cat", "bird", "car", "house", "tree", "city", "river"};
  std::mt19937_64 rng(seed);
  std::set<std::string> seen;
  std::vector<std::string> out;
  while (out.size() < n) {
    size_t a = rng() % w.size(), b = rng() % w.size();
    if (a == b) continue;
    std::string s = "the " + w[a] + " saw the " + w[b];
    if (seen.insert(s).second) out.push_back(s);
  }
  return out;
}

TEST(TokenStateCache, ReturnsTheEncodersStatesReusesThemAndChecksThem) {
  const std::string dir = test::make_temp_dir("token_cache");
  write_fixture_model(dir + "/model", test::tiny_model_options(21));
  auto enc = Encoder::load(dir + "/model");
  const auto texts = sentences(20, 1);
  EncodeCall call;
  call.token_states = true;
  const Embeddings direct = enc->encode(texts, call);
  const std::string id = model_identity(dir + "/model");
  {
    train::TokenStateCache cache(dir + "/cache", id, enc->dim(), 64);
    EXPECT_EQ(cache.size(), 0u);
    cache.add(*enc, {texts.begin(), texts.begin() + 12}, false);
    cache.add(*enc, texts, false);  // only the 8 new ones are encoded
    EXPECT_EQ(cache.size(), 20u);
  }
  train::TokenStateCache cache(dir + "/cache", id, enc->dim(), 64);
  EXPECT_EQ(cache.reused(), 20u);
  for (size_t i = 0; i < texts.size(); ++i) {
    const TokenStates got = cache.get(texts[i]);
    const TokenStates& want = direct.tokens[i];
    ASSERT_EQ(got.length, want.length);
    ASSERT_EQ(got.values.size(), want.values.size());
    EXPECT_EQ(got.ids, want.ids);
    for (size_t k = 0; k < got.values.size(); ++k)  // float16: 11 significant bits
      ASSERT_NEAR(got.values[k], want.values[k], std::abs(want.values[k]) * std::pow(2.0, -11) + 1e-7) << k;
  }
  test::expect_error([&] { cache.get("never cached"); }, "not cached");
  // Another width or identity is another cache (another file) or refused.
  EXPECT_EQ(train::TokenStateCache(dir + "/cache", id + "x", enc->dim(), 64).size(), 0u);
  // A flipped byte fails the record's checksum.
  {
    std::fstream f(cache.states_path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(5);
    char c = 0;
    f.read(&c, 1);
    f.seekp(5);
    c = static_cast<char>(c ^ 0x40);
    f.write(&c, 1);
  }
  train::TokenStateCache damaged(dir + "/cache", id, enc->dim(), 64);
  size_t failures = 0;
  for (const auto& t : texts) {
    try {
      (void)damaged.get(t);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
      ++failures;
    }
  }
  EXPECT_EQ(failures, 1u);
  // An index line cut by an interrupted run is ignored; a malformed complete line is an error.
  const std::string index = cache.states_path().substr(0, cache.states_path().size() - 7) + ".index";
  std::ofstream(index, std::ios::app) << "0123456789abcdef:5 0 1";
  EXPECT_EQ(train::TokenStateCache(dir + "/cache", id, enc->dim(), 64).size(), 20u);
  std::ofstream(index, std::ios::app) << "\n";
  test::expect_error([&] { train::TokenStateCache(dir + "/cache", id, enc->dim(), 64); }, "malformed token cache entry");
}

TEST(TokenStateCache, TwoWritersOfOneCacheTakeTurns) {
  // Two caches open on one folder at once (as the ranks of a data-parallel run do) and add the
  // same texts: the flock makes one encode and the other find them, so every text is stored once.
  const std::string dir = test::make_temp_dir("token_cache_two");
  write_fixture_model(dir + "/model", test::tiny_model_options(22));
  auto enc = Encoder::load(dir + "/model");
  const auto texts = sentences(30, 2);
  const std::string id = model_identity(dir + "/model");
  std::vector<std::string> errors(2);
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w)
    writers.emplace_back([&, w] {
      try {
        train::TokenStateCache cache(dir + "/cache", id, enc->dim(), 64);
        cache.add(*enc, texts, false);
        for (const auto& t : texts) (void)cache.get(t);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(w)] = e.what();
      }
    });
  for (auto& t : writers) t.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  train::TokenStateCache cache(dir + "/cache", id, enc->dim(), 64);
  EXPECT_EQ(cache.size(), texts.size());
  uint64_t want_bytes = 0;
  for (const auto& t : texts) want_bytes += cache.get(t).length * (enc->dim() * 2 + 4);
  EXPECT_EQ(std::filesystem::file_size(cache.states_path()), want_bytes);  // no record twice
}

// Labelled pairs: a sentence against itself is the same (1), against its role swap not (0).
std::string write_labelled(const std::string& dir, size_t n, uint64_t seed) {
  const std::string path = dir + "/labelled.tsv";
  std::ofstream out(path);
  out << "sentence1\tsentence2\tlabel\n";
  for (const auto& s : sentences(n, seed)) {
    const auto saw = s.find(" saw ");
    const std::string swapped = s.substr(saw + 5) + " saw " + s.substr(0, saw);
    out << s << '\t' << s << "\t1\n" << s << '\t' << swapped << "\t0\n";
  }
  return path;
}

VerifierTrainOptions pairs_run(const std::string& model, const std::string& data, const std::string& out) {
  VerifierTrainOptions o;
  o.model_dir = model;
  o.train_path = data;
  o.objective = VerifierObjective::Pairs;
  o.verifier.kind = VerifierKind::F4;
  o.verifier.max_tokens = 16;
  o.verifier.f4.width = 16;
  o.verifier.f4.heads = 2;
  o.lr_verifier = 3e-3;
  o.common.out_dir = out;
  o.common.batch_size = 8;
  o.common.steps = 20;
  o.common.log_every = 10;
  o.common.threads = 1;
  o.common.progress = false;
  return o;
}

TEST(VerifierPairsObjective, LearnsALabelledRoleSwapTask) {
  const std::string dir = test::make_temp_dir("train_pairs");
  write_fixture_model(dir + "/model", test::tiny_model_options(22));
  const std::string data = write_labelled(dir, 30, 2);
  auto o = pairs_run(dir + "/model", data, dir + "/out");
  o.common.steps = 300;  // the task is learnt in a jump after about 250 steps
  o.common.log_every = 50;
  TrainReport r = train_verifier(o);
  EXPECT_EQ(r.steps, 300u);
  EXPECT_LT(r.last_loss, r.first_loss * 0.8) << r.first_loss << " -> " << r.last_loss;
  EXPECT_TRUE(std::filesystem::exists(dir + "/out/token-cache"));
  // Held-out sentences: the identity pair scores above the role swap for most of them.
  auto v = Verifier::load(dir + "/out/verifier.safetensors", model_identity(dir + "/model"));
  auto enc = Encoder::load(dir + "/model");
  std::set<std::string> trained;
  for (const auto& s : sentences(30, 2)) trained.insert(s);
  size_t right = 0, total = 0;
  for (const auto& s : sentences(60, 9)) {
    if (trained.count(s)) continue;
    const auto saw = s.find(" saw ");
    const std::string swapped = s.substr(saw + 5) + " saw " + s.substr(0, saw);
    const float same = score_text_pairs(*enc, v.get(), {{s, s}})[0];
    const float swap = score_text_pairs(*enc, v.get(), {{s, swapped}})[0];
    right += same > swap;
    ++total;
  }
  ASSERT_GT(total, 5u);
  EXPECT_GE(static_cast<double>(right), 0.8 * static_cast<double>(total)) << right << "/" << total;
}

TEST(VerifierPairsObjective, ResumedRunEqualsUninterruptedRunAndTheCacheIsReused) {
  const std::string dir = test::make_temp_dir("train_pairs_resume");
  write_fixture_model(dir + "/model", test::tiny_model_options(23));
  const std::string data = write_labelled(dir, 20, 3);
  auto o = pairs_run(dir + "/model", data, dir + "/full");
  o.common.steps = 12;
  o.token_cache = dir + "/cache";
  train_verifier(o);
  auto p = o;
  p.common.out_dir = dir + "/part";
  p.common.stop_after = 6;
  p.common.save_every = 6;
  train_verifier(p);
  p.common.stop_after = 0;
  p.common.resume = true;
  train_verifier(p);
  auto a = Verifier::load(dir + "/full/verifier.safetensors"), b = Verifier::load(dir + "/part/verifier.safetensors");
  auto enc = Encoder::load(dir + "/model");
  const auto s = sentences(4, 11);
  std::vector<std::pair<std::string, std::string>> pairs = {{s[0], s[1]}, {s[2], s[3]}, {s[1], s[1]}};
  const auto sa = score_text_pairs(*enc, a.get(), pairs), sb = score_text_pairs(*enc, b.get(), pairs);
  for (size_t i = 0; i < sa.size(); ++i) EXPECT_NEAR(sa[i], sb[i], 1e-5) << i;
  std::set<std::string> texts;  // the sentences and their swaps (a swap may be another row's sentence)
  for (const auto& x : sentences(20, 3)) {
    const auto saw = x.find(" saw ");
    texts.insert(x);
    texts.insert(x.substr(saw + 5) + " saw " + x.substr(0, saw));
  }
  // Encoded once for all three runs.
  EXPECT_EQ(train::TokenStateCache(dir + "/cache", model_identity(dir + "/model"), enc->dim(), o.max_length).reused(),
            texts.size());
}

TEST(VerifierPairsObjective, TripletsAreTwoLabelledPairsAndUnlabelledPairsAreRefused) {
  const std::string dir = test::make_temp_dir("train_pairs_input");
  write_fixture_model(dir + "/model", test::tiny_model_options(24));
  {
    std::ofstream out(dir + "/triplets.tsv");
    out << "anchor\tpositive\tnegative\n";
    for (const auto& s : sentences(12, 4)) out << s << '\t' << s << "\tthe " << s << '\n';
  }
  auto o = pairs_run(dir + "/model", dir + "/triplets.tsv", dir + "/out");
  o.common.steps = 3;
  EXPECT_EQ(train_verifier(o).steps, 3u);
  {
    std::ofstream out(dir + "/unlabelled.tsv");
    out << "sentence1\tsentence2\n";
    for (const auto& s : sentences(12, 5)) out << s << '\t' << s << '\n';
  }
  o.train_path = dir + "/unlabelled.tsv";
  o.common.out_dir = dir + "/out2";
  test::expect_error([&] { train_verifier(o); }, "row 1 has neither a label nor a negative");
}

}  // namespace
}  // namespace sieve
