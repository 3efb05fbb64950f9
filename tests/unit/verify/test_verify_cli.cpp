// `sieve verify score|create|features|info` through the built CLI.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sieve/model.h"
#include "sieve/verify.h"
#include "support/fixtures.h"
#include "support/test_util.h"

namespace sieve {
namespace {

using test::cli_path;
using test::run_command;

std::string fixture_model() {
  static std::string dir = [] {
    std::string d = test::make_temp_dir("verify_model");
    write_fixture_model(d, test::tiny_model_options());
    return d;
  }();
  return dir;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

double score_of(const std::string& line) { return std::stod(line.substr(line.find(':') + 1)); }

TEST(VerifyCli, ScoreKeepsOrderAndIdentityScoresOne) {
  std::string dir = test::make_temp_dir("verify_cli");
  std::string pairs = dir + "/p.tsv";
  std::ofstream(pairs) << "sentence1\tsentence2\tcategory\nthe dog bit the man\tthe man bit the dog\tswap\n"
                          "the dog bit the man\tthe dog bit the man\tsame\nred car\tblue house\tother\n";
  for (const char* v : {"cosine", "F1", "f2"}) {
    auto r = run_command(cli_path() + " verify score -m " + fixture_model() + " --verifier " + v + " --pairs " + pairs +
                         " 2>/dev/null");
    ASSERT_EQ(r.exit_code, 0) << v;
    auto l = lines(r.out);
    ASSERT_EQ(l.size(), 3u) << v;
    EXPECT_NE(l[0].find("\"category\":\"swap\""), std::string::npos);
    EXPECT_NE(l[2].find("\"category\":\"other\""), std::string::npos);
    // A text against itself: the pooled cosine and MaxSim are exactly 1 by definition.
    if (std::string(v) != "f2") EXPECT_NEAR(score_of(l[1]), 1.0, 1e-5) << v;
    EXPECT_LT(score_of(l[2]), score_of(l[1])) << v;
  }
}

// Each record carries the gate's decision and the threshold it used: the calibrated verifier's,
// or null (and no decision) for one without a threshold.
TEST(VerifyCli, ScoreSaysTheDecisionAndTheThreshold) {
  std::string dir = test::make_temp_dir("verify_decision");
  std::ofstream(dir + "/p.tsv") << "sentence1\tsentence2\tlabel\nthe dog bit the man\tthe dog bit the man\t1\n"
                                   "a red car\ta red car\t1\nthe dog bit the man\tthe man bit the dog\t0\n"
                                   "red car\tblue house\t0\n";
  auto r = run_command(cli_path() + " verify calibrate -m " + fixture_model() + " --verifier F1 --pairs " + dir +
                       "/p.tsv --target-precision 0.5 --out " + dir + "/f1.safetensors 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const double threshold = nlohmann::json::parse(r.out).at("threshold").get<double>();
  r = run_command(cli_path() + " verify score -m " + fixture_model() + " --verifier " + dir + "/f1.safetensors --pairs " +
                  dir + "/p.tsv 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0);
  auto l = lines(r.out);
  ASSERT_EQ(l.size(), 4u) << r.out;
  size_t accepted = 0;
  for (const auto& line : l) {
    const auto j = nlohmann::json::parse(line);
    EXPECT_NEAR(j.at("threshold").get<double>(), threshold, 1e-6) << line;
    ASSERT_TRUE(j.contains("accepted")) << line;
    // Printed with 7 digits: a score at the threshold itself (the calibrated threshold is one of
    // the scores) is accepted, whatever the rounding.
    const double score = j.at("score").get<double>();
    EXPECT_EQ(j.at("accepted").get<bool>(), score >= threshold - 1e-6) << line;
    accepted += j.at("accepted").get<bool>() ? 1 : 0;
  }
  EXPECT_GE(accepted, 2u);  // a text against itself scores 1, the most there is
  r = run_command(cli_path() + " verify score -m " + fixture_model() + " --verifier F1 --pairs " + dir +
                  "/p.tsv 2>/dev/null");
  for (const auto& line : lines(r.out)) {
    const auto j = nlohmann::json::parse(line);
    EXPECT_TRUE(j.at("threshold").is_null()) << line;
    EXPECT_FALSE(j.contains("accepted")) << line;
  }
}

// `--verifier F1` run where a file named F1 lies means the built-in MaxSim; ./F1 is the file.
TEST(VerifyCli, AFileNamedF1DoesNotShadowTheBuiltIn) {
  const std::string dir = test::make_temp_dir("verify_f1_file");
  std::ofstream(dir + "/p.tsv") << "sentence1\tsentence2\nthe dog bit the man\tthe man bit the dog\n";
  std::string other = test::make_temp_dir("verify_f1_other");
  write_fixture_model(other, test::tiny_model_options(98));
  // A learned verifier for another model, named F1: used, it would be refused.
  auto r = run_command(cli_path() + " verify create --kind F3 -m " + other + " -o " + dir + "/F1 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string score = " verify score -m " + fixture_model() + " --pairs p.tsv ";
  auto here = run_command("cd " + dir + " && " + cli_path() + score + "--verifier F1 2>/dev/null");
  ASSERT_EQ(here.exit_code, 0) << here.out;
  auto elsewhere = run_command("cd " + other + " && " + cli_path() + " verify score -m " + fixture_model() +
                               " --pairs " + dir + "/p.tsv --verifier F1 2>/dev/null");
  EXPECT_EQ(here.out, elsewhere.out);
  auto file = run_command("cd " + dir + " && " + cli_path() + score + "--verifier ./F1 2>&1");
  EXPECT_EQ(file.exit_code, 1) << file.out;
  EXPECT_NE(file.out.find("not for this one"), std::string::npos) << file.out;
  auto help = run_command(cli_path() + " verify score --help");
  EXPECT_NE(help.out.find("./F1"), std::string::npos) << help.out;
}

TEST(VerifyCli, CreateInfoAndWrongEncoder) {
  std::string dir = test::make_temp_dir("verify_cli2");
  auto r = run_command(cli_path() + " verify create --kind F3 -m " + fixture_model() + " -o " + dir + "/f3.safetensors");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("\"parameters\":332545"), std::string::npos) << r.out;
  r = run_command(cli_path() + " verify info " + dir + "/f3.safetensors");
  EXPECT_NE(r.out.find("\"kind\": \"F3\""), std::string::npos) << r.out;
  std::string other = test::make_temp_dir("verify_other");
  write_fixture_model(other, test::tiny_model_options(99));
  std::ofstream(dir + "/p.tsv") << "sentence1\tsentence2\na\tb\n";
  r = run_command(cli_path() + " verify score -m " + other + " --verifier " + dir + "/f3.safetensors --pairs " + dir +
                  "/p.tsv 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("not for this one"), std::string::npos) << r.out;
  r = run_command(cli_path() + " verify score -m " + other + " --verifier F7 --pairs " + dir + "/p.tsv 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("neither a file nor"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace sieve

namespace sieve {
namespace {

// The mlp gate's path through the CLI: `verify features` writes one row of every named feature per
// pair; `verify create --kind mlp` takes a fitted JSON and refuses one without --weights or with
// other features; the file then scores every pair sigmoid(bias) when its weights are zero, and a
// pair and its reverse alike (both directions read).
TEST(VerifyCli, FeaturesAndTheMlpGate) {
  const std::string dir = test::make_temp_dir("verify_mlp");
  std::ofstream(dir + "/p.tsv") << "sentence1\tsentence2\tcategory\tlabel\n"
                                   "the dog bit the man\tthe man bit the dog\tswap\t0\n"
                                   "the man bit the dog\tthe dog bit the man\tswap\t0\n"
                                   "red car\tred car\tsame\t1\n";
  auto r = run_command(cli_path() + " verify features -m " + fixture_model() + " --pairs " + dir +
                       "/p.tsv --symmetric --out " + dir + "/f.tsv 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::ifstream in(dir + "/f.tsv");
  std::stringstream all;
  all << in.rdbuf();
  const auto rows = lines(all.str());
  ASSERT_EQ(rows.size(), 4u);
  std::string header = "label\tcategory";
  for (const auto& n : gate_feature_names()) header += "\t" + n;
  EXPECT_EQ(rows[0], header);
  EXPECT_EQ(rows[1].rfind("0\tswap\t", 0), 0u);
  // Both directions averaged: a pair and its reverse have the same features (within the float
  // rounding of maps computed the other way round).
  auto values = [](const std::string& row) {
    std::vector<double> v;
    std::istringstream cols(row);
    std::string c;
    for (int k = 0; std::getline(cols, c, '\t'); ++k)
      if (k >= 2) v.push_back(std::stod(c));
    return v;
  };
  const auto ab = values(rows[1]), ba = values(rows[2]);
  ASSERT_EQ(ab.size(), gate_feature_names().size());
  ASSERT_EQ(ba.size(), ab.size());
  for (size_t k = 0; k < ab.size(); ++k) EXPECT_NEAR(ab[k], ba[k], 1e-6) << gate_feature_names()[k];
  const size_t F = gate_feature_names().size();
  nlohmann::json gate = {{"features", gate_feature_names()}, {"mean", std::vector<double>(F, 0.0)},
                         {"scale", std::vector<double>(F, 1.0)}, {"hidden_weights", std::vector<double>(2 * F, 0.0)},
                         {"hidden_bias", {0.0, 0.0}}, {"weights", {0.5, -0.5}}, {"bias", 0.25}, {"symmetric", true}};
  std::ofstream(dir + "/gate.json") << gate.dump();
  r = run_command(cli_path() + " verify create --kind mlp -m " + fixture_model() + " --out " + dir + "/none.safetensors 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("--kind mlp needs --weights"), std::string::npos) << r.out;
  nlohmann::json other = gate;
  other["features"][3] = "f9";
  std::ofstream(dir + "/other.json") << other.dump();
  r = run_command(cli_path() + " verify create --kind mlp -m " + fixture_model() + " --weights " + dir +
                  "/other.json --out " + dir + "/other.safetensors 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("not this sieve's"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/other.safetensors"));
  r = run_command(cli_path() + " verify create --kind mlp -m " + fixture_model() + " --weights " + dir +
                  "/gate.json --out " + dir + "/mlp.safetensors 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\"kind\":\"mlp\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"symmetric\":true"), std::string::npos) << r.out;
  r = run_command(cli_path() + " verify score -m " + fixture_model() + " --verifier " + dir + "/mlp.safetensors --pairs " +
                  dir + "/p.tsv 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const auto& l : lines(r.out)) EXPECT_NEAR(score_of(l), 1.0 / (1.0 + std::exp(-0.25)), 1e-6) << l;
}

TEST(ExplainCli, MapJsonAndSvg) {
  std::string dir = test::make_temp_dir("explain");
  auto r = test::run_command(test::cli_path() + " explain -m " + fixture_model() + " --verifier F1 --svg " + dir +
                             "/m.svg 'the dog bit the man' 'the dog bit the man' 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0);
  // The same text on both sides: bert-base style framing, a unit diagonal, MaxSim 1.
  EXPECT_NE(r.out.find("\"query_tokens\":[\"[CLS]\",\"the\",\"dog\",\"bit\",\"the\",\"man\",\"[SEP]\"]"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\"map\":[[1.0,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"decision\":\"no threshold\""), std::string::npos);
  std::ifstream in(dir + "/m.svg");
  std::string svg((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("stage-1 cosine 1.000"), std::string::npos) << svg.substr(0, 300);
  size_t cells = 0;
  for (size_t at = svg.find("<rect x="); at != std::string::npos; at = svg.find("<rect x=", at + 1)) ++cells;
  EXPECT_EQ(cells, 7u * 7u + 11u);  // the 7 x 7 map and the 11 legend swatches
  EXPECT_NE(svg.find(">man</text>"), std::string::npos);
  EXPECT_NE(svg.find(">query</text>"), std::string::npos);
  EXPECT_NE(svg.find(">candidate</text>"), std::string::npos);
  EXPECT_NE(r.out.find("\"svg\":\"" + dir + "/m.svg\""), std::string::npos) << r.out;
}

// Without --svg no file is written (it wrote ./explain.svg into the current folder).
TEST(ExplainCli, WritesNoFileUnlessAsked) {
  std::string dir = test::make_temp_dir("explain_cwd");
  auto r = test::run_command("cd " + dir + " && " + test::cli_path() + " explain -m " + fixture_model() +
                             " --verifier F1 'the dog bit the man' 'the man bit the dog' 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("\"map\":"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\"svg\""), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

}  // namespace
}  // namespace sieve
