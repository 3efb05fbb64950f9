// What an interrupted build compares before it resumes (issue 45): the corpus fingerprint changes
// with the content even when the size and the modification time are kept, and a build whose
// corpus was edited that way starts afresh instead of resuming stale work.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <fcntl.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sieve/index.h"
#include "support/test_util.h"
#include "unit/index/index_test_util.h"

namespace sieve::test {
namespace {

// Gives `path` the access and modification times of `before`, to the nanosecond.
void restore_times(const std::string& path, const struct stat& before) {
  const struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

TEST(BuildKey, TheFingerprintFollowsTheBytesNotOnlySizeAndTime) {
  const std::string dir = make_temp_dir("build_key");
  const std::string path = write_text(dir + "/c.jsonl", "{\"_id\": \"a\", \"text\": \"the dog bit the man\"}\n");
  const std::string first = corpus_fingerprint(path);
  EXPECT_EQ(corpus_fingerprint(path), first);  // the same file, the same fingerprint
  struct stat st {};
  ::stat(path.c_str(), &st);
  write_text(path, "{\"_id\": \"a\", \"text\": \"the man bit the dog\"}\n");  // same size
  restore_times(path, st);
  EXPECT_NE(corpus_fingerprint(path), first);
  // A folder (Parquet parts): every file counts.
  std::filesystem::create_directories(dir + "/parts");
  write_text(dir + "/parts/a.parquet", "one");
  write_text(dir + "/parts/b.parquet", "two");
  const std::string folder = corpus_fingerprint(dir + "/parts");
  write_text(dir + "/parts/b.parquet", "tw0");
  EXPECT_NE(corpus_fingerprint(dir + "/parts"), folder);
  expect_error([&] { corpus_fingerprint(dir + "/absent.jsonl"); }, "cannot read corpus");
  // A pipe is not read (it would block with no writer): the build refuses it afterwards.
  ASSERT_EQ(::mkfifo((dir + "/pipe.jsonl").c_str(), 0600), 0);
  EXPECT_NE(corpus_fingerprint(dir + "/pipe.jsonl").find("not-a-file"), std::string::npos);
}

TEST(BuildKey, AnInterruptedBuildOfAnEditedCorpusStartsAfresh) {
  const std::string dir = make_temp_dir("build_key_resume");
  auto docs = make_docs(64);
  const std::string corpus = write_jsonl(dir, "c.jsonl", docs);
  IndexBuildOptions o = small_opts();
  int chunks = 0;
  o.interrupted = [&] { return ++chunks == 2; };  // stop after two chunks of 16
  EXPECT_THROW(build_index(model_dir(), corpus, dir + "/ix", o), Error);
  ASSERT_TRUE(std::filesystem::exists(dir + "/ix.partial"));
  // The same size, the same modification time, other words: the old chunks must not be kept.
  struct stat st {};
  ::stat(corpus.c_str(), &st);
  std::swap(docs[3].text, docs[40].text);  // the file keeps its size
  write_jsonl(dir, "c.jsonl", docs);
  restore_times(corpus, st);
  o.interrupted = nullptr;
  const BuildReport r = build_index(model_dir(), corpus, dir + "/ix", o);
  EXPECT_EQ(r.resumed_from, 0u) << "resumed an edited corpus's build";
  auto idx = Index::open(dir + "/ix");
  for (uint32_t i = 0; i < idx->size(); ++i) ASSERT_EQ(idx->document(i).text, docs[i].text) << i;
}

}  // namespace
}  // namespace sieve::test
