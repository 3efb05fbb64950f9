// The cross-encoder on the real all-MiniLM-L6-v2 against sentence-transformers' CrossEncoder:
// a cross-encoder is trained from the real encoder for a few steps (`sieve train cross-encoder`'s
// library call), then sieve's scores are compared with CrossEncoder(folder).predict on ~100 pairs
// of SciFact text of every length (claims against claims, claims against abstracts, abstracts
// against abstracts: many beyond the 512-token cap, so longest-first truncation is exercised),
// and the token ids with the oracle's tokenizer (sigmoid scores and logits; sieve batched by 32 and
// one pair at a time). The oracle is tests/reference/cross_encoder_reference.py
// in build/oracle-venv. Skips without the model, the oracles or the shared data; a missing model
// or oracle fails under CI (CI=true).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "eval/beir.h"
#include "index/corpus_reader.h"
#include "sieve/cross_encoder.h"
#include "sieve/encoder.h"
#include "sieve/index.h"
#include "sieve/model.h"
#include "sieve/train.h"
#include "support/test_util.h"

using nlohmann::json;

namespace sieve {
namespace {

std::vector<float> read_floats(const std::string& path) {
  const std::string raw = read_file(path);
  std::vector<float> v(raw.size() / sizeof(float));
  std::memcpy(v.data(), raw.data(), v.size() * sizeof(float));
  return v;
}

TEST(RealCrossEncoder, ScoresEqualSentenceTransformersCrossEncoder) {
  const std::string model = find_installed_model("all-MiniLM-L6-v2");
  const std::string python = std::string(SIEVE_ORACLE_VENV) + "/bin/python";
  const std::string scifact = test::shared_data("retrieval/scifact");
  if (scifact.empty()) GTEST_SKIP() << "../shared/data is absent (SciFact)";
  if (model.empty()) SIEVE_SKIP_ORACLE("all-MiniLM-L6-v2 is not installed (scripts/setup.sh installs it)");
  if (!is_file(python)) SIEVE_SKIP_ORACLE("the Python oracles are not installed in " << SIEVE_ORACLE_VENV);

  // SciFact's first claims, and its first documents as the encoder reads them (title and text).
  std::vector<std::string> claims, docs;
  for (const auto& q : eval::read_queries(scifact + "/queries.jsonl"))
    if (claims.size() < 60) claims.push_back(q.text);
  index::CorpusReader corpus(scifact + "/corpus.jsonl");
  for (Document d; docs.size() < 60 && corpus.next(d);) docs.push_back(encoder_text(d));
  ASSERT_GE(claims.size(), 60u);
  ASSERT_GE(docs.size(), 60u);
  const std::string root = test::make_temp_dir("real_cross");

  // A cross-encoder from the real encoder: a few steps on claims (same claim 1, next claim 0).
  {
    std::ofstream f(root + "/train.tsv");
    f << "sentence1\tsentence2\tlabel\n";
    for (size_t i = 0; i + 1 < 40; ++i) f << claims[i] << "\t" << claims[i] << "\t1\n" << claims[i] << "\t" << claims[i + 1] << "\t0\n";
  }
  CrossEncoderTrainOptions o;
  o.model_dir = model;
  o.train_path = root + "/train.tsv";
  o.lr = 5e-4;  // high, so that a few steps move the new head well away from its start
  o.max_length = 128;
  o.common.out_dir = root + "/out";
  o.common.steps = 6;
  o.common.batch_size = 8;
  o.common.progress = false;
  train_cross_encoder(o);
  const std::string dir = root + "/out/last";

  // ~100 pairs of every length.
  std::vector<std::pair<std::string, std::string>> pairs;
  for (size_t i = 0; i < 40; ++i) pairs.emplace_back(claims[i], claims[(i * 7 + 3) % claims.size()]);
  for (size_t i = 0; i < 30; ++i) pairs.emplace_back(claims[40 + i % 20], docs[i]);
  for (size_t i = 0; i < 20; ++i) pairs.emplace_back(docs[30 + i], docs[(30 + i * 3 + 1) % docs.size()]);
  pairs.emplace_back(docs[0], claims[0]);  // the long text first
  pairs.emplace_back("", claims[1]);
  pairs.emplace_back("  " + claims[2] + "\n", "\t" + claims[3] + "  ");
  pairs.emplace_back("Café naïve résumé — “quotes” and 中文", "cafe naive resume - \"quotes\" and 中文");
  pairs.emplace_back(claims[4], claims[4]);
  {
    std::ofstream f(root + "/pairs.jsonl");
    for (const auto& p : pairs) f << json::array({p.first, p.second}).dump() << "\n";
  }
  const std::string cmd = "OPENBLAS_NUM_THREADS=1 '" + python + "' '" + SIEVE_REFERENCE_DIR +
                          "/cross_encoder_reference.py' --model '" + dir + "' --pairs '" + root + "/pairs.jsonl' --out '" +
                          root + "/ref' 1>&2";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const json meta = json::parse(read_file(root + "/ref/meta.json"));

  auto ce = CrossEncoder::load(dir);
  ASSERT_EQ(static_cast<int>(ce->max_length()), meta["tokenizer_model_max_length"].get<int>());
  const std::vector<float> ref_s = read_floats(root + "/ref/scores.f32"), ref_z = read_floats(root + "/ref/logits.f32");
  ASSERT_EQ(ref_s.size(), pairs.size());

  // Token ids: the same framing, types and truncation as the oracle's tokenizer.
  std::ifstream idf(root + "/ref/ids.jsonl");
  size_t truncated = 0, i = 0;
  for (std::string line; std::getline(idf, line); ++i) {
    const auto want = json::parse(line).get<std::vector<int32_t>>();
    EncodeOptions eo;
    eo.max_length = ce->max_length();
    auto strip = [](std::string s) {
      const char* ws = " \t\n\r\f\v";
      s.erase(0, s.find_first_not_of(ws));
      s.erase(s.find_last_not_of(ws) + 1);
      return s;
    };
    const Encoding e = ce->tokenizer().encode_pair(strip(pairs[i].first), strip(pairs[i].second), eo);
    EXPECT_EQ(e.ids, want) << "pair " << i;
    truncated += e.truncated;
  }
  EXPECT_GE(truncated, 10u);  // longest-first truncation was exercised

  // Batched (32, sorted by length, padded) and one pair at a time, both against the oracle's batch of 32.
  const std::vector<float> z = ce->logits(pairs, 32), s = sigmoid_scores(z), s1 = ce->score_pairs(pairs, 1);
  double ds = 0, dz = 0, ds1 = 0, lo = 1, hi = 0;
  for (size_t k = 0; k < pairs.size(); ++k) {
    ds = std::max(ds, std::abs(static_cast<double>(s[k]) - ref_s[k]));
    dz = std::max(dz, std::abs(static_cast<double>(z[k]) - ref_z[k]));
    ds1 = std::max(ds1, std::abs(static_cast<double>(s1[k]) - ref_s[k]));
    lo = std::min(lo, static_cast<double>(ref_s[k]));
    hi = std::max(hi, static_cast<double>(ref_s[k]));
  }
  std::printf("real cross-encoder vs CrossEncoder.predict on %zu pairs (%zu truncated at %zu tokens): "
              "max |score diff| %.3g (batch 32), %.3g (batch 1), max |logit diff| %.3g; oracle scores in [%.4f, %.4f]\n",
              pairs.size(), truncated, ce->max_length(), ds, ds1, dz, lo, hi);
  EXPECT_LT(ds, 1e-5);
  EXPECT_LT(ds1, 1e-5);
  EXPECT_LT(dz, 1e-4);
  EXPECT_GT(hi - lo, 1e-3);  // the scores are not all one value
}

}  // namespace
}  // namespace sieve
