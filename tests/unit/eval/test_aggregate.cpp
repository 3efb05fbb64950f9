// Seed aggregation: three small documents merged by hand (population std), and seed folder
// discovery on a temp directory (numeric order, non-seed names and seeds without results skipped).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/aggregate.h"
#include "sieve/error.h"
#include "support/test_util.h"

namespace sieve::eval {
namespace {

using nlohmann::json;
constexpr double kTol = 1e-12;

// Checks a numeric leaf against hand-computed statistics.
void expect_leaf(const json& leaf, double mean, double std, double min, double max, const json& values) {
  ASSERT_TRUE(leaf.is_object()) << leaf.dump();
  EXPECT_NEAR(leaf.at("mean").get<double>(), mean, kTol) << leaf.dump();
  EXPECT_NEAR(leaf.at("std").get<double>(), std, kTol) << leaf.dump();
  EXPECT_EQ(leaf.at("min").get<double>(), min) << leaf.dump();
  EXPECT_EQ(leaf.at("max").get<double>(), max) << leaf.dump();
  EXPECT_EQ(leaf.at("count").get<size_t>(), values.size()) << leaf.dump();
  EXPECT_EQ(leaf.at("values"), values) << leaf.dump();
  EXPECT_EQ(leaf.size(), 6u) << leaf.dump();
}

TEST(AggregateRuns, ThreeRunsByHand) {
  const std::vector<json> runs = {
      json::parse(R"({"ndcg": 0.5, "n": 10, "name": "A", "flag": true, "nested": {"x": 1, "y": 2},
                      "curve": [1, 2, 3], "only_first": 7, "mixed": 1, "ragged": [1, 2], "list": ["a"]})"),
      json::parse(R"({"ndcg": 0.7, "n": 10, "name": "B", "flag": false, "nested": {"x": 3},
                      "curve": [3, 2, 1], "mixed": "s", "ragged": [1], "list": ["b"]})"),
      json::parse(R"({"ndcg": 0.9, "n": 13, "name": "C", "flag": true, "nested": {"x": 5, "z": null},
                      "curve": [2, 2, 2], "ragged": [1, 2], "late": 4})")};
  const json r = aggregate_runs(runs);
  // ndcg: mean 2.1 / 3 = 0.7; deviations -0.2 0 0.2 -> variance 0.08 / 3.
  expect_leaf(r.at("ndcg"), 0.7, std::sqrt(0.08 / 3.0), 0.5, 0.9, {0.5, 0.7, 0.9});
  // n: mean 33 / 3 = 11; deviations -1 -1 2 -> variance 6 / 3 = 2; integers stay integers.
  expect_leaf(r.at("n"), 11.0, std::sqrt(2.0), 10.0, 13.0, {10, 10, 13});
  EXPECT_TRUE(r.at("n").at("values")[0].is_number_integer());
  // Nested objects recurse; x: mean 3, deviations -2 0 2 -> variance 8 / 3; y and z only where present.
  expect_leaf(r.at("nested").at("x"), 3.0, std::sqrt(8.0 / 3.0), 1.0, 5.0, {1, 3, 5});
  expect_leaf(r.at("nested").at("y"), 2.0, 0.0, 2.0, 2.0, {2});
  EXPECT_TRUE(r.at("nested").at("z").is_null());
  EXPECT_EQ(r.at("nested").size(), 3u);
  // Element-wise arrays: columns {1, 3, 2}, {2, 2, 2}, {3, 1, 2}: mean 2 each, variance 2/3, 0, 2/3.
  ASSERT_TRUE(r.at("curve").is_array());
  ASSERT_EQ(r.at("curve").size(), 3u);
  expect_leaf(r.at("curve")[0], 2.0, std::sqrt(2.0 / 3.0), 1.0, 3.0, {1, 3, 2});
  expect_leaf(r.at("curve")[1], 2.0, 0.0, 2.0, 2.0, {2, 2, 2});
  expect_leaf(r.at("curve")[2], 2.0, std::sqrt(2.0 / 3.0), 1.0, 3.0, {3, 1, 2});
  // Missing keys aggregate the runs that have them.
  expect_leaf(r.at("only_first"), 7.0, 0.0, 7.0, 7.0, {7});
  expect_leaf(r.at("late"), 4.0, 0.0, 4.0, 4.0, {4});
  // Strings, bools, mixed types, arrays of different lengths or of strings keep the first run's.
  EXPECT_EQ(r.at("name"), "A");
  EXPECT_EQ(r.at("flag"), true);
  EXPECT_EQ(r.at("mixed"), 1);
  EXPECT_EQ(r.at("ragged"), json({1, 2}));
  EXPECT_EQ(r.at("list"), json({"a"}));
  EXPECT_EQ(r.size(), 11u);
}

TEST(AggregateRuns, SingleRunAndErrors) {
  const json r = aggregate_runs({json{{"acc", 0.25}}});
  expect_leaf(r.at("acc"), 0.25, 0.0, 0.25, 0.25, {0.25});
  // A bare number at the top is a leaf too.
  expect_leaf(aggregate_runs({json(1), json(3)}), 2.0, 1.0, 1.0, 3.0, {1, 3});
  EXPECT_THROW(aggregate_runs({}), sieve::Error);
}

class SeedDirs : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = sieve::test::make_temp_dir("aggregate"); }

  // Creates DIR/sub (and its folder) holding `content`.
  void write(const std::string& sub, const std::string& file, const std::string& content) {
    ::mkdir((dir_ + "/" + sub).c_str(), 0755);
    if (!file.empty()) std::ofstream(dir_ + "/" + sub + "/" + file) << content;
  }

  std::string dir_;
};

TEST_F(SeedDirs, NumericOrderAndSkippedFolders) {
  write("seed_42", "results.json", R"({"acc": 0.8, "run": "b"})");
  write("seed_43", "results.json", R"({"acc": 0.6})");
  write("seed_7", "results.json", R"({"acc": 0.7, "run": "a"})");
  write("seed_x", "results.json", R"({"acc": 100})");     // not seed_<integer>
  write("seed_", "results.json", R"({"acc": 100})");      // no number
  write("seed_9", "", "");                                // no results file yet
  write("seed_10", "other.json", R"({"acc": 100})");      // other file only
  std::ofstream(dir_ + "/seed_11") << R"({"acc": 100})";  // a file, not a folder
  EXPECT_EQ(seed_dirs(dir_, "results.json"),
            (std::vector<std::string>{dir_ + "/seed_7", dir_ + "/seed_42", dir_ + "/seed_43"}));

  const json r = aggregate_seed_dirs(dir_, "results.json");
  // Seed order 7, 42, 43: acc 0.7 0.8 0.6, mean 0.7, deviations 0 0.1 -0.1 -> variance 0.02 / 3.
  EXPECT_EQ(r.at("seeds"), json({7, 42, 43}));
  expect_leaf(r.at("acc"), 0.7, std::sqrt(0.02 / 3.0), 0.6, 0.8, {0.7, 0.8, 0.6});
  EXPECT_EQ(r.at("run"), "a");  // seed 7 comes first
  EXPECT_EQ(r.size(), 3u);
}

TEST_F(SeedDirs, InvalidJsonNamesTheFile) {
  write("seed_1", "results.json", R"({"acc": 0.5})");
  write("seed_2", "results.json", R"({"acc": )");
  sieve::test::expect_error([&] { aggregate_seed_dirs(dir_, "results.json"); },
                            dir_ + "/seed_2/results.json");
}

TEST_F(SeedDirs, NonObjectNoSeedsAndSameSeedTwiceAreErrors) {
  sieve::test::expect_error([&] { aggregate_seed_dirs(dir_, "results.json"); }, "no seed_<n> folder");
  EXPECT_TRUE(seed_dirs(dir_, "results.json").empty());
  write("seed_3", "results.json", "[1, 2]");
  sieve::test::expect_error([&] { aggregate_seed_dirs(dir_, "results.json"); },
                            dir_ + "/seed_3/results.json");
  write("seed_03", "results.json", "{}");
  sieve::test::expect_error([&] { seed_dirs(dir_, "results.json"); }, "same seed");
  EXPECT_THROW(seed_dirs(dir_ + "/missing", "results.json"), sieve::Error);
}

}  // namespace
}  // namespace sieve::eval
