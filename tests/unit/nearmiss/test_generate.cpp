// Near-miss datasets: generation over many sentences (counts, determinism, independence of the
// kinds), the writers (CSV quoting, TSV, JSONL, triplets), and the CLI.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/file_util.h"
#include "nearmiss/generate.h"
#include "support/test_util.h"
#include "unit/nearmiss/wordnet_test.h"

namespace sieve::nearmiss {
namespace {

class GenerateTest : public test::WordNetTest {};

TEST_F(GenerateTest, PairsCountsAndSkips) {
  std::vector<std::string> in = {"the dog bit the man", "<div>", "", "The cat is on the table"};
  GenerateReport r;
  auto rows = generate(in, {Kind::Negation, Kind::RoleSwap}, 7, lx(), &r);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].perturbed, "the dog did not bite the man");
  EXPECT_EQ(rows[0].kind, Kind::Negation);
  EXPECT_EQ(rows[1].perturbed, "the man bit the dog");
  EXPECT_EQ(rows[1].kind, Kind::RoleSwap);
  EXPECT_EQ(rows[2].source, "The cat is on the table");
  EXPECT_EQ(rows[2].perturbed, "The cat is not on the table");
  EXPECT_EQ(r.inputs, 4u);
  EXPECT_EQ(r.skipped, 2u);
  EXPECT_EQ(r.yielded.at("negation"), 2u);
  EXPECT_EQ(r.yielded.at("role_swap"), 1u);
}

TEST_F(GenerateTest, DeterministicAndIndependentOfOtherKinds) {
  std::vector<std::string> in = lx().example_sentences(300);
  auto all = generate(in, {Kind::Negation, Kind::Antonym, Kind::Synonym}, 11, lx());
  auto again = generate(in, {Kind::Negation, Kind::Antonym, Kind::Synonym}, 11, lx());
  auto only = generate(in, {Kind::Antonym}, 11, lx());
  ASSERT_EQ(all.size(), again.size());
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].perturbed, again[i].perturbed);
  std::vector<std::string> antonyms;
  for (const auto& r : all)
    if (r.kind == Kind::Antonym) antonyms.push_back(r.perturbed);
  ASSERT_EQ(antonyms.size(), only.size());
  ASSERT_GT(only.size(), 20u);
  for (size_t i = 0; i < only.size(); ++i) EXPECT_EQ(only[i].perturbed, antonyms[i]);
  // Every row is the edit its kind intends.
  for (const auto& r : all) EXPECT_TRUE(check_edit(r.source, r.perturbed, r.kind, lx()).intended) << r.perturbed;
}

std::vector<NearMiss> sample_rows() {
  return {{"a, \"quoted\" text", "a, \"quoted\" text not", Kind::Negation}, {"left\tof", "right of", Kind::SpatialFlip}};
}

TEST(WriteNearmisses, CsvTsvJsonlAndTriplets) {
  std::string dir = test::make_temp_dir("nearmiss_write");
  write_nearmisses(dir + "/p.csv", sample_rows(), Layout::Pairs);
  EXPECT_EQ(read_file(dir + "/p.csv"),
            "sentence1,sentence2,category\n\"a, \"\"quoted\"\" text\",\"a, \"\"quoted\"\" text not\",negation\n"
            "left\tof,right of,spatial_flip\n");
  write_nearmisses(dir + "/p.tsv", sample_rows(), Layout::Pairs);
  EXPECT_EQ(read_file(dir + "/p.tsv"),
            "sentence1\tsentence2\tcategory\na, \"quoted\" text\ta, \"quoted\" text not\tnegation\nleft of\tright of\tspatial_flip\n");
  write_nearmisses(dir + "/t.jsonl", sample_rows(), Layout::Triplets);
  std::istringstream lines(read_file(dir + "/t.jsonl"));
  std::string line;
  std::getline(lines, line);
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["anchor"], "a, \"quoted\" text");
  EXPECT_EQ(j["positive"], "a, \"quoted\" text");
  EXPECT_EQ(j["negative"], "a, \"quoted\" text not");
  EXPECT_EQ(j["category"], "negation");
}

TEST(WriteNearmisses, TripletsTakeParaphrasesAsPositives) {
  // Rows as generate() emits them: a source's rows together, kinds in the order asked for.
  std::vector<NearMiss> rows = {{"s1", "s1 neg", Kind::Negation},
                                {"s1", "s1 swap", Kind::RoleSwap},
                                {"s1", "s1 syn", Kind::Synonym},
                                {"s1", "s1 pass", Kind::Passive},
                                {"s2", "s2 syn", Kind::Synonym},  // a rewrite but no near-miss: no triplet
                                {"s3", "s3 flip", Kind::SpatialFlip},
                                {"s1", "s1 again", Kind::Negation}};  // a later repeat is its own group
  // Without `reversed`: the rows below that are not "_reversed".
  size_t plain = 0;
  for (const Triplet& x : to_triplets(rows)) {
    EXPECT_EQ(x.category.find("_reversed"), std::string::npos) << x.category;
    ++plain;
  }
  EXPECT_EQ(plain, 8u);
  auto t = to_triplets(rows, /*reversed=*/true);
  // Expected by hand: per near-miss the identity row, then per rewrite of the same source its
  // triplet and the reversed one.
  const std::vector<std::vector<std::string>> want = {
      {"s1", "s1", "s1 neg", "negation"},
      {"s1", "s1 syn", "s1 neg", "negation+synonym"},
      {"s1 syn", "s1", "s1 neg", "negation+synonym_reversed"},
      {"s1", "s1 pass", "s1 neg", "negation+passive"},
      {"s1 pass", "s1", "s1 neg", "negation+passive_reversed"},
      {"s1", "s1", "s1 swap", "role_swap"},
      {"s1", "s1 syn", "s1 swap", "role_swap+synonym"},
      {"s1 syn", "s1", "s1 swap", "role_swap+synonym_reversed"},
      {"s1", "s1 pass", "s1 swap", "role_swap+passive"},
      {"s1 pass", "s1", "s1 swap", "role_swap+passive_reversed"},
      {"s3", "s3", "s3 flip", "spatial_flip"},
      {"s1", "s1", "s1 again", "negation"}};
  ASSERT_EQ(t.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(t[i].anchor, want[i][0]) << i;
    EXPECT_EQ(t[i].positive, want[i][1]) << i;
    EXPECT_EQ(t[i].negative, want[i][2]) << i;
    EXPECT_EQ(t[i].category, want[i][3]) << i;
  }
  // The writer uses the same rows: a rewrite is never written as a negative.
  std::string dir = test::make_temp_dir("nearmiss_para");
  write_nearmisses(dir + "/t.tsv", rows, Layout::Triplets, 0, /*reversed=*/true);
  std::string tsv = read_file(dir + "/t.tsv");
  EXPECT_EQ(tsv.find("\ts1 syn\tsynonym"), std::string::npos) << tsv;
  EXPECT_NE(tsv.find("s1\ts1 pass\ts1 swap\trole_swap+passive\n"), std::string::npos) << tsv;
  EXPECT_NE(tsv.find("s1 pass\ts1\ts1 swap\trole_swap+passive_reversed\n"), std::string::npos) << tsv;
  EXPECT_EQ(std::count(tsv.begin(), tsv.end(), '\n'), 13);  // header + 12 rows
}

TEST(WriteNearmisses, SpreadIndicesByHand) {
  auto kept = [](size_t n, size_t max) {
    std::vector<size_t> out;
    auto k = spread_indices(n, max);
    for (size_t i = 0; i < k.size(); ++i)
      if (k[i]) out.push_back(i);
    return out;
  };
  EXPECT_EQ(kept(3, 5), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(kept(3, 0), (std::vector<size_t>{0, 1, 2}));
  // n = 10, max = 4: floor(i * 4 / 10) = 0 0 0 1 1 2 2 2 3 3 -> a new value at 0, 3, 5, 8.
  EXPECT_EQ(kept(10, 4), (std::vector<size_t>{0, 3, 5, 8}));
  EXPECT_EQ(kept(6, 1), (std::vector<size_t>{0}));
}

TEST(WriteNearmisses, MaxPerCategoryCapsEachCategory) {
  std::vector<NearMiss> rows;
  for (int i = 0; i < 10; ++i) rows.push_back({"n" + std::to_string(i), "n" + std::to_string(i) + " not", Kind::Negation});
  rows.push_back({"f", "f flipped", Kind::SpatialFlip});
  std::string dir = test::make_temp_dir("nearmiss_cap");
  EXPECT_EQ(write_nearmisses(dir + "/p.tsv", rows, Layout::Pairs, 4), 5u);
  EXPECT_EQ(read_file(dir + "/p.tsv"),
            "sentence1\tsentence2\tcategory\nn0\tn0 not\tnegation\nn3\tn3 not\tnegation\n"
            "n5\tn5 not\tnegation\nn8\tn8 not\tnegation\nf\tf flipped\tspatial_flip\n");
  EXPECT_EQ(write_nearmisses(dir + "/p.tsv", rows, Layout::Pairs), 11u);
}

TEST(NearmissPaperCategories, Mapping) {
  EXPECT_STREQ(paper_category(Kind::Negation), "cannot_negation");
  EXPECT_STREQ(paper_category(Kind::BindingSwap), "binding_negation");
  EXPECT_STREQ(paper_category(Kind::SpatialFlip), "spatial");
  EXPECT_STREQ(paper_category(Kind::RoleSwap), "");
}

TEST(WriteNearmisses, GivenParaphrasesJoinTheirSentencesRows) {
  std::vector<NearMiss> rows = {{"s1", "s1 neg", Kind::Negation}, {"s1", "s1 syn", Kind::Synonym},
                                {"s2", "s2 swap", Kind::RoleSwap}};
  // s1 gets two given paraphrases, s2 one without a category, s3 has no rows (no near-miss).
  auto all = add_given_paraphrases(rows, {{"s1", "s1 def", "definition_definition"}, {"s3", "s3 def", "x"},
                                          {"s2", "s2 other", ""}, {"s1", "s1 def2", "definition_definition"}});
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all[2].perturbed, "s1 def");
  EXPECT_EQ(all[3].perturbed, "s1 def2");
  EXPECT_EQ(all[5].given, "given");
  EXPECT_TRUE(row_positive(all[2]));
  EXPECT_FALSE(row_positive(all[0]));
  EXPECT_EQ(row_category(all[2]), "definition_definition");
  const std::vector<std::vector<std::string>> want = {
      {"s1", "s1", "s1 neg", "negation"},
      {"s1", "s1 syn", "s1 neg", "negation+synonym"},
      {"s1", "s1 def", "s1 neg", "negation+definition_definition"},
      {"s1", "s1 def2", "s1 neg", "negation+definition_definition"},
      {"s2", "s2", "s2 swap", "role_swap"},
      {"s2", "s2 other", "s2 swap", "role_swap+given"}};
  auto t = to_triplets(all);
  ASSERT_EQ(t.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ((std::vector<std::string>{t[i].anchor, t[i].positive, t[i].negative, t[i].category}), want[i]) << i;
}

TEST(WriteNearmisses, WordOverlapByHand) {
  EXPECT_DOUBLE_EQ(word_overlap("The dog, the man.", "a MAN bit a dog"), 2.0 / 5.0);  // {the,dog,man} vs {a,man,bit,dog}: 2 of 5
  EXPECT_DOUBLE_EQ(word_overlap("same words", "words same"), 1.0);
  EXPECT_DOUBLE_EQ(word_overlap("", ""), 1.0);
  EXPECT_DOUBLE_EQ(word_overlap("x", ""), 0.0);
}

TEST_F(GenerateTest, Cli) {
  std::string dir = test::make_temp_dir("nearmiss_cli");
  {
    std::ofstream f(dir + "/in.txt");
    f << "the dog bit the man\n\nThe box is above the shelf\n";
  }
  auto r = test::run_command(test::cli_path() + " nearmiss generate --in " + dir + "/in.txt --kinds negation,spatial_flip --out " +
                             dir + "/out.tsv 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["inputs"], 3);
  EXPECT_EQ(j["per_kind"]["spatial_flip"], 1);
  EXPECT_EQ(j["per_kind"]["negation"], 2);
  std::string out = read_file(dir + "/out.tsv");
  EXPECT_NE(out.find("The box is above the shelf\tThe box is below the shelf\tspatial_flip\n"), std::string::npos) << out;
  // Given paraphrases (the corpus's pairs.jsonl shape): filtered by category and word overlap.
  {
    std::ofstream f(dir + "/pairs.jsonl");
    f << "{\"anchor\":\"the dog bit the man\",\"positive\":\"the dog has bitten the man\",\"category\":\"definition_definition\"}\n"
      << "{\"anchor\":\"the dog bit the man\",\"positive\":\"an unrelated text\",\"category\":\"definition_definition\"}\n"
      << "{\"anchor\":\"the cat saw the bird\",\"positive\":\"the cat saw a bird\",\"category\":\"synonym\"}\n";
  }
  auto g = test::run_command(test::cli_path() + " nearmiss generate --paraphrases " + dir + "/pairs.jsonl --paraphrase-category " +
                             "definition_definition --min-overlap 0.5 --kinds negation --layout triplets --out " + dir +
                             "/tri.tsv 2>/dev/null");
  ASSERT_EQ(g.exit_code, 0) << g.out;
  EXPECT_EQ(nlohmann::json::parse(g.out)["inputs"], 1);
  std::string tri = read_file(dir + "/tri.tsv");
  EXPECT_NE(tri.find("the dog bit the man\tthe dog has bitten the man\tthe dog did not bite the man\t"
                     "negation+definition_definition\n"), std::string::npos) << tri;
  EXPECT_EQ(tri.find("unrelated"), std::string::npos) << tri;
  EXPECT_EQ(tri.find("the cat"), std::string::npos) << tri;
  auto pairs_layout = test::run_command(test::cli_path() + " nearmiss generate --paraphrases " + dir + "/pairs.jsonl --out " +
                                        dir + "/x.tsv 2>&1");
  EXPECT_NE(pairs_layout.out.find("--layout triplets"), std::string::npos) << pairs_layout.out;
  auto bad = test::run_command(test::cli_path() + " nearmiss generate --in " + dir + "/in.txt --kinds nonsense --out " + dir +
                               "/x.csv 2>&1");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("nonsense"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace sieve::nearmiss
