// F4's cue channel (K_ij = cue(query token i) + cue(candidate token j) on valid pairs): the map
// against a plain loop, phi's extra channel, F4 reading it (scores move when only the cue set
// changes), the file format (version 3 only with the channel), and the negation cue ids of the
// real model's tokenizer.
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
}

}  // namespace
}  // namespace sieve
