// F4 (the paper's verifier) must fit what it is trained on (issue 43): on the real
// all-MiniLM-L6-v2's frozen token states and 512 PAWS pairs (the first 512 of the shared PAWS-Wiki
// dev file: same words, different meaning, or a paraphrase), `sieve train verifier --kind F4
// --objective pairs` and an independent PyTorch F4 written from the paper's description
// (tests/reference/f4_reference.py, in the oracle venv, its own token states from transformers)
// both reach a training accuracy of at least 0.98, measured after training over all 512 pairs.
// Same sizes (940,065 parameters), dropout 0, weight decay 0, lr 3e-4, batch 32, 3,000 steps
// (about 190 epochs: F4 stays near the label prior for its first ~30 epochs and then climbs, which
// is why shorter runs on far more pairs looked like chance). Skips without the model, the
// oracles or the shared data; a missing model or oracle fails under CI (CI=true).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "sieve/encoder.h"
#include "sieve/model.h"
#include "sieve/train.h"
#include "sieve/verify.h"
#include "support/test_util.h"

using nlohmann::json;

namespace sieve {
namespace {

constexpr size_t kPairs = 512, kSteps = 3000, kBatch = 32;
constexpr double kLr = 3e-4;

struct Pair {
  std::string a, b;
  int label;
};

// The first kPairs labelled rows of the shared PAWS-Wiki dev file (sentence1, sentence2, label).
std::vector<std::string> tab_fields(const std::string& line) {
  std::vector<std::string> out;
  for (size_t s = 0, e; s <= line.size(); s = e + 1) {
    e = line.find('\t', s);
    if (e == std::string::npos) e = line.size();
    out.push_back(line.substr(s, e - s));
  }
  return out;
}

std::vector<Pair> paws_pairs(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);  // header: id sentence1 sentence2 label
  const std::vector<std::string> head = tab_fields(line);
  auto col = [&](const char* name) { return static_cast<size_t>(std::find(head.begin(), head.end(), name) - head.begin()); };
  const size_t ia = col("sentence1"), ib = col("sentence2"), iy = col("label");
  std::vector<Pair> out;
  while (out.size() < kPairs && std::getline(f, line)) {
    const std::vector<std::string> c = tab_fields(line);
    if (c.size() <= std::max({ia, ib, iy})) continue;
    out.push_back({c[ia], c[ib], std::stoi(c[iy])});
  }
  return out;
}

TEST(F4Overfit, SieveAndAnIndependentPyTorchF4FitFiveHundredTwelvePawsPairs) {
  const std::string model = find_installed_model("all-MiniLM-L6-v2");
  const std::string python = std::string(SIEVE_ORACLE_VENV) + "/bin/python";
  const std::string paws = test::shared_data("pairs/paws-wiki-dev.tsv");
  if (paws.empty()) GTEST_SKIP() << "../shared/data is absent (PAWS-Wiki)";
  if (model.empty()) SIEVE_SKIP_ORACLE("all-MiniLM-L6-v2 is not installed (scripts/setup.sh installs it)");
  if (!is_file(python)) SIEVE_SKIP_ORACLE("the Python oracles are not installed in " << SIEVE_ORACLE_VENV);
  const std::vector<Pair> pairs = paws_pairs(paws);
  ASSERT_EQ(pairs.size(), kPairs);
  size_t positives = 0;
  for (const auto& p : pairs) positives += p.label == 1;
  const double prior = std::max(positives, kPairs - positives) / static_cast<double>(kPairs);
  const std::string root = test::make_temp_dir("f4_overfit");
  {
    std::ofstream f(root + "/train.tsv");
    f << "sentence1\tsentence2\tlabel\n";
    for (const auto& p : pairs) f << p.a << "\t" << p.b << "\t" << p.label << "\n";
  }

  // sieve.
  VerifierTrainOptions o;
  o.model_dir = model;
  o.train_path = root + "/train.tsv";
  o.objective = VerifierObjective::Pairs;
  o.swap_sides = false;
  o.verifier.kind = VerifierKind::F4;
  o.verifier.f4.dropout = 0;
  o.lr_verifier = kLr;
  o.weight_decay_verifier = 0;
  o.common.out_dir = root + "/sieve";
  o.common.steps = kSteps;
  o.common.batch_size = kBatch;
  o.common.log_every = 250;
  o.common.progress = false;
  o.engine = Engine::Torch;  // the states pinned (see the bound below)
  train_verifier(o);
  auto verifier = Verifier::load(root + "/sieve/verifier.safetensors");
  EXPECT_EQ(verifier->parameter_count(), 940065u);  // the paper's F4 at width 384
  EncoderOptions eo;
  eo.max_length = 128;  // the trainer's encoder token cap
  eo.engine = Engine::Torch;
  auto enc = Encoder::load(model, eo);
  size_t correct = 0;
  for (size_t i = 0; i < pairs.size(); i += 64) {
    std::vector<std::string> texts;
    for (size_t k = i; k < std::min(i + 64, pairs.size()); ++k) {
      texts.push_back(pairs[k].a);
      texts.push_back(pairs[k].b);
    }
    EncodeCall call;
    call.token_states = true;
    const Embeddings e = enc->encode(texts, call);
    for (size_t k = 0; k * 2 < texts.size(); ++k) {
      const float s = verifier->score(e.tokens[2 * k], {&e.tokens[2 * k + 1]})[0];
      correct += (s > 0) == (pairs[i + k].label == 1);
    }
  }
  const double sieve_acc = static_cast<double>(correct) / static_cast<double>(kPairs);

  // The independent implementation.
  const std::string cmd = "OPENBLAS_NUM_THREADS=1 '" + python + "' '" + SIEVE_REFERENCE_DIR +
                          "/f4_reference.py' --model '" + model + "' --train '" + root + "/train.tsv' --out '" + root +
                          "/ref' --steps " + std::to_string(kSteps) + " --batch-size " + std::to_string(kBatch) +
                          " --lr " + std::to_string(kLr) + " --log-every 250 1>&2";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const json ref = json::parse(read_file(root + "/ref/report.json"));
  const double ref_acc = ref.at("train_accuracy").get<double>();
  std::printf("F4 on %zu PAWS pairs (label prior %.3f), %zu steps of %zu: training accuracy sieve %.4f, "
              "independent PyTorch F4 %.4f\n",
              kPairs, prior, kSteps, kBatch, sieve_acc, ref_acc);
  // Where the fit ends is sensitive to the inputs' last bits: sieve's F4 ended at 0.998 on native
  // states from one encoder build and at 0.9785 on the next, which moved them by a few millionths.
  // So the states are libtorch's (Engine::Torch, which no native change moves), and the bound is
  // 0.98 for both. What this test guards is that F4 fits at all: it sat at the label prior (0.555)
  // when it did not.
  EXPECT_GE(sieve_acc, 0.98);
  EXPECT_GE(ref_acc, 0.98);
}

}  // namespace
}  // namespace sieve
