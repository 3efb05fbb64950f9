// The index end to end: build, open, search, add; bad input, damaged files, other models and
// versions; kill -9 during build and add. References are computed independently: the encoder's
// own output, exact search with plain loops, and the corpus as written.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/checksum.h"
#include "core/file_util.h"
#include "index/lexical_index.h"
#include "index/manifest.h"
#include "index/write_lock.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "sieve/model.h"
#include "sieve/pipeline.h"
#include "sieve/verify.h"
#include "support/test_util.h"
#include "unit/index/index_test_util.h"

namespace sieve {
namespace {
namespace fs = std::filesystem;
using namespace sieve::test;

// --- round trip ---------------------------------------------------------------------------------

// An index whose token store uses sieve's own residual codec (not a FAISS file): it builds, opens,
// verifies and decodes each document's states close to the encoder's (cosine per row, the
// encoder's own output as the reference), and a build of the other shards of a set reuses it.
TEST(Index, ResidualCodecTokenStore) {
  std::string dir = make_temp_dir("idx_res");
  auto docs = make_docs(80);
  std::string corpus = write_jsonl(dir, "corpus.jsonl", docs);
  IndexBuildOptions o = small_opts();
  o.token_codec = "res2";
  build_index(model_dir(), corpus, dir + "/ix", o);
  EXPECT_EQ(read_file(dir + "/ix/codec.faiss").substr(0, 8), "SIEVERES");
  IndexOpenOptions verify;
  verify.verify = true;
  auto idx = Index::open(dir + "/ix", verify);
  EXPECT_EQ(idx->stats().token_codec, "RES4096x2");
  const Embeddings e = encode_docs(docs);
  double sum = 0;
  size_t rows = 0;
  for (uint32_t i = 0; i < docs.size(); ++i) {
    TokenStates t = idx->tokens(i);
    ASSERT_EQ(t.length, e.tokens[i].length);
    for (size_t r = 0; r < t.length; ++r, ++rows) {
      double dot = 0, a = 0, b = 0;
      for (size_t h = 0; h < e.dim; ++h) {
        dot += double(t.values[r * e.dim + h]) * e.tokens[i].values[r * e.dim + h];
        a += double(t.values[r * e.dim + h]) * t.values[r * e.dim + h];
        b += double(e.tokens[i].values[r * e.dim + h]) * e.tokens[i].values[r * e.dim + h];
      }
      sum += dot / std::sqrt(a * b);
    }
  }
  EXPECT_GT(sum / rows, 0.8);
  // The second shard of a set takes the first shard's residual codec file.
  IndexBuildOptions o2 = o;
  o2.token_codec_from = dir + "/ix/codec.faiss";
  build_index(model_dir(), write_jsonl(dir, "more.jsonl", make_docs(20, 500)), dir + "/ix2", o2);
  EXPECT_EQ(read_file(dir + "/ix2/codec.faiss"), read_file(dir + "/ix/codec.faiss"));
  // A codec file of another kind is refused.
  o2.token_codec = "sq8";
  EXPECT_NE(error_of([&] { build_index(model_dir(), write_jsonl(dir, "more.jsonl", make_docs(20, 500)), dir + "/ix3", o2); })
                .find("is not a SQ8 codec"),
            std::string::npos);
}

TEST(Index, RoundTripDocumentsKeysAndTokens) {
  std::string dir = make_temp_dir("idx_rt");
  auto docs = make_docs(60);
  std::string corpus = write_jsonl(dir, "corpus.jsonl", docs);
  IndexBuildOptions o = small_opts();
  o.token_codec = "fp32";
  BuildReport r = build_index(model_dir(), corpus, dir + "/ix", o);
  EXPECT_EQ(r.documents, 60u);
  EXPECT_EQ(r.note, "fresh build");
  EXPECT_FALSE(fs::exists(dir + "/ix.partial"));

  auto idx = Index::open(dir + "/ix");
  ASSERT_EQ(idx->size(), 60u);
  EXPECT_EQ(idx->stats().vector_factory, "Flat");
  // The reference: the encoder run directly on the same texts.
  const Embeddings e = encode_docs(docs);
  for (uint32_t i = 0; i < 60; ++i) {
    Document got = idx->document(i);
    EXPECT_EQ(got.id, docs[i].id);
    EXPECT_EQ(got.title, docs[i].title);
    EXPECT_EQ(got.text, docs[i].text);
    EXPECT_EQ(idx->find(docs[i].id), i);
    TokenStates t = idx->tokens(i);
    ASSERT_EQ(t.length, e.tokens[i].length);
    for (size_t r0 = 0; r0 < t.length; ++r0) {
      double ss = 0;
      for (size_t h = 0; h < e.dim; ++h) ss += double(e.tokens[i].values[r0 * e.dim + h]) * e.tokens[i].values[r0 * e.dim + h];
      for (size_t h = 0; h < e.dim; ++h)
        ASSERT_NEAR(t.values[r0 * e.dim + h], e.tokens[i].values[r0 * e.dim + h] / std::sqrt(ss), 1e-5);
    }
    std::vector<float> key = idx->key(i);  // read back from the Flat vector index
    ASSERT_EQ(key.size(), e.dim);
    for (size_t h = 0; h < e.dim; ++h) ASSERT_NEAR(key[h], e.pooled[i * e.dim + h], 1e-5);
  }
  // One copy of the keys: Flat holds them exactly, so no keys log is kept.
  EXPECT_FALSE(fs::exists(dir + "/ix/keys.dat"));
  EXPECT_FALSE(fs::exists(dir + "/ix/keys.idx"));
  EXPECT_EQ(idx->find("nope"), -1);
  EXPECT_THROW(idx->document(60), Error);

  // Dense search = exact search over the reference keys, computed with plain loops.
  for (size_t qi : {0u, 7u, 33u}) {
    SearchParams p;
    p.k = 5;
    SearchResult res = idx->search(expected_encoder_input(docs[qi]), p);
    std::vector<std::pair<double, uint32_t>> ref;
    for (uint32_t i = 0; i < 60; ++i) {
      double dot = 0;
      for (size_t h = 0; h < e.dim; ++h) dot += double(e.pooled[qi * e.dim + h]) * e.pooled[i * e.dim + h];
      ref.emplace_back(-dot, i);
    }
    std::sort(ref.begin(), ref.end());
    ASSERT_EQ(res.hits.size(), 5u);
    EXPECT_EQ(res.hits[0].id, docs[qi].id);
    for (size_t j = 0; j < 5; ++j) {
      EXPECT_NEAR(res.hits[j].score, -ref[j].first, 1e-4);
      EXPECT_EQ(res.hits[j].dense_rank, static_cast<int>(j + 1));
      EXPECT_TRUE(std::isnan(res.hits[j].bm25_score));
    }
  }
}

TEST(Index, SearchModesAndQueryTokens) {
  std::string dir = make_temp_dir("idx_modes");
  auto docs = make_docs(40);
  docs[17].text = "a unique zebra crossing story";
  std::string corpus = write_jsonl(dir, "c.jsonl", docs);
  build_index(model_dir(), corpus, dir + "/ix", small_opts());
  auto idx = Index::open(dir + "/ix");
  SearchParams p;
  p.mode = SearchMode::Bm25;
  auto r = idx->search("zebras", p);  // stemming: zebras -> zebra
  ASSERT_FALSE(r.hits.empty());
  EXPECT_EQ(r.hits[0].id, "d17");
  EXPECT_EQ(r.hits.size(), 1u);  // no other document has the term
  p.mode = SearchMode::Hybrid;
  p.query_tokens = true;
  r = idx->search("zebra crossing", p);
  ASSERT_FALSE(r.hits.empty());
  EXPECT_EQ(r.hits[0].id, "d17");  // first in BM25 and present in dense: highest fused score
  EXPECT_EQ(r.hits[0].bm25_rank, 1);
  EXPECT_GT(r.hits[0].dense_rank, 0);
  EXPECT_EQ(r.query_tokens.length, idx->encoder()->tokenizer().encode("zebra crossing").ids.size());
  // Batch search equals one-at-a-time search.
  p.query_tokens = false;
  auto batch = idx->search_batch({"red car", "blue house"}, p);
  auto one = idx->search("blue house", p);
  ASSERT_EQ(batch[1].hits.size(), one.hits.size());
  for (size_t i = 0; i < one.hits.size(); ++i) EXPECT_EQ(batch[1].hits[i].id, one.hits[i].id);
}

TEST(Index, AddEqualsBuildingAtOnce) {
  std::string dir = make_temp_dir("idx_add");
  auto all = make_docs(50);
  std::vector<Document> first(all.begin(), all.begin() + 30), second(all.begin() + 30, all.end());
  build_index(model_dir(), write_jsonl(dir, "a.jsonl", first), dir + "/ix", small_opts());
  BuildReport r = add_to_index(dir + "/ix", write_jsonl(dir, "b.jsonl", second), small_opts());
  EXPECT_EQ(r.documents, 50u);
  EXPECT_EQ(r.added, 20u);
  build_index(model_dir(), write_jsonl(dir, "all.jsonl", all), dir + "/ref", small_opts());
  auto a = Index::open(dir + "/ix"), b = Index::open(dir + "/ref");
  ASSERT_EQ(a->size(), 50u);
  for (SearchMode m : {SearchMode::Dense, SearchMode::Bm25, SearchMode::Hybrid}) {
    SearchParams p;
    p.mode = m;
    p.k = 8;
    for (const char* q : {"red car left", "the dog bit the man", "green river stone"}) {
      auto ra = a->search(q, p), rb = b->search(q, p);
      ASSERT_EQ(ra.hits.size(), rb.hits.size());
      for (size_t i = 0; i < ra.hits.size(); ++i) {
        EXPECT_EQ(ra.hits[i].id, rb.hits[i].id) << q;
        EXPECT_NEAR(ra.hits[i].score, rb.hits[i].score, 1e-5);
      }
    }
  }
  for (uint32_t i = 30; i < 50; ++i) EXPECT_EQ(a->document(i).id, all[i].id);
  // Ids already in the index are refused and nothing changes.
  std::string again = write_jsonl(dir, "again.jsonl", {all[3]});
  EXPECT_NE(error_of([&] { add_to_index(dir + "/ix", again); }).find("already in the index"), std::string::npos);
  EXPECT_EQ(Index::open(dir + "/ix")->size(), 50u);
}

// The writer thread (storing chunk i while chunk i+1 is encoded) writes exactly what storing in
// turn writes: the same bytes in every log, the same codec and Flat vectors, the same BM25 answers.
TEST(Index, OverlappedWriterStoresWhatTurnByTurnStores) {
  std::string dir = make_temp_dir("idx_overlap");
  std::string corpus = write_jsonl(dir, "c.jsonl", make_docs(90));
  IndexBuildOptions o = small_opts();
  o.vector_factory = "Flat";
  BuildReport a = build_index(model_dir(), corpus, dir + "/overlap", o);
  o.overlap = false;
  BuildReport b = build_index(model_dir(), corpus, dir + "/turns", o);
  EXPECT_EQ(a.added, 90u);
  EXPECT_EQ(b.added, 90u);
  EXPECT_GT(a.encode_seconds, 0);
  EXPECT_GT(a.lexical_seconds, 0);
  for (const char* f : {"corpus.dat", "corpus.idx", "tokens.dat", "tokens.idx", "vectors.90.faiss"}) {
    EXPECT_TRUE(read_file(dir + "/overlap/" + f) == read_file(dir + "/turns/" + f)) << f;
  }
  auto x = Index::open(dir + "/overlap"), y = Index::open(dir + "/turns");
  SearchParams p;
  p.mode = SearchMode::Bm25;
  for (const char* q : {"red car left", "the dog bit the man"}) {
    auto rx = x->search(q, p), ry = y->search(q, p);
    ASSERT_EQ(rx.hits.size(), ry.hits.size());
    for (size_t i = 0; i < rx.hits.size(); ++i) EXPECT_EQ(rx.hits[i].id, ry.hits[i].id);
  }
}

// A build stopped through `interrupted` (asked after each encoded chunk) commits the chunks
// encoded so far, names the count, and resumes from there; HNSW's graph, built at the end from
// the keys log, holds the keys stored before the stop as well as those after it.
TEST(Index, InterruptedBuildCommitsWhatWasEncodedAndResumes) {
  std::string dir = make_temp_dir("idx_interrupt");
  auto docs = make_docs(100);
  std::string corpus = write_jsonl(dir, "c.jsonl", docs);
  IndexBuildOptions o = small_opts();
  o.vector_factory = "HNSW32";
  int asked = 0;
  o.interrupted = [&] { return ++asked == 3; };
  EXPECT_NE(error_of([&] { build_index(model_dir(), corpus, dir + "/ix", o); }).find("interrupted after 48 documents"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir + "/ix"));
  o.interrupted = nullptr;
  BuildReport r = build_index(model_dir(), corpus, dir + "/ix", o);
  EXPECT_EQ(r.resumed_from, 48u);
  EXPECT_EQ(r.added, 52u);
  EXPECT_FALSE(fs::exists(dir + "/ix/keys.dat"));  // HNSW over Flat holds the keys
  auto ix = Index::open(dir + "/ix");
  ASSERT_EQ(ix->size(), 100u);
  // Documents from both sides of the stop are found first by their own text (the graph holds all).
  SearchParams p;
  p.k = 1;
  for (uint32_t i = 0; i < 100; i += 7) {
    auto res = ix->search(expected_encoder_input(docs[i]), p);
    ASSERT_FALSE(res.hits.empty());
    EXPECT_EQ(res.hits[0].id, docs[i].id);
  }
}

// What a killed `index add` left in the BM25 database (documents past the manifest) is skipped by
// readers, which never write (opening changes no file, with or without a writer at work); the next
// add removes it, and BM25 scores are again those of a fresh build.
TEST(Index, LeftoversOfAKilledAddAreSkippedByReadersAndRemovedByTheNextAdd) {
  std::string dir = make_temp_dir("idx_leftover");
  auto docs = make_docs(30);
  build_index(model_dir(), write_jsonl(dir, "a.jsonl", docs), dir + "/ix", small_opts());
  auto all = docs;
  all.push_back(make_docs(1, 30)[0]);
  build_index(model_dir(), write_jsonl(dir, "ab.jsonl", all), dir + "/ref31", small_opts());
  auto leave_behind = [&] {  // as an add killed between its BM25 commit and its manifest
    index::XapianLexicalWriter w(dir + "/ix/" + index::kLexicalDir);
    for (uint32_t i = 30; i < 40; ++i) w.put(i, "", "red car left red car left the dog bit the man");
    w.commit();
  };
  auto lexical_count = [&] { return index::XapianLexicalIndex(dir + "/ix/" + index::kLexicalDir).doc_count(); };
  // Every file under the index with its size and modification time.
  auto files = [&] {
    std::map<std::string, std::pair<uintmax_t, std::filesystem::file_time_type>> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir + "/ix"))
      if (e.is_regular_file()) out[e.path().string()] = {e.file_size(), e.last_write_time()};
    return out;
  };
  SearchParams p;
  p.mode = SearchMode::Bm25;
  p.k = 8;
  auto expect_reference_scores = [&](const Index& ix, const Index& ref) {
    for (const char* q : {"red car left", "the dog bit the man"}) {
      auto a = ix.search(q, p).hits, b = ref.search(q, p).hits;
      ASSERT_EQ(a.size(), b.size()) << q;
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].id, b[i].id) << q;
        EXPECT_NEAR(a[i].score, b[i].score, 1e-9) << q;
      }
    }
  };
  leave_behind();
  const auto before = files();
  {
    index::WriteLock writer(dir + "/ix");  // a writer at work
    auto ix = Index::open(dir + "/ix");
    for (const auto& h : ix->search("red car left", p).hits) EXPECT_LT(h.doc, 30u);
  }
  {
    auto ix = Index::open(dir + "/ix");  // no writer: still nothing written
    auto hits = ix->search("red car left", p).hits;
    EXPECT_FALSE(hits.empty());
    for (const auto& h : hits) EXPECT_LT(h.doc, 30u);
  }
  EXPECT_EQ(lexical_count(), 40u);
  EXPECT_TRUE(files() == before) << "opening the index changed a file";
  // The next add removes them: BM25 scores equal a fresh build of the same 31 documents.
  add_to_index(dir + "/ix", write_jsonl(dir, "b.jsonl", make_docs(1, 30)), small_opts());
  EXPECT_EQ(lexical_count(), 31u);
  expect_reference_scores(*Index::open(dir + "/ix"), *Index::open(dir + "/ref31"));
}

TEST(Index, VectorFactoriesAndCodecs) {
  std::string dir = make_temp_dir("idx_fact");
  std::string corpus = write_jsonl(dir, "c.jsonl", make_docs(300));
  for (const char* factory : {"HNSW32", "IVF8,Flat", "auto"}) {
    IndexBuildOptions o = small_opts();
    o.chunk_docs = 100;
    o.vector_factory = factory;
    o.auto_hnsw_threshold = 200;  // so that auto picks HNSW32 for 300 documents
    o.token_codec = std::string(factory) == "HNSW32" ? "sq4" : "fp16";
    std::string out = dir + "/ix_" + std::to_string(std::hash<std::string>()(factory));
    build_index(model_dir(), corpus, out, o);
    auto idx = Index::open(out);
    EXPECT_EQ(idx->stats().vector_factory, std::string(factory) == "auto" ? "HNSW32" : factory);
    Document d = idx->document(123);
    SearchParams p;
    p.nprobe = 8;
    EXPECT_EQ(idx->search(expected_encoder_input(d), p).hits[0].id, d.id) << factory;
  }
}

TEST(Index, ReaderKeepsItsSnapshotWhileAddsCommit) {
  std::string dir = make_temp_dir("idx_snap");
  build_index(model_dir(), write_jsonl(dir, "a.jsonl", make_docs(50)), dir + "/ix", small_opts());
  auto reader = Index::open(dir + "/ix");
  SearchParams p;
  p.mode = SearchMode::Hybrid;
  p.k = 100;
  // Several adds of several chunks each: Xapian sees many commits by another writer.
  for (int round = 0; round < 3; ++round) {
    add_to_index(dir + "/ix", write_jsonl(dir, "b" + std::to_string(round) + ".jsonl", make_docs(60, 1000 + 100 * round)),
                 small_opts());
    auto hits = reader->search("green river stone dog", p).hits;
    ASSERT_FALSE(hits.empty());
    for (const Hit& h : hits) EXPECT_LT(h.doc, 50u) << "the reader saw a document added after it opened";
  }
  EXPECT_EQ(reader->size(), 50u);
  EXPECT_EQ(Index::open(dir + "/ix")->size(), 230u);
}

// Readers searching from several threads (their own snapshots, and one shared snapshot) while
// another thread adds chunks: every search answers from a whole snapshot. Also the target of the
// ThreadSanitizer run (scripts/tsan.sh).
TEST(Index, ThreadsSearchWhileAnAddCommits) {
  std::string dir = make_temp_dir("idx_threads");
  build_index(model_dir(), write_jsonl(dir, "a.jsonl", make_docs(40)), dir + "/ix", small_opts());
  std::shared_ptr<const Index> shared = Index::open(dir + "/ix");
  std::atomic<bool> done{false};
  std::atomic<int> searches{0}, bad{0};
  auto reader = [&](int t) {
    SearchParams p;
    p.mode = t % 3 == 0 ? SearchMode::Dense : t % 3 == 1 ? SearchMode::Bm25 : SearchMode::Hybrid;
    p.k = 20;
    while (!done || searches < 12) {
      auto own = Index::open(dir + "/ix");
      for (const Index* ix : std::vector<const Index*>{own.get(), shared.get()}) {
        for (const Hit& h : ix->search("green river stone dog", p).hits) {
          if (h.doc >= ix->size()) ++bad;
          if (ix->document(h.doc).id != h.id) ++bad;
          ix->tokens(h.doc);
        }
        ++searches;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) threads.emplace_back(reader, t);
  for (int round = 0; round < 2; ++round)
    add_to_index(dir + "/ix", write_jsonl(dir, "t" + std::to_string(round) + ".jsonl", make_docs(30, 500 + 100 * round)),
                 small_opts());
  done = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(shared->size(), 40u);
  EXPECT_EQ(Index::open(dir + "/ix")->size(), 100u);
}

TEST(Index, PlainTextAddContinuesTheNumbering) {
  std::string dir = make_temp_dir("idx_text");
  build_index(model_dir(), write_text(dir + "/a.txt", "red car\nblue house\n\ngreen river\n"), dir + "/ix",
              small_opts());
  add_to_index(dir + "/ix", write_text(dir + "/b.txt", "stone bird\nwater light\n"), small_opts());
  auto idx = Index::open(dir + "/ix");
  ASSERT_EQ(idx->size(), 5u);
  // build: ids are line numbers (blank line 3 skipped); add: line number + 4, the largest id
  const char* want[] = {"1", "2", "4", "5", "6"};
  const char* text[] = {"red car", "blue house", "green river", "stone bird", "water light"};
  for (uint32_t i = 0; i < 5; ++i) {
    EXPECT_EQ(idx->document(i).id, want[i]);
    EXPECT_EQ(idx->document(i).text, text[i]);
  }
}

// --- bad input ----------------------------------------------------------------------------------

TEST(IndexBadInput, CorpusErrorsLeaveNoIndex) {
  std::string dir = make_temp_dir("idx_bad");
  struct Case {
    const char* name;
    std::string content;
    const char* expect;
  } cases[] = {
      {"empty.jsonl", "", "no documents"},
      {"blank.jsonl", "\n\n", "no documents"},
      {"dup.jsonl", "{\"_id\":\"a\",\"text\":\"x\"}\n{\"_id\":\"a\",\"text\":\"y\"}\n", "duplicate document id 'a'"},
      {"noid.jsonl", "{\"text\":\"x\"}\n", ":1: missing field \"_id\""},
      {"notext.jsonl", "{\"_id\":\"a\",\"text\":\"x\"}\n{\"_id\":\"b\"}\n", ":2: missing field \"text\""},
      {"utf8.tsv", "a\tgood\nb\tbad \xC3\x28 byte\n", ":2: invalid UTF-8"},
      {"json.jsonl", "{\"_id\": \"a\", \"text\": \n", ":1: not a valid JSON line"},
  };
  for (const auto& c : cases) {
    std::string corpus = write_text(dir + "/" + c.name, c.content);
    std::string out = dir + "/out_" + c.name;
    std::string err = error_of([&] { build_index(model_dir(), corpus, out, small_opts()); });
    EXPECT_NE(err.find(c.expect), std::string::npos) << c.name << ": " << err;
    EXPECT_FALSE(fs::exists(out)) << c.name;
    EXPECT_NE(error_of([&] { Index::open(out); }), "");
  }
  ASSERT_EQ(::mkfifo((dir + "/pipe.jsonl").c_str(), 0600), 0);
  EXPECT_NE(error_of([&] { build_index(model_dir(), dir + "/pipe.jsonl", dir + "/o", small_opts()); })
                .find("must be a regular file"),
            std::string::npos);
  EXPECT_NE(error_of([&] { build_index(model_dir(), dir + "/missing.jsonl", dir + "/o", small_opts()); })
                .find("cannot"),
            std::string::npos);
  // An existing index is not replaced without force.
  std::string corpus = write_jsonl(dir, "ok.jsonl", make_docs(5));
  build_index(model_dir(), corpus, dir + "/ix", small_opts());
  EXPECT_NE(error_of([&] { build_index(model_dir(), corpus, dir + "/ix", small_opts()); }).find("already exists"),
            std::string::npos);
  IndexBuildOptions force = small_opts();
  force.force = true;
  EXPECT_EQ(build_index(model_dir(), corpus, dir + "/ix", force).documents, 5u);
  // An empty folder is taken as absent; one holding anything else is not replaced.
  std::filesystem::create_directories(dir + "/empty");
  EXPECT_EQ(build_index(model_dir(), corpus, dir + "/empty", small_opts()).documents, 5u);
  EXPECT_EQ(Index::open(dir + "/empty")->size(), 5u);
  std::filesystem::create_directories(dir + "/full");
  std::ofstream(dir + "/full/notes.txt") << "mine";
  EXPECT_NE(error_of([&] { build_index(model_dir(), corpus, dir + "/full", small_opts()); }).find("already exists"),
            std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(dir + "/full/notes.txt"));
  IndexBuildOptions bad = small_opts();
  bad.vector_factory = "Nonsense99";
  EXPECT_NE(error_of([&] { build_index(model_dir(), corpus, dir + "/ix2", bad); }).find("factory"), std::string::npos);
}

TEST(IndexBadInput, OneMegabyteDocument) {
  std::string dir = make_temp_dir("idx_big");
  std::string big;
  while (big.size() < (1u << 20)) big += "stone river light ";
  big += "quasar";
  std::vector<Document> docs = make_docs(5);
  docs.push_back({"big", "", big});
  build_index(model_dir(), write_jsonl(dir, "c.jsonl", docs), dir + "/ix", small_opts());
  auto idx = Index::open(dir + "/ix");
  int64_t id = idx->find("big");
  ASSERT_GE(id, 0);
  EXPECT_EQ(idx->document(static_cast<uint32_t>(id)).text, big);         // the corpus keeps everything
  EXPECT_EQ(idx->tokens(static_cast<uint32_t>(id)).length, 64u);        // what the encoder saw
  SearchParams p;
  p.mode = SearchMode::Bm25;
  auto r = idx->search("quasar", p);  // the last word, far past the encoder's window
  ASSERT_EQ(r.hits.size(), 1u);
  EXPECT_EQ(r.hits[0].id, "big");
}

TEST(IndexBadInput, OtherModelAndOtherVersion) {
  std::string dir = make_temp_dir("idx_model");
  build_index(model_dir(), write_jsonl(dir, "c.jsonl", make_docs(10)), dir + "/ix", small_opts());
  IndexOpenOptions o;
  o.model_dir = model_dir(7);
  EXPECT_NE(error_of([&] { Index::open(dir + "/ix", o); }).find("is not the one"), std::string::npos);
  EXPECT_NE(error_of([&] { add_to_index(dir + "/ix", write_jsonl(dir, "d.jsonl", make_docs(2, 100)), {}, {}, model_dir(7)); })
                .find("is not the one"),
            std::string::npos);
  std::string manifest = dir + "/ix/manifest.json";
  std::ifstream in(manifest);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  size_t at = text.find("\"version\": 2");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 12, "\"version\": 9");
  write_text(manifest, text);
  EXPECT_NE(error_of([&] { Index::open(dir + "/ix"); }).find("format version 9"), std::string::npos);
  EXPECT_NE(error_of([&] { Index::open(dir + "/nothing"); }).find("does not exist"), std::string::npos);
}

// The identity is the SHA-256 of the weights (and a short digest of config and tokenizer); an
// index recorded with the older CRC-32 identity still opens with its own model and only with it.
TEST(ModelIdentity, Sha256OfTheWeightsAndOldIndexesStillOpen) {
  const std::string dir = make_temp_dir("identity");
  const std::string id = model_identity(model_dir());
  const ModelInfo info = read_model_info(model_dir());
  EXPECT_EQ(id.substr(0, 7 + 64), "sha256:" + sha256_file_hex(info.weights_path));
  EXPECT_EQ(id.size(), 7 + 64 + 1 + 16u);
  EXPECT_NE(model_identity(model_dir(7)), id);
  // A copy is the same model; with one weight byte changed (same size) it is another. The memo
  // keys on size and modification time, so the change is seen once the time moves (the clock's
  // tick can be coarser than the test, hence the explicit step).
  std::filesystem::copy(model_dir(), dir + "/copy", std::filesystem::copy_options::recursive);
  EXPECT_EQ(model_identity(dir + "/copy"), id);
  const std::string weights = read_model_info(dir + "/copy").weights_path;
  flip_byte(weights, fs::file_size(weights) - 3);
  fs::last_write_time(weights, fs::last_write_time(weights) + std::chrono::seconds(1));
  EXPECT_NE(model_identity(dir + "/copy"), id);
  // An index whose manifest records the CRC-32 form.
  build_index(model_dir(), write_jsonl(dir, "c.jsonl", make_docs(10)), dir + "/ix", small_opts());
  index::Manifest m = index::read_manifest(dir + "/ix", "manifest.json");
  EXPECT_EQ(m.model_identity, id);
  const std::string legacy = model_identity_like(model_dir(), "crc32:");
  EXPECT_EQ(legacy.rfind("crc32:", 0), 0u);
  EXPECT_EQ(model_identity_like(model_dir(), id), id);
  m.model_identity = legacy;
  index::write_manifest(dir + "/ix", "manifest.json", m);
  auto ix = Index::open(dir + "/ix");
  EXPECT_EQ(ix->search("document", {}).hits.size(), 10u);
  IndexOpenOptions other;
  other.model_dir = model_dir(7);
  EXPECT_NE(error_of([&] { Index::open(dir + "/ix", other); }).find("is not the one"), std::string::npos);
}

// A verifier file records its encoder's identity in either scheme; each face's check (resolve
// and the pipeline) accepts it for that encoder only.
TEST(ModelIdentity, VerifierFilesOfEitherSchemeAreCheckedAgainstTheirEncoder) {
  const std::string dir = make_temp_dir("identity_verifier");
  build_index(model_dir(), write_jsonl(dir, "c.jsonl", make_docs(10)), dir + "/ix", small_opts());
  build_index(model_dir(7), write_jsonl(dir, "d.jsonl", make_docs(10)), dir + "/ix7", small_opts());
  auto ix = Index::open(dir + "/ix");
  auto ix7 = Index::open(dir + "/ix7");
  for (const std::string& recorded : {model_identity(model_dir()), model_identity_like(model_dir(), "crc32:")}) {
    VerifierConfig c;
    c.kind = VerifierKind::F4;
    c.encoder_dim = ix->shared_encoder()->dim();
    c.encoder_identity = recorded;
    const std::string file = dir + "/v.safetensors";
    Verifier::create(c, 3)->save(file);
    EXPECT_TRUE(resolve_verifier(file, {model_dir(), ""}).file) << recorded;
    EXPECT_TRUE(resolve_verifier(file, {model_dir(), ix->stats().model_identity}).file) << recorded;
    EXPECT_NE(error_of([&] { resolve_verifier(file, {model_dir(7), ""}); }).find("not for this one"), std::string::npos);
    EXPECT_NE(error_of([&] { resolve_verifier(file, {model_dir(7), ix7->stats().model_identity}); }).find("not for this one"),
              std::string::npos);
    EXPECT_NO_THROW(load_verifier_for_model(file, model_dir()));
    EXPECT_NE(error_of([&] { load_verifier_for_model(file, model_dir(7)); }).find("not for this one"), std::string::npos);
    auto v = Verifier::load(file);
    PipelineParams pp;
    pp.candidates = 5;
    pp.k = 5;
    EXPECT_EQ(search_verified(*ix, *v, "document", pp).size(), 5u) << recorded;
    EXPECT_NE(error_of([&] { search_verified(*ix7, *v, "document", pp); }).find("not for this one"),
              std::string::npos);
  }
}

// The real model: the identity's weights digest is the SHA-256 that the model's install manifest
// records (computed by Python's hashlib when it was installed).
TEST(ModelIdentity, RealModelAgreesWithItsInstallManifest) {
  const std::string folder = find_installed_model("all-MiniLM-L6-v2");
  if (folder.empty()) SIEVE_SKIP_ORACLE("all-MiniLM-L6-v2 is not installed (scripts/setup.sh installs it)");
  const std::string source = folder + ".sieve.json";
  ASSERT_TRUE(is_file(source)) << source;
  const auto j = nlohmann::json::parse(read_file(source));
  const std::string want = j.at("files").at("model.safetensors").get<std::string>();
  EXPECT_EQ(model_identity(folder).substr(0, 7 + 64), "sha256:" + want);
}

TEST(IndexBadInput, DamagedFiles) {
  std::string dir = make_temp_dir("idx_dmg");
  std::string corpus = write_jsonl(dir, "c.jsonl", make_docs(40));
  build_index(model_dir(), corpus, dir + "/ref", small_opts());
  auto fresh = [&](const std::string& name) {
    std::string out = dir + "/" + name;
    fs::copy(dir + "/ref", out, fs::copy_options::recursive);
    return out;
  };
  {  // a corpus record: the damaged document fails, the others still read, verify finds it
    std::string ix = fresh("corpus");
    flip_byte(ix + "/corpus.dat", fs::file_size(ix + "/corpus.dat") - 3);
    auto idx = Index::open(ix);
    EXPECT_NE(error_of([&] { idx->document(39); }).find("damaged"), std::string::npos);
    EXPECT_EQ(idx->document(0).id, "d0");
    IndexOpenOptions v;
    v.verify = true;
    EXPECT_NE(error_of([&] { Index::open(ix, v); }).find("damaged"), std::string::npos);
  }
  {  // a token record
    std::string ix = fresh("tokens");
    flip_byte(ix + "/tokens.dat", 40);
    auto idx = Index::open(ix);
    EXPECT_NE(error_of([&] { idx->tokens(0); }).find("damaged"), std::string::npos);
  }
  // Files whose damage is caught at open.
  for (const char* file : {"vectors.40.faiss", "corpus.idx", "tokens.idx", "codec.faiss", "manifest.json"}) {
    std::string ix = fresh(std::string("open_") + file);
    flip_byte(ix + "/" + file, fs::file_size(ix + "/" + file) / 2);
    std::string err = error_of([&] { Index::open(ix); });
    EXPECT_NE(err, "") << file;
    EXPECT_TRUE(err.find("damaged") != std::string::npos || err.find("checksum") != std::string::npos) << file << ": " << err;
  }
  {  // truncation
    std::string ix = fresh("trunc");
    fs::resize_file(ix + "/tokens.dat", fs::file_size(ix + "/tokens.dat") - 10);
    EXPECT_NE(error_of([&] { Index::open(ix); }).find("truncated"), std::string::npos);
  }
  {  // a missing file
    std::string ix = fresh("missing");
    fs::remove(ix + "/corpus.dat");
    EXPECT_NE(error_of([&] { Index::open(ix); }), "");
  }
  {  // the keys log, kept where the vector index does not hold the keys exactly (IVF)
    IndexBuildOptions o = small_opts();
    o.vector_factory = "IVF2,Flat";
    build_index(model_dir(), corpus, dir + "/ivf", o);
    ASSERT_TRUE(fs::exists(dir + "/ivf/keys.dat"));
    flip_byte(dir + "/ivf/keys.idx", fs::file_size(dir + "/ivf/keys.idx") / 2);
    EXPECT_NE(error_of([&] { Index::open(dir + "/ivf"); }).find("damaged"), std::string::npos);
  }
  {  // the BM25 database
    std::string ix = fresh("lexical");
    for (const auto& e : fs::directory_iterator(ix + "/lexical"))
      if (e.path().extension() == ".glass" && fs::file_size(e.path()) > 0) fs::resize_file(e.path(), 0);
    IndexOpenOptions v;
    v.verify = true;
    EXPECT_NE(error_of([&] {
                auto idx = Index::open(ix, v);
                SearchParams p;
                p.mode = SearchMode::Bm25;
                idx->search("dog", p);
              }),
              "");
  }
}

// --- the CLI ------------------------------------------------------------------------------------

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(IndexCli, SearchOutputsAgreeWithTheLibrary) {
  std::string dir = make_temp_dir("idx_cli");
  auto docs = make_docs(80);
  std::string corpus = write_jsonl(dir, "c.jsonl", docs);
  std::string ix = dir + "/ix";
  auto r = run_command(cli_path() + " index build -m " + model_dir() + " -c " + corpus + " -o " + ix + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("\"documents\":80"), std::string::npos) << r.out;
  write_text(dir + "/q.jsonl", "{\"_id\": \"q7\", \"text\": \"red car left\"}\n{\"_id\": \"q9\", \"text\": \"blue river\"}\n");
  auto idx = Index::open(ix);
  for (const char* mode : {"dense", "bm25", "hybrid"}) {
    SearchParams p;
    p.mode = std::string(mode) == "dense" ? SearchMode::Dense : std::string(mode) == "bm25" ? SearchMode::Bm25 : SearchMode::Hybrid;
    p.k = 5;
    auto want7 = idx->search("red car left", p).hits;
    // TREC run: six columns, ranks from 1, the run name last.
    r = run_command(cli_path() + " search --index " + ix + " --mode " + mode + " -k 5 --queries " + dir +
                    "/q.jsonl --trec myrun 2>/dev/null");
    ASSERT_EQ(r.exit_code, 0) << mode;
    auto lines = lines_of(r.out);
    ASSERT_GE(lines.size(), want7.size());
    for (size_t i = 0; i < want7.size(); ++i) {
      std::istringstream f(lines[i]);
      std::string qid, q0, doc, run;
      int rank;
      double score;
      f >> qid >> q0 >> doc >> rank >> score >> run;
      EXPECT_EQ(qid, "q7");
      EXPECT_EQ(q0, "Q0");
      EXPECT_EQ(doc, want7[i].id) << mode << " rank " << i + 1;
      EXPECT_EQ(rank, static_cast<int>(i + 1));
      EXPECT_NEAR(score, want7[i].score, 1e-4 * std::max(1.0, std::abs(want7[i].score)));
      EXPECT_EQ(run, "myrun");
    }
    // TSV: header, then query_id rank doc_id score.
    r = run_command(cli_path() + " search --index " + ix + " --mode " + mode + " -k 5 --output tsv 'red car left' 2>/dev/null");
    lines = lines_of(r.out);
    ASSERT_EQ(lines.size(), want7.size() + 1);
    EXPECT_EQ(lines[0], "query_id\trank\tdoc_id\tscore");
    EXPECT_EQ(lines[1].substr(0, 4 + want7[0].id.size()), "1\t1\t" + want7[0].id);
  }
  // JSON lines from stdin.
  r = run_command("printf 'red car left\\nblue river\\n' | " + cli_path() + " search --index " + ix + " -k 3 --text 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0);
  auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[1].find("\"query_id\":\"2\",\"query\":\"blue river\""), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("\"text\":"), std::string::npos);
  // BEIR JSON lines on stdin (and with --queries -) are read as the queries file is: its ids and
  // texts, not the JSON as a query; the results are those of --queries FILE.
  const auto from_file = run_command(cli_path() + " search --index " + ix + " -k 3 --queries " + dir + "/q.jsonl 2>/dev/null");
  for (const std::string how : {" < " + dir + "/q.jsonl", " --queries - < " + dir + "/q.jsonl"}) {
    r = run_command(cli_path() + " search --index " + ix + " -k 3" + how + " 2>/dev/null");
    ASSERT_EQ(r.exit_code, 0) << how;
    EXPECT_EQ(r.out, from_file.out) << how;
    EXPECT_NE(r.out.find("\"query_id\":\"q9\",\"query\":\"blue river\""), std::string::npos) << r.out;
  }
  // Stage 2 after BM25: the verifier needs the query's token states, so the encoder is loaded
  // although stage 1 does not use it; the scores are the library pipeline's.
  r = run_command(cli_path() + " search --index " + ix + " --mode bm25 --verifier F1 --candidates 5 -k 5 'red car left' 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  {
    auto v = Verifier::load("F1");
    PipelineParams pp;
    pp.stage1.mode = SearchMode::Bm25;
    pp.candidates = 5;
    pp.k = 5;
    pp.rerank = false;
    const auto want = search_verified(*idx, *v, "red car left", pp);
    const auto got = nlohmann::json::parse(lines_of(r.out).back())["hits"];
    ASSERT_EQ(got.size(), want.size()) << r.out;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i]["id"], want[i].hit.id);
      EXPECT_NEAR(got[i]["verifier_score"].get<double>(), want[i].verifier_score, 1e-5);
    }
  }
  // info reports the counts.
  r = run_command(cli_path() + " index info --index " + ix);
  EXPECT_NE(r.out.find("\"documents\": 80"), std::string::npos) << r.out;
}

// A copy of the test model whose config_sentence_transformers.json recommends `search`.
std::string model_recommending(const std::string& dir, const nlohmann::json& search) {
  const std::string m = dir + "/model";
  fs::copy(model_dir(), m, fs::copy_options::recursive);
  nlohmann::json st = nlohmann::json::parse(std::ifstream(m + "/config_sentence_transformers.json"));
  st["sieve"]["search"] = search;
  write_text(m + "/config_sentence_transformers.json", st.dump(2));
  return m;
}

TEST(IndexCli, SearchDefaultsToTheModelsRecommendation) {
  std::string dir = make_temp_dir("idx_cli_rec");
  const std::string m =
      model_recommending(dir, {{"mode", "hybrid"}, {"fusion", "weighted"}, {"dense_weight", 0.2}, {"note", "why"}});
  const SearchRecommendation rec = recommended_search(m);
  EXPECT_TRUE(rec.declared);
  EXPECT_EQ(rec.mode, SearchMode::Hybrid);
  EXPECT_EQ(rec.fusion, Fusion::Weighted);
  EXPECT_DOUBLE_EQ(rec.dense_weight, 0.2);
  EXPECT_DOUBLE_EQ(rec.rrf_k, 60.0);
  EXPECT_EQ(rec.note, "why");
  EXPECT_FALSE(recommended_search(model_dir()).declared);

  std::string corpus = write_jsonl(dir, "c.jsonl", make_docs(60));
  const std::string ix = dir + "/ix";
  ASSERT_EQ(run_command(cli_path() + " index build -m " + m + " -c " + corpus + " -o " + ix + " 2>/dev/null").exit_code, 0);
  EXPECT_EQ(recommended_search_for_index(ix).mode, SearchMode::Hybrid);
  auto idx = Index::open(ix);
  auto first_ids = [&](const std::string& flags) {
    auto r = run_command(cli_path() + " search --index " + ix + " -k 8 --output tsv " + flags + " 'red car left' 2>/dev/null");
    EXPECT_EQ(r.exit_code, 0) << flags;
    std::vector<std::string> ids;
    auto lines = lines_of(r.out);
    for (size_t i = 1; i < lines.size(); ++i) ids.push_back(lines[i].substr(0, lines[i].find('\t', 4)));
    return ids;
  };
  auto library_ids = [&](SearchMode mode, Fusion fusion, double w, double slope = 0) {
    SearchParams p;
    p.mode = mode;
    p.fusion = fusion;
    p.dense_weight = w;
    p.weight_slope = slope;
    p.k = 8;
    std::vector<std::string> ids;
    auto hits = idx->search("red car left", p).hits;
    for (size_t i = 0; i < hits.size(); ++i) ids.push_back("1\t" + std::to_string(i + 1) + "\t" + hits[i].id);
    return ids;
  };
  // No flag: the recommendation. Flags override it one by one.
  const auto weighted = library_ids(SearchMode::Hybrid, Fusion::Weighted, 0.2);
  const auto rrf = library_ids(SearchMode::Hybrid, Fusion::Rrf, 0.2);
  EXPECT_NE(weighted, rrf);  // else the test could not tell them apart
  EXPECT_EQ(first_ids(""), weighted);
  EXPECT_EQ(first_ids("--dense-weight 0.9"), library_ids(SearchMode::Hybrid, Fusion::Weighted, 0.9));
  EXPECT_EQ(first_ids("--fusion rrf"), rrf);
  const auto sloped = library_ids(SearchMode::Hybrid, Fusion::Weighted, 0.2, 0.5);
  EXPECT_NE(sloped, weighted);  // the slope moves this query's weight enough to reorder
  EXPECT_EQ(first_ids("--weight-slope 0.5"), sloped);
  EXPECT_EQ(first_ids("--mode dense"), library_ids(SearchMode::Dense, Fusion::Rrf, 0.5));
  EXPECT_EQ(first_ids("--mode bm25"), library_ids(SearchMode::Bm25, Fusion::Rrf, 0.5));
  auto r = run_command(cli_path() + " search --index " + ix + " -k 3 'red car' 2>&1 >/dev/null");
  EXPECT_NE(r.out.find("as the model recommends"), std::string::npos) << r.out;

  // A malformed recommendation is an error that names the file.
  const std::string bad = make_temp_dir("idx_cli_rec_bad");
  test::expect_error([&] { recommended_search(model_recommending(bad, {{"mode", "fuzzy"}})); },
                     "config_sentence_transformers.json: \"sieve\".\"search\": unknown search mode 'fuzzy'");
  const std::string bad2 = make_temp_dir("idx_cli_rec_bad");
  test::expect_error([&] { recommended_search(model_recommending(bad2, {{"dense_weight", 1.5}})); },
                     "dense_weight must lie in [0, 1]");
}

TEST(IndexCli, ErrorsAndExitCodes) {
  std::string dir = make_temp_dir("idx_cli_err");
  write_text(dir + "/dup.tsv", "a\tx\na\ty\n");
  auto r = run_command(cli_path() + " index build -m " + model_dir() + " -c " + dir + "/dup.tsv -o " + dir + "/ix 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("duplicate document id 'a'"), std::string::npos) << r.out;
  r = run_command(cli_path() + " index build -c " + dir + "/dup.tsv 2>&1");
  EXPECT_EQ(r.exit_code, 2);  // --out missing
  r = run_command(cli_path() + " search --index " + dir + "/nothing x 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
  r = run_command(cli_path() + " search --index " + dir + "/nothing --mode fuzzy x 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  r = run_command(cli_path() + " index verify --help");
  EXPECT_EQ(r.exit_code, 0);
  // A newcomer's mistakes get messages that say what is wrong (docs/testing.md, "--help review").
  r = run_command(cli_path() + " serch x 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("unknown command 'sieve serch'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("search"), std::string::npos) << r.out;
  r = run_command(cli_path() + " index bogus 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("unknown command 'sieve index bogus' (sieve index has: build, add"), std::string::npos) << r.out;
  r = run_command(cli_path() + " search --index " + dir + " -k 0 x 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("'0' must be a whole number, at least 1"), std::string::npos) << r.out;
  r = run_command(cli_path() + " embed --threads -3 x 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("at least 0"), std::string::npos) << r.out;
  r = run_command(cli_path() + " index add --index " + dir + "/nothing --corpus " + dir + "/dup.tsv 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("index '" + dir + "/nothing' does not exist"), std::string::npos) << r.out;
  r = run_command(cli_path() + " serve --index " + dir + "/nothing --port 0 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("listening"), std::string::npos) << r.out;  // checked before it announces itself
  r = run_command(cli_path() + " explain --model " + model_dir() + " --svg " + dir + "/no/such/x.svg a b 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("cannot write '" + dir + "/no/such/x.svg'"), std::string::npos) << r.out;
  write_text(dir + "/p.tsv", "sentence1\tsentence2\na\tb\n");
  r = run_command(cli_path() + " verify score --model " + model_dir() + " --verifier " + dir + "/v.safetensors --pairs " +
                  dir + "/p.tsv 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("verifier file '" + dir + "/v.safetensors' does not exist"), std::string::npos) << r.out;
  // --gate with no --verifier on an index whose model has no verifier: told to give one.
  write_text(dir + "/ok.tsv", "a\tthe dog bit the man\nb\tthe man bit the dog\n");
  ASSERT_EQ(run_command(cli_path() + " index build -m " + model_dir() + " -c " + dir + "/ok.tsv -o " + dir + "/ok 2>&1").exit_code, 0);
  r = run_command(cli_path() + " search --index " + dir + "/ok --gate x 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("has no verifier.safetensors: give --verifier FILE"), std::string::npos) << r.out;
  r = run_command(cli_path() + " search --index " + dir + "/ok --rerank 'the dog' 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("with the verifier F1"), std::string::npos) << r.out;
  // A fusion knob given where no fusion runs is said to be ignored; where it runs, nothing is said.
  r = run_command(cli_path() + " search --index " + dir + "/ok --mode bm25 --dense-weight 0.3 --depth 5 dog 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("--dense-weight applies only to hybrid search with weighted or zscore fusion; ignored with mode bm25"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--fusion-depth applies only to hybrid search"), std::string::npos) << r.out;
  r = run_command(cli_path() + " search --index " + dir + "/ok --mode hybrid --fusion rrf --dense-weight 0.3 dog 2>&1");
  EXPECT_NE(r.out.find("--dense-weight applies only to hybrid search with weighted or zscore fusion; ignored with mode "
                       "hybrid and rrf fusion"),
            std::string::npos) << r.out;
  r = run_command(cli_path() + " search --index " + dir + "/ok --mode hybrid --fusion weighted --dense-weight 0.3 dog 2>&1");
  EXPECT_EQ(r.out.find("ignored"), std::string::npos) << r.out;
  r = run_command(cli_path() + " search --index " + dir + "/ok --mode hybrid --fusion zscore --dense-weight 0.3 dog 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("ignored"), std::string::npos) << r.out;
  // The model folder has one name everywhere (-m/--model), the older names still work.
  for (const char* c : {" model export --help", " experiment tradeoff --help", " experiment verifiers --help"}) {
    r = run_command(cli_path() + c);
    EXPECT_NE(r.out.find("-m,--model"), std::string::npos) << c << r.out;
  }
}

// The build says what it indexes, reports progress in a log (plain lines; SIEVE_PROGRESS_SECONDS=0
// makes one per chunk, the default 30 s none in a short build), and its truncation warning
// counts every chunk: the same number as the report's "truncated" (it counted the first chunk).
TEST(IndexCli, BuildReportsProgressAndTheTotalTruncated) {
  std::string dir = make_temp_dir("idx_cli_progress");
  {
    std::ofstream f(dir + "/c.tsv");
    for (int i = 0; i < 10; ++i) f << "d" << i << "\tthe dog bit the man near the red car number " << i << "\n";
  }
  const std::string build = cli_path() + " index build -m " + model_dir() + " -c " + dir +
                            "/c.tsv --chunk 3 --max-length 8 -o " + dir;
  auto r = run_command("SIEVE_PROGRESS_SECONDS=0 " + build + "/a 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("indexing 10 document(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sieve: indexing: 3/10 (30%)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sieve: indexing: 10/10 (100%)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("10 text(s) longer than 8 tokens were truncated"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"truncated\":10"), std::string::npos) << r.out;
  r = run_command(build + "/b 2>&1 >/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("sieve: indexing:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("10 text(s) longer than 8 tokens"), std::string::npos) << r.out;
}

// An unknown flag is named before a missing required option (CLI11 checks those first), in
// every command; a flag's help line shows its name only; too few texts are a usage error.
TEST(IndexCli, UsageMistakesAreNamedFirst) {
  for (const char* c : {" search --bogus x", " index build --bogus", " verify score --bogus", " embed --bogus x",
                        " search --index /nonexistent -k 0 --bogus x"}) {
    auto r = run_command(cli_path() + c + " 2>&1");
    EXPECT_EQ(r.exit_code, 2) << c;
    EXPECT_NE(r.out.find("not expected: --bogus"), std::string::npos) << c << "\n" << r.out;
    EXPECT_EQ(r.out.find("is required"), std::string::npos) << c << "\n" << r.out;
  }
  auto r = run_command(cli_path() + " search x 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--index is required"), std::string::npos) << r.out;
  r = run_command(cli_path() + " index build --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--no-overlap "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("{false}"), std::string::npos) << r.out;
  for (const char* texts : {" 'only one'", " < /dev/null"}) {
    r = run_command(cli_path() + " similarity -m " + model_dir() + texts + " 2>&1");
    EXPECT_EQ(r.exit_code, 2) << texts << "\n" << r.out;
    EXPECT_NE(r.out.find("at least two"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("cosine"), std::string::npos) << r.out;  // no header
  }
  r = run_command(cli_path() + " similarity -m " + model_dir() + " 'a dog' 'a cat' 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("0\t1\t"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace sieve
