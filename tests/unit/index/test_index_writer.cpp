// IndexWriter: adds through the open index equal building at once (in the writer's snapshot and
// in a fresh open), the vector file is rewritten only past the tail limit, two threads adding at
// once both land, and another process's add is picked up before the next one.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/file_util.h"
#include "index/ingest.h"
#include "index/manifest.h"
#include "index_test_util.h"

using namespace sieve;
using namespace sieve::test;
namespace fs = std::filesystem;

namespace {

std::vector<Document> slice(const std::vector<Document>& all, size_t from, size_t to) {
  return {all.begin() + static_cast<std::ptrdiff_t>(from), all.begin() + static_cast<std::ptrdiff_t>(to)};
}

// Every mode answers the same ids and scores, the stored documents, keys and token states agree.
void expect_same_index(const Index& a, const Index& b) {
  ASSERT_EQ(a.size(), b.size());
  for (SearchMode m : {SearchMode::Dense, SearchMode::Bm25, SearchMode::Hybrid}) {
    SearchParams p;
    p.mode = m;
    p.k = 12;
    for (const char* q : {"red car left", "the dog bit the man", "green river stone", "small bird on the tree"}) {
      auto ra = a.search(q, p), rb = b.search(q, p);
      ASSERT_EQ(ra.hits.size(), rb.hits.size()) << q;
      for (size_t i = 0; i < ra.hits.size(); ++i) {
        EXPECT_EQ(ra.hits[i].id, rb.hits[i].id) << q << " mode " << static_cast<int>(m) << " rank " << i;
        EXPECT_NEAR(ra.hits[i].score, rb.hits[i].score, 1e-5) << q;
      }
    }
  }
  for (uint32_t d = 0; d < a.size(); ++d) {
    EXPECT_EQ(a.document(d).id, b.document(d).id);
    EXPECT_EQ(a.find(b.document(d).id), d);
    const auto ka = a.key(d), kb = b.key(d);
    // Encoded in other batches: the same up to the GEMM's rounding (and, for the SQ8 token
    // codes, a level where a value sits on a step's edge).
    for (size_t j = 0; j < ka.size(); ++j) ASSERT_NEAR(ka[j], kb[j], 1e-5) << "key of " << d;
    const auto ta = a.tokens(d), tb = b.tokens(d);
    ASSERT_EQ(ta.length, tb.length);
    for (size_t j = 0; j < ta.values.size(); ++j) ASSERT_NEAR(ta.values[j], tb.values[j], 0.02) << "tokens of " << d;
  }
}

index::Manifest manifest_of(const std::string& dir) { return index::read_manifest(dir, index::kManifestFile); }

// Flat indexes of the first `built` documents (`dir`/ix) and of all of them (`dir`/ref).
IndexBuildOptions build_part_and_whole(const std::string& dir, const std::vector<Document>& all, size_t built) {
  IndexBuildOptions o = small_opts();
  o.vector_factory = "Flat";
  build_index(model_dir(), write_jsonl(dir, "a.jsonl", slice(all, 0, built)), dir + "/ix", o);
  build_index(model_dir(), write_jsonl(dir, "all.jsonl", all), dir + "/ref", o);
  return o;
}

}  // namespace

// Three adds through one writer (the keys of the added documents kept in the keys log, searched
// exactly beside the vector file) answer as the index built from all documents at once, both in
// the writer's snapshots and opened afresh; the vector file is not rewritten.
TEST(IndexWriter, AddsEqualBuildingAtOnceWithoutRewritingTheVectorFile) {
  const std::string dir = make_temp_dir("writer_add");
  const auto all = make_docs(60);
  const IndexBuildOptions o = build_part_and_whole(dir, all, 30);
  const std::string vectors_before = manifest_of(dir + "/ix").vectors.file;

  IndexWriter w(dir + "/ix");
  const auto first = w.snapshot();
  EXPECT_EQ(w.add(slice(all, 30, 40), o).added, 10u);
  EXPECT_EQ(w.add(slice(all, 40, 41), o).documents, 41u);
  const BuildReport r = w.add(slice(all, 41, 60), o);  // two chunks of 16 and 3
  EXPECT_EQ(r.added, 19u);
  EXPECT_EQ(r.documents, 60u);
  EXPECT_EQ(first->size(), 30u);  // an earlier snapshot keeps its documents
  EXPECT_EQ(first->find("d45"), -1);

  const index::Manifest m = manifest_of(dir + "/ix");
  EXPECT_EQ(m.vectors.file, vectors_before);
  EXPECT_EQ(m.vector_documents, 30u);
  EXPECT_EQ(m.keys_from, 30u);  // Flat keeps the built keys: the log holds the added ones only
  EXPECT_TRUE(fs::exists(dir + "/ix/" + vectors_before));
  EXPECT_EQ(nlohmann::json::parse(read_file(dir + "/ix/manifest.json"))["version"], 3);

  const auto ref = Index::open(dir + "/ref");
  expect_same_index(*w.snapshot(), *ref);
  IndexOpenOptions verify;
  verify.verify = true;
  expect_same_index(*Index::open(dir + "/ix", verify), *ref);
  // The corpus-file path appends the same way and still refuses ids already there.
  EXPECT_NE(error_of([&] { w.add(slice(all, 5, 6), o); }).find("already in the index"), std::string::npos);
  EXPECT_NE(error_of([&] { w.add({all[0], Document{"", "", "x"}}, o); }).find("empty id"), std::string::npos);
  EXPECT_NE(error_of([&] { w.add({Document{"n1", "", "a"}, Document{"n1", "", "b"}}, o); }).find("twice"),
            std::string::npos);
  EXPECT_NE(error_of([&] { w.add({Document{"n2", "", "bad \xff utf8"}}, o); }).find("UTF-8"), std::string::npos);
  EXPECT_EQ(w.snapshot()->size(), 60u);
  EXPECT_EQ(Index::open(dir + "/ix")->size(), 60u);
}

// Past the tail limit an add writes the vector file anew with every key (and removes the old one);
// the manifest is then of version 2 again. HNSW, whose keys are searched approximately in the
// file and exactly in the tail, finds each added document by its own text.
TEST(IndexWriter, RewritesTheVectorFilePastTheTailLimit) {
  const std::string dir = make_temp_dir("writer_tail");
  const auto all = make_docs(70);
  IndexBuildOptions o = small_opts();
  o.vector_factory = "HNSW16";
  o.max_vector_tail = 12;
  build_index(model_dir(), write_jsonl(dir, "a.jsonl", slice(all, 0, 40)), dir + "/ix", o);
  const std::string v0 = manifest_of(dir + "/ix").vectors.file;
  IndexWriter w(dir + "/ix");
  w.add(slice(all, 40, 50), o);  // tail 10 < 12: kept
  EXPECT_EQ(manifest_of(dir + "/ix").vector_documents, 40u);
  w.add(slice(all, 50, 55), o);  // tail 15 >= 12: rewritten
  index::Manifest m = manifest_of(dir + "/ix");
  EXPECT_EQ(m.vector_documents, 55u);
  EXPECT_NE(m.vectors.file, v0);
  EXPECT_FALSE(fs::exists(dir + "/ix/" + v0));
  EXPECT_EQ(nlohmann::json::parse(read_file(dir + "/ix/manifest.json"))["version"], 2);
  w.add(slice(all, 55, 70), o);
  EXPECT_EQ(manifest_of(dir + "/ix").vector_documents, 70u);
  for (const auto& ix : {w.snapshot(), std::shared_ptr<const Index>(Index::open(dir + "/ix"))}) {
    ASSERT_EQ(ix->size(), 70u);
    SearchParams p;
    p.k = 3;
    p.ef_search = 200;
    for (size_t d = 40; d < 70; ++d) {
      const auto r = ix->search(expected_encoder_input(all[d]), p);
      ASSERT_FALSE(r.hits.empty());
      EXPECT_NEAR(r.hits[0].score, 1.0, 1e-4) << all[d].id;
    }
  }
}

// The tail limit: an eighth of the index, kept within 4,096 and 32,768 (the tail is scanned exactly
// by every dense query); an explicit max_vector_tail of N rewrites once N documents wait.
TEST(IndexWriter, TailLimitIsAnEighthWithinBounds) {
  IndexBuildOptions o;
  EXPECT_EQ(index::vector_tail_limit(o, 1000), 4096u);
  EXPECT_EQ(index::vector_tail_limit(o, 100000), 12500u);
  EXPECT_EQ(index::vector_tail_limit(o, 10000000), 32768u);
  o.max_vector_tail = 12;
  EXPECT_EQ(index::vector_tail_limit(o, 10000000), 11u);  // rewritten when the tail exceeds 11
}

// Two threads adding through one writer at once both land (today's failure was "another sieve
// process is writing"), each batch whole.
TEST(IndexWriter, TwoThreadsAddingAtOnceBothLand) {
  const std::string dir = make_temp_dir("writer_threads");
  const auto all = make_docs(80);
  IndexBuildOptions o = small_opts();
  build_index(model_dir(), write_jsonl(dir, "a.jsonl", slice(all, 0, 20)), dir + "/ix", o);
  IndexWriter w(dir + "/ix");
  std::atomic<int> failures{0};
  auto adder = [&](size_t from) {
    for (size_t b = from; b < from + 30; b += 10) {
      try {
        w.add(slice(all, b, b + 10), o);
      } catch (const Error&) {
        ++failures;
      }
    }
  };
  std::thread t1(adder, 20), t2(adder, 50);
  t1.join();
  t2.join();
  EXPECT_EQ(failures.load(), 0);
  const auto ix = Index::open(dir + "/ix");
  ASSERT_EQ(ix->size(), 80u);
  for (const auto& d : all) EXPECT_GE(ix->find(d.id), 0) << d.id;
  EXPECT_EQ(w.snapshot()->size(), 80u);
}

// When another writer (here the corpus-file add) has added since the writer opened, the next add
// reopens first and keeps both.
TEST(IndexWriter, PicksUpAnotherWritersAddBeforeItsOwn) {
  const std::string dir = make_temp_dir("writer_other");
  const auto all = make_docs(50);
  const IndexBuildOptions o = build_part_and_whole(dir, all, 20);
  IndexWriter w(dir + "/ix");
  w.add(slice(all, 20, 30), o);
  add_to_index(dir + "/ix", write_jsonl(dir, "b.jsonl", slice(all, 30, 40)), o);
  EXPECT_EQ(w.snapshot()->size(), 30u);
  const BuildReport r = w.add(slice(all, 40, 50), o);
  EXPECT_NE(r.note.find("reopened"), std::string::npos) << r.note;
  EXPECT_NE(error_of([&] { w.add(slice(all, 35, 36), o); }).find("already in the index"), std::string::npos);
  expect_same_index(*w.snapshot(), *Index::open(dir + "/ref"));
}
