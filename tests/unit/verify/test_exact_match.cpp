// The exact-match channel of F3/F4 (E_ij = 1 where the query's and the candidate's token ids are
// equal): the map against a plain loop, phi's extra channel, F4's inference path against its plain
// module, the file format (version 2 only with the channel), and the clear error without ids.
#include <gtest/gtest.h>

#include <random>

#include "sieve/error.h"
#include "sieve/safetensors.h"
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

TEST(ExactMatch, QueryMapsMatchAPlainLoop) {
  std::mt19937 rng(5);
  TokenStates q = tokens_with_ids(7, rng);
  std::vector<TokenStates> cands = {tokens_with_ids(3, rng), tokens_with_ids(12, rng), tokens_with_ids(140, rng)};
  const size_t cap = 128;
  verify::Maps m = verify::query_maps(q, ptrs(cands), kD, cap);
  ASSERT_TRUE(m.match.defined());
  ASSERT_EQ(m.match.sizes(), m.M.sizes());
  size_t ones = 0;
  for (size_t b = 0; b < cands.size(); ++b)
    for (int64_t i = 0; i < m.match.size(1); ++i)
      for (int64_t j = 0; j < m.match.size(2); ++j) {
        const bool valid = static_cast<size_t>(i) < q.length && static_cast<size_t>(j) < std::min(cands[b].length, cap);
        const float want = valid && q.ids[i] == cands[b].ids[j] ? 1.f : 0.f;
        ones += want > 0;
        ASSERT_EQ(m.match[b][i][j].item<float>(), want) << b << " " << i << " " << j;
      }
  EXPECT_GT(ones, 20u);  // the small vocabulary makes matches common: the test sees both values
  // One candidate without ids: no match map (and a verifier that needs one says so).
  cands[1].ids.clear();
  EXPECT_FALSE(verify::query_maps(q, ptrs(cands), kD, cap).match.defined());
}

TEST(ExactMatch, PhiAppendsTheMatchChannelZeroedOutsideValidPairs) {
  std::mt19937 rng(6);
  TokenStates q = tokens_with_ids(5, rng);
  std::vector<TokenStates> cands = {tokens_with_ids(9, rng), tokens_with_ids(4, rng)};
  verify::Maps m = verify::query_maps(q, ptrs(cands), kD, 128);
  for (bool augmented : {true, false}) {
    at::Tensor x = verify::phi(m, 16, augmented, /*zero_invalid=*/true, /*exact_match=*/true);
    const int64_t C = augmented ? 4 : 2;
    ASSERT_EQ(x.size(1), C);
    EXPECT_EQ(verify::phi_channels(augmented, true), C);
    // The other channels are phi without the match map, unchanged.
    at::Tensor base = verify::phi(m, 16, augmented, true, false);
    EXPECT_TRUE(at::equal(x.narrow(1, 0, C - 1), base));
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < 16; ++i)
        for (int64_t j = 0; j < 16; ++j) {
          const bool valid = static_cast<size_t>(i) < q.length && static_cast<size_t>(j) < cands[b].length;
          const float want = valid && q.ids[i] == cands[b].ids[j] ? 1.f : 0.f;
          ASSERT_EQ(x[b][C - 1][i][j].item<float>(), want);
        }
  }
  verify::Maps none = m;
  none.match = at::Tensor();
  test::expect_error([&] { verify::phi(none, 16, true, true, true); }, "carry none");
}

TEST(ExactMatch, F4InferenceEqualsThePlainModuleAndReadsTheChannel) {
  std::mt19937 rng(7);
  TokenStates q = tokens_with_ids(13, rng);
  std::vector<TokenStates> cands = {tokens_with_ids(5, rng), tokens_with_ids(37, rng), tokens_with_ids(70, rng)};
  verify::Maps m = verify::query_maps(q, ptrs(cands), kD, 128);
  for (int layers : {1, 2}) {
    at::manual_seed(3);
    F4Options o;
    o.width = 16;
    o.layers = layers;
    o.heads = 2;
    o.exact_match = true;
    verify::F4Transformer f4(o, 128);
    f4->eval();
    at::NoGradGuard no_grad;
    for (auto& t : f4->parameters()) t.uniform_(-0.3, 0.3);
    at::Tensor full = f4->forward(m, false), fast = f4->score(m);
    for (int64_t i = 0; i < 3; ++i) EXPECT_NEAR(fast[i].item<float>(), full[i].item<float>(), 1e-5);
    // Same states, other ids: only the match channel differs, and the scores move.
    std::vector<TokenStates> other = cands;
    for (auto& c : other)
      for (auto& id : c.ids) id += 100;
    at::Tensor moved = f4->score(verify::query_maps(q, ptrs(other), kD, 128));
    EXPECT_GT((moved - fast).abs().max().item<float>(), 1e-4);
  }
}

TEST(ExactMatch, FileRoundTripVersionsAndMissingIds) {
  std::mt19937 rng(8);
  TokenStates q = tokens_with_ids(8, rng);
  std::vector<TokenStates> cands = {tokens_with_ids(9, rng), tokens_with_ids(30, rng)};
  std::string dir = test::make_temp_dir("exact_match");
  for (VerifierKind k : {VerifierKind::F3, VerifierKind::F4}) {
    for (bool em : {false, true}) {
      VerifierConfig c;
      c.kind = k;
      c.encoder_dim = kD;
      c.f3.hidden = 8;
      c.f3.mlp_hidden = 8;
      c.f3.exact_match = c.f4.exact_match = em;
      c.encoder_identity = "sha256:test-encoder";  // token ids bind a verifier to its vocabulary
      EXPECT_EQ(reads_token_ids(c), em);
      auto v = Verifier::create(c, 4);
      const std::string path = dir + "/" + verifier_kind_name(k) + (em ? "-em" : "") + ".safetensors";
      v->save(path);
      // Without the channel the file stays at version 1, which older readers accept.
      auto f = SafetensorsFile::open(path);
      const std::string meta = f->metadata().at("sieve_verifier");
      EXPECT_NE(meta.find(em ? "\"format_version\":2" : "\"format_version\":1"), std::string::npos) << meta;
      EXPECT_EQ(meta.find("exact_match") != std::string::npos, em);
      auto back = Verifier::load(path);
      EXPECT_EQ(reads_token_ids(back->config()), em);
      EXPECT_EQ(back->parameter_count(), v->parameter_count());
      auto s1 = v->score(q, ptrs(cands)), s2 = back->score(q, ptrs(cands));
      for (size_t i = 0; i < s1.size(); ++i) EXPECT_FLOAT_EQ(s1[i], s2[i]);
      std::vector<TokenStates> bare = cands;
      bare[0].ids.clear();
      if (em) test::expect_error([&] { back->score(q, ptrs(bare)); }, "token ids");
      else EXPECT_EQ(back->score(q, ptrs(bare)).size(), 2u);
    }
  }
  // The channel adds exactly one input channel's weights: F4's patch embedding 8 x 8 x width.
  VerifierConfig a;
  a.kind = VerifierKind::F4;
  a.encoder_dim = kD;
  VerifierConfig b = a;
  b.f4.exact_match = true;
  EXPECT_EQ(Verifier::create(b)->parameter_count() - Verifier::create(a)->parameter_count(), 8u * 8u * kD);
}

}  // namespace
}  // namespace sieve
