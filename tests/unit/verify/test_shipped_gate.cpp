// The gate shipped for all-MiniLM-L6-v2 (models/all-MiniLM-L6-v2.verifier.safetensors, made by
// scripts/train-gate.sh): the file matches the sha256 its model's sieve file records, it is the
// default verifier of that model, it is bound to that model's weights (refused for another
// encoder), it carries a calibrated threshold, and on the real model it accepts paraphrases
// (passives, a synonym) and rejects role swaps, a passive-looking role swap, a binding swap and
// negations (the sanity pairs). Skips when the
// real model is not installed (scripts/setup.sh installs it); fails under CI.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <nlohmann/json.hpp>

#include "core/checksum.h"
#include "core/file_util.h"
#include "sieve/encoder.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "sieve/model.h"
#include "sieve/verify.h"
#include "support/test_util.h"

namespace sieve {
namespace {

const std::string kModels = std::string(SIEVE_SOURCE_DIR) + "/models";

struct Shipped {
  std::string model_dir, file;
  nlohmann::json record;
};

Shipped shipped(const std::string& name = "all-MiniLM-L6-v2") {
  Shipped s;
  s.model_dir = find_installed_model(name);
  std::ifstream in(kModels + "/" + name + ".sieve.json");
  s.record = nlohmann::json::parse(in).at("verifier");
  s.file = kModels + "/" + s.record.at("file").get<std::string>();
  return s;
}

#define SKIP_WITHOUT_MODEL(s)                                                                 \
  if ((s).model_dir.empty()) SIEVE_SKIP_ORACLE("all-MiniLM-L6-v2 is not installed (scripts/setup.sh installs it)")

TEST(ShippedGate, FileMatchesItsRecordAndBindsToTheModel) {
  const Shipped s = shipped();
  ASSERT_TRUE(is_file(s.file)) << s.file;
  EXPECT_EQ(sha256_file_hex(s.file), s.record.at("sha256").get<std::string>()) << "the shipped verifier changed";
  SKIP_WITHOUT_MODEL(s);
  auto v = load_verifier_for_model(s.file, s.model_dir);
  EXPECT_EQ(v->config().encoder_identity, model_identity(s.model_dir));
  EXPECT_TRUE(std::isfinite(v->config().threshold));
  // The default of every face for this model.
  EXPECT_EQ(default_verifier(s.model_dir, ""), s.file);
  ResolvedVerifier r = resolve_verifier("", {s.model_dir, ""});
  ASSERT_NE(r.verifier, nullptr);
  EXPECT_DOUBLE_EQ(r.threshold(), v->config().threshold);
  // Another encoder is refused with a clear error, before anything is scored.
  const std::string other = find_installed_model("sieve-mini");
  ASSERT_FALSE(other.empty());
  test::expect_error([&] { load_verifier_for_model(s.file, other); }, "trained for");
}

// all-mpnet-base-v2's gate (MODEL=all-mpnet-base-v2 scripts/train-gate.sh): the same record, the
// same binding; the model is installed by scripts/setup.sh --oracles (or --model).
TEST(ShippedGate, MpnetFileMatchesItsRecordAndBindsToTheModel) {
  const Shipped s = shipped("all-mpnet-base-v2");
  ASSERT_TRUE(is_file(s.file)) << s.file;
  EXPECT_EQ(sha256_file_hex(s.file), s.record.at("sha256").get<std::string>()) << "the shipped verifier changed";
  if (s.model_dir.empty()) SIEVE_SKIP_ORACLE("all-mpnet-base-v2 is not installed (scripts/setup.sh --oracles installs it)");
  auto v = load_verifier_for_model(s.file, s.model_dir);
  EXPECT_EQ(v->config().encoder_identity, model_identity(s.model_dir));
  EXPECT_TRUE(std::isfinite(v->config().threshold));
  EXPECT_EQ(default_verifier(s.model_dir, ""), s.file);
  const std::string other = find_installed_model("all-MiniLM-L6-v2");
  ASSERT_FALSE(other.empty());
  test::expect_error([&] { load_verifier_for_model(s.file, other); }, "trained for");
}

TEST(ShippedGate, SanityPairsOnTheRealModel) {
  const Shipped s = shipped();
  SKIP_WITHOUT_MODEL(s);
  ResolvedVerifier r = resolve_verifier(s.file, {s.model_dir, ""});
  auto enc = Encoder::load(s.model_dir);
  struct Pair {
    const char *a, *b;
    bool same;
  };
  // A regression check of the shipped file, not a measure of its quality (that is the eval parts,
  // models/all-MiniLM-L6-v2.verifier.md), with the README demo's pairs (issue 43). Its known
  // misses stay out of this list (the card lists them).
  const std::vector<Pair> pairs = {
      // paraphrases: synonyms, passives in both directions, a reordered coordination
      {"the physician made his rounds", "the doctor made his rounds", true},
      {"the teacher praised the student", "the instructor commended the pupil", true},
      {"the snap was fumbled by the quarterback", "the quarterback fumbled the snap", true},
      {"the cat and the dog slept in the sun", "the dog and the cat slept in the sun", true},
      // a substitution that changes who did it
      {"the physician made his rounds", "the postman made his rounds", false},
      {"the quarterback fumbled the snap", "the snap was fumbled by the quarterback", true},
      {"the committee approved the budget", "the budget was approved by the committee", true},
      {"aspirin prevents heart attacks", "heart attacks are prevented by aspirin", true},
      // role swaps
      {"the dog bit the man", "the man bit the dog", false},
      {"the teacher praised the student", "the student praised the teacher", false},
      {"the quarterback fumbled the snap", "the snap fumbled the quarterback", false},
      // a passive-looking role swap
      {"the quarterback fumbled the snap", "the quarterback was fumbled by the snap", false},
      {"the box is on the table", "the table is on the box", false},
      // a binding swap
      {"she bought a red car and a blue bike", "she bought a blue car and a red bike", false},
      // negations
      {"the doctor made his rounds", "the doctor did not make his rounds", false},
      {"the committee approved the budget", "the committee never approved the budget", false},
      {"aspirin prevents heart attacks", "aspirin does not prevent heart attacks", false},
      // issue 57: an antonym, a spatial flip, and questions: twins refused, rewordings kept
      {"the drug reduced mortality", "the drug increased mortality", false},
      {"the cup is above the shelf", "the cup is below the shelf", false},
      {"does aspirin reduce fever?", "does aspirin not reduce fever?", false},
      {"which drugs interact with warfarin?", "which drugs do not interact with warfarin?", false},
      {"why do cats purr?", "how do cats purr?", false},
      {"did google buy youtube?", "did youtube buy google?", false},
      {"how can I lose weight fast?", "what is the quickest way to lose weight?", true},
      {"what is the capital of france?", "what is the capital city of france?", true},
  };
  std::vector<std::pair<std::string, std::string>> texts;
  for (const auto& p : pairs) texts.emplace_back(p.a, p.b);
  const auto scores = score_text_pairs(enc.get(), r, texts);
  const double t = r.threshold();
  for (size_t i = 0; i < pairs.size(); ++i)
    EXPECT_EQ(scores[i] >= t, pairs[i].same)
        << "\"" << pairs[i].a << "\" / \"" << pairs[i].b << "\": score " << scores[i] << ", threshold " << t;
}

// The two jobs on the CLI: over a few claims stage 1 ranks the role swap first; --gate (the
// shipped gate by default) removes it and keeps the passive; --rerank alone orders by F1 and says
// the model's verifier is an identity gate.
TEST(ShippedGate, GateDropsTheNearMissStageOneRanksFirstAndRerankIsF1) {
  const Shipped s = shipped();
  SKIP_WITHOUT_MODEL(s);
  const std::string dir = test::make_temp_dir("shipped_gate_cli");
  {
    std::ofstream f(dir + "/claims.txt");
    f << "the snap fumbled the quarterback\nthe snap was fumbled by the quarterback\n"
         "the quarterback did not fumble the snap\nthe committee approved the budget\n";
  }
  const std::string cli = test::cli_path();
  auto r = test::run_command(cli + " index build -m " + s.model_dir + " --corpus " + dir + "/claims.txt --out " + dir +
                             "/ix 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string query = " --index " + dir + "/ix --mode dense -k 4 --output tsv 'the quarterback fumbled the snap'";
  r = test::run_command(cli + " search" + query + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::istringstream stage1(r.out);
  std::string line;
  std::getline(stage1, line);  // header
  std::getline(stage1, line);
  EXPECT_EQ(line.rfind("1\t1\t1\t", 0), 0u) << "stage 1 ranks the role swap (doc 1) first: " << r.out;
  r = test::run_command(cli + " search --gate --candidates 4" + query + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::set<std::string> kept;
  std::istringstream gated(r.out);
  std::getline(gated, line);
  while (std::getline(gated, line)) {
    std::istringstream cols(line);
    std::string qid, rank, doc;
    cols >> qid >> rank >> doc;
    kept.insert(doc);
  }
  EXPECT_EQ(kept, std::set<std::string>({"2"})) << r.out;  // the passive only
  r = test::run_command(cli + " search --rerank --candidates 4" + query + " 2>&1 >/dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("orders by F1"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace sieve
