// The model store: models by name, the default model, the sieve file beside a model, and
// `sieve model list`, on stores made here from random fixture models (SIEVE_MODELS).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "sieve/index.h"
#include "sieve/model.h"
#include "support/fixtures.h"
#include "support/test_util.h"

namespace sieve {
namespace {

namespace fs = std::filesystem;

// Sets an environment variable for the scope of a test, restoring the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_) ::setenv(name_, old_.c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

class ModelStore : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = test::make_temp_dir("store");
    FixtureModelOptions a = test::tiny_model_options();
    write_fixture_model(store_ + "/tiny-mean", a);
    a.pooling = Pooling::Cls;
    a.config.hidden_size = 48;
    write_fixture_model(store_ + "/tiny-cls", a);
    fs::create_directories(store_ + "/not-a-model");
  }
  void TearDown() override { fs::remove_all(store_); }
  std::string store_;
};

TEST_F(ModelStore, NamesResolveToTheirFoldersInTheFirstStore) {
  ScopedEnv env("SIEVE_MODELS", store_);
  EXPECT_EQ(fs::weakly_canonical(resolve_model_dir("tiny-cls")), fs::weakly_canonical(store_ + "/tiny-cls"));
  EXPECT_EQ(fs::weakly_canonical(find_installed_model("tiny-mean")), fs::weakly_canonical(store_ + "/tiny-mean"));
  EXPECT_EQ(find_installed_model("not-a-model"), "");  // no config.json
  EXPECT_EQ(find_installed_model("../tiny-cls"), "");   // names never carry a path
  // A path is used as given; a missing one is an error naming it.
  EXPECT_EQ(resolve_model_dir(store_ + "/tiny-cls"), store_ + "/tiny-cls");
  test::expect_error([] { resolve_model_dir("/no/such/model"); }, "does not exist");
  // An unknown name lists what is installed.
  const std::string e = test::error_of([] { resolve_model_dir("no-such-model"); });
  EXPECT_NE(e.find("'no-such-model' is not installed"), std::string::npos) << e;
  EXPECT_NE(e.find("tiny-cls"), std::string::npos) << e;
  EXPECT_NE(e.find("tiny-mean"), std::string::npos) << e;
}

TEST_F(ModelStore, ListsEveryModelWithItsShape) {
  ScopedEnv env("SIEVE_MODELS", store_);
  std::map<std::string, InstalledModel> by_name;
  for (const auto& m : installed_models()) by_name.emplace(m.name, m);
  ASSERT_TRUE(by_name.count("tiny-cls"));
  ASSERT_TRUE(by_name.count("tiny-mean"));
  EXPECT_FALSE(by_name.count("not-a-model"));
  EXPECT_EQ(by_name["tiny-cls"].dim, 48);
  EXPECT_EQ(by_name["tiny-cls"].pooling, "cls");
  EXPECT_EQ(by_name["tiny-mean"].dim, 32);
  EXPECT_EQ(by_name["tiny-mean"].pooling, "mean");
  EXPECT_EQ(by_name["tiny-mean"].family, "bert");
  EXPECT_EQ(by_name["tiny-mean"].verifier, "");
  // A verifier beside the folder (checkpoints installed from elsewhere) counts as shipped.
  std::ofstream(store_ + "/tiny-mean.verifier.safetensors") << "x";
  EXPECT_EQ(default_verifier(store_ + "/tiny-mean", "F1"), store_ + "/tiny-mean.verifier.safetensors");
  EXPECT_EQ(default_verifier("tiny-cls", "F1"), "F1");
}

// The shipped sieve files declare what scripts/tune-fusion.py chose on dev queries
// (docs/benchmarks.md): both real models search hybrid by default.
TEST(ShippedSieveFiles, DeclareTheFusionChosenOnDev) {
  const std::string models = std::string(SIEVE_SOURCE_DIR) + "/models/";
  struct Want {
    const char* name;
    double weight;
    size_t depth;
    double slope;
  };
  for (const Want& w : {Want{"all-MiniLM-L6-v2", 0.8, 200, 0.1}, Want{"all-mpnet-base-v2", 0.9, 200, 0.1}}) {
    const SearchRecommendation r = recommended_search(models + w.name);
    EXPECT_TRUE(r.declared) << w.name;
    EXPECT_EQ(r.mode, SearchMode::Hybrid) << w.name;
    EXPECT_EQ(r.fusion, Fusion::Weighted) << w.name;
    EXPECT_DOUBLE_EQ(r.dense_weight, w.weight) << w.name;
    EXPECT_EQ(r.depth, w.depth) << w.name;
    EXPECT_DOUBLE_EQ(r.weight_slope, w.slope) << w.name;
    EXPECT_NE(r.note.find("chosen by scripts/tune-fusion.py on dev queries only"), std::string::npos) << r.note;
  }
}

TEST_F(ModelStore, SieveModelDirOverridesTheDefault) {
  ScopedEnv env("SIEVE_MODEL_DIR", store_ + "/tiny-cls");
  EXPECT_EQ(default_model_dir(), store_ + "/tiny-cls");
  EXPECT_EQ(resolve_model_dir(""), store_ + "/tiny-cls");
  ScopedEnv bad("SIEVE_MODEL_DIR", store_ + "/not-a-model");
  test::expect_error([] { resolve_model_dir(""); }, "holds no config.json");
}

TEST_F(ModelStore, TheSieveFileBesideAModelDeclaresItsSearch) {
  const std::string dir = store_ + "/tiny-mean";
  EXPECT_FALSE(recommended_search(dir).declared);
  std::ofstream(dir + ".sieve.json") << R"({"format": "sieve-model-source", "version": 1, "name": "tiny-mean",
    "search": {"mode": "hybrid", "fusion": "weighted", "dense_weight": 0.3, "fusion_depth": 200,
    "dense_weight_slope": 0.075}})";
  const SearchRecommendation r = recommended_search(dir + "/");  // a trailing slash names the same folder
  EXPECT_TRUE(r.declared);
  EXPECT_EQ(r.mode, SearchMode::Hybrid);
  EXPECT_EQ(r.fusion, Fusion::Weighted);
  EXPECT_DOUBLE_EQ(r.dense_weight, 0.3);
  EXPECT_EQ(r.depth, 200u);
  EXPECT_DOUBLE_EQ(r.weight_slope, 0.075);
  SearchParams p;
  r.apply(p);
  EXPECT_EQ(p.depth, 200u);
  EXPECT_DOUBLE_EQ(p.weight_slope, 0.075);
  EXPECT_EQ(p.mode, SearchMode::Hybrid);
  std::ofstream(dir + ".sieve.json") << R"({"search": {"mode": "hybrid", "fusion_depth": 2.5}})";
  test::expect_error([&] { recommended_search(dir); }, "fusion_depth");
  std::ofstream(dir + ".sieve.json") << R"({"search": {"mode": "hybrid", "dense_weight_slope": 11}})";
  test::expect_error([&] { recommended_search(dir); }, "dense_weight_slope must lie in [-10, 10]");
  std::ofstream(dir + ".sieve.json") << R"({"search": {"mode": "sparse"}})";
  test::expect_error([&] { recommended_search(dir); }, "unknown search mode");
}

TEST_F(ModelStore, CliListsTheStoreAndTakesNames) {
  const std::string env = "SIEVE_MODELS='" + store_ + "' ";
  auto r = test::run_command(env + test::cli_path() + " model list --json 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("\"name\":\"tiny-cls\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"dim\":48"), std::string::npos) << r.out;
  r = test::run_command(env + test::cli_path() + " similarity -m tiny-cls 'a b' 'b a' 2>/dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  r = test::run_command(env + test::cli_path() + " similarity -m no-such-model 'a b' 'b a' 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("is not installed"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace sieve
