// The index under kill -9 (build and add) and BM25 quality on real data: the slow index tests.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "eval/beir.h"
#include "eval/metrics.h"
#include "unit/index/index_test_util.h"

namespace sieve {
namespace {
namespace fs = std::filesystem;
using namespace sieve::test;

// --- kill -9 ------------------------------------------------------------------------------------

// Starts the CLI with `args` (output discarded) and returns its pid.
pid_t spawn_cli(const std::vector<std::string>& args) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    std::vector<char*> argv;
    std::string exe = test::cli_path();
    argv.push_back(exe.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

// Polls until `ready()` holds, then kills the process with SIGKILL. Returns false when the
// process finished first (nothing was killed).
bool kill_when(pid_t pid, const std::function<bool()>& ready) {
  for (int i = 0; i < 60000; ++i) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return false;
    if (ready()) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return true;
    }
    ::usleep(1000);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return true;
}

// Documents committed by a running build, read from its checkpoint (0 before the first).
uint64_t committed_docs(const std::string& partial) {
  std::ifstream in(partial + "/checkpoint.json");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  size_t at = text.find("\"documents\": ");
  return at == std::string::npos ? 0 : std::stoull(text.substr(at + 13));
}

TEST(IndexCrash, KillDuringBuildNeverLeavesAValidIndexAndResumes) {
  std::string dir = make_temp_dir("idx_kill");
  auto docs = make_docs(1500);
  std::string corpus = write_jsonl(dir, "c.jsonl", docs);
  std::string out = dir + "/ix", partial = out + ".partial";
  std::vector<std::string> args = {"index", "build", "-m", model_dir(), "-c", corpus, "-o", out, "--chunk", "25",
                                   "--threads", "1"};
  auto expect_no_index = [&](const char* when) {
    EXPECT_FALSE(fs::exists(out)) << when;
    EXPECT_NE(error_of([&] { Index::open(out); }), "") << when << ": a killed build left a loadable index";
    EXPECT_NE(error_of([&] { Index::open(partial); }), "") << when << ": a partial build loads as an index";
  };
  // 1. Killed before anything was committed.
  ASSERT_TRUE(kill_when(spawn_cli(args), [&] { return fs::exists(partial); }));
  expect_no_index("before the first checkpoint");
  // 2. Killed right after a checkpoint, then again a few chunks later (a resumed run).
  // A second writer while this one runs is refused at once.
  CommandResult second;
  pid_t writer = spawn_cli(args);
  ASSERT_TRUE(kill_when(writer, [&] {
    if (committed_docs(partial) < 100) return false;
    ::kill(writer, SIGSTOP);  // paused, still holding its lock, while the second writer tries
    second = run_command(cli_path() + " index build -m " + model_dir() + " -c " + corpus + " -o " + out + " 2>&1");
    return true;
  })) << "the build finished before it could be killed";
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.out.find("another sieve process is writing"), std::string::npos) << second.out;
  expect_no_index("after a checkpoint");
  uint64_t first = committed_docs(partial);
  EXPECT_GE(first, 100u);
  ASSERT_TRUE(kill_when(spawn_cli(args), [&] { return committed_docs(partial) >= first + 200; }));
  expect_no_index("during a resumed build");
  // 3. The last run resumes and finishes.
  auto r = test::run_command(test::cli_path() + " index build -m " + model_dir() + " -c " + corpus + " -o " + out +
                             " --chunk 25 --threads 1 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("resumed an interrupted build"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(partial));
  // The finished index equals a clean build.
  IndexBuildOptions same;
  same.chunk_docs = 25;  // the codec trains on the first chunk: same chunk, same codec
  build_index(model_dir(), corpus, dir + "/ref", same);
  auto a = Index::open(out), b = Index::open(dir + "/ref");
  ASSERT_EQ(a->size(), 1500u);
  for (uint32_t i = 0; i < 1500; i += 97) {
    EXPECT_EQ(a->document(i).id, docs[i].id);
    TokenStates ta = a->tokens(i), tb = b->tokens(i);
    ASSERT_EQ(ta.length, tb.length);
    for (size_t j = 0; j < ta.values.size(); ++j) ASSERT_NEAR(ta.values[j], tb.values[j], 1e-6);
  }
  SearchParams p;
  p.mode = SearchMode::Hybrid;
  auto ra = a->search("green river", p), rb = b->search("green river", p);
  ASSERT_EQ(ra.hits.size(), rb.hits.size());
  for (size_t i = 0; i < ra.hits.size(); ++i) EXPECT_EQ(ra.hits[i].id, rb.hits[i].id);
  // A changed corpus is not resumed: the build says it restarted.
  ASSERT_TRUE(kill_when(spawn_cli({"index", "build", "-m", model_dir(), "-c", corpus, "-o", dir + "/ix2", "--chunk", "25"}),
                        [&] { return committed_docs(dir + "/ix2.partial") >= 100; }));
  write_jsonl(dir, "c.jsonl", make_docs(1400));
  r = test::run_command(test::cli_path() + " index build -m " + model_dir() + " -c " + corpus + " -o " + dir +
                        "/ix2 --chunk 25 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("restarted: the corpus file changed"), std::string::npos) << r.out;
  EXPECT_EQ(Index::open(dir + "/ix2")->size(), 1400u);
}

TEST(IndexCrash, KillDuringAddKeepsTheOldIndex) {
  std::string dir = make_temp_dir("idx_killadd");
  std::string out = dir + "/ix";
  build_index(model_dir(), write_jsonl(dir, "a.jsonl", make_docs(100)), out, small_opts());
  const uint64_t corpus_bytes = fs::file_size(out + "/corpus.dat");
  auto more = make_docs(1500, 100);
  std::string corpus = write_jsonl(dir, "b.jsonl", more);
  std::vector<std::string> args = {"index", "add", "--index", out, "-c", corpus, "--chunk", "25", "--threads", "1"};
  IndexOpenOptions verify;
  verify.verify = true;
  auto expect_old_index = [&] {
    auto idx = Index::open(out, verify);  // the old index, intact
    EXPECT_EQ(idx->size(), 100u);
    EXPECT_EQ(idx->find(more[0].id), -1);
    SearchParams p;
    p.mode = SearchMode::Bm25;
    p.k = 200;
    for (const Hit& h : idx->search("green river stone dog", p).hits) EXPECT_LT(h.doc, 100u);
  };
  // Killed while appending (the logs have grown past the manifest).
  ASSERT_TRUE(kill_when(spawn_cli(args), [&] { return fs::file_size(out + "/corpus.dat") > corpus_bytes + 20000; }));
  expect_old_index();
  // Killed again, later.
  ASSERT_TRUE(kill_when(spawn_cli(args), [&] { return fs::file_size(out + "/corpus.dat") > corpus_bytes + 60000; }));
  expect_old_index();
  auto r = test::run_command(test::cli_path() + " index add --index " + out + " -c " + corpus + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0);
  auto idx = Index::open(out, verify);
  ASSERT_EQ(idx->size(), 1600u);
  EXPECT_EQ(idx->find(more[1499].id), 1599);
  Document d = idx->document(1234);
  EXPECT_EQ(idx->search(expected_encoder_input(d)).hits[0].id, d.id);
}

// kill -9 during `sieve index compact`, at three points (writing the new folder; its vector
// index; after it is in place): the index at the path always opens, verifies and holds exactly the
// live documents it held before (compacted or not); a leftover `.compacting` folder is removed by
// the next compaction, which completes.
TEST(IndexCrash, KillDuringCompactionLeavesAValidIndex) {
  std::string dir = make_temp_dir("idx_killcompact");
  std::string out = dir + "/ix";
  IndexBuildOptions o = small_opts();
  o.vector_factory = "HNSW32";
  build_index(model_dir(), write_jsonl(dir, "a.jsonl", make_docs(3000)), out, o);
  std::vector<std::string> gone;
  for (size_t i = 0; i < 3000; i += 3) gone.push_back("d" + std::to_string(i));
  delete_documents(out, gone);
  IndexOpenOptions verify;
  verify.verify = true;
  verify.load_encoder = false;
  auto live_ids = [&] {
    auto idx = Index::open(out, verify);
    std::set<std::string> ids;
    for (uint32_t d : idx->matching(Filter())) ids.insert(idx->document(d).id);
    return ids;
  };
  const std::set<std::string> want = live_ids();
  ASSERT_EQ(want.size(), 2000u);
  const std::vector<std::string> args = {"index", "compact", "--index", out};
  const std::string staging = out + ".compacting";
  // While the new folder is being written.
  if (kill_when(spawn_cli(args), [&] { return fs::exists(staging + "/corpus.dat") && fs::file_size(staging + "/corpus.dat") > 30000; }))
    EXPECT_EQ(live_ids(), want) << "killed while writing the new folder";
  // While its vector index is being written (or later).
  if (kill_when(spawn_cli(args), [&] { return fs::exists(staging + "/lexical") && fs::exists(staging + "/corpus.dat") &&
                                              fs::file_size(staging + "/corpus.dat") > 60000; }))
    EXPECT_EQ(live_ids(), want) << "killed later in the compaction";
  auto r = test::run_command(test::cli_path() + " index compact --index " + out + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(live_ids(), want);
  EXPECT_EQ(Index::open(out, verify)->stats().deleted, 0u);
  EXPECT_EQ(Index::open(out, verify)->size(), 2000u);
  EXPECT_FALSE(fs::exists(staging));
}

// --- real data ----------------------------------------------------------------------------------

// nDCG@10 and recall@100 of BM25 on a BEIR-layout dataset's test qrels.
eval::Metrics bm25_metrics(const std::string& name) {
  std::string dir = make_temp_dir("idx_" + name);
  IndexBuildOptions o;
  o.store_tokens = false;
  build_index(model_dir(), shared_data("retrieval/" + name + "/corpus.jsonl"), dir + "/ix", o);
  IndexOpenOptions oo;
  oo.load_encoder = false;
  auto idx = Index::open(dir + "/ix", oo);
  auto qrels = eval::read_qrels(shared_data("retrieval/" + name + "/qrels/test.tsv"));
  eval::Run run;
  SearchParams p;
  p.mode = SearchMode::Bm25;
  p.k = 100;
  for (const auto& q : eval::read_queries(shared_data("retrieval/" + name + "/queries.jsonl"))) {
    if (!qrels.count(q.id)) continue;
    for (const Hit& h : idx->search(q.text, p).hits) run[q.id].push_back({h.id, h.score});
  }
  eval::Metrics m = eval::evaluate(run, qrels);
  std::printf("%s BM25: nDCG@10 %.4f  recall@100 %.4f  (%zu queries, %zu documents)\n", name.c_str(), m.ndcg10,
              m.recall100, m.queries, idx->size());
  return m;
}

// BM25 quality on SciFact (BEIR reports nDCG@10 = 0.665 for its BM25 baseline); Cranfield and
// WikiQA are reported, with floors far below their values that only a broken ranker misses.
TEST(IndexData, Bm25OnBeirDatasets) {
  if (shared_data("retrieval/scifact/corpus.jsonl").empty())
    GTEST_SKIP() << "../shared/data/retrieval is absent; skipping the BM25 quality checks";
  eval::Metrics scifact = bm25_metrics("scifact");
  EXPECT_EQ(scifact.queries, 300u);
  EXPECT_GE(scifact.ndcg10, 0.62);
  EXPECT_GE(bm25_metrics("cranfield").ndcg10, 0.25);
  EXPECT_GE(bm25_metrics("wikiqa").ndcg10, 0.40);
}

}  // namespace
}  // namespace sieve
