// Faults on disk: a file-size limit (RLIMIT_FSIZE, as a full disk or quota shows itself to a
// process) hit during `index build`, `index add`, a training checkpoint and `model export`. Each
// must fail with an error naming the file, leave what was there before intact and loadable, and
// succeed when run again with room. The CLI runs under `ulimit -f` (1 KiB blocks) in bash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sieve/index.h"
#include "sieve/model.h"
#include "unit/index/index_test_util.h"

namespace sieve {
namespace {
namespace fs = std::filesystem;
using namespace sieve::test;

// Runs the CLI with `args` under a file-size limit of `kib` KiB (0: none); stdout and stderr together.
CommandResult cli_limited(size_t kib, const std::string& args) {
  const std::string limit = kib ? "ulimit -f " + std::to_string(kib) + "; " : "";
  return run_command("bash -c '" + limit + cli_path() + " " + args + "' 2>&1");
}

// Documents in the index at `dir`, opened with every file's CRC checked.
size_t verified_size(const std::string& dir) {
  IndexOpenOptions v;
  v.verify = true;
  return Index::open(dir, v)->size();
}

uintmax_t largest_file(const std::string& dir) {
  uintmax_t largest = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) largest = std::max(largest, e.file_size());
  return largest;
}

std::string corpus_tsv(const std::string& dir, const std::string& name, size_t n, size_t first = 0) {
  std::ofstream f(dir + "/" + name);
  for (size_t i = first; i < first + n; ++i) f << "d" << i << "\tthe dog bit the man number " << i << " near a red car\n";
  return dir + "/" + name;
}

TEST(Faults, IndexBuildUnderAFileSizeLimit) {
  const std::string dir = make_temp_dir("fault_build");
  const std::string corpus = corpus_tsv(dir, "c.tsv", 1500);
  auto r = cli_limited(150, "index build --model " + model_dir() + " --corpus " + corpus + " --out " + dir + "/ix");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("File too large"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(dir + "/ix.partial/"), std::string::npos) << r.out;  // names the file
  EXPECT_FALSE(fs::exists(dir + "/ix"));                                     // nothing half-published
  r = cli_limited(0, "index build --model " + model_dir() + " --corpus " + corpus + " --out " + dir + "/ix");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(verified_size(dir + "/ix"), 1500u);
}

TEST(Faults, IndexAddUnderAFileSizeLimitKeepsTheIndex) {
  const std::string dir = make_temp_dir("fault_add");
  ASSERT_EQ(cli_limited(0, "index build --model " + model_dir() + " --corpus " + corpus_tsv(dir, "a.tsv", 300) +
                               " --out " + dir + "/ix").exit_code, 0);
  SearchParams p;
  p.mode = SearchMode::Bm25;
  p.k = 5;
  const auto before = Index::open(dir + "/ix")->search("red car number 7", p).hits;
  const std::string more = corpus_tsv(dir, "b.tsv", 3000, 300);
  // The limit sits just above the largest file the index has, so the add's appends cross it.
  auto r = cli_limited(largest_file(dir + "/ix") / 1024 + 20, "index add --index " + dir + "/ix --corpus " + more);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("File too large"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(dir + "/ix/"), std::string::npos) << r.out;
  {
    EXPECT_EQ(verified_size(dir + "/ix"), 300u);  // the previous index: intact, same answers
    auto ix = Index::open(dir + "/ix");
    const auto after = ix->search("red car number 7", p).hits;
    ASSERT_EQ(after.size(), before.size());
    for (size_t i = 0; i < after.size(); ++i) {
      EXPECT_EQ(after[i].id, before[i].id);
      EXPECT_NEAR(after[i].score, before[i].score, 1e-9);
    }
  }
  r = cli_limited(0, "index add --index " + dir + "/ix --corpus " + more);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(verified_size(dir + "/ix"), 3300u);
}

TEST(Faults, TrainingCheckpointUnderAFileSizeLimit) {
  const std::string dir = make_temp_dir("fault_train");
  {
    std::ofstream f(dir + "/t.csv");
    f << "anchor,positive,negative\n";
    for (int i = 0; i < 64; ++i) f << "the dog bit man " << i << ",the dog bit man " << i << ",the man bit dog " << i << "\n";
  }
  const std::string train = "train encoder --model " + model_dir() + " --train " + dir + "/t.csv --out " + dir +
                            "/run --batch-size 8 --steps 4 --save-every 2";
  // First two steps and their checkpoint with room; then the next checkpoint cannot be written.
  auto r = cli_limited(0, train + " --stop-after 2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const uintmax_t largest = largest_file(dir + "/run");
  ASSERT_GT(largest, 4096u);
  r = cli_limited(largest / 1024 / 2, train + " --resume");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("File too large"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(dir + "/run"), std::string::npos) << r.out;
  // The step-2 checkpoint still resumes, and the run finishes with room.
  r = cli_limited(0, train + " --resume");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("resum"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir + "/run/last/config.json"));
}

TEST(Faults, ModelExportUnderAFileSizeLimit) {
  const std::string dir = make_temp_dir("fault_export");
  auto r = cli_limited(8, "model export --in " + model_dir() + " --out " + dir + "/out");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("File too large"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(dir + "/out"), std::string::npos) << r.out;
  r = cli_limited(0, "model export --in " + model_dir() + " --out " + dir + "/out");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(run_command(cli_path() + " model check " + dir + "/out 2>&1").exit_code, 0);
  EXPECT_EQ(Encoder::load(dir + "/out")->dim(), Encoder::load(model_dir())->dim());
}

// Results written to a full disk (/dev/full: every write fails with ENOSPC): the command says so
// and exits 1, whether the failure shows while writing (a large output) or only at the final
// flush (a small one). It used to exit 0 with the file truncated.
TEST(Faults, ResultsToAFullDiskFailTheCommand) {
  const std::string dir = make_temp_dir("fault_stdout");
  {
    std::ofstream f(dir + "/texts.txt");
    for (int i = 0; i < 300; ++i) f << "the dog bit the man number " << i << "\n";
  }
  for (const std::string& args : {"tokenize --model " + model_dir() + " hello",
                                  "embed --model " + model_dir() + " --input " + dir + "/texts.txt"}) {
    auto r = cli_limited(0, args + " > /dev/full");
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("cannot write the results to standard output"), std::string::npos) << args << "\n" << r.out;
    EXPECT_EQ(cli_limited(0, args + " > /dev/null").exit_code, 0) << args;
  }
}

// The training metrics log on a full disk stops the run with an error naming it.
TEST(Faults, TrainingMetricsOnAFullDisk) {
  const std::string dir = make_temp_dir("fault_metrics");
  {
    std::ofstream f(dir + "/t.csv");
    f << "anchor,positive,negative\n";
    for (int i = 0; i < 16; ++i) f << "the dog bit man " << i << ",the dog bit man " << i << ",the man bit dog " << i << "\n";
  }
  fs::create_directories(dir + "/run");
  fs::create_symlink("/dev/full", dir + "/run/metrics.jsonl");
  auto r = cli_limited(0, "train encoder --model " + model_dir() + " --train " + dir + "/t.csv --out " + dir +
                              "/run --batch-size 8 --steps 2 --log-every 1");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("cannot write '" + dir + "/run/metrics.jsonl'"), std::string::npos) << r.out;
}

// Unreadable inputs name their path.
TEST(Faults, UnreadableFilesAreNamed) {
  const std::string dir = make_temp_dir("fault_read");
  fs::create_directory(dir + "/a_folder.tsv");
  auto r = cli_limited(0, "index build --model " + model_dir() + " --corpus " + dir + "/a_folder.tsv --out " + dir + "/ix");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find(dir + "/a_folder.tsv"), std::string::npos) << r.out;
  r = cli_limited(0, "search --index " + dir + "/nowhere 'x'");
  EXPECT_NE(r.out.find(dir + "/nowhere"), std::string::npos) << r.out;
  r = cli_limited(0, "search --index " + dir + " --queries " + dir + "/missing.jsonl");
  EXPECT_NE(r.out.find(dir + "/missing.jsonl"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace sieve
