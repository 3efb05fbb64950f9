// Retrieval evaluation against independent references: brute-force cosine search with keys encoded
// one text at a time, naive MaxSim over the stored token states, and trec_eval's nDCG written out.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "eval/beir.h"
#include "core/file_util.h"
#include "experiment/retrieval_eval.h"
#include "experiment_test_util.h"
#include "sieve/index.h"

namespace sieve::test {
namespace {

class RetrievalEvalTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new std::string(make_temp_dir("reval"));
    beir_ = new TinyBeir(make_tiny_beir(*root_));
    index_ = new std::string(*root_ + "/index");
    build_index(beir_->model, beir_->dir + "/corpus.jsonl", *index_);
  }
  static void TearDownTestSuite() {
    delete beir_;
    delete index_;
    delete root_;
  }
  static std::unique_ptr<Index> open() {
    IndexOpenOptions o;
    o.model_dir = beir_->model;
    return Index::open(*index_, o);
  }
  /// F1 over the top 8 of dense search, all 8 kept.
  static experiment::RetrievalEvalOptions f1_top8() {
    experiment::RetrievalEvalOptions o;
    o.verifier = "F1";
    o.candidates = 8;
    o.depth = 8;
    return o;
  }
  static eval::Qrels qrels() { return eval::read_qrels(beir_->dir + "/qrels/test.tsv"); }
  static std::vector<eval::Query> queries() { return eval::read_queries(beir_->dir + "/queries.jsonl"); }

  static std::string* root_;
  static TinyBeir* beir_;
  static std::string* index_;
};
std::string* RetrievalEvalTest::root_ = nullptr;
TinyBeir* RetrievalEvalTest::beir_ = nullptr;
std::string* RetrievalEvalTest::index_ = nullptr;

TEST_F(RetrievalEvalTest, DenseRunIsExactSearchAndMetricsFollowTrecEval) {
  auto index = open();
  experiment::RetrievalEvalOptions o;
  o.depth = 24;
  o.ks = {1, 5, 10};
  const auto r = experiment::evaluate_retrieval(*index, queries(), qrels(), o);

  std::vector<std::string> doc_texts, query_texts;
  for (const auto& d : beir_->docs) doc_texts.push_back(d.second);
  for (const auto& q : beir_->queries) query_texts.push_back(q.second);
  const auto dk = keys_one_by_one(beir_->model, doc_texts);
  const auto qk = keys_one_by_one(beir_->model, query_texts);

  double ndcg10 = 0, ndcg5 = 0, acc1 = 0;
  size_t judged = 0;
  for (size_t qi = 0; qi < beir_->queries.size(); ++qi) {
    const std::string& qid = beir_->queries[qi].first;
    const auto& rels = beir_->qrels.at(qid);
    bool relevant = false;
    for (const auto& kv : rels) relevant = relevant || kv.second > 0;
    if (!relevant) {  // q6 has only a grade-0 judgement: not searched, not averaged
      EXPECT_EQ(r.run.count(qid), 0u);
      continue;
    }
    ++judged;
    std::vector<std::pair<double, std::string>> scored;
    for (size_t d = 0; d < dk.size(); ++d) scored.push_back({dot(qk[qi], dk[d]), beir_->docs[d].first});
    ndcg10 += naive_ndcg(scored, rels, 10);
    ndcg5 += naive_ndcg(scored, rels, 5);
    // Documents 20-23 repeat documents 0-3, so exact ties occur: trec_eval puts the larger id first.
    std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second > b.second;
    });
    auto top = rels.find(scored[0].second);
    acc1 += top != rels.end() && top->second > 0;
    const auto& run = r.run.at(qid);
    ASSERT_EQ(run.size(), 24u);
    for (size_t k = 0; k < 10; ++k) {
      EXPECT_EQ(run[k].doc_id, scored[k].second) << qid << " rank " << k + 1;
      EXPECT_NEAR(run[k].score, scored[k].first, 1e-5);
    }
  }
  EXPECT_EQ(judged, 5u);
  EXPECT_EQ(r.evaluation.queries, 5u);
  EXPECT_NEAR(r.evaluation.mean.at("ndcg@10"), ndcg10 / judged, 1e-9);
  EXPECT_NEAR(r.evaluation.mean.at("ndcg@5"), ndcg5 / judged, 1e-9);
  EXPECT_NEAR(r.evaluation.mean.at("acc@1"), acc1 / judged, 1e-12);
  EXPECT_EQ(r.system, "dense");
}

TEST_F(RetrievalEvalTest, MaxQueriesKeepsTheFirstJudgedQueries) {
  auto index = open();
  experiment::RetrievalEvalOptions o;
  o.max_queries = 2;
  const auto r = experiment::evaluate_retrieval(*index, queries(), qrels(), o);
  EXPECT_EQ(r.evaluation.queries, 2u);
  EXPECT_EQ(r.queries, 2u);
  ASSERT_EQ(r.qrels.size(), 2u);
  EXPECT_EQ(r.qrels.begin()->first, "q1");
  EXPECT_EQ(std::next(r.qrels.begin())->first, "q2");
}

TEST_F(RetrievalEvalTest, RerankOrdersStageOneCandidatesByNaiveMaxSim) {
  auto index = open();
  experiment::RetrievalEvalOptions o = f1_top8();
  const auto r = experiment::evaluate_retrieval(*index, queries(), qrels(), o);
  EXPECT_EQ(r.system, "dense+F1");

  auto enc = Encoder::load(beir_->model);
  EncodeCall call;
  call.token_states = true;
  SearchParams sp;
  sp.k = 8;
  for (const auto& [qid, text] : beir_->queries) {
    if (!r.run.count(qid)) continue;
    // Stage 1's candidate set is kept; their order comes from MaxSim over the stored tokens.
    std::set<std::string> stage1;
    for (const Hit& h : index->search(text, sp).hits) stage1.insert(h.id);
    const Embeddings q = enc->encode({text}, call);
    const size_t dim = q.dim, m = q.tokens[0].length;
    std::vector<std::pair<double, std::string>> expected;
    for (const std::string& id : stage1) {
      const TokenStates c = index->tokens(static_cast<uint32_t>(index->find(id)));
      double sum = 0;
      for (size_t i = 0; i < m; ++i) {
        const float* qi = &q.tokens[0].values[i * dim];
        double qn = 0;
        for (size_t h = 0; h < dim; ++h) qn += double(qi[h]) * qi[h];
        double best = -2;
        for (size_t j = 0; j < c.length; ++j) {
          const float* cj = &c.values[j * dim];
          double d = 0, cn = 0;
          for (size_t h = 0; h < dim; ++h) {
            d += double(qi[h]) * cj[h];
            cn += double(cj[h]) * cj[h];
          }
          best = std::max(best, d / std::sqrt(qn * cn));
        }
        sum += best;
      }
      expected.push_back({sum / m, id});
    }
    std::sort(expected.begin(), expected.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    const auto& run = r.run.at(qid);
    ASSERT_EQ(run.size(), expected.size()) << qid;
    for (size_t k = 0; k < run.size(); ++k) {
      EXPECT_NEAR(run[k].score, expected[k].first, 1e-4) << qid << " rank " << k + 1;
      // Ranks are compared where the score is clear of both neighbours (the duplicated documents tie).
      const bool clear_below = k + 1 == run.size() || expected[k].first - expected[k + 1].first > 1e-3;
      const bool clear_above = k == 0 || expected[k - 1].first - expected[k].first > 1e-3;
      if (clear_below && clear_above)
        EXPECT_EQ(run[k].doc_id, expected[k].second) << qid << " rank " << k + 1;
    }
  }
}

// Stage 1 + gate: stage 1's candidates in stage 1's order, less those the verifier scores below the
// threshold; the counts say how many were dropped and how many of those were judged relevant.
TEST_F(RetrievalEvalTest, GateDropsRejectedCandidatesKeepsStageOneOrderAndCountsRelevantDrops) {
  auto index = open();
  experiment::RetrievalEvalOptions o = f1_top8();
  const auto scored = experiment::evaluate_retrieval(*index, queries(), qrels(), o);  // F1 scores of every candidate
  std::vector<float> all;
  for (const auto& [qid, entries] : scored.run)
    for (const auto& e : entries) all.push_back(e.score);
  std::sort(all.begin(), all.end());
  o.threshold = all[all.size() / 2];  // about half are dropped
  o.gate = true;
  o.rerank = false;
  const auto r = experiment::evaluate_retrieval(*index, queries(), qrels(), o);
  EXPECT_EQ(r.system, "dense+F1-gate");
  ASSERT_TRUE(r.gate.has_value());
  SearchParams sp;
  sp.k = 8;
  size_t candidates = 0, dropped = 0, relevant = 0, relevant_dropped = 0;
  for (const auto& [qid, text] : beir_->queries) {
    if (!scored.run.count(qid)) continue;
    std::map<std::string, float> f1;
    for (const auto& e : scored.run.at(qid)) f1[e.doc_id] = e.score;
    std::vector<std::pair<std::string, float>> want;  // (id, stage-1 score) of the accepted, stage 1's order
    for (const Hit& h : index->search(text, sp).hits) {
      const bool rel = beir_->qrels.count(qid) && beir_->qrels.at(qid).count(h.id) && beir_->qrels.at(qid).at(h.id) > 0;
      ++candidates;
      relevant += rel;
      if (f1.at(h.id) < o.threshold) {
        ++dropped;
        relevant_dropped += rel;
      } else {
        want.push_back({h.id, h.score});
      }
    }
    const auto got = r.run.count(qid) ? r.run.at(qid) : std::vector<eval::RunEntry>{};
    ASSERT_EQ(got.size(), want.size()) << qid;
    for (size_t k = 0; k < got.size(); ++k) {
      EXPECT_NEAR(got[k].score, want[k].second, 1e-6) << qid << " rank " << k + 1;
      // Ranks are compared where the score is clear of both neighbours (the duplicated documents tie).
      const bool clear_below = k + 1 == want.size() || want[k].second - want[k + 1].second > 1e-6;
      const bool clear_above = k == 0 || want[k - 1].second - want[k].second > 1e-6;
      if (clear_below && clear_above) EXPECT_EQ(got[k].doc_id, want[k].first) << qid << " rank " << k + 1;
    }
  }
  EXPECT_EQ(r.gate->candidates, candidates);
  EXPECT_EQ(r.gate->dropped, dropped);
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(r.gate->relevant, relevant);
  EXPECT_EQ(r.gate->relevant_dropped, relevant_dropped);
  EXPECT_EQ(experiment::retrieval_json(r)["gate"]["dropped"].get<size_t>(), dropped);
  // Gate and rerank: the same documents, ordered by the verifier.
  o.rerank = true;
  const auto both = experiment::evaluate_retrieval(*index, queries(), qrels(), o);
  EXPECT_EQ(both.system, "dense+F1-gate-rerank");
  EXPECT_EQ(both.gate->dropped, dropped);
  for (const auto& [qid, entries] : both.run)
    for (const auto& e : entries) EXPECT_GE(e.score, o.threshold) << qid << " " << e.doc_id;
  // F1 has no calibrated threshold of its own.
  o.threshold = std::numeric_limits<double>::quiet_NaN();
  expect_error([&] { experiment::evaluate_retrieval(*index, queries(), qrels(), o); }, "the gate needs a threshold");
  // The CLI: --gate needs --verifier; the JSON carries the counts.
  const std::string base = cli_path() + " eval retrieval --beir " + beir_->dir + " --index " + *index_ + " -m " + beir_->model;
  EXPECT_EQ(run_command(base + " --gate 2>&1").exit_code, 2);
  char threshold[32];
  std::snprintf(threshold, sizeof threshold, "%.17g", double(all[all.size() / 2]));  // the float exactly
  const auto res = run_command(base + " --verifier F1 --candidates 8 --run-depth 8 --gate --no-rerank --threshold " +
                               threshold + " 2>/dev/null");
  ASSERT_EQ(res.exit_code, 0) << res.out;
  const auto j = nlohmann::json::parse(res.out);
  EXPECT_EQ(j.at("system"), "dense+F1-gate");
  EXPECT_EQ(j.at("gate").at("dropped").get<size_t>(), dropped);
  EXPECT_EQ(j.at("gate").at("relevant_dropped").get<size_t>(), relevant_dropped);
}

TEST_F(RetrievalEvalTest, CliRunAndQrelsFilesGiveTheSameNdcgWhenReadBack) {
  const std::string run_file = *root_ + "/bm25.trec", qrels_file = *root_ + "/qrels.trec";
  const auto res = run_command(cli_path() + " eval retrieval --beir " + beir_->dir + " -m " + beir_->model +
                               " --mode bm25 --k 10 --run-out " + run_file + " --qrels-out " + qrels_file +
                               " 2>/dev/null");
  ASSERT_EQ(res.exit_code, 0) << res.out;
  const auto j = nlohmann::json::parse(res.out);
  const eval::Run run = eval::read_trec_run(run_file);
  const eval::Qrels qr = eval::read_qrels(qrels_file);
  // The written qrels are the original judgements of the judged queries (q6 has only grade 0).
  eval::Qrels judged;
  for (const auto& [qid, rels] : beir_->qrels)
    if (qid != "q6") judged[qid] = rels;
  EXPECT_EQ(qr, judged);
  double sum = 0;
  for (const auto& [qid, rels] : qr) {
    std::vector<std::pair<double, std::string>> scored;
    if (run.count(qid))
      for (const auto& e : run.at(qid)) scored.push_back({e.score, e.doc_id});
    sum += naive_ndcg(scored, rels, 10);
  }
  EXPECT_NEAR(j.at("ndcg@10").get<double>(), sum / qr.size(), 1e-12);  // scores round-trip exactly
  EXPECT_EQ(j.at("system"), "bm25");
  EXPECT_EQ(j.at("queries").get<int>(), 5);
}

// Hybrid runs say which fusion ran, with its knob: RRF and weighted fusion were both "hybrid".
TEST_F(RetrievalEvalTest, HybridRunsNameTheirFusion) {
  auto index = open();
  experiment::RetrievalEvalOptions o;
  o.search.mode = SearchMode::Hybrid;
  auto r = experiment::evaluate_retrieval(*index, queries(), qrels(), o);
  EXPECT_EQ(r.system, "hybrid-rrf(k=60)");
  auto j = experiment::retrieval_json(r);
  EXPECT_EQ(j.at("fusion"), (nlohmann::json{{"method", "rrf"}, {"k", 60.0}})) << j.dump();
  o.search.fusion = Fusion::Weighted;
  o.search.dense_weight = 0.3;
  r = experiment::evaluate_retrieval(*index, queries(), qrels(), o);
  EXPECT_EQ(r.system, "hybrid-weighted(dense=0.3)");
  j = experiment::retrieval_json(r);
  EXPECT_EQ(j.at("fusion"), (nlohmann::json{{"method", "weighted"}, {"dense_weight", 0.3}, {"dense_weight_slope", 0.0}}))
      << j.dump();
  o.search.weight_slope = 0.05;
  r = experiment::evaluate_retrieval(*index, queries(), qrels(), o);
  EXPECT_EQ(r.system, "hybrid-weighted(dense=0.3,slope=0.05)");
  EXPECT_EQ(experiment::retrieval_json(r).at("fusion").at("dense_weight_slope"), 0.05);
  o.search.weight_slope = 0;
  o.search.mode = SearchMode::Dense;
  j = experiment::retrieval_json(experiment::evaluate_retrieval(*index, queries(), qrels(), o));
  EXPECT_EQ(j.at("system"), "dense");
  EXPECT_FALSE(j.contains("fusion"));
}

// Without --index the CLI says that it indexes the corpus (how many documents, into a temporary
// folder unless --index-dir keeps it), and a kept index is reused, saying so.
TEST_F(RetrievalEvalTest, CliSaysWhatItIndexesAndReusesAKeptIndex) {
  const std::string err = *root_ + "/eval.err", cache = *root_ + "/cache";
  const std::string cmd = cli_path() + " eval retrieval --beir " + beir_->dir + " -m " + beir_->model +
                          " --mode hybrid --fusion weighted --dense-weight 0.3 --k 10";
  auto res = run_command(cmd + " 2>" + err);
  ASSERT_EQ(res.exit_code, 0) << res.out;
  EXPECT_EQ(nlohmann::json::parse(res.out).at("system"), "hybrid-weighted(dense=0.3)");
  std::string log = read_file(err);
  EXPECT_NE(log.find("indexed into a temporary folder"), std::string::npos) << log;
  EXPECT_NE(log.find("indexing " + std::to_string(beir_->docs.size()) + " document(s)"), std::string::npos) << log;
  ASSERT_EQ(run_command(cmd + " --index-dir " + cache + " 2>/dev/null").exit_code, 0);
  res = run_command(cmd + " --index-dir " + cache + " 2>" + err);
  ASSERT_EQ(res.exit_code, 0) << res.out;
  log = read_file(err);
  EXPECT_NE(log.find("using the index built earlier"), std::string::npos) << log;
  EXPECT_EQ(log.find("indexing "), std::string::npos) << log;
}

TEST_F(RetrievalEvalTest, CliNamesAMissingBeirFolder) {
  const auto res = run_command(cli_path() + " eval retrieval --beir " + *root_ + "/nope -m " + beir_->model + " 2>&1");
  EXPECT_EQ(res.exit_code, 1);
  EXPECT_NE(res.out.find("does not exist"), std::string::npos) << res.out;
}

TEST(BeirFolder, NamesTheMissingFile) {
  const std::string d = make_temp_dir("beirf");
  { std::ofstream(d + "/corpus.jsonl") << "{}\n"; }
  expect_error([&] { experiment::beir_folder(d); }, "queries.jsonl");
}

}  // namespace
}  // namespace sieve::test
