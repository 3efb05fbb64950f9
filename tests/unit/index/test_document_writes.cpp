// Documents that change (issue 59): metadata stored and returned; filtered search in every mode
// against brute force over the passing documents; delete and upsert through IndexWriter and the
// free functions, each batch all or nothing and seen by a fresh open; expiry at a given clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>
#include <nlohmann/json.hpp>
#include <set>

#include "core/file_util.h"
#include "index/manifest.h"
#include "index/vector_index.h"
#include "index/write_lock.h"
#include "index_test_util.h"

using namespace sieve;
using namespace sieve::test;
using json = nlohmann::json;

namespace {

// make_docs with metadata: year 2010 + i % 15, lang by i % 4, a tag list, and every 10th
// document without metadata.
std::vector<Document> docs_with_metadata(size_t n, size_t first = 0) {
  std::vector<Document> docs = make_docs(n, first);
  static const char* const kLangs[] = {"en", "de", "fr", "es"};
  for (size_t i = 0; i < n; ++i) {
    const size_t k = first + i;
    if (k % 10 == 9) continue;
    json m = {{"year", 2010 + static_cast<int>(k % 15)}, {"lang", kLangs[k % 4]}};
    m["tags"] = k % 3 == 0 ? json::array({"x", "y"}) : json::array({"y"});
    docs[i].metadata = check_metadata(m.dump());
  }
  return docs;
}

std::string write_jsonl_with_metadata(const std::string& dir, const std::vector<Document>& docs) {
  const std::string path = dir + "/corpus.jsonl";
  std::ofstream f(path);
  for (const Document& d : docs) {
    json j = {{"_id", d.id}, {"title", d.title}, {"text", d.text}};
    if (!d.metadata.empty()) j["metadata"] = json::parse(d.metadata);
    if (d.expires_at != 0) j["expires_at"] = d.expires_at;
    f << j.dump() << "\n";
  }
  return path;
}

// The exact filtered top k: every document the index says is live and passes, scored against
// the stored keys, best first, ties to the lower id.
std::vector<uint32_t> brute_force(const Index& ix, const Filter& f, const std::string& query, size_t k,
                                  double now = 0) {
  const Embeddings q = ix.encoder()->encode({query});
  std::vector<std::pair<double, uint32_t>> all;
  for (uint32_t d : ix.matching(f, now)) {
    const std::vector<float> key = ix.key(d);
    all.emplace_back(index::inner_product(q.pooled.data(), key.data(), key.size()), d);
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<uint32_t> out;
  for (size_t i = 0; i < all.size() && i < k; ++i) out.push_back(all[i].second);
  return out;
}

std::vector<uint32_t> hit_docs(const SearchResult& r) {
  std::vector<uint32_t> out;
  for (const Hit& h : r.hits) out.push_back(h.doc);
  return out;
}

const char* const kQueries[] = {"red car left", "the dog bit the man", "green river stone", "small bird on the tree"};
const char* const kFilters[] = {
    R"({})",
    R"({"lang": "en"})",
    R"({"year": {"$gte": 2020}, "lang": {"$in": ["en", "de"]}})",
    R"({"$or": [{"tags": "x"}, {"year": 2011}]})",
    R"({"lang": {"$ne": "fr"}})",
    R"({"year": 2013, "lang": "en"})",  // none: 2013 needs k % 15 == 3, en needs k % 4 == 0
    R"({"year": {"$exists": false}})",
};

}  // namespace

// Metadata from a JSONL corpus is stored compact and returned by document(); an index without
// any metadata keeps its format version (3 or lower: older sieves still read it), one with metadata is 4.
TEST(DocumentWrites, MetadataIsStoredAndReturned) {
  const std::string dir = make_temp_dir("dw_meta");
  const auto docs = docs_with_metadata(40);
  build_index(model_dir(), write_jsonl_with_metadata(dir, docs), dir + "/ix", small_opts());
  build_index(model_dir(), write_jsonl(dir, "plain.jsonl", make_docs(20)), dir + "/plain", small_opts());
  auto ix = Index::open(dir + "/ix");
  for (uint32_t d = 0; d < docs.size(); ++d) {
    EXPECT_EQ(ix->document(d).metadata, docs[d].metadata) << d;
    EXPECT_EQ(ix->document(d).expires_at, 0.0);
  }
  EXPECT_TRUE(ix->stats().has_metadata);
  EXPECT_EQ(json::parse(read_file(dir + "/ix/manifest.json"))["version"], 4);
  EXPECT_LE(json::parse(read_file(dir + "/plain/manifest.json"))["version"].get<int>(), 3);
  EXPECT_FALSE(Index::open(dir + "/plain")->stats().has_metadata);
}

// Every hit passes the filter in dense, BM25 and hybrid search; dense equals the exact filtered
// top 10 (Flat, and HNSW with its planner), BM25 equals the unfiltered BM25 list kept to the
// passing documents, and K hits come back whenever K documents pass.
TEST(DocumentWrites, FilteredSearchEqualsBruteForceInEveryMode) {
  const std::string dir = make_temp_dir("dw_filter");
  const auto docs = docs_with_metadata(300);
  for (const std::string factory : {"Flat", "HNSW32", "HNSW32 walk"}) {
    const bool walk = factory == "HNSW32 walk";
    IndexBuildOptions o = small_opts();
    o.vector_factory = walk ? "HNSW32" : factory;
    const std::string out = dir + "/" + (walk ? std::string("walk") : factory);
    build_index(model_dir(), write_jsonl_with_metadata(dir, docs), out, o);
    auto ix = Index::open(out);
    for (const char* ftext : kFilters) {
      const Filter f = Filter::parse(ftext);
      const std::vector<uint32_t> pass = ix->matching(f);
      for (const char* q : kQueries) {
        SearchParams p;
        p.k = 10;
        p.filter = f;
        // 300 documents: the planner scans; "walk" forces the graph's filtered search.
        p.filter_plan = walk ? FilterPlan::Walk : FilterPlan::Auto;
        const auto want = brute_force(*ix, f, q, 10);
        const auto dense = ix->search(q, p);
        EXPECT_EQ(dense.hits.size(), std::min<size_t>(10, pass.size())) << ftext;
        if (!walk) {
          EXPECT_EQ(hit_docs(dense), want) << factory << " " << ftext << " " << q;
        } else {
          size_t found = 0;
          for (uint32_t d : hit_docs(dense)) found += std::count(want.begin(), want.end(), d);
          EXPECT_GE(found, want.size() * 95 / 100) << factory << " " << ftext << " " << q;
        }
        // BM25: the unfiltered list, deep enough to hold every document, kept to the passing ones.
        p.mode = SearchMode::Bm25;
        SearchParams deep;
        deep.mode = SearchMode::Bm25;
        deep.k = docs.size();
        std::vector<std::pair<uint32_t, double>> ref;
        for (const Hit& h : ix->search(q, deep).hits)
          if (std::binary_search(pass.begin(), pass.end(), h.doc)) ref.emplace_back(h.doc, h.score);
        const auto bm = ix->search(q, p);
        ASSERT_EQ(bm.hits.size(), std::min<size_t>(10, ref.size())) << ftext << " " << q;
        for (size_t i = 0; i < bm.hits.size(); ++i) {
          EXPECT_EQ(bm.hits[i].doc, ref[i].first) << ftext << " " << q << " rank " << i;
          EXPECT_DOUBLE_EQ(bm.hits[i].score, ref[i].second);
        }
        p.mode = SearchMode::Hybrid;
        for (const Hit& h : ix->search(q, p).hits)
          EXPECT_TRUE(f.matches(ix->document(h.doc).metadata)) << ftext << " hybrid hit " << h.id;
      }
    }
  }
}

// Deletes through a writer: the ids are gone from find(), from every mode's hits and from a fresh
// open; an id the index does not hold refuses the batch with nothing deleted, unless missing_ok.
TEST(DocumentWrites, DeleteByIdAndByFilter) {
  const std::string dir = make_temp_dir("dw_delete");
  const auto docs = docs_with_metadata(120);
  build_index(model_dir(), write_jsonl_with_metadata(dir, docs), dir + "/ix", small_opts());
  IndexWriter w(dir + "/ix");
  EXPECT_THROW(w.remove({"d1", "nope"}), Error);
  EXPECT_GE(w.snapshot()->find("d1"), 0) << "a refused batch deleted something";
  DeleteReport r = w.remove({"d1", "d2", "nope"}, /*missing_ok=*/true);
  EXPECT_EQ(r.deleted, 2u);
  EXPECT_EQ(r.missing, std::vector<std::string>{"nope"});
  EXPECT_EQ(r.documents, 118u);
  // By filter: every German document.
  const Filter de = Filter::parse(R"({"lang": "de"})");
  const size_t german = w.snapshot()->matching(de).size();
  EXPECT_EQ(w.remove_matching(de).deleted, german);
  EXPECT_EQ(w.remove_matching(de).deleted, 0u);
  for (auto ix : {w.snapshot(), std::shared_ptr<const Index>(Index::open(dir + "/ix"))}) {
    EXPECT_EQ(ix->find("d1"), -1);
    EXPECT_EQ(ix->find("d2"), -1);
    EXPECT_EQ(ix->stats().deleted, 2 + german);
    EXPECT_TRUE(ix->matching(de).empty());
    for (const char* q : kQueries)
      for (SearchMode m : {SearchMode::Dense, SearchMode::Bm25, SearchMode::Hybrid}) {
        SearchParams p;
        p.mode = m;
        p.k = 50;
        for (const Hit& h : ix->search(q, p).hits) {
          EXPECT_TRUE(h.id != "d1" && h.id != "d2") << h.id;
          EXPECT_FALSE(de.matches(ix->document(h.doc).metadata)) << h.id;
        }
      }
    // Dense still equals brute force over the live documents.
    SearchParams p;
    p.k = 10;
    EXPECT_EQ(hit_docs(ix->search(kQueries[0], p)), brute_force(*ix, Filter(), kQueries[0], 10));
  }
  // The free function, on the folder.
  EXPECT_THROW(delete_documents(dir + "/ix", {"d1"}), Error);  // already gone
  EXPECT_EQ(delete_documents(dir + "/ix", {"d3"}).deleted, 1u);
  EXPECT_EQ(Index::open(dir + "/ix")->find("d3"), -1);
  EXPECT_THROW(delete_matching(dir + "/ix", Filter()), Error);
}

// An upsert replaces a document's text, key, token states, BM25 terms and metadata in one
// commit: the old text is found no more, the new one is; a deleted id can be added again.
TEST(DocumentWrites, UpsertReplacesEverythingOfTheDocument) {
  const std::string dir = make_temp_dir("dw_upsert");
  auto docs = docs_with_metadata(80);
  build_index(model_dir(), write_jsonl_with_metadata(dir, docs), dir + "/ix", small_opts());
  IndexWriter w(dir + "/ix");
  Document fresh{"d5", "", "zebra quartz volcano", R"({"lang":"nl"})", 0};
  EXPECT_THROW(w.add({fresh}), Error);  // held: add refuses, upsert replaces
  const BuildReport rep = w.upsert({fresh, docs_with_metadata(1, 500)[0]});
  EXPECT_EQ(rep.replaced, 1u);
  EXPECT_EQ(rep.added, 2u);
  for (auto ix : {w.snapshot(), std::shared_ptr<const Index>(Index::open(dir + "/ix"))}) {
    const int64_t d = ix->find("d5");
    ASSERT_GE(d, 80);  // a new internal id
    EXPECT_EQ(ix->document(static_cast<uint32_t>(d)).text, "zebra quartz volcano");
    EXPECT_EQ(ix->document(static_cast<uint32_t>(d)).metadata, R"({"lang":"nl"})");
    EXPECT_FALSE(ix->live(5));
    // The key and token states are the new text's (the fixture encoder run on it directly).
    const Embeddings ref = encode_docs({fresh});
    const auto key = ix->key(static_cast<uint32_t>(d));
    for (size_t j = 0; j < key.size(); ++j) ASSERT_NEAR(key[j], ref.pooled[j], 1e-5);
    EXPECT_EQ(ix->tokens(static_cast<uint32_t>(d)).length, ref.tokens[0].length);
    SearchParams p;
    p.mode = SearchMode::Bm25;
    p.k = 5;
    auto hits = ix->search("zebra quartz", p).hits;
    ASSERT_FALSE(hits.empty());
    EXPECT_EQ(hits[0].id, "d5");
    // The old text's words find the old document no more.
    p.k = 100;
    for (const Hit& h : ix->search(docs[5].text, p).hits) EXPECT_NE(h.doc, 5u);
    p.mode = SearchMode::Dense;
    for (const Hit& h : ix->search(docs[5].text, p).hits) EXPECT_NE(h.doc, 5u);
    EXPECT_EQ(ix->matching(Filter::parse(R"({"lang": "nl"})")), std::vector<uint32_t>{static_cast<uint32_t>(d)});
  }
  w.remove({"d7"});
  EXPECT_EQ(w.add({docs[7]}).added, 1u);  // deleted: its id may come back
  EXPECT_GE(w.snapshot()->find("d7"), 80);
  // upsert through add_to_index (the CLI's path) replaces too.
  Document again = docs[9];
  again.text = "completely other words here";
  const BuildReport r2 = [&] {
    IndexBuildOptions o = small_opts();
    o.upsert = true;
    return add_to_index(dir + "/ix", write_jsonl_with_metadata(dir, {again}), o);
  }();
  EXPECT_EQ(r2.replaced, 1u);
  auto ix = Index::open(dir + "/ix");
  EXPECT_EQ(ix->document(static_cast<uint32_t>(ix->find("d9"))).text, "completely other words here");
  EXPECT_EQ(ix->stats().deleted, 3u);  // d5, d7 and d9's first documents
}

// Expiry: a document is visible before its instant and gone from then on, in search, find() and
// matching(); the clock is SearchParams::now (and the system clock by default).
TEST(DocumentWrites, ExpiredDocumentsAreInvisible) {
  const std::string dir = make_temp_dir("dw_expiry");
  auto docs = docs_with_metadata(60);
  docs[3].expires_at = 2000;
  docs[4].expires_at = 3000;
  build_index(model_dir(), write_jsonl_with_metadata(dir, docs), dir + "/ix", small_opts());
  auto ix = Index::open(dir + "/ix");
  EXPECT_EQ(ix->document(3).expires_at, 2000.0);
  EXPECT_EQ(ix->find("d3"), -1);  // the system clock is long past 2000 s after 1970
  for (double now : {1999.0, 2000.0, 2500.0, 3000.0}) {
    EXPECT_EQ(ix->live(3, now), now < 2000) << now;
    EXPECT_EQ(ix->live(4, now), now < 3000) << now;
    SearchParams p;
    p.k = 60;
    p.now = now;
    p.mode = SearchMode::Bm25;
    std::set<uint32_t> seen;
    for (const char* q : {docs[3].text.c_str(), docs[4].text.c_str()})
      for (SearchMode m : {SearchMode::Dense, SearchMode::Bm25}) {
        p.mode = m;
        for (const Hit& h : ix->search(q, p).hits) seen.insert(h.doc);
      }
    EXPECT_EQ(seen.count(3), now < 2000 ? 1u : 0u) << now;
    EXPECT_EQ(seen.count(4), now < 3000 ? 1u : 0u) << now;
  }
}

// Bad metadata refuses the whole batch and writes nothing.
TEST(DocumentWrites, BadMetadataRefusesTheBatch) {
  const std::string dir = make_temp_dir("dw_bad");
  build_index(model_dir(), write_jsonl(dir, "a.jsonl", make_docs(20)), dir + "/ix", small_opts());
  IndexWriter w(dir + "/ix");
  const std::string before = read_file(dir + "/ix/manifest.json");
  auto good = make_docs(2, 100);
  for (const char* bad : {R"({"a": {"b": 1}})", R"([1, 2])", R"({"$x": 1})", R"({"a": [1]})", "not json"}) {
    auto batch = good;
    batch[1].metadata = bad;
    EXPECT_THROW(w.add(batch), Error) << bad;
  }
  auto batch = good;
  batch[0].expires_at = -5;
  EXPECT_THROW(w.add(batch), Error);
  EXPECT_EQ(read_file(dir + "/ix/manifest.json"), before);
  EXPECT_EQ(w.snapshot()->find("d100"), -1);
}

// Metadata added to an index built without any: the earlier documents get none, the new ones are
// filtered on at once (in the writer's snapshot and in a fresh open).
TEST(DocumentWrites, MetadataAddedToAnIndexWithoutAny) {
  const std::string dir = make_temp_dir("dw_later");
  build_index(model_dir(), write_jsonl(dir, "a.jsonl", make_docs(30)), dir + "/ix", small_opts());
  IndexWriter w(dir + "/ix");
  auto added = docs_with_metadata(4, 100);
  w.add(added);
  for (auto ix : {w.snapshot(), std::shared_ptr<const Index>(Index::open(dir + "/ix"))}) {
    EXPECT_TRUE(ix->stats().has_metadata);
    EXPECT_EQ(ix->document(0).metadata, "");
    EXPECT_EQ(ix->document(31).metadata, added[1].metadata);
    const Filter en = Filter::parse(R"({"lang": "en"})");
    std::vector<uint32_t> want;
    for (uint32_t d = 30; d < 34; ++d)
      if (en.matches(added[d - 30].metadata)) want.push_back(d);
    ASSERT_FALSE(want.empty());
    EXPECT_EQ(ix->matching(en), want);
    SearchParams p;
    p.k = 10;
    p.filter = en;
    EXPECT_EQ(hit_docs(ix->search(kQueries[0], p)).size(), want.size());
  }
}

namespace {

// The survivors of `ix` as documents (metadata and expiry kept), in internal-id order.
std::vector<Document> survivors(const Index& ix, double now) {
  std::vector<Document> out;
  for (uint32_t d = 0; d < ix.size(); ++d)
    if (ix.live(d, now)) out.push_back(ix.document(d));
  return out;
}

}  // namespace

// Half deleted, some replaced, some expired, then compacted: the index holds exactly the
// survivors (documents, metadata, token states byte for byte), no deleted count, less disk, and
// searches as a fresh build of the survivors: dense (Flat) the same ids and scores, BM25 the same
// ids and scores (its statistics no longer count the dead), filters the same answers.
TEST(DocumentWrites, CompactionEqualsAFreshBuildOfTheSurvivors) {
  const std::string dir = make_temp_dir("dw_compact");
  auto docs = docs_with_metadata(200);
  for (size_t i = 0; i < docs.size(); i += 17) docs[i].expires_at = 1000;  // long expired
  IndexBuildOptions o = small_opts();
  o.vector_factory = "Flat";
  build_index(model_dir(), write_jsonl_with_metadata(dir, docs), dir + "/ix", o);
  IndexWriter w(dir + "/ix");
  std::vector<std::string> gone;
  for (size_t i = 1; i < docs.size(); i += 2) gone.push_back(docs[i].id);
  w.remove(gone);
  auto replaced = docs_with_metadata(3, 0);  // d0, d1 (deleted: added anew), d2
  for (auto& d : replaced) d.text = "replacement text " + d.id;
  w.upsert(replaced);
  const auto before = w.snapshot();
  const double now = 2e9;
  const std::vector<Document> keep = survivors(*before, now);
  std::vector<TokenStates> keep_tokens;
  for (uint32_t d = 0; d < before->size(); ++d)
    if (before->live(d, now)) keep_tokens.push_back(before->tokens(d));
  const uint64_t bytes_before = before->stats().bytes_on_disk;
  CompactOptions co;
  co.now = now;
  const CompactReport rep = w.compact(co);
  EXPECT_EQ(rep.documents, keep.size());
  EXPECT_EQ(rep.removed, before->size() - keep.size());
  for (auto ix : {w.snapshot(), std::shared_ptr<const Index>(Index::open(dir + "/ix"))}) {
    ASSERT_EQ(ix->size(), keep.size());
    EXPECT_EQ(ix->stats().deleted, 0u);
    EXPECT_LT(ix->stats().bytes_on_disk, bytes_before);
    for (uint32_t d = 0; d < keep.size(); ++d) {
      const Document got = ix->document(d);
      ASSERT_EQ(got.id, keep[d].id);
      EXPECT_EQ(got.text, keep[d].text);
      EXPECT_EQ(got.metadata, keep[d].metadata);
      EXPECT_EQ(ix->tokens(d).values, keep_tokens[d].values) << "token states are copied, not re-encoded";
    }
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/ix.compacting"));
  // A fresh build of the survivors (their stored texts, metadata and expiry).
  build_index(model_dir(), write_jsonl_with_metadata(dir, keep), dir + "/fresh", o);
  auto fresh = Index::open(dir + "/fresh");
  auto ix = w.snapshot();
  for (const char* ftext : kFilters)
    for (const char* q : kQueries)
      for (SearchMode m : {SearchMode::Dense, SearchMode::Bm25, SearchMode::Hybrid}) {
        SearchParams p;
        p.mode = m;
        p.k = 10;
        p.filter = Filter::parse(ftext);
        p.now = now;
        const auto a = ix->search(q, p).hits, b = fresh->search(q, p).hits;
        ASSERT_EQ(a.size(), b.size()) << q << " " << ftext;
        for (size_t i = 0; i < a.size(); ++i) {
          EXPECT_EQ(a[i].id, b[i].id) << q << " " << ftext << " mode " << static_cast<int>(m) << " rank " << i;
          // Keys: the same encoder on the same texts in other batches (1e-5); BM25: the same statistics.
          EXPECT_NEAR(a[i].score, b[i].score, 1e-4) << q;
        }
      }
}

// Writes during a compaction are not lost: a thread adds and deletes through the writer while
// another compacts; afterwards every acknowledged add is there and every acknowledged delete gone.
// One compaction at a time: while another holds the index's compact.lock, a compaction is
// refused with words that say so, and the index is left as it was.
TEST(DocumentWrites, ASecondCompactionAtOnceIsRefused) {
  const std::string dir = make_temp_dir("dw_compact_lock");
  build_index(model_dir(), write_jsonl_with_metadata(dir, docs_with_metadata(20)), dir + "/ix", small_opts());
  EXPECT_EQ(delete_documents(dir + "/ix", {"d3"}).deleted, 1u);
  {
    index::WriteLock other(dir + "/ix", "compact.lock", "held by the test");
    EXPECT_NE(error_of([&] { compact_index(dir + "/ix"); }).find("is being compacted"), std::string::npos);
    EXPECT_EQ(Index::open(dir + "/ix")->stats().deleted, 1u);
  }
  EXPECT_EQ(compact_index(dir + "/ix").removed, 1u);  // once it is free
}

TEST(DocumentWrites, WritesDuringACompactionAreCarriedOver) {
  const std::string dir = make_temp_dir("dw_compact_writes");
  const auto docs = docs_with_metadata(300);
  IndexBuildOptions o = small_opts();
  o.vector_factory = "HNSW32";
  build_index(model_dir(), write_jsonl_with_metadata(dir, docs), dir + "/ix", o);
  IndexWriter w(dir + "/ix");
  std::vector<std::string> half;
  for (size_t i = 0; i < docs.size(); i += 2) half.push_back(docs[i].id);
  w.remove(half);
  std::atomic<bool> done{false};
  std::vector<std::string> added, deleted;
  std::thread writer([&] {
    for (size_t b = 0; !done || b < 3; ++b) {
      auto batch = docs_with_metadata(2, 1000 + 2 * b);
      w.add(batch);
      for (const auto& d : batch) added.push_back(d.id);
      const std::string victim = docs[1 + 2 * b].id;
      w.remove({victim});
      deleted.push_back(victim);
      if (b > 40) break;
    }
  });
  const CompactReport rep = w.compact();
  done = true;
  writer.join();
  EXPECT_GT(rep.removed, 0u);
  for (auto ix : {w.snapshot(), std::shared_ptr<const Index>(Index::open(dir + "/ix"))}) {
    for (const auto& id : added) EXPECT_GE(ix->find(id), 0) << id;
    for (const auto& id : deleted) EXPECT_EQ(ix->find(id), -1) << id;
    for (const auto& id : half) EXPECT_EQ(ix->find(id), -1) << id;
    EXPECT_EQ(ix->matching(Filter()).size(), 150 + added.size() - deleted.size());
  }
}
