// The shipped default model, models/sieve-mini: its files against the manifest (CRC-32 by zlib,
// not by sieve), and a fixed set of sanity queries: paraphrases above unrelated sentences, and
// the gate accepting a sentence itself while rejecting its structural near-misses.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sieve/encoder.h"
#include "sieve/index.h"
#include "sieve/model.h"
#include "sieve/verify.h"
#include "support/test_util.h"

namespace sieve::test {
namespace {
namespace fs = std::filesystem;

std::string shipped_dir() { return std::string(SIEVE_SOURCE_DIR) + "/models/sieve-mini"; }

class SieveMini : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(shipped_dir() + "/config.json")) GTEST_SKIP() << "models/sieve-mini is not in this checkout";
  }
};

TEST_F(SieveMini, FilesMatchTheirManifest) {
  const auto m = nlohmann::json::parse(std::ifstream(shipped_dir() + "/manifest.json"));
  ASSERT_TRUE(m["files"].is_object());
  uint64_t total = 0;
  for (const auto& [rel, want] : m["files"].items()) {
    const std::string p = shipped_dir() + "/" + rel;
    ASSERT_TRUE(fs::exists(p)) << rel;
    std::ifstream f(p, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_EQ(bytes.size(), want["bytes"].get<uint64_t>()) << rel;
    char hex[16];
    std::snprintf(hex, sizeof hex, "%08lx",
                  ::crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
    EXPECT_EQ(want["crc32"].get<std::string>(), hex) << rel;
    total += bytes.size();
  }
  for (const char* f : {"config.json", "model.safetensors", "vocab.txt", "verifier.safetensors", "README.md"})
    EXPECT_TRUE(m["files"].contains(f)) << f;
  EXPECT_LE(total, 25u << 20);  // the size limit for the shipped folder
}

TEST_F(SieveMini, ParaphrasesRankAboveUnrelatedSentences) {
  auto enc = Encoder::load(shipped_dir());
  struct Case {
    const char *q, *para, *other;
  };
  const std::vector<Case> cases = {
      {"a large dog", "a big dog", "a small cup of tea"},
      {"the child is sleeping", "the kid is asleep", "the engine burns fuel"},
      {"a small boat on the river", "a little boat on a river", "a theory of numbers"},
      {"he bought a new car", "he purchased a new automobile", "the sky is blue"},
  };
  for (const auto& c : cases) {
    const Embeddings e = enc->encode({c.q, c.para, c.other});
    auto cos = [&](size_t a, size_t b) {
      double d = 0;
      for (size_t i = 0; i < e.dim; ++i) d += double(e.pooled[a * e.dim + i]) * e.pooled[b * e.dim + i];
      return d;
    };
    EXPECT_GT(cos(0, 1), cos(0, 2)) << c.q;
  }
}

// The gate's job (issue 15): accept the sentence and a paraphrase of it, reject its role swap and
// its negation. The pairs are public textbook examples, not taken from any training file.
TEST_F(SieveMini, TheGateAcceptsAParaphraseAndRejectsRoleSwapAndNegation) {
  const std::string dir = shipped_dir();
  auto enc = Encoder::load(dir);
  auto v = load_verifier_for_model(dir + "/verifier.safetensors", dir);
  const double t = v->config().threshold;
  ASSERT_FALSE(std::isnan(t)) << "the shipped verifier has no calibrated threshold";
  EncodeCall call;
  call.token_states = true;
  struct Case {
    const char* query;
    const char* candidate;
    bool accept;
  };
  const std::vector<Case> cases = {
      {"the dog bit the man", "the dog bit the man", true},
      {"the dog bit the man", "the man was bitten by the dog", true},
      {"the dog bit the man", "the man bit the dog", false},
      {"the dog bit the man", "the dog did not bite the man", false},
  };
  for (const auto& c : cases) {
    const Embeddings e = enc->encode({c.query, c.candidate}, call);
    const float s = v->score(e.tokens[0], {&e.tokens[1]})[0];
    if (c.accept) {
      EXPECT_GE(s, t) << "'" << c.candidate << "' should pass for '" << c.query << "'";
    } else {
      EXPECT_LT(s, t) << "'" << c.candidate << "' should be rejected for '" << c.query << "'";
    }
  }
}

}  // namespace
}  // namespace sieve::test
