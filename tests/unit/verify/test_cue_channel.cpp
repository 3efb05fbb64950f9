// F4's cue channel (K_ij = cue(query token i) + cue(candidate token j) on valid pairs): the map
// against a plain loop, phi's extra channel, F4 reading it (scores move when only the cue set
// changes), the file format (version 3 only with the channel), and the negation cue ids of the
// real model's tokenizer; and the cue penalty of any kind (score -= weight * |cue count gap|)
// against the kind's own score and a hand count, its file (version 4); and the order penalty
// (score -= weight * |crossed - voice| * share^2) on hand-made swaps and passives and against a plain
// all-pairs loop on random ids. Cues are whole id runs (issue 43): a run against a plain loop, the
// file forms (version 5 for runs), the refusal of an id-reading verifier without an encoder
// identity, and the negation cues of WordPiece, byte-level BPE and SentencePiece vocabularies and
// of the real model (never a bare "t": "CD4+ T cells" pays no negation penalty).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <nlohmann/json.hpp>
#include <set>

#include "core/file_util.h"
#include "sieve/encoder.h"
#include "sieve/error.h"
#include "sieve/model.h"
#include "sieve/safetensors.h"
#include "sieve/tokenizer.h"
#include "sieve/verify.h"
#include "support/test_util.h"
#include "unit/verify/token_ids_util.h"
#include "verify/f4_transformer.h"
#include "verify/phi.h"
#include "verify/similarity_map.h"

namespace sieve {
namespace {

constexpr size_t kD = test::kIdsDim;
using test::ptrs;
using test::tokens_with_ids;

TEST(CueChannel, MapAndPhiMatchAPlainLoop) {
  std::mt19937 rng(15);
  TokenStates q = tokens_with_ids(6, rng);
  std::vector<TokenStates> cands = {tokens_with_ids(9, rng), tokens_with_ids(3, rng)};
  const CueSequences cues = {{1}, {4}};
  const std::set<int32_t> cue_set = {1, 4};
  verify::Maps m = verify::query_maps(q, ptrs(cands), kD, 128);
  at::Tensor x = verify::phi(m, 16, 16, /*augmented=*/true, /*zero_invalid=*/true, /*exact_match=*/false, &cues);
  ASSERT_EQ(x.size(1), 4);
  EXPECT_EQ(verify::phi_channels(true, false, true), 4);
  EXPECT_TRUE(at::equal(x.narrow(1, 0, 3), verify::phi(m, 16, true, true, false)));
  size_t seen[3] = {0, 0, 0};
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 16; ++i)
      for (int64_t j = 0; j < 16; ++j) {
        const bool valid = static_cast<size_t>(i) < q.length && static_cast<size_t>(j) < cands[b].length;
        const int want = valid ? static_cast<int>(cue_set.count(q.ids[i]) + cue_set.count(cands[b].ids[j])) : 0;
        if (valid) ++seen[want];
        ASSERT_EQ(x[b][3][i][j].item<float>(), static_cast<float>(want)) << b << " " << i << " " << j;
      }
  EXPECT_GT(seen[0] * seen[1] * seen[2], 0u);  // every value occurs
  verify::Maps none = m;
  none.q_ids = at::Tensor();
  test::expect_error([&] { verify::phi(none, 16, 16, true, true, false, &cues); }, "carry none");
}

TEST(CueChannel, F4ReadsItAndTheFileKeepsIt) {
  std::mt19937 rng(16);
  TokenStates q = tokens_with_ids(8, rng);
  std::vector<TokenStates> cands = {tokens_with_ids(9, rng), tokens_with_ids(30, rng)};
  const std::string dir = test::make_temp_dir("cue_channel");
  VerifierConfig c;
  c.kind = VerifierKind::F4;
  c.encoder_dim = kD;
  c.f4.cue_ids = {{2}, {5}};
  c.encoder_identity = "sha256:test-encoder";
  EXPECT_TRUE(reads_token_ids(c));
  auto v = Verifier::create(c, 4);
  v->save(dir + "/v.safetensors");
  const std::string meta = SafetensorsFile::open(dir + "/v.safetensors")->metadata().at("sieve_verifier");
  EXPECT_NE(meta.find("\"format_version\":3"), std::string::npos) << meta;
  auto back = Verifier::load(dir + "/v.safetensors");
  EXPECT_EQ(back->config().f4.cue_ids, c.f4.cue_ids);
  const auto s1 = v->score(q, ptrs(cands)), s2 = back->score(q, ptrs(cands));
  for (size_t i = 0; i < s1.size(); ++i) EXPECT_FLOAT_EQ(s1[i], s2[i]);
  // Only the cue set differs: the same seed gives the same weights (the parameters do not depend
  // on which ids are cues), and the scores move, so the channel is read.
  VerifierConfig other = c;
  other.f4.cue_ids = {{0}};
  const auto s3 = Verifier::create(other, 4)->score(q, ptrs(cands));
  double moved = 0;
  for (size_t i = 0; i < s1.size(); ++i) moved = std::max(moved, std::abs(double(s3[i]) - s1[i]));
  EXPECT_GT(moved, 1e-5);
  // One more input channel: F4's patch embedding gains 8 x 8 x width weights.
  VerifierConfig plain = c;
  plain.f4.cue_ids.clear();
  EXPECT_EQ(Verifier::create(c)->parameter_count() - Verifier::create(plain)->parameter_count(), 8u * 8u * kD);
  std::vector<TokenStates> bare = cands;
  bare[1].ids.clear();
  test::expect_error([&] { back->score(q, ptrs(bare)); }, "token ids");
}

TEST(CuePenalty, SubtractsWeightTimesTheCueCountGap) {
  std::mt19937 rng(17);
  TokenStates q = tokens_with_ids(7, rng);
  std::vector<TokenStates> cands = {tokens_with_ids(9, rng), tokens_with_ids(4, rng), tokens_with_ids(12, rng),
                                    tokens_with_ids(7, rng)};
  const CueSequences cues = {{1}, {3}};
  const size_t max_tokens = 10;  // the third candidate's last two tokens are not read
  auto count = [&](const TokenStates& t) {
    int n = 0;
    for (size_t i = 0; i < std::min(t.length, max_tokens); ++i) n += (t.ids[i] == 1 || t.ids[i] == 3);
    return n;
  };
  for (VerifierKind kind : {VerifierKind::F1, VerifierKind::F2}) {
    VerifierConfig plain;
    plain.kind = kind;
    plain.encoder_dim = kD;
    plain.max_tokens = max_tokens;
    VerifierConfig c = plain;
    c.cue_penalty = {0.25, cues};
    EXPECT_FALSE(reads_token_ids(plain));
    EXPECT_TRUE(reads_token_ids(c));
    const auto base = Verifier::create(plain)->score(q, ptrs(cands));
    const auto pen = Verifier::create(c)->score(q, ptrs(cands));
    std::set<int> gaps;
    for (size_t i = 0; i < cands.size(); ++i) {
      const int gap = std::abs(count(q) - count(cands[i]));
      gaps.insert(gap);
      EXPECT_NEAR(pen[i], base[i] - 0.25 * gap, 1e-5) << verifier_kind_name(kind) << " " << i;
    }
    EXPECT_GE(gaps.size(), 2u);  // some candidates are penalised, some not (or by another amount)
  }
  // The file keeps it at version 4; a reader of version 3 would ignore it, so 4 is written.
  const std::string dir = test::make_temp_dir("cue_penalty");
  VerifierConfig c;
  c.kind = VerifierKind::F2;
  c.encoder_dim = kD;
  c.f2.lambda = 0.05;
  c.encoder_identity = "sha256:test-encoder";
  c.cue_penalty = {0.5, cues};
  auto v = Verifier::create(c);
  v->save_with_threshold(dir + "/v.safetensors", 0.4);
  const std::string meta = SafetensorsFile::open(dir + "/v.safetensors")->metadata().at("sieve_verifier");
  EXPECT_NE(meta.find("\"format_version\":4"), std::string::npos) << meta;
  auto back = Verifier::load(dir + "/v.safetensors");
  EXPECT_EQ(back->config().cue_penalty.ids, cues);
  EXPECT_DOUBLE_EQ(back->config().cue_penalty.weight, 0.5);
  EXPECT_DOUBLE_EQ(back->config().f2.lambda, 0.05);
  EXPECT_DOUBLE_EQ(back->config().threshold, 0.4);
  const auto s1 = v->score(q, ptrs(cands)), s2 = back->score(q, ptrs(cands));
  for (size_t i = 0; i < s1.size(); ++i) EXPECT_FLOAT_EQ(s1[i], s2[i]);
  // Without it the file stays at version 1.
  c.cue_penalty = {};
  Verifier::create(c)->save(dir + "/plain.safetensors");
  EXPECT_NE(SafetensorsFile::open(dir + "/plain.safetensors")->metadata().at("sieve_verifier").find("\"format_version\":1"),
            std::string::npos);
  std::vector<TokenStates> bare = cands;
  bare[0].ids.clear();
  test::expect_error([&] { back->score(q, ptrs(bare)); }, "token ids");
}

// Token states of the given ids (random states: the order penalty reads only the ids).
TokenStates with_ids(const std::vector<int32_t>& ids, std::mt19937& rng) {
  TokenStates t = tokens_with_ids(ids.size(), rng);
  t.ids = ids;
  return t;
}

// The order gap by its definition: every pair of ids found once on each side, compared.
float order_gap_by_pairs(const std::vector<int32_t>& q, const std::vector<int32_t>& c, int32_t voice) {
  auto count = [](const std::vector<int32_t>& v, int32_t id) { return std::count(v.begin(), v.end(), id); };
  auto pos = [](const std::vector<int32_t>& v, int32_t id) { return std::find(v.begin(), v.end(), id) - v.begin(); };
  bool crossed = false;
  for (size_t i = 0; i < q.size(); ++i)
    for (size_t k = i + 1; k < q.size(); ++k) {
      const bool once = count(q, q[i]) == 1 && count(c, q[i]) == 1 && count(q, q[k]) == 1 && count(c, q[k]) == 1;
      if (once && pos(c, q[i]) > pos(c, q[k])) crossed = true;
    }
  const bool changed_voice = count(q, voice) != count(c, voice);
  double held = 0;
  for (int32_t id : q) held += count(c, id) > 0;
  const double share = held / static_cast<double>(q.size());
  return crossed != changed_voice ? static_cast<float>(share * share) : 0.0f;
}

TEST(OrderPenalty, SwapsPayPassivesDoNot) {
  std::mt19937 rng(18);
  // 1 = [CLS], 2 = [SEP], 9 = the voice cue ("by"), 3 = "the" (twice: not read), 4-8 words.
  const std::vector<int32_t> q = {1, 3, 4, 5, 3, 6, 2};  // the dog bit the man
  const std::vector<std::vector<int32_t>> cands = {
      {1, 3, 6, 5, 3, 4, 2},        // the man bit the dog: crossed, same voice -> 1
      {1, 3, 6, 7, 5, 9, 3, 4, 2},  // the man was bitten(5) by the dog: crossed, voice changed -> 0
      {1, 3, 4, 7, 5, 9, 3, 6, 2},  // the dog was bit by the man: in order, voice changed -> 1
      {1, 3, 4, 8, 3, 6, 2},        // the dog bites the man: in order, same voice -> 0
      q};
  // Every query token is held by each candidate but the fourth (bit -> bites: 6 of 7).
  const std::vector<float> want = {1, 0, 1, 0, 0};
  std::vector<TokenStates> cs;
  for (const auto& c : cands) cs.push_back(with_ids(c, rng));
  TokenStates qs = with_ids(q, rng);
  VerifierConfig plain;
  plain.kind = VerifierKind::F2;
  plain.encoder_dim = kD;
  VerifierConfig c = plain;
  c.order_penalty = {0.5, {9}};
  EXPECT_TRUE(reads_token_ids(c));
  const auto base = Verifier::create(plain)->score(qs, ptrs(cs));
  const auto pen = Verifier::create(c)->score(qs, ptrs(cs));
  for (size_t i = 0; i < cands.size(); ++i) {
    EXPECT_EQ(order_gap_by_pairs(q, cands[i], 9), want[i]) << i;
    EXPECT_NEAR(pen[i], base[i] - 0.5 * want[i], 1e-5) << i;
  }
  // The file keeps it (version 4).
  const std::string dir = test::make_temp_dir("order_penalty");
  c.encoder_identity = "sha256:test-encoder";
  Verifier::create(c)->save(dir + "/v.safetensors");
  auto back = Verifier::load(dir + "/v.safetensors");
  EXPECT_DOUBLE_EQ(back->config().order_penalty.weight, 0.5);
  EXPECT_EQ(back->config().order_penalty.voice_ids, std::vector<int32_t>{9});
  const auto again = back->score(qs, ptrs(cs));
  for (size_t i = 0; i < again.size(); ++i) EXPECT_FLOAT_EQ(again[i], pen[i]);
}

TEST(OrderPenalty, MatchesAllPairsLoopOnRandomIds) {
  std::mt19937 rng(19);
  std::uniform_int_distribution<int> len(2, 14);
  VerifierConfig plain;
  plain.kind = VerifierKind::F1;
  plain.encoder_dim = kD;
  VerifierConfig c = plain;
  c.order_penalty = {1.0, {0}};
  auto v = Verifier::create(c), p = Verifier::create(plain);
  size_t seen[2] = {0, 0};
  for (int round = 0; round < 40; ++round) {
    TokenStates q = tokens_with_ids(static_cast<size_t>(len(rng)), rng, 10);
    std::vector<TokenStates> cands;
    for (int k = 0; k < 6; ++k) cands.push_back(tokens_with_ids(static_cast<size_t>(len(rng)), rng, 10));
    const auto a = v->score(q, ptrs(cands)), b = p->score(q, ptrs(cands));
    for (size_t i = 0; i < cands.size(); ++i) {
      const float want = order_gap_by_pairs(q.ids, cands[i].ids, 0);
      ++seen[want > 0];
      ASSERT_NEAR(b[i] - a[i], want, 1e-5) << round << " " << i;
    }
  }
  EXPECT_GT(seen[0] * seen[1], 0u);
}

// Cues of several pieces: is_cue, the cue channel and the cue count against a plain loop over
// random ids, where runs overlap, touch the padding and stop at max_tokens.
TEST(CueRuns, MarksWholeRunsOnlyAgainstAPlainLoop) {
  const CueSequences cues = {{3}, {5, 6}, {6, 7, 8}};
  std::mt19937 rng(21);
  std::uniform_int_distribution<int> pick(3, 8);
  const int64_t B = 120, L = 12;
  at::Tensor ids = at::full({B, L}, -1, at::kLong);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = 1 + b % L;
    for (int64_t i = 0; i < len; ++i) ids[b][i] = pick(rng);
  }
  const at::Tensor like = at::zeros({1}, at::kFloat);
  const at::Tensor marks = verify::is_cue(ids, cues, like), starts = verify::is_cue(ids, cues, like, true);
  size_t runs = 0, singles = 0, lone = 0;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int> want(L, 0), want_start(L, 0);
    for (const auto& run : cues)
      for (int64_t i = 0; i + static_cast<int64_t>(run.size()) <= L; ++i) {
        bool all = true;
        for (size_t j = 0; j < run.size(); ++j) all = all && ids[b][i + j].item<int64_t>() == run[j];
        if (!all) continue;
        want_start[i] = 1;
        for (size_t j = 0; j < run.size(); ++j) want[i + j] = 1;
        (run.size() > 1 ? runs : singles) += 1;
      }
    for (int64_t i = 0; i < L; ++i) {
      ASSERT_EQ(marks[b][i].item<float>(), static_cast<float>(want[i])) << b << " " << i;
      ASSERT_EQ(starts[b][i].item<float>(), static_cast<float>(want_start[i])) << b << " " << i;
      // A piece of a run alone (a 5 not followed by 6, a 7 without its 6 and 8) is no cue.
      const int64_t id = ids[b][i].item<int64_t>();
      if ((id == 5 || id == 7) && !want[i]) ++lone;
    }
  }
  EXPECT_GT(runs, 5u);
  EXPECT_GT(singles, 5u);
  EXPECT_GT(lone, 5u);
  // The cue penalty counts runs, not their tokens: "5 6" is one cue, as "3" is.
  std::mt19937 rng2(22);
  TokenStates q = tokens_with_ids(4, rng2), c1 = tokens_with_ids(4, rng2);
  q.ids = {2, 5, 6, 2};
  c1.ids = {2, 3, 2, 2};
  TokenStates c2 = c1;
  c2.ids = {2, 2, 2, 2};
  VerifierConfig plain;
  plain.kind = VerifierKind::F1;
  plain.encoder_dim = kD;
  VerifierConfig pen = plain;
  pen.cue_penalty = {0.5, cues};
  const auto a = Verifier::create(plain)->score(q, {&c1, &c2}), p = Verifier::create(pen)->score(q, {&c1, &c2});
  EXPECT_NEAR(p[0], a[0], 1e-6);        // one cue each side
  EXPECT_NEAR(p[1], a[1] - 0.5, 1e-6);  // one against none
}

TEST(CueRuns, FilesKeepRunsAtVersion5AndOneIdCuesAsBefore) {
  const std::string dir = test::make_temp_dir("cue_runs");
  VerifierConfig c;
  c.kind = VerifierKind::F2;
  c.encoder_dim = kD;
  c.encoder_identity = "sha256:test-encoder";
  c.cue_penalty = {0.5, {{4}, {7, 9}}};
  Verifier::create(c)->save(dir + "/runs.safetensors");
  std::string meta = SafetensorsFile::open(dir + "/runs.safetensors")->metadata().at("sieve_verifier");
  EXPECT_NE(meta.find("\"format_version\":5"), std::string::npos) << meta;
  EXPECT_NE(meta.find("[[4],[7,9]]"), std::string::npos) << meta;
  EXPECT_EQ(Verifier::load(dir + "/runs.safetensors")->config().cue_penalty.ids, c.cue_penalty.ids);
  c.cue_penalty.ids = {{4}, {9}};  // one piece each: the version 4 form, a flat list
  Verifier::create(c)->save(dir + "/flat.safetensors");
  meta = SafetensorsFile::open(dir + "/flat.safetensors")->metadata().at("sieve_verifier");
  EXPECT_NE(meta.find("\"format_version\":4"), std::string::npos) << meta;
  EXPECT_NE(meta.find("\"ids\":[4,9]"), std::string::npos) << meta;
  EXPECT_EQ(Verifier::load(dir + "/flat.safetensors")->config().cue_penalty.ids, c.cue_penalty.ids);
}

// Token ids mean nothing without their vocabulary: a verifier that reads them must name its
// encoder, or it is neither written nor loaded.
TEST(CueRuns, AVerifierReadingTokenIdsWithoutAnEncoderIdentityIsRefused) {
  const std::string dir = test::make_temp_dir("cue_identity");
  VerifierConfig c;
  c.kind = VerifierKind::F1;
  c.encoder_dim = kD;
  c.cue_penalty = {0.5, {{4}}};
  auto v = Verifier::create(c);
  test::expect_error([&] { v->save(dir + "/v.safetensors"); }, "records no encoder identity");
  EXPECT_FALSE(is_file(dir + "/v.safetensors"));
  // A file written so by an older sieve: edit the identity out of a good one.
  v->save_for_encoder(dir + "/v.safetensors", "sha256:x");
  auto file = SafetensorsFile::open(dir + "/v.safetensors");
  std::string meta = file->metadata().at("sieve_verifier");
  const std::string from = "\"encoder_identity\":\"sha256:x\"", to = "\"encoder_identity\":\"\"";
  meta.replace(meta.find(from), from.size(), to);
  write_safetensors(dir + "/old.safetensors", {}, {{"sieve_verifier", meta}});
  test::expect_error([&] { Verifier::load(dir + "/old.safetensors"); }, "records no encoder identity");
  // Without token ids (F1 alone) no identity is needed.
  c.cue_penalty = {};
  Verifier::create(c)->save(dir + "/plain.safetensors");
  EXPECT_NO_THROW(Verifier::load(dir + "/plain.safetensors"));
}

// A symmetric verifier scores the mean of both directions, penalties included, for every kind;
// its file says so (version 6) and reads back the same.
TEST(Symmetric, ScoresTheMeanOfBothDirections) {
  std::mt19937 rng(23);
  TokenStates q = tokens_with_ids(7, rng);
  std::vector<TokenStates> cands = {tokens_with_ids(9, rng), tokens_with_ids(4, rng), tokens_with_ids(12, rng)};
  cands[0].ids[2] = q.ids[5];  // shared words, so that the order penalty has something to read
  cands[0].ids[6] = q.ids[1];
  for (VerifierKind kind : {VerifierKind::F1, VerifierKind::F2, VerifierKind::F4}) {
    VerifierConfig one;
    one.kind = kind;
    one.encoder_dim = kD;
    one.encoder_identity = "sha256:test-encoder";
    one.cue_penalty = {0.5, {{q.ids[0]}, {cands[1].ids[1], cands[1].ids[2]}}};
    one.order_penalty = {0.3, {q.ids[3]}};
    VerifierConfig both = one;
    both.symmetric = true;
    auto a = Verifier::create(one, 9), s = Verifier::create(both, 9);
    const auto forward = a->score(q, ptrs(cands)), sym = s->score(q, ptrs(cands));
    double asym = 0;
    for (size_t i = 0; i < cands.size(); ++i) {
      const float backward = a->score(cands[i], {&q})[0];
      EXPECT_NEAR(sym[i], 0.5 * (forward[i] + backward), 1e-5) << verifier_kind_name(kind) << " " << i;
      EXPECT_NEAR(s->score(cands[i], {&q})[0], sym[i], 1e-5) << verifier_kind_name(kind) << " " << i;
      asym = std::max(asym, std::abs(static_cast<double>(forward[i]) - backward));
    }
    EXPECT_GT(asym, 1e-3) << "the two directions differ, or nothing was tested";
    const std::string dir = test::make_temp_dir("symmetric");
    s->save(dir + "/v.safetensors");
    const std::string meta = SafetensorsFile::open(dir + "/v.safetensors")->metadata().at("sieve_verifier");
    EXPECT_NE(meta.find("\"format_version\":6"), std::string::npos) << meta;
    auto back = Verifier::load(dir + "/v.safetensors");
    EXPECT_TRUE(back->config().symmetric);
    const auto again = back->score(q, ptrs(cands));
    for (size_t i = 0; i < cands.size(); ++i) EXPECT_FLOAT_EQ(again[i], sym[i]);
  }
}

// A toy tokenizer.json of each kind, holding the pieces the cases need.
std::unique_ptr<Tokenizer> toy_wordpiece() {
  nlohmann::json vocab = nlohmann::json::object();
  int n = 0;
  for (const char* t : {"[UNK]", "[CLS]", "[SEP]", "[PAD]", "so", "not", "no", "never", "isn", "don", "'", "t", "\xE2\x80\x99",
                        "cd", "##4", "+", "cells", "lymphocytes", "it", "is", "nothing", "without"})
    vocab[t] = n++;
  nlohmann::json j = {{"normalizer", {{"type", "BertNormalizer"}, {"lowercase", true}}},
                      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
                      {"model", {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
                                 {"vocab", vocab}}}};
  return parse_tokenizer_json(j.dump());
}

// Byte-level BPE as RoBERTa's (no prefix space): each word's merges build it left to right.
std::unique_ptr<Tokenizer> toy_bpe() {
  const std::string G = "\xC4\xA0";  // the space byte
  std::vector<std::vector<std::string>> words = {
      {G, "n", "o", "t"}, {"n", "o", "t"}, {G, "i", "s", "n"}, {"'", "t"}, {G, "t"}, {G, "c", "e", "l", "l", "s"},
      {"s", "o"},         {G, "i", "t"},   {G, "T"},           {"C", "D", "4"}};
  nlohmann::json vocab = nlohmann::json::object(), merges = nlohmann::json::array();
  int n = 0;
  auto add = [&](const std::string& t) {
    if (!vocab.contains(t)) vocab[t] = n++;
  };
  add("<unk>");
  for (const auto& w : words)
    for (const auto& ch : w) add(ch);
  for (const auto& w : words) {
    std::string acc = w[0];
    for (size_t k = 1; k < w.size(); ++k) {
      const std::string m = acc + " " + w[k];
      if (std::find(merges.begin(), merges.end(), m) == merges.end()) merges.push_back(m);
      acc += w[k];
      add(acc);
    }
  }
  nlohmann::json j = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"unk_token", "<unk>"}}},
                      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
                      {"post_processor", {{"type", "ByteLevel"}, {"trim_offsets", true}}}};
  return parse_tokenizer_json(j.dump());
}

// SentencePiece's unigram model with its metaspace.
std::unique_ptr<Tokenizer> toy_unigram() {
  const std::string S = "\xE2\x96\x81";  // ▁
  nlohmann::json vocab = nlohmann::json::array({nlohmann::json::array({"<unk>", 0.0})});
  for (const std::string& t : std::vector<std::string>{S + "so", S + "not", S + "isn", "'", "t", S + "t", S + "cells", S + "it", S})
    vocab.push_back(nlohmann::json::array({t, -1.0}));
  for (const char* ch : {"s", "o", "n", "i", "c", "e", "l"}) vocab.push_back(nlohmann::json::array({ch, -5.0}));
  nlohmann::json j = {{"pre_tokenizer", {{"type", "Metaspace"}, {"replacement", S}, {"prepend_scheme", "always"}}},
                      {"model", {{"type", "Unigram"}, {"unk_id", 0}, {"vocab", vocab}}}};
  return parse_tokenizer_json(j.dump());
}

std::vector<int32_t> run_of(const Tokenizer& tok, std::initializer_list<const char*> pieces) {
  std::vector<int32_t> out;
  for (const char* p : pieces) out.push_back(tok.token_to_id(p));
  return out;
}

bool has(const CueSequences& cues, const std::vector<int32_t>& run) {
  return std::find(cues.begin(), cues.end(), run) != cues.end();
}

// How many tokens of `text` are marked as cues (the tokenizer's own ids).
int cue_tokens(const Tokenizer& tok, const CueSequences& cues, const std::string& text) {
  std::vector<int64_t> ids;
  for (const TokenPiece& p : tok.tokenize(text)) ids.push_back(p.id);
  const at::Tensor t = at::tensor(ids, at::kLong).view({1, -1});
  return static_cast<int>(verify::is_cue(t, cues, at::zeros({1}, at::kFloat)).sum().item<float>());
}

TEST(NegationCues, WordPieceTakesNtAsTwoPiecesAndNeverABareT) {
  auto tok = toy_wordpiece();
  const CueSequences cues = negation_cues(*tok);
  EXPECT_TRUE(has(cues, run_of(*tok, {"not"})));
  EXPECT_TRUE(has(cues, run_of(*tok, {"'", "t"})));
  EXPECT_TRUE(has(cues, run_of(*tok, {"\xE2\x80\x99", "t"})));  // isn’t
  EXPECT_FALSE(has(cues, run_of(*tok, {"t"})));
  for (const auto& run : cues)
    for (int32_t id : run) EXPECT_NE(id, tok->special_tokens().unk);
  EXPECT_TRUE(std::is_sorted(cues.begin(), cues.end()));
  EXPECT_EQ(cue_tokens(*tok, cues, "CD4+ T cells"), 0);
  EXPECT_EQ(cue_tokens(*tok, cues, "it isn't"), 2);   // ' and t
  EXPECT_EQ(cue_tokens(*tok, cues, "it is not"), 1);
}

TEST(NegationCues, ByteLevelBpeTakesTheMidSentenceForms) {
  auto tok = toy_bpe();
  const CueSequences cues = negation_cues(*tok);
  EXPECT_TRUE(has(cues, run_of(*tok, {"\xC4\xA0not"})));  // " not", as it comes mid-sentence
  EXPECT_TRUE(has(cues, run_of(*tok, {"not"})));          // at the start of a text
  EXPECT_TRUE(has(cues, run_of(*tok, {"'t"})));
  EXPECT_FALSE(has(cues, run_of(*tok, {"\xC4\xA0t"})));
  EXPECT_FALSE(has(cues, run_of(*tok, {"t"})));
  EXPECT_EQ(cue_tokens(*tok, cues, "CD4 T cells"), 0);
  EXPECT_EQ(cue_tokens(*tok, cues, "so it isn't"), 1);
  EXPECT_EQ(cue_tokens(*tok, cues, "so not"), 1);
}

TEST(NegationCues, SentencePieceTakesTheMetaspaceForms) {
  auto tok = toy_unigram();
  const CueSequences cues = negation_cues(*tok);
  EXPECT_TRUE(has(cues, run_of(*tok, {"\xE2\x96\x81not"})));
  EXPECT_TRUE(has(cues, run_of(*tok, {"'", "t"})));
  EXPECT_FALSE(has(cues, run_of(*tok, {"t"})));
  EXPECT_FALSE(has(cues, run_of(*tok, {"\xE2\x96\x81t"})));
  EXPECT_EQ(cue_tokens(*tok, cues, "t cells"), 0);
  EXPECT_EQ(cue_tokens(*tok, cues, "it isn't"), 2);
}

TEST(NegationCues, OfTheRealTokenizerAndTheTCellsPair) {
  const std::string model = find_installed_model("all-MiniLM-L6-v2");
  if (model.empty()) SIEVE_SKIP_ORACLE("all-MiniLM-L6-v2 is not installed (scripts/setup.sh installs it)");
  auto tok = Tokenizer::from_model_dir(model);
  const CueSequences cues = negation_cues(*tok);
  std::set<std::string> words;
  for (const auto& run : cues) {
    std::string w;
    for (int32_t id : run) w += (w.empty() ? "" : " ") + tok->id_to_token(id);
    words.insert(w);
  }
  for (const char* w : {"not", "no", "never", "nothing", "without", "cannot", "' t"}) EXPECT_TRUE(words.count(w)) << w;
  for (const char* w : {"t", "the", "was", "by", "[UNK]"}) EXPECT_FALSE(words.count(w)) << w;
  EXPECT_EQ(cue_tokens(*tok, cues, "CD4+ T cells are depleted in HIV infection."), 0);
  EXPECT_EQ(cue_tokens(*tok, cues, "The drug isn't effective."), 2);
  const auto voice = voice_cue_ids(*tok);
  ASSERT_EQ(voice.size(), 1u);
  EXPECT_EQ(tok->id_to_token(voice[0]), "by");
  // Through the gate's own penalty on the real encoder: the pair pays nothing now.
  auto enc = Encoder::load(model);
  EncodeCall call;
  call.token_states = true;
  const Embeddings e = enc->encode({"CD4+ T cells are depleted in HIV infection.",
                                    "CD4+ lymphocytes are depleted in HIV infection.",
                                    "CD4+ lymphocytes are not depleted in HIV infection."},
                                   call);
  VerifierConfig plain;
  plain.kind = VerifierKind::F1;
  plain.encoder_dim = enc->dim();
  VerifierConfig pen = plain;
  pen.cue_penalty = {0.75, cues};
  const auto a = Verifier::create(plain)->score(e.tokens[0], {&e.tokens[1], &e.tokens[2]});
  const auto p = Verifier::create(pen)->score(e.tokens[0], {&e.tokens[1], &e.tokens[2]});
  EXPECT_NEAR(p[0], a[0], 1e-6);
  EXPECT_NEAR(p[1], a[1] - 0.75, 1e-6);
}
}  // namespace
}  // namespace sieve
