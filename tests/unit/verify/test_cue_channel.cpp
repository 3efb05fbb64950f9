// F4's cue channel (K_ij = cue(query token i) + cue(candidate token j) on valid pairs): the map
// against a plain loop, phi's extra channel, F4 reading it (scores move when only the cue set
// changes), the file format (version 3 only with the channel), and the negation cue ids of the
// real model's tokenizer; and the cue penalty of any kind (score -= weight * |cue count gap|)
// against the kind's own score and a hand count, its file (version 4); and the order penalty
// (score -= weight * |crossed - voice| * share^2) on hand-made swaps and passives and against a plain
// all-pairs loop on random ids.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

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
  const std::vector<int32_t> cues = {1, 4};
  const std::set<int32_t> cue_set(cues.begin(), cues.end());
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
  c.f4.cue_ids = {2, 5};
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
  other.f4.cue_ids = {0};
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
  const std::vector<int32_t> cues = {1, 3};
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

TEST(CueChannel, NegationCuesOfTheRealTokenizer) {
  const std::string model = find_installed_model("all-MiniLM-L6-v2");
  if (model.empty()) SIEVE_SKIP_ORACLE("all-MiniLM-L6-v2 is not installed (scripts/setup.sh installs it)");
  auto tok = Tokenizer::from_model_dir(model);
  const auto ids = negation_cue_ids(*tok);
  std::set<std::string> words;
  for (int32_t id : ids) words.insert(tok->id_to_token(id));
  for (const char* w : {"not", "no", "never", "nothing", "without", "t"}) EXPECT_TRUE(words.count(w)) << w;
  for (const char* w : {"the", "was", "by", "[UNK]"}) EXPECT_FALSE(words.count(w)) << w;
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  const auto voice = voice_cue_ids(*tok);
  ASSERT_EQ(voice.size(), 1u);
  EXPECT_EQ(tok->id_to_token(voice[0]), "by");
}

}  // namespace
}  // namespace sieve
