// Shard sets against one index over the same documents. The reference is an ordinary index built
// from the whole corpus: a shard set split 1, 2, 3 and 5 ways must give the same documents, keys
// and token states bit for bit, and the same hits with the same scores in every mode (dense,
// BM25, hybrid by RRF and by weights) and through stage 2 (rerank and gate). HNSW is approximate
// in both, so there the set's recall against exact search is held to the index's within 0.01.
// The corpus is SciFact's first documents and queries when ../shared/data is there, else
// generated text; the model is the small fixture encoder (fast), since what is tested is the
// merge, not the model.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <iterator>
#include <map>
#include <mutex>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "index/fan_out.h"
#include "index/lexical_index.h"
#include "index/manifest.h"
#include "index/shard_set.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "sieve/pipeline.h"
#include "sieve/shard_scorer.h"
#include "sieve/verify.h"
#include "support/test_util.h"
#include "unit/index/index_test_util.h"

namespace sieve {
namespace {
namespace fs = std::filesystem;
using namespace sieve::test;

struct TestCorpus {
  std::string path;
  std::vector<Document> docs;
  std::vector<std::string> queries;
};

std::string write_corpus(const std::string& path, const std::vector<Document>& docs) {
  std::ofstream f(path);
  for (const auto& d : docs) f << nlohmann::json{{"_id", d.id}, {"title", d.title}, {"text", d.text}}.dump() << '\n';
  return path;
}

// `n` documents and their queries: SciFact's (and the first sentences of some documents, which
// stage 2 accepts as near-identical) when the shared data is there, else generated ones.
TestCorpus make_corpus(const std::string& dir, size_t n) {
  TestCorpus c;
  const std::string scifact = shared_data("retrieval/scifact/corpus.jsonl");
  if (!scifact.empty()) {
    std::ifstream in(scifact);
    std::string line;
    while (c.docs.size() < n && std::getline(in, line)) {
      auto j = nlohmann::json::parse(line);
      c.docs.push_back({j.at("_id").get<std::string>(), j.value("title", ""), j.value("text", "")});
    }
    std::ifstream q(shared_data("retrieval/scifact/queries.jsonl"));
    while (c.queries.size() < 30 && std::getline(q, line)) c.queries.push_back(nlohmann::json::parse(line).at("text"));
  } else {
    c.docs = make_docs(n);
    for (size_t i = 0; i < 30; ++i) c.queries.push_back(make_docs(1, 10000 + i)[0].text);
  }
  for (size_t i = 0; i < c.docs.size(); i += c.docs.size() / 10) c.queries.push_back(c.docs[i].text.substr(0, 120));
  c.path = write_corpus(path_join(dir, "corpus.jsonl"), c.docs);
  return c;
}

void expect_same_double(double a, double b, const std::string& what) {
  if (std::isnan(a) || std::isnan(b)) {
    EXPECT_TRUE(std::isnan(a) && std::isnan(b)) << what << ": " << a << " vs " << b;
  } else {
    EXPECT_EQ(a, b) << what;
  }
}

void expect_same_hits(const std::vector<Hit>& want, const std::vector<Hit>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string at = what + " hit " + std::to_string(i);
    EXPECT_EQ(want[i].doc, got[i].doc) << at;
    EXPECT_EQ(want[i].id, got[i].id) << at;
    EXPECT_EQ(want[i].score, got[i].score) << at;
    expect_same_double(want[i].dense_score, got[i].dense_score, at + " dense");
    expect_same_double(want[i].bm25_score, got[i].bm25_score, at + " bm25");
    EXPECT_EQ(want[i].dense_rank, got[i].dense_rank) << at;
    EXPECT_EQ(want[i].bm25_rank, got[i].bm25_rank) << at;
  }
}

std::vector<SearchParams> every_mode() {
  std::vector<SearchParams> modes(4);
  modes[0].mode = SearchMode::Dense;
  modes[1].mode = SearchMode::Bm25;
  modes[2].mode = SearchMode::Hybrid;
  modes[2].fusion = Fusion::Rrf;
  modes[3].mode = SearchMode::Hybrid;
  modes[3].fusion = Fusion::Weighted;
  modes[3].dense_weight = 0.3;
  for (auto& m : modes) m.k = 10;
  return modes;
}

class ShardSetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(make_temp_dir("shardset"));
    corpus_ = new TestCorpus(make_corpus(*dir_, 600));
    build_index(model_dir(), corpus_->path, *dir_ + "/one", small_opts());
  }
  static void TearDownTestSuite() {
    delete corpus_;
    delete dir_;
  }
  // The three-shard set the remote-shard tests share (built by the first one that needs it).
  static std::string remote_set() {
    const std::string out = *dir_ + "/remote3";
    if (!fs::exists(out)) build_shard_set(model_dir(), corpus_->path, out, 3, small_opts());
    return out;
  }
  // The set at `out` opened with its shards served by `remote`.
  static std::unique_ptr<Index> open_remote(const std::string& out, std::shared_ptr<const ShardRemote> remote) {
    IndexOpenOptions o;
    o.remote = std::move(remote);
    return Index::open(out, o);
  }
  static std::string* dir_;
  static TestCorpus* corpus_;
};
std::string* ShardSetTest::dir_ = nullptr;
TestCorpus* ShardSetTest::corpus_ = nullptr;

TEST_F(ShardSetTest, EqualsOneIndexInEverySplitAndMode) {
  auto one = Index::open(*dir_ + "/one");
  ASSERT_EQ(one->size(), corpus_->docs.size());
  auto verifier = resolve_verifier("F1", {model_dir(), one->stats().model_identity});
  // A gate threshold that splits the candidates: the median F1 score on the single index.
  PipelineParams probe;
  probe.candidates = 20;
  probe.k = 20;
  std::vector<double> scores;
  for (const auto& q : corpus_->queries)
    for (const auto& h : search_verified(*one, verifier, q, probe)) scores.push_back(h.verifier_score);
  std::nth_element(scores.begin(), scores.begin() + scores.size() / 2, scores.end());
  const double threshold = scores[scores.size() / 2];

  for (size_t shards : {1, 2, 3, 5}) {
    SCOPED_TRACE("shards " + std::to_string(shards));
    const std::string out = *dir_ + "/set" + std::to_string(shards);
    const BuildReport rep = build_shard_set(model_dir(), corpus_->path, out, shards, small_opts());
    EXPECT_EQ(rep.documents, corpus_->docs.size());
    ASSERT_TRUE(is_shard_set(out));
    auto set = Index::open(out);
    EXPECT_EQ(set->stats().shards, shards);
    ASSERT_EQ(set->size(), one->size());
    // Every document, key and token state: the same bits (shards cut at build chunks).
    for (uint32_t i = 0; i < one->size(); ++i) {
      const Document a = one->document(i), b = set->document(i);
      ASSERT_EQ(a.id, b.id) << i;
      ASSERT_EQ(a.text, b.text) << i;
      ASSERT_EQ(set->find(a.id), static_cast<int64_t>(i));
      ASSERT_EQ(one->key(i), set->key(i)) << i;
      ASSERT_EQ(one->token_ids(i), set->token_ids(i)) << i;
      const TokenStates ta = one->tokens(i), tb = set->tokens(i);
      ASSERT_EQ(ta.length, tb.length) << i;
      ASSERT_EQ(ta.values, tb.values) << i;
    }
    EXPECT_EQ(set->find("no such id"), -1);
    // Stage 1, every mode, in one batch (FAISS's BLAS path) and one query at a time.
    for (const SearchParams& p : every_mode()) {
      const std::string mode = std::to_string(static_cast<int>(p.mode)) + "/" + std::to_string(static_cast<int>(p.fusion));
      auto want = one->search_batch(corpus_->queries, p);
      auto got = set->search_batch(corpus_->queries, p);
      ASSERT_EQ(want.size(), got.size());
      for (size_t q = 0; q < want.size(); ++q) expect_same_hits(want[q].hits, got[q].hits, "mode " + mode + " query " + std::to_string(q));
      expect_same_hits(one->search(corpus_->queries[0], p).hits, set->search(corpus_->queries[0], p).hits, "single " + mode);
    }
    // Stage 2: rerank and gate through the pipeline, hybrid stage 1.
    for (bool gate : {false, true}) {
      PipelineParams pp;
      pp.stage1.mode = SearchMode::Hybrid;
      pp.candidates = 30;
      pp.k = 10;
      pp.rerank = true;
      pp.gate = gate;
      pp.threshold = threshold;
      size_t accepted = 0;
      for (const auto& q : corpus_->queries) {
        auto want = search_verified(*one, verifier, q, pp);
        auto got = search_verified(*set, verifier, q, pp);
        ASSERT_EQ(want.size(), got.size()) << q;
        for (size_t i = 0; i < want.size(); ++i) {
          EXPECT_EQ(want[i].hit.id, got[i].hit.id) << q;
          EXPECT_EQ(want[i].hit.score, got[i].hit.score) << q;
          EXPECT_EQ(want[i].verifier_score, got[i].verifier_score) << q;
          EXPECT_EQ(want[i].accepted, got[i].accepted) << q;
          EXPECT_EQ(want[i].stage1_rank, got[i].stage1_rank) << q;
          accepted += got[i].accepted;
        }
      }
      if (gate) EXPECT_GT(accepted, 0u);  // the gate let something through: the comparison saw hits
    }
  }
}

// A shard set whose shards are served elsewhere (IndexOpenOptions::remote, as Ray Serve's router
// opens it): here a remote that forwards to the shards opened in this process. Every hit, key and
// token state equals the local set's; stage 2 asks each shard once per query; a shard that fails
// or answers out of range is ShardUnavailable, never a wrong result.
class ForwardingRemote final : public ShardRemote {
 public:
  explicit ForwardingRemote(const std::string& set) {
    for (size_t s = 0; fs::exists(path_join(set, shard_dir_name(s))); ++s) {
      IndexOpenOptions o;
      o.load_encoder = false;
      shards.push_back(Index::open(path_join(set, shard_dir_name(s)), o));
      identities.push_back(index::shard_identity(path_join(set, shard_dir_name(s))));
    }
  }
  std::vector<std::vector<std::pair<uint32_t, double>>> dense_lists(size_t shard, const std::string& identity, size_t n,
                                                                   size_t dim, const float* pooled, size_t depth,
                                                                   const SearchParams& p) const override {
    ++dense_calls;
    check(shard, identity);
    if (fail) throw ShardUnavailable("down");
    EXPECT_EQ(dim, shards[shard]->stats().dim);
    auto lists = index::dense_lists(*shards[shard], n, pooled, depth, p);
    if (lie) lists[0].emplace_back(static_cast<uint32_t>(shards[shard]->size()), 1.0);
    if (nan && !lists[0].empty()) lists[0][0].second = std::nan("");
    return lists;
  }
  std::vector<TokenStates> tokens(size_t shard, const std::string& identity, const std::vector<uint32_t>& docs,
                                  size_t max_rows, std::chrono::steady_clock::time_point) const override {
    ++token_calls;
    check(shard, identity);
    if (fail) throw ShardUnavailable("down");
    return shards[shard]->tokens_of(docs, max_rows);
  }
  std::vector<float> keys(size_t shard, const std::string& identity, const std::vector<uint32_t>& docs,
                          std::chrono::steady_clock::time_point) const override {
    check(shard, identity);
    std::vector<float> out;
    for (uint32_t d : docs) {
      auto k = shards[shard]->key(d);
      out.insert(out.end(), k.begin(), k.end());
    }
    return out;
  }
  // Stage 2 at the shard, as a shard replica runs it (ShardScorer).
  std::vector<float> scores(size_t shard, const std::string& identity, const std::string& key, const TokenStates& query,
                            const std::vector<uint32_t>& docs, std::chrono::steady_clock::time_point) const override {
    ++score_calls;
    check(shard, identity);
    try {
      auto out = scorers.at(shard)->score(key, query, docs);
      if (nan && !out.empty()) out[0] = std::nanf("");
      return out;
    } catch (const Error& e) {
      throw ShardUnavailable(e.what());  // as the Python remote reports a shard's refusal
    }
  }
  bool scores_at_shards() const override { return !scorers.empty(); }
  // Every call names the copy its snapshot records: the one this remote opened.
  void check(size_t shard, const std::string& identity) const {
    EXPECT_EQ(identity, identities.at(shard)) << "shard " << shard;
  }
  // Every shard scores with the token-map verifiers of `specs` (and the built-ins).
  void score_with(const std::vector<std::string>& specs, const VerifierContext& context) {
    for (const auto& s : shards) scorers.push_back(std::make_unique<ShardScorer>(s, specs, context));
  }
  std::vector<std::shared_ptr<const Index>> shards;
  std::vector<std::string> identities;
  std::vector<std::unique_ptr<ShardScorer>> scorers;
  mutable std::atomic<size_t> dense_calls{0}, token_calls{0}, score_calls{0};
  bool fail = false, lie = false, nan = false;
};

// A remote whose dense calls wait for one another (`together`: each waits until every shard's
// call has arrived, which only calls made at once can do) or for a release (`hold`).
class GatedRemote final : public ShardRemote {
 public:
  explicit GatedRemote(const std::string& set) : inner(set) {}
  std::vector<std::vector<std::pair<uint32_t, double>>> dense_lists(size_t shard, const std::string& identity, size_t n,
                                                                   size_t dim, const float* pooled, size_t depth,
                                                                   const SearchParams& p) const override {
    {
      std::unique_lock<std::mutex> lock(m);
      ++arrived;
      cv.notify_all();
      if (together) {
        // Bounded so that a serial caller fails the test instead of hanging it.
        if (!cv.wait_for(lock, std::chrono::seconds(20), [&] { return arrived >= together; })) alone = true;
      }
      // Bounded too: a search that ignored its deadline gets its answer (and fails) rather than hang.
      if (hold) cv.wait_for(lock, std::chrono::seconds(20), [&] { return released; });
    }
    auto out = inner.dense_lists(shard, identity, n, dim, pooled, depth, p);
    std::lock_guard<std::mutex> lock(m);
    ++finished;
    cv.notify_all();
    return out;
  }
  // Waits (bounded) until `count` calls have finished.
  bool wait_finished(size_t count) const {
    std::unique_lock<std::mutex> lock(m);
    return cv.wait_for(lock, std::chrono::seconds(20), [&] { return finished >= count; });
  }
  // Stage 2's calls wait for a release (bounded) while `hold_stage2`; each records the deadline it
  // was given, and counts as finished once its inner call has returned (stage2_drained).
  struct Stage2Call {
    Stage2Call(const GatedRemote& r, std::chrono::steady_clock::time_point deadline) : r(r) {
      std::unique_lock<std::mutex> lock(r.m);
      r.deadlines.push_back(deadline);
      if (r.hold_stage2) r.cv.wait_for(lock, std::chrono::seconds(20), [&] { return r.released; });
    }
    ~Stage2Call() {
      std::lock_guard<std::mutex> lock(r.m);
      ++r.stage2_finished;
      r.cv.notify_all();
    }
    const GatedRemote& r;
  };
  std::vector<TokenStates> tokens(size_t shard, const std::string& identity, const std::vector<uint32_t>& docs,
                                  size_t max_rows, std::chrono::steady_clock::time_point deadline) const override {
    Stage2Call c(*this, deadline);
    return inner.tokens(shard, identity, docs, max_rows, deadline);
  }
  std::vector<float> keys(size_t shard, const std::string& identity, const std::vector<uint32_t>& docs,
                          std::chrono::steady_clock::time_point deadline) const override {
    Stage2Call c(*this, deadline);
    return inner.keys(shard, identity, docs, deadline);
  }
  std::vector<float> scores(size_t shard, const std::string& identity, const std::string& key, const TokenStates& query,
                            const std::vector<uint32_t>& docs, std::chrono::steady_clock::time_point deadline) const override {
    Stage2Call c(*this, deadline);
    return inner.scores(shard, identity, key, query, docs, deadline);
  }
  bool scores_at_shards() const override { return inner.scores_at_shards(); }
  // Waits (bounded) until every stage-2 call that arrived has returned.
  bool stage2_drained() const {
    std::unique_lock<std::mutex> lock(m);
    return cv.wait_for(lock, std::chrono::seconds(20), [&] { return stage2_finished == deadlines.size(); });
  }
  void release() {
    std::lock_guard<std::mutex> lock(m);
    released = true;
    cv.notify_all();
  }
  ForwardingRemote inner;
  mutable std::mutex m;
  mutable std::condition_variable cv;
  mutable size_t arrived = 0, finished = 0;
  mutable bool alone = false;
  size_t together = 0;
  bool hold = false, hold_stage2 = false, released = false;
  mutable std::vector<std::chrono::steady_clock::time_point> deadlines;  // of stage 2's calls
  mutable size_t stage2_finished = 0;
};

TEST_F(ShardSetTest, RemoteShardsAnswerAsLocalOnes) {
  const std::string out = remote_set();
  auto local = Index::open(out);
  auto remote = std::make_shared<ForwardingRemote>(out);
  ASSERT_EQ(remote->shards.size(), 3u);
  auto set = open_remote(out, remote);
  ASSERT_EQ(set->size(), local->size());
  for (uint32_t i = 0; i < local->size(); i += 7) {
    ASSERT_EQ(local->key(i), set->key(i)) << i;
    ASSERT_EQ(local->tokens(i, 16).values, set->tokens(i, 16).values) << i;
  }
  for (const SearchParams& p : every_mode()) {
    auto want = local->search_batch(corpus_->queries, p);
    auto got = set->search_batch(corpus_->queries, p);
    for (size_t q = 0; q < want.size(); ++q) expect_same_hits(want[q].hits, got[q].hits, "query " + std::to_string(q));
  }
  EXPECT_GT(remote->dense_calls.load(), 0u);  // the dense lists did come from the remote
  auto verifier = resolve_verifier("F1", {model_dir(), local->stats().model_identity});
  PipelineParams pp;
  pp.stage1.mode = SearchMode::Hybrid;
  pp.candidates = 30;
  pp.rerank = true;
  for (const auto& q : corpus_->queries) {
    const size_t before = remote->token_calls.load();
    auto want = search_verified(*local, verifier, q, pp);
    auto got = search_verified(*set, verifier, q, pp);
    EXPECT_LE(remote->token_calls.load() - before, 3u) << "one token call per shard";
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(want[i].hit.id, got[i].hit.id) << q;
      EXPECT_EQ(want[i].verifier_score, got[i].verifier_score) << q;
    }
  }
  remote->lie = true;
  EXPECT_THROW(set->search(corpus_->queries[0], every_mode()[0]), ShardUnavailable);
  remote->lie = false;
  // A NaN score would reach the merge's sort (undefined behaviour there): refused, naming it.
  remote->nan = true;
  try {
    set->search(corpus_->queries[0], every_mode()[0]);
    ADD_FAILURE() << "a NaN score from a shard was accepted";
  } catch (const ShardUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("non-finite score"), std::string::npos) << e.what();
  }
  remote->nan = false;
  remote->fail = true;
  EXPECT_THROW(set->search(corpus_->queries[0], every_mode()[0]), ShardUnavailable);
  EXPECT_NO_THROW(set->search(corpus_->queries[0], every_mode()[1]));  // BM25 needs no shard server
  EXPECT_THROW(search_verified(*set, verifier, corpus_->queries[0], pp), ShardUnavailable);
  // A remote is for shard sets only; a shard opened without vectors refuses dense search.
  EXPECT_THROW(open_remote(*dir_ + "/one", remote), Error);
  IndexOpenOptions nv;
  nv.load_vectors = false;
  auto bare = Index::open(*dir_ + "/one", nv);
  EXPECT_THROW(bare->search(corpus_->queries[0], every_mode()[0]), Error);
  EXPECT_EQ(bare->search(corpus_->queries[0], every_mode()[1]).hits.size(), 10u);
}

TEST_F(ShardSetTest, RemoteShardsScoreTheirOwnCandidates) {
  const std::string out = remote_set();
  auto local = Index::open(out);
  auto remote = std::make_shared<ForwardingRemote>(out);
  auto set = open_remote(out, remote);
  const VerifierContext ctx{model_dir(), local->stats().model_identity};
  ResolvedVerifier f2 = resolve_verifier("F2", ctx);
  const std::string key = shard_verifier_key(f2, ctx);
  EXPECT_EQ(key, "F2");
  // Not scoring at the shards yet: no scores; the index says so rather than guessing.
  EXPECT_FALSE(set->shard_scores(key, TokenStates{}, {0}, std::chrono::steady_clock::time_point::max()).has_value());
  EXPECT_FALSE(local->shard_scores(key, TokenStates{}, {0}, std::chrono::steady_clock::time_point::max()).has_value());
  remote->score_with({"F2"}, ctx);
  PipelineParams pp;
  pp.stage1.mode = SearchMode::Hybrid;
  pp.candidates = 30;
  pp.rerank = true;
  for (const auto& q : corpus_->queries) {
    auto want = search_verified(*local, *f2.verifier, q, pp);
    PipelineParams at = pp;
    at.shard_verifier = key;
    const size_t tokens_before = remote->token_calls.load(), scores_before = remote->score_calls.load();
    auto got = search_verified(*set, *f2.verifier, q, at);
    EXPECT_EQ(remote->token_calls.load(), tokens_before) << "no token state crossed the wire";
    EXPECT_GT(remote->score_calls.load(), scores_before);
    EXPECT_LE(remote->score_calls.load() - scores_before, 3u) << "one scores call per shard";
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(want[i].hit.id, got[i].hit.id) << q;
      EXPECT_EQ(want[i].verifier_score, got[i].verifier_score) << q;  // bit for bit
    }
  }
  // A key the shards do not hold is refused, not scored by another verifier.
  PipelineParams wrong = pp;
  wrong.shard_verifier = "sha256:0000";
  EXPECT_THROW(search_verified(*set, *f2.verifier, corpus_->queries[0], wrong), ShardUnavailable);
  // A non-finite score from a shard is refused, naming it.
  remote->nan = true;
  PipelineParams at = pp;
  at.shard_verifier = key;
  try {
    search_verified(*set, *f2.verifier, corpus_->queries[0], at);
    ADD_FAILURE() << "a NaN score from a shard was accepted";
  } catch (const ShardUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("non-finite score"), std::string::npos) << e.what();
  }
}

TEST_F(ShardSetTest, RemoteShardsAreAskedAtOnceAndNotWaitedForPastTheDeadline) {
  const std::string out = remote_set();
  auto local = Index::open(out);
  auto remote = std::make_shared<GatedRemote>(out);
  auto set = open_remote(out, remote);
  // Each shard's call waits until all three have arrived: only a fan-out that calls them at once
  // answers (a serial one leaves the first call alone until its bound).
  remote->together = 3;
  auto got = set->search(corpus_->queries[0], every_mode()[0]);
  EXPECT_FALSE(remote->alone) << "the shards were called one after another";
  expect_same_hits(local->search(corpus_->queries[0], every_mode()[0]).hits, got.hits, "fan-out");
  // Held shards: the search gives up at the deadline with ShardTimeout (the server's 504), not
  // when the shards answer.
  remote->together = 0;
  remote->hold = true;
  SearchParams p = every_mode()[0];
  p.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  try {
    set->search(corpus_->queries[0], p);
    ADD_FAILURE() << "a search waited past its deadline";
  } catch (const ShardTimeout& e) {
    EXPECT_NE(std::string(e.what()).find("shard-000"), std::string::npos) << e.what();
    EXPECT_GE(std::chrono::steady_clock::now(), p.deadline);
  }
  EXPECT_FALSE(remote->released);  // it returned while the shards were still held
  remote->release();               // the abandoned calls finish on their own threads
  EXPECT_TRUE(remote->wait_finished(6));
  // A deadline already past: no shard is asked.
  const size_t before = remote->inner.dense_calls.load();
  p.deadline = std::chrono::steady_clock::now() - std::chrono::milliseconds(1);
  EXPECT_THROW(set->search(corpus_->queries[0], p), ShardTimeout);
  // Through the pipeline too: stage 1's deadline is the request's.
  PipelineParams pp;
  pp.deadline = p.deadline;
  auto f1 = resolve_verifier("F1", {model_dir(), local->stats().model_identity});
  EXPECT_THROW(search_verified(*set, *f1.verifier, corpus_->queries[0], pp), ShardTimeout);
  EXPECT_EQ(remote->inner.dense_calls.load(), before);
}

// Stage 2 reaches remote shards too (token states fetched here, pooled keys for the cosine, or
// scores at the shards): each call carries the request's deadline, and shards that have not
// answered by then leave the answer to stage 1's hits, unverified and marked skipped (what a
// local index answers when stage 1 itself ends past the deadline), not a timeout after the
// remote's own wait nor an error.
TEST_F(ShardSetTest, StageTwoAtRemoteShardsKeepsTheDeadline) {
  const std::string out = remote_set();
  auto local = Index::open(out);
  auto remote = std::make_shared<GatedRemote>(out);
  auto set = open_remote(out, remote);
  const VerifierContext ctx{model_dir(), local->stats().model_identity};
  remote->inner.score_with({"F1"}, ctx);
  remote->hold_stage2 = true;
  const std::string& q = corpus_->queries[0];
  for (const char* how : {"tokens", "cosine", "scores"}) {
    ResolvedVerifier v = resolve_verifier(std::string(how) == "cosine" ? "cosine" : "F1", ctx);
    PipelineParams pp;
    pp.stage1.mode = SearchMode::Hybrid;
    pp.candidates = 20;
    pp.k = 5;
    pp.rerank = true;
    if (std::string(how) == "scores") pp.shard_verifier = shard_verifier_key(v, ctx);
    const auto want = local->search(q, [&] {
      SearchParams sp = pp.stage1;
      sp.k = pp.candidates;
      return sp;
    }());
    size_t seen = 0;
    {
      std::lock_guard<std::mutex> lock(remote->m);
      seen = remote->deadlines.size();
    }
    // Time enough for stage 1 on a loaded machine (its dense calls are not held), then stage 2's are.
    pp.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    Stage2Timing st;
    auto got = search_verified(*set, v, q, pp, &st);
    EXPECT_GE(std::chrono::steady_clock::now(), pp.deadline) << how;
    EXPECT_FALSE(remote->released) << how << ": returned before the held shards answered";
    EXPECT_TRUE(st.skipped) << how;
    ASSERT_EQ(got.size(), 5u) << how;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].hit.id, want.hits[i].id) << how << " rank " << i;  // stage 1's order
      EXPECT_TRUE(std::isnan(got[i].verifier_score)) << how;
    }
    {
      std::lock_guard<std::mutex> lock(remote->m);
      ASSERT_GT(remote->deadlines.size(), seen) << how;
      for (size_t i = seen; i < remote->deadlines.size(); ++i)
        EXPECT_EQ(remote->deadlines[i], pp.deadline) << how << ": a stage-2 call without the deadline";
    }
  }
  remote->release();  // the abandoned calls finish on their own threads
  EXPECT_TRUE(remote->stage2_drained());
}

// A latch the tests below open by hand.
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  void wait() {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return open; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(m);
    open = true;
    cv.notify_all();
  }
};

// The pool of remote shard calls: never more threads than its bound, a full queue refuses (the
// fan-out's 503) instead of growing, calls whose fan-out gave up are not made, and the pool's
// owner waits for the calls under way when it goes (no call outlives the index; a pool that did
// not join its threads would end the process here) while the calls not started are dropped.
TEST(ShardCallPool, BoundedCancellableAndJoinedAtTheEnd) {
  Gate gate;
  std::atomic<int> ran{0};
  auto pool = std::make_unique<index::ShardCallPool>(2, 3);
  auto live = std::make_shared<std::atomic<bool>>(false);
  auto dropped = std::make_shared<std::atomic<bool>>(false);
  std::mutex m;
  std::condition_variable cv;
  int under_way = 0;
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(pool->submit(
        [&] {
          {
            std::lock_guard<std::mutex> lock(m);
            ++under_way;
            cv.notify_all();
          }
          gate.wait();
          ++ran;
        },
        live));
  {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return under_way == 2; });  // both taken up: the queue is empty again
  }
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(pool->submit([&] { ++ran; }, dropped));
  EXPECT_FALSE(pool->submit([&] { ++ran; }, live));  // 2 under way, 3 waiting: full
  dropped->store(true);                               // their fan-out gave up: they hold no place
  gate.release();
  // One more call after the blocked ones: it runs once a thread is free, the dropped ones never.
  Gate last;
  ASSERT_TRUE(pool->submit([&] { ++ran; last.release(); }, live));
  last.wait();
  EXPECT_EQ(pool->threads_started(), 2u);
  EXPECT_LE(pool->peak_running(), 2u);
  pool.reset();  // joins: every call that ran has ended
  EXPECT_EQ(ran.load(), 3);
  // At the end: the call under way finishes before the pool is gone; the one waiting never runs.
  // The call under way waits until the waiting call is dropped (what the waiting call owns is
  // let go then, and that opens its gate): a pool that ran the waiting call instead of dropping it
  // lets the first go on only at its bound, and then `never` is set.
  Gate started, go;
  std::atomic<bool> finished{false}, never{false};
  struct OpensWhenGone {
    explicit OpensWhenGone(Gate* g) : gate(g) {}  // made in place: no temporary to open it early
    OpensWhenGone(const OpensWhenGone&) = delete;
    ~OpensWhenGone() { gate->release(); }
    Gate* gate;
  };
  auto opener = std::make_shared<OpensWhenGone>(&go);
  pool = std::make_unique<index::ShardCallPool>(1, 4);
  ASSERT_TRUE(pool->submit(
      [&] {
        started.release();
        std::unique_lock<std::mutex> lock(go.m);
        go.cv.wait_for(lock, std::chrono::seconds(20), [&] { return go.open; });
        finished = true;
      },
      live));
  ASSERT_TRUE(pool->submit([opener, &never] { never = true; }, live));
  opener.reset();  // the waiting call holds the only one now
  started.wait();
  pool.reset();  // drops the waiting call (the gate opens), then waits for the call under way
  EXPECT_TRUE(finished.load());
  EXPECT_FALSE(never.load());
}

// A fan-out whose pool is full is refused with ShardUnavailable (503), not queued without bound.
TEST(ShardCallPool, AFanOutOverTheBoundIsRefused) {
  Gate gate, started;
  index::ShardCallPool pool(1, 1);
  auto live = std::make_shared<std::atomic<bool>>(false);
  ASSERT_TRUE(pool.submit([&] { started.release(); gate.wait(); }, live));
  started.wait();  // taken up: the queue is empty again
  ASSERT_TRUE(pool.submit([] {}, live));
  const auto name = [](size_t s) { return "shard-" + std::to_string(s); };
  const auto soon = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  test::expect_error([&] { index::fan_out<int>(pool, {0, 1}, soon, [](size_t s) { return int(s); }, name); },
                     "too many shard calls under way");
  gate.release();
}

// BM25 is scored in sieve's fixed order (so that several databases give the bits of one): the
// scores stay those of Xapian's BM25Weight, to rounding.
TEST_F(ShardSetTest, Bm25RescoringAgreesWithXapian) {
  index::XapianLexicalIndex one(*dir_ + "/one/" + index::kLexicalDir);
  size_t compared = 0;
  for (const auto& q : corpus_->queries) {
    std::vector<double> xapian;
    auto hits = one.search_shards(q, 50, {static_cast<uint32_t>(corpus_->docs.size())}, &xapian);
    ASSERT_EQ(hits.size(), xapian.size());
    for (size_t i = 0; i < hits.size(); ++i, ++compared) {
      EXPECT_NEAR(hits[i].score, xapian[i], 1e-9 * std::max(1.0, xapian[i])) << q << " hit " << i;
      if (i > 0) EXPECT_GE(hits[i - 1].score, hits[i].score);
    }
  }
  EXPECT_GT(compared, 100u);
}

// HNSW is approximate: the set's dense recall@10 against exact search stays within 0.01 of one
// HNSW index's, at a search depth low enough that one index misses some (else the two would agree
// trivially, and a set that searched exactly would pass too).
TEST_F(ShardSetTest, HnswRecallWithinOnePointOfOneIndex) {
  IndexBuildOptions o = small_opts();
  o.vector_factory = "HNSW32";
  o.store_tokens = false;
  build_index(model_dir(), corpus_->path, *dir_ + "/hnsw-one", o);
  build_shard_set(model_dir(), corpus_->path, *dir_ + "/hnsw-set", 3, o);
  auto exact = Index::open(*dir_ + "/one");
  auto one = Index::open(*dir_ + "/hnsw-one");
  auto set = Index::open(*dir_ + "/hnsw-set");
  EXPECT_EQ(set->stats().vector_factory, "HNSW32");
  SearchParams p;
  p.k = 10;
  p.ef_search = 16;  // low, so that the approximation shows
  auto truth = exact->search_batch(corpus_->queries, p);
  auto a = one->search_batch(corpus_->queries, p);
  auto b = set->search_batch(corpus_->queries, p);
  auto recall = [&](const std::vector<SearchResult>& r) {
    double found = 0, total = 0;
    for (size_t q = 0; q < truth.size(); ++q) {
      std::set<uint32_t> t;
      for (const auto& h : truth[q].hits) t.insert(h.doc);
      for (const auto& h : r[q].hits) found += t.count(h.doc);
      total += t.size();
    }
    return found / total;
  };
  EXPECT_LT(recall(a), 1.0) << "efSearch 16 found every neighbour: the test cannot tell approximate from exact";
  EXPECT_GE(recall(b), recall(a) - 0.01) << "one " << recall(a) << " set " << recall(b);
}

TEST_F(ShardSetTest, SplitCutsAtChunksAndKeepsEveryDocumentInOrder) {
  const std::string d = *dir_ + "/split";
  auto files = split_corpus(corpus_->path, CorpusFormat::Auto, 3, d, 64);
  ASSERT_EQ(files.size(), 3u);
  std::vector<std::string> ids;
  std::vector<size_t> sizes;
  for (const auto& f : files) {
    std::ifstream in(f);
    std::string line;
    size_t n = 0;
    while (std::getline(in, line)) {
      ids.push_back(nlohmann::json::parse(line).at("_id"));
      ++n;
    }
    sizes.push_back(n);
  }
  ASSERT_EQ(ids.size(), corpus_->docs.size());
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], corpus_->docs[i].id);
  // 600 documents = 10 chunks of 64 (the last one short): 3 + 3 + 4 chunks.
  EXPECT_EQ(sizes[0], 192u);
  EXPECT_EQ(sizes[1], 192u);
  EXPECT_EQ(sizes[2], 216u);
  // Fewer chunks than shards: an even split.
  files = split_corpus(corpus_->path, CorpusFormat::Auto, 4, d + "2", 256);
  std::vector<size_t> even;
  for (const auto& f : files) {
    std::ifstream in(f);
    even.push_back(static_cast<size_t>(std::count(std::istreambuf_iterator<char>(in), {}, '\n')));
  }
  EXPECT_EQ(even, (std::vector<size_t>{150, 150, 150, 150}));
  EXPECT_NE(error_of([&] { split_corpus(corpus_->path, CorpusFormat::Auto, 601, d + "3", 1); }).find("fewer than"),
            std::string::npos);
}

// A set is checked at every open: a damaged or changed manifest, a shard that was rebuilt or
// removed, and a write to one shard alone are refused with the shard named.
TEST_F(ShardSetTest, DamageAndChangesAreRefused) {
  const std::string src = *dir_ + "/dmg-src";
  build_shard_set(model_dir(), corpus_->path, src, 3, small_opts());
  auto fresh = [&](const std::string& name) {
    const std::string d = *dir_ + "/" + name;
    fs::remove_all(d);
    fs::copy(src, d, fs::copy_options::recursive);
    return d;
  };
  // The manifest's checksum.
  std::string d = fresh("dmg-manifest");
  std::string text = read_file(d + "/shardset.json");
  const size_t at = text.find("\"documents\": 600");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 16, "\"documents\": 601");
  write_text(d + "/shardset.json", text);
  EXPECT_NE(error_of([&] { Index::open(d); }).find("checksum"), std::string::npos);
  // A shard replaced by another index (its manifest is not the one committed).
  d = fresh("dmg-shard");
  fs::remove_all(d + "/shard-001");
  std::vector<Document> other(corpus_->docs.begin() + 192, corpus_->docs.begin() + 384);
  other[0].text += " changed";
  build_index(model_dir(), write_corpus(*dir_ + "/other.jsonl", other), d + "/shard-001", small_opts());
  std::string err = error_of([&] { Index::open(d); });
  EXPECT_NE(err.find("shard-001"), std::string::npos) << err;
  // A missing shard.
  d = fresh("dmg-missing");
  fs::remove_all(d + "/shard-002");
  err = error_of([&] { Index::open(d); });
  EXPECT_NE(err.find("shard-002"), std::string::npos) << err;
  // Damage inside a shard is found by a verifying open, as for one index.
  d = fresh("dmg-inner");
  flip_byte(d + "/shard-001/corpus.dat", 100);
  IndexOpenOptions verify;
  verify.verify = true;
  EXPECT_NE(error_of([&] { Index::open(d, verify); }), "");
  // Written through the set only: an add to one shard alone is refused; the set is unchanged.
  d = fresh("dmg-add");
  const std::string before = read_file(d + "/shardset.json");
  const std::string shard_before = read_file(d + "/shard-001/manifest.json");
  EXPECT_NE(error_of([&] { add_to_index(d + "/shard-001", write_jsonl(*dir_, "more.jsonl", make_docs(3, 900)), small_opts()); })
                .find("write through the set"),
            std::string::npos);
  EXPECT_NE(error_of([&] { IndexWriter w(d + "/shard-001"); }).find("write through the set"), std::string::npos);
  EXPECT_EQ(read_file(d + "/shardset.json"), before);
  EXPECT_EQ(read_file(d + "/shard-001/manifest.json"), shard_before);
  EXPECT_EQ(Index::open(d)->size(), 600u);
  // An existing output is kept without force.
  EXPECT_NE(error_of([&] { build_shard_set(model_dir(), corpus_->path, src, 2, small_opts()); }).find("already exists"),
            std::string::npos);
  EXPECT_EQ(Index::open(src)->stats().shards, 3u);
}

// The commit takes the number of shards it expects (issue 45): a staging folder with a shard
// missing in the middle, or one too many, is refused by name (probing until a shard is missing
// committed the first one alone), and --force swaps the new set in without ever leaving no set.
TEST_F(ShardSetTest, CommitTakesTheShardCountAndReplacesInOneStep) {
  const std::string src = *dir_ + "/commit-src";
  build_shard_set(model_dir(), corpus_->path, src, 3, small_opts());
  auto staging = [&](const std::string& name) {  // the committed set's shards, as a build leaves them
    const std::string d = *dir_ + "/" + name;
    fs::remove_all(d);
    fs::create_directories(d);
    for (const char* s : {"shard-000", "shard-001", "shard-002"}) fs::copy(src + "/" + s, d + "/" + s, fs::copy_options::recursive);
    return d;
  };
  std::string st = staging("commit-gap");
  fs::remove_all(st + "/shard-001");
  std::string err = error_of([&] { commit_shard_set(st, *dir_ + "/commit-gap-out", 3); });
  EXPECT_NE(err.find("shard 1 of 3"), std::string::npos) << err;
  EXPECT_NE(err.find("missing"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(*dir_ + "/commit-gap-out"));
  st = staging("commit-extra");
  err = error_of([&] { commit_shard_set(st, *dir_ + "/commit-extra-out", 2); });
  EXPECT_NE(err.find("more than the 2 shards"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(*dir_ + "/commit-extra-out"));
  // Replacing an existing set: refused without force; with it, the new set is there and the
  // staging folder (the old set after the swap) is gone.
  const std::string out = *dir_ + "/commit-out";
  commit_shard_set(staging("commit-a"), out, 3);
  EXPECT_EQ(Index::open(out)->stats().shards, 3u);
  st = staging("commit-b");
  EXPECT_NE(error_of([&] { commit_shard_set(st, out, 3); }).find("already exists"), std::string::npos);
  fs::remove(out + "/shard-000/corpus.idx");  // mark the old set, to see it go
  commit_shard_set(st, out, 3, /*force=*/true);
  EXPECT_FALSE(fs::exists(st));
  EXPECT_TRUE(fs::exists(out + "/shard-000/corpus.idx"));
  EXPECT_EQ(Index::open(out)->stats().documents, 600u);
}

// The command line: --shards writes a set, search reads it like one index (same output bytes),
// info reports the shards, add is refused.
TEST_F(ShardSetTest, CommandLineBuildsAndSearchesASet) {
  const std::string out = *dir_ + "/cli-set", one = *dir_ + "/cli-one";
  const std::string common = " --model " + model_dir() + " --corpus " + corpus_->path + " --chunk 16";
  ASSERT_EQ(run_command(cli_path() + " index build" + common + " --out " + one + " 2>/dev/null").exit_code, 0);
  ASSERT_EQ(run_command(cli_path() + " index build" + common + " --shards 3 --out " + out + " 2>/dev/null").exit_code, 0);
  auto info = nlohmann::json::parse(run_command(cli_path() + " index info --index " + out).out);
  EXPECT_EQ(info.at("shards"), 3);
  EXPECT_EQ(info.at("documents"), 600);
  const std::string queries = write_text(*dir_ + "/q.txt", corpus_->queries[0] + "\n" + corpus_->queries[1] + "\n");
  for (const std::string mode : {"dense", "bm25", "hybrid"}) {
    const std::string args = " -q " + queries + " --mode " + mode + " -k 5 2>/dev/null";
    auto a = run_command(cli_path() + " search --index " + one + args);
    auto b = run_command(cli_path() + " search --index " + out + args);
    EXPECT_EQ(a.exit_code, 0);
    EXPECT_EQ(b.exit_code, 0);
    EXPECT_FALSE(a.out.empty());
    EXPECT_EQ(a.out, b.out) << mode;
  }
  // eval retrieval: the same metrics (each query judged relevant to the document it was cut from,
  // and to one more).
  {
    std::ofstream qf(*dir_ + "/eval-q.tsv"), rf(*dir_ + "/eval-qrels.tsv");
    rf << "query-id\tcorpus-id\tscore\n";
    for (size_t i = 0; i < 20; ++i) {
      const Document& d = corpus_->docs[i * 29];
      qf << "q" << i << "\t" << d.text.substr(0, 80) << "\n";
      rf << "q" << i << "\t" << d.id << "\t1\n" << "q" << i << "\t" << corpus_->docs[i * 29 + 1].id << "\t1\n";
    }
  }
  const std::string eval_args = " -q " + *dir_ + "/eval-q.tsv --qrels " + *dir_ + "/eval-qrels.tsv --mode hybrid 2>/dev/null";
  auto ea = run_command(cli_path() + " eval retrieval --index " + one + eval_args);
  auto eb = run_command(cli_path() + " eval retrieval --index " + out + eval_args);
  ASSERT_EQ(ea.exit_code, 0);
  ASSERT_EQ(eb.exit_code, 0);
  auto ja = nlohmann::json::parse(ea.out), jb = nlohmann::json::parse(eb.out);
  ASSERT_TRUE(ja.contains("ndcg@10")) << ea.out;
  for (auto* j : {&ja, &jb})
    for (const char* timing : {"queries_per_second", "seconds", "index", "index_dir"}) j->erase(timing);
  EXPECT_EQ(ja, jb);
  // Written through the set: the same corpus again is refused (its ids are held), new ones go in.
  auto again = run_command(cli_path() + " index add --index " + out + " --corpus " + corpus_->path + " 2>&1");
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.out.find("already in the index"), std::string::npos) << again.out;
  const std::string more = write_corpus(*dir_ + "/cli-more.jsonl", {{"cli-new", "", "a document added from the command line"}});
  auto add = run_command(cli_path() + " index add --index " + out + " --corpus " + more + " 2>&1");
  EXPECT_EQ(add.exit_code, 0) << add.out;
  EXPECT_GE(Index::open(out)->find("cli-new"), 0);
}

}  // namespace
}  // namespace sieve
