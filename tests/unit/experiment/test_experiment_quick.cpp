// Slow: both experiments end to end with --profile quick on ../shared/data (a few minutes on two
// cores), through the CLI as a user runs them. Aggregates are checked against the per-seed files.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <sstream>

#include "eval/beir.h"
#include "experiment_test_util.h"
#include "support/test_util.h"

namespace sieve::test {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

class QuickProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    scifact_ = shared_data("retrieval/scifact");
    wikiqa_ = shared_data("retrieval/wikiqa");
    vocab_ = shared_data("vocab/bert-base-uncased-vocab.txt");
    if (scifact_.empty() || wikiqa_.empty() || vocab_.empty()) GTEST_SKIP() << "../shared/data is absent";
    if (!exists("/usr/share/wordnet/data.noun")) GTEST_SKIP() << "WordNet is not installed";
    dir_ = make_temp_dir("quick");
    model_ = dir_ + "/model";
    const auto r = run_command(cli_path() + " make-fixture --out " + model_ +
                               " --hidden 64 --layers 2 --heads 2 --ffn 128 --init-std 0.02 --vocab " + vocab_ +
                               " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.out;
  }
  std::string scifact_, wikiqa_, vocab_, dir_, model_;
};

TEST_F(QuickProfile, TradeoffTrainsBothModelsPerSeedAndAggregates) {
  const std::string out = dir_ + "/tradeoff";
  const std::string condaqa = shared_data("pairs/condaqa-dev-edits.tsv");
  const std::string cmd = cli_path() + " experiment tradeoff --profile quick --backbone " + model_ + " --train " +
                          scifact_ + " --beir " + scifact_ + " --beir " + wikiqa_ +
                          (condaqa.empty() ? "" : " --nearmiss-set " + condaqa) + " --out " + out + " 2>" + dir_ +
                          "/tradeoff.log";
  auto r = run_command(cmd);
  ASSERT_EQ(r.exit_code, 0) << slurp(dir_ + "/tradeoff.log");
  EXPECT_NE(r.out.find("| Model A"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Δ (B − A)"), std::string::npos);
  // The evaluation lives in its own folder (named after its settings); OUT's top level has its tables.
  const auto agg = nlohmann::json::parse(slurp(out + "/results.json"));
  const std::string ev = out + "/evaluations/" + agg["evaluation"].get<std::string>();
  for (const char* f : {"/table.md", "/results.json", "/plots/tradeoff_ndcg10.svg", "/plots/tradeoff_acc1.svg"}) {
    EXPECT_TRUE(exists(out + f)) << f;
    EXPECT_TRUE(exists(ev + f)) << f;
  }
  EXPECT_TRUE(exists(ev + "/seed_42/space/hist_overall.svg"));
  EXPECT_TRUE(exists(out + "/seed_43/model_b/last/model.safetensors"));

  // The aggregate of each cell is the mean and population std of the two seeds' values.
  for (const char* model : {"model_a", "model_b"})
    for (const char* set : {"scifact", "wikiqa"}) {
      std::vector<double> v;
      for (const char* seed : {"42", "43"}) {
        const auto s = nlohmann::json::parse(slurp(ev + "/seed_" + seed + "/results.json"));
        v.push_back(s[model][set]["ndcg@10"].get<double>());
        EXPECT_GE(v.back(), 0.0);
        EXPECT_LE(v.back(), 1.0);
      }
      const auto& c = agg["seeds"][model][set]["ndcg@10"];
      EXPECT_NEAR(c["mean"].get<double>(), (v[0] + v[1]) / 2, 1e-12);
      EXPECT_NEAR(c["std"].get<double>(), std::abs(v[0] - v[1]) / 2, 1e-12);
    }
  // Model B trained on more rows than Model A: A's rows plus its near-misses as identity
  // triplets. The data report's counts are those of the written training files.
  const auto data = nlohmann::json::parse(slurp(out + "/data/report.json"));
  auto count_rows = [&](const std::string& file) {
    std::map<std::string, int> per_category;
    std::istringstream in(slurp(file));
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) ++per_category[nlohmann::json::parse(line).value("category", "uncategorised")];
    return per_category;
  };
  const auto a_rows = count_rows(out + "/data/model_a.jsonl"), b_rows = count_rows(out + "/data/model_b.jsonl");
  int a_total = 0, b_total = 0;
  for (const auto& [c, n] : a_rows) {
    a_total += n;
    EXPECT_EQ(data["model_a"]["categories"][c].get<int>(), n) << c;
    EXPECT_EQ(b_rows.at(c), n) << c;  // B holds every row of A
  }
  for (const auto& [c, n] : b_rows) b_total += n;
  EXPECT_EQ(data["model_a"]["rows"].get<int>(), a_total);
  EXPECT_EQ(data["model_b"]["rows"].get<int>(), b_total);
  EXPECT_GT(b_total, a_total);
  // A's SciFact rows carry mined hard negatives; B adds every near-miss kind, capped round-robin.
  EXPECT_GT(data["model_a"]["sources"][0]["mining"]["negatives"].get<int>(), 0);
  EXPECT_EQ(b_total - a_total, 1000);  // the quick profile's --max-structural
  for (const char* kind : {"negation", "role_swap", "binding_swap", "spatial_flip", "antonym", "passive_role_swap"})
    EXPECT_GT(b_rows.count(kind) ? b_rows.at(kind) : 0, 100) << kind;
  const auto s42 = nlohmann::json::parse(slurp(ev + "/seed_42/results.json"));
  EXPECT_GT(s42["space"]["overall"]["n"].get<int>(), 0);

  // One metric recomputed from the written run file: nDCG@10 of Model A on SciFact, by hand.
  const eval::Qrels qrels = eval::read_qrels(scifact_ + "/qrels/test.tsv");
  std::map<std::string, std::vector<std::pair<double, std::string>>> run;
  {
    std::istringstream in(slurp(ev + "/seed_42/model_a/runs/scifact.trec"));
    std::string qid, q0, doc, rank, tag;
    double score = 0;
    while (in >> qid >> q0 >> doc >> rank >> score >> tag) run[qid].push_back({score, doc});
  }
  ASSERT_FALSE(run.empty());
  double sum = 0;
  for (const auto& [qid, scored] : run) sum += naive_ndcg(scored, qrels.at(qid), 10);
  EXPECT_EQ(run.size(), s42["model_a"]["scifact"]["queries"].get<size_t>());
  EXPECT_NEAR(sum / run.size(), s42["model_a"]["scifact"]["ndcg@10"].get<double>(), 1e-6);

  // Separation: each model's pooled cosine per category and its AUC, on the generated pairs and
  // on the human-written set (which has paraphrases of its own).
  for (const char* model : {"model_a", "model_b"}) {
    const auto& g = s42[model]["separation"]["generated"];
    EXPECT_GT(g["categories"]["negation"]["n"].get<int>(), 0);
    const double auc = g["overall"]["auc"].get<double>();
    EXPECT_GE(auc, 0.0);
    EXPECT_LE(auc, 1.0);
    if (!condaqa.empty()) EXPECT_EQ(s42[model]["separation"]["condaqa-dev-edits"]["positive_pairs"], "own");
  }
  EXPECT_TRUE(exists(out + "/plots/ndcg_vs_nearmiss_auc.svg"));
  EXPECT_NE(r.out.find("### Separation on generated"), std::string::npos);
  EXPECT_NE(r.out.find("## Zero-shot MRR@10"), std::string::npos);

  // Re-running resumes: nothing is retrained and the seed results stay as they were.
  const std::string before = slurp(ev + "/seed_42/results.json");
  r = run_command(cmd);
  ASSERT_EQ(r.exit_code, 0) << slurp(dir_ + "/tradeoff.log");
  EXPECT_EQ(slurp(ev + "/seed_42/results.json"), before);
  EXPECT_NE(slurp(dir_ + "/tradeoff.log").find("already done"), std::string::npos);

  // The trained models evaluated on other data (as a held-out set is): nothing is trained, the
  // new evaluation gets its own folder, and the same model on the same set scores the same.
  const std::string again = cli_path() + " experiment tradeoff --profile quick --backbone " + model_ + " --train " +
                            scifact_ + " --beir " + wikiqa_ + " --eval-name heldout --out " + out + " 2>" + dir_ +
                            "/heldout.log";
  r = run_command(again);
  ASSERT_EQ(r.exit_code, 0) << slurp(dir_ + "/heldout.log");
  const std::string held_log = slurp(dir_ + "/heldout.log");
  EXPECT_EQ(held_log.find("train encoder"), std::string::npos) << held_log;
  EXPECT_NE(held_log.find("reusing the trained model in " + out + "/seed_43/model_b"), std::string::npos) << held_log;
  const auto h42 = nlohmann::json::parse(slurp(out + "/evaluations/heldout/seed_42/results.json"));
  EXPECT_FALSE(h42["model_a"].contains("scifact"));
  EXPECT_DOUBLE_EQ(h42["model_b"]["wikiqa"]["ndcg@10"].get<double>(), s42["model_b"]["wikiqa"]["ndcg@10"].get<double>());
  EXPECT_EQ(nlohmann::json::parse(slurp(out + "/results.json"))["evaluation"], "heldout");
}

TEST_F(QuickProfile, VerifiersTrainsEveryKindAndRegimeAndTabulates) {
  const std::string out = dir_ + "/verifiers";
  const auto r = run_command(cli_path() + " experiment verifiers --profile quick --encoder " + model_ + " --beir " +
                             scifact_ + " --out " + out + " 2>" + dir_ + "/verifiers.log");
  ASSERT_EQ(r.exit_code, 0) << slurp(dir_ + "/verifiers.log");
  for (const char* kind : {"F0", "F1", "F2", "F3", "F4"})
    for (const char* mode : {"Frozen", "End-to-end"})
      EXPECT_NE(r.out.find(std::string("| ") + kind + "       | " + mode), std::string::npos) << kind << " " << mode;
  const auto s = nlohmann::json::parse(slurp(out + "/seed_42/results.json"));
  // Frozen F0-F2 have nothing to train; F3's size is the paper's (332,545), whatever the encoder.
  EXPECT_EQ(s["frozen"]["F1"]["num_parameters"].get<int>(), 0);
  EXPECT_EQ(s["frozen"]["F1"]["training_time_seconds"].get<double>(), 0.0);
  EXPECT_EQ(s["frozen"]["F3"]["num_parameters"].get<int>(), 332545);
  EXPECT_GT(s["end_to_end"]["F1"]["training_time_seconds"].get<double>(), 0.0);
  EXPECT_TRUE(exists(out + "/seed_42/end_to_end/F4/encoder/model.safetensors"));
  // Reranking keeps the candidate set, so recall@100 over the top 20 cannot change; scores can.
  const auto& f1 = s["frozen"]["F1"]["retrieval"]["scifact"];
  EXPECT_NEAR(f1["recall@100"].get<double>(), f1["encoder"]["recall@100"].get<double>(), 1e-12);
  const auto& nm = s["frozen"]["F4"]["nearmiss"]["scorers"];
  EXPECT_GE(nm["verifier"]["auc"].get<double>(), 0.0);
  EXPECT_LE(nm["verifier"]["auc"].get<double>(), 1.0);
  EXPECT_TRUE(exists(out + "/plots/verifiers_ndcg10.svg"));
  EXPECT_TRUE(exists(out + "/plots/verifiers_nearmiss_auc.svg"));
}

// The paper's fourth backbone is GTE-ModernBERT-base: a ModernBERT folder (byte-level BPE
// tokenizer.json, global and sliding-window layers) goes through both experiments, end-to-end
// verifier training and the float16 export as a BERT does.
TEST_F(QuickProfile, ModernBertBackboneRunsBothExperimentsAndExports) {
  const std::string mb = dir_ + "/modernbert";
  auto r = run_command(cli_path() + " make-fixture --arch modernbert --out " + mb +
                       " --hidden 64 --layers 3 --heads 2 --ffn 96 --local-attention 8 --global-every 3"
                       " --init-std 0.02 --max-positions 256 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string tr = dir_ + "/mb_tradeoff";
  r = run_command(cli_path() + " experiment tradeoff --profile quick --seeds 42 --steps 8 --backbone " + mb +
                  " --train " + scifact_ + " --beir " + scifact_ + " --max-queries 20 --out " + tr + " 2>" + dir_ +
                  "/mb_tradeoff.log");
  ASSERT_EQ(r.exit_code, 0) << slurp(dir_ + "/mb_tradeoff.log");
  const auto t = nlohmann::json::parse(
      slurp(tr + "/evaluations/" + nlohmann::json::parse(slurp(tr + "/results.json"))["evaluation"].get<std::string>() +
            "/seed_42/results.json"));
  for (const char* model : {"model_a", "model_b"}) {
    const double v = t[model]["scifact"]["ndcg@10"].get<double>();
    EXPECT_GE(v, 0.0);
    EXPECT_LE(v, 1.0);
  }
  const auto cfg = nlohmann::json::parse(slurp(tr + "/seed_42/model_b/last/config.json"));
  EXPECT_EQ(cfg["model_type"], "modernbert");
  EXPECT_TRUE(exists(tr + "/seed_42/model_b/last/tokenizer.json"));

  const std::string ve = dir_ + "/mb_verifiers";
  r = run_command(cli_path() + " experiment verifiers --profile quick --kinds F1,F4 --steps-f4 6 --steps-light 4"
                  " --encoder " + mb + " --beir " + scifact_ + " --max-queries 10 --out " + ve + " 2>" + dir_ +
                  "/mb_verifiers.log");
  ASSERT_EQ(r.exit_code, 0) << slurp(dir_ + "/mb_verifiers.log");
  EXPECT_NE(r.out.find("| F4       | End-to-end"), std::string::npos) << r.out;
  const std::string e2e = ve + "/seed_42/end_to_end/F4/encoder";
  EXPECT_EQ(nlohmann::json::parse(slurp(e2e + "/config.json"))["model_type"], "modernbert");

  // Export the end-to-end encoder in float16; it embeds like the float32 one within fp16 rounding.
  r = run_command(cli_path() + " model export --in " + e2e + " --out " + dir_ + "/mb_export 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto a = run_command(cli_path() + " embed -m " + e2e + " 'the dog bit the man' 2>/dev/null");
  auto b = run_command(cli_path() + " embed -m " + dir_ + "/mb_export 'the dog bit the man' 2>/dev/null");
  ASSERT_EQ(a.exit_code, 0);
  ASSERT_EQ(b.exit_code, 0) << b.out;
  auto ka = nlohmann::json::parse(a.out)["embedding"].get<std::vector<double>>();
  auto kb = nlohmann::json::parse(b.out)["embedding"].get<std::vector<double>>();
  ASSERT_EQ(ka.size(), kb.size());
  double dot = 0;
  for (size_t i = 0; i < ka.size(); ++i) dot += ka[i] * kb[i];
  EXPECT_GT(dot, 0.999);
}

}  // namespace
}  // namespace sieve::test
