// Writes to a shard set (issue 59, item 6). The reference is one index over the same documents
// given the same writes: after every add, upsert, delete (by id, by filter) and compaction, the set
// answers every query in every mode, with and without a filter, with the same ids and scores, and
// holds the same live ids. Each write is one transaction: a shard that cannot be written fails the
// batch with nothing applied, and a process that dies at any step of the two-phase commit leaves a
// set whose readers see all of the batch or none of it, which the next writer completes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/file_util.h"
#include "index/ingest.h"
#include "index/shard_set.h"
#include "index/write_lock.h"
#include "index_test_util.h"
#include "sieve/error.h"
#include "sieve/filter.h"
#include "sieve/index.h"
#include "support/test_util.h"

namespace sieve {
namespace {
namespace fs = std::filesystem;
using namespace sieve::test;
using json = nlohmann::json;

// make_docs with metadata: a year and a language.
std::vector<Document> docs_with_metadata(size_t n, size_t first = 0, uint32_t seed = 1) {
  std::vector<Document> docs = make_docs(n, first, seed);
  static const char* const kLangs[] = {"en", "de", "fr"};
  for (size_t i = 0; i < n; ++i) {
    const size_t k = first + i;
    docs[i].metadata = check_metadata(json{{"year", 2010 + static_cast<int>(k % 12)}, {"lang", kLangs[k % 3]}}.dump());
  }
  return docs;
}

std::string write_corpus(const std::string& path, const std::vector<Document>& docs) {
  std::ofstream f(path);
  for (const Document& d : docs)
    f << json{{"_id", d.id}, {"title", d.title}, {"text", d.text}, {"metadata", json::parse(d.metadata)}}.dump() << "\n";
  return path;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The ids a search with `p` returns and their scores.
std::vector<std::pair<std::string, double>> hits(const Index& ix, const std::string& q, const SearchParams& p) {
  std::vector<std::pair<std::string, double>> out;
  for (const Hit& h : ix.search(q, p).hits) out.emplace_back(h.id, h.score);
  return out;
}

std::set<std::string> live_ids(const Index& ix) {
  std::set<std::string> out;
  for (uint32_t d : ix.matching(Filter{}, 0)) out.insert(ix.document(d).id);
  return out;
}

// Two hit lists agree: the same scores place by place (within 1e-5) and the same ids, except
// that documents of equal score may come in another order (each side orders ties by its internal
// ids, which differ once the set's shards and the one index have grown differently) and a tie at
// the cut may keep another of the tied documents.
void expect_same_hits(const std::vector<std::pair<std::string, double>>& a,
                      const std::vector<std::pair<std::string, double>>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i].second, b[i].second, 1e-5) << what << " hit " << i;
  for (size_t i = 0; i < a.size();) {
    size_t j = i + 1;
    while (j < a.size() && std::abs(a[j].second - a[i].second) < 1e-6) ++j;
    if (j < a.size()) {  // a tied group inside the list: the same documents
      std::multiset<std::string> x, y;
      for (size_t t = i; t < j; ++t) {
        x.insert(a[t].first);
        y.insert(b[t].first);
      }
      EXPECT_EQ(x, y) << what << " hits " << i << ".." << j - 1;
    }
    i = j;
  }
}

// The set answers as the one index: same live ids; same hits for every query in dense, BM25 and
// hybrid (weighted: fused by score, so that it does not depend on how ties are ranked), plain and
// filtered.
void expect_same_answers(const Index& one, const Index& set, const std::vector<std::string>& queries,
                         const std::string& when) {
  SCOPED_TRACE(when);
  EXPECT_EQ(live_ids(one), live_ids(set));
  for (const SearchMode mode : {SearchMode::Dense, SearchMode::Bm25, SearchMode::Hybrid})
    for (const char* filter : {"", R"({"year": {"$gte": 2015}})", R"({"lang": {"$in": ["en", "fr"]}})"}) {
      SearchParams p;
      p.mode = mode;
      p.fusion = Fusion::Weighted;
      p.k = 10;
      p.filter = Filter::parse(filter);
      for (const std::string& q : queries)
        expect_same_hits(hits(one, q, p), hits(set, q, p),
                         std::string(search_mode_name(mode)) + " " + filter + " '" + q + "'");
    }
}

// The shard of the set that stores `id` (live), or -1.
int shard_holding(const Index& set, const std::string& id) {
  const auto& shards = index::shards_of(set);
  for (size_t s = 0; s < shards.size(); ++s)
    if (shards[s]->find(id) >= 0) return static_cast<int>(s);
  return -1;
}

class ShardSetWrites : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("set_writes");
    docs_ = docs_with_metadata(90);
    corpus_ = write_corpus(dir_ + "/corpus.jsonl", docs_);
    for (size_t i = 0; i < docs_.size(); i += 9) queries_.push_back(docs_[i].text.substr(0, 60));
    queries_.push_back("the dog bit the man");
    queries_.push_back("green river under the stone bridge");
  }
  std::string dir_, corpus_;
  std::vector<Document> docs_;
  std::vector<std::string> queries_;
};

TEST_F(ShardSetWrites, EveryWriteLeavesTheSetAnsweringAsOneIndex) {
  build_index(model_dir(), corpus_, dir_ + "/one", small_opts());
  build_shard_set(model_dir(), corpus_, dir_ + "/set", 3, small_opts());
  IndexWriter one(dir_ + "/one"), set(dir_ + "/set");
  expect_same_answers(*one.snapshot(), *set.snapshot(), queries_, "as built");

  // Adds: new ids go to the shard their hash names.
  const std::vector<Document> added = docs_with_metadata(30, 1000, 7);
  one.add(added);
  const BuildReport rep = set.add(added);
  EXPECT_EQ(rep.documents, 120u);
  std::set<size_t> owners;
  for (const Document& d : added) {
    const size_t want = index::shard_of_new_id(d.id, 3);
    owners.insert(want);
    EXPECT_EQ(shard_holding(*set.snapshot(), d.id), static_cast<int>(want)) << d.id;
  }
  EXPECT_EQ(owners.size(), 3u) << "the batch should touch every shard";
  expect_same_answers(*one.snapshot(), *set.snapshot(), queries_, "after an add");
  EXPECT_NE(error_of([&] { set.add({added[0]}); }).find("already in the index"), std::string::npos);

  // Upserts: an id the set holds stays in its shard, a new one goes by its hash.
  std::vector<Document> changed = docs_with_metadata(6, 2000, 9);
  const char* const kReplaced[] = {"d3", "d40", "d77", "d1005"};
  std::map<std::string, int> held;
  for (size_t i = 0; i < 4; ++i) {
    changed[i].id = kReplaced[i];
    held[kReplaced[i]] = shard_holding(*set.snapshot(), kReplaced[i]);
  }
  one.upsert(changed);
  EXPECT_EQ(set.upsert(changed).replaced, 4u);
  for (const auto& [id, shard] : held) EXPECT_EQ(shard_holding(*set.snapshot(), id), shard) << id;
  EXPECT_EQ(set.snapshot()->document(static_cast<uint32_t>(set.snapshot()->find("d40"))).text, changed[1].text);
  expect_same_answers(*one.snapshot(), *set.snapshot(), queries_, "after an upsert");

  // Deletes by id: a missing id refuses the batch unless missing_ok.
  const std::string before = read_file(dir_ + "/set/shardset.json");
  EXPECT_NE(error_of([&] { set.remove({"d5", "nope"}); }).find("'nope'"), std::string::npos);
  EXPECT_EQ(read_file(dir_ + "/set/shardset.json"), before);
  EXPECT_GE(set.snapshot()->find("d5"), 0);
  one.remove({"d5", "d50", "d85", "d1003", "nope"}, true);
  const DeleteReport del = set.remove({"d5", "d50", "d85", "d1003", "nope"}, true);
  EXPECT_EQ(del.deleted, 4u);
  EXPECT_EQ(del.missing, std::vector<std::string>{"nope"});
  expect_same_answers(*one.snapshot(), *set.snapshot(), queries_, "after a delete by id");

  // Deletes by filter.
  const Filter de = Filter::parse(R"({"lang": "de"})");
  EXPECT_EQ(one.remove_matching(de).deleted, set.remove_matching(de).deleted);
  expect_same_answers(*one.snapshot(), *set.snapshot(), queries_, "after a delete by filter");
  EXPECT_GT(set.snapshot()->stats().deleted, 0u);

  // A fresh open (another process's view) and a compaction of both.
  expect_same_answers(*one.snapshot(), *Index::open(dir_ + "/set"), queries_, "the set opened afresh");
  one.compact();
  const CompactReport c = set.compact();
  EXPECT_GT(c.removed, 0u);
  EXPECT_EQ(set.snapshot()->stats().deleted, 0u);
  expect_same_answers(*one.snapshot(), *set.snapshot(), queries_, "after compaction");
  IndexOpenOptions verify;
  verify.verify = true;
  expect_same_answers(*one.snapshot(), *Index::open(dir_ + "/set", verify), queries_, "compacted, opened afresh");
  for (const auto& e : fs::recursive_directory_iterator(dir_ + "/set"))
    EXPECT_TRUE(e.path().filename() != index::kNextManifestFile &&
                e.path().string().find(index::kCompactingSuffix) == std::string::npos)
        << "left behind: " << e.path();

  // The free functions (the CLI's) write through the set too; one shard alone is refused.
  EXPECT_EQ(delete_documents(dir_ + "/set", {"d6"}).deleted, 1u);
  EXPECT_LT(Index::open(dir_ + "/set")->find("d6"), 0);
  EXPECT_NE(error_of([&] { delete_documents(dir_ + "/set/shard-001", {"d8"}); }).find("write through the set"),
            std::string::npos);
  EXPECT_NE(error_of([&] { IndexWriter w(dir_ + "/set/shard-000"); }).find("write through the set"), std::string::npos);
  const std::string more = write_corpus(dir_ + "/more.jsonl", docs_with_metadata(4, 3000, 11));
  EXPECT_EQ(add_to_index(dir_ + "/set", more, small_opts()).added, 4u);
  EXPECT_GE(Index::open(dir_ + "/set")->find("d3002"), 0);
}

// A shard that cannot be written (another writer holds it) fails the whole batch: nothing of it
// in any shard, the set's manifest unchanged, nothing prepared left; the same batch then succeeds.
TEST_F(ShardSetWrites, AShardThatCannotBeWrittenFailsTheBatchWithNothingApplied) {
  build_shard_set(model_dir(), corpus_, dir_ + "/set", 3, small_opts());
  IndexWriter set(dir_ + "/set");
  std::vector<Document> batch = docs_with_metadata(12, 5000, 3);
  batch[0].id = "d4";  // an upsert of a document of shard 0
  std::set<size_t> owners;
  for (const Document& d : batch) owners.insert(shard_holding(*set.snapshot(), d.id) >= 0 ? 0 : index::shard_of_new_id(d.id, 3));
  ASSERT_EQ(owners.size(), 3u);
  const std::string manifest = read_file(dir_ + "/set/shardset.json");
  const std::set<std::string> before = live_ids(*set.snapshot());
  const auto answers = hits(*set.snapshot(), queries_[0], SearchParams{});
  {
    index::WriteLock busy(dir_ + "/set/shard-002");
    const std::string err = error_of([&] { set.upsert(batch); });
    EXPECT_NE(err.find("shard-002"), std::string::npos) << err;
    EXPECT_NE(err.find("nothing of the batch"), std::string::npos) << err;
    for (const auto& snap : {set.snapshot(), std::shared_ptr<const Index>(Index::open(dir_ + "/set"))}) {
      EXPECT_EQ(live_ids(*snap), before);
      EXPECT_EQ(hits(*snap, queries_[0], SearchParams{}), answers);
    }
    EXPECT_EQ(read_file(dir_ + "/set/shardset.json"), manifest);
    for (const char* s : {"shard-000", "shard-001", "shard-002"})
      EXPECT_FALSE(fs::exists(dir_ + "/set/" + s + "/" + index::kNextManifestFile)) << s;
    // A delete that needs the locked shard too.
    EXPECT_NE(error_of([&] { set.remove({"d4", "d89"}); }).find("shard-002"), std::string::npos);
    EXPECT_EQ(live_ids(*Index::open(dir_ + "/set")), before);
  }
  set.upsert(batch);
  IndexOpenOptions verify;
  verify.verify = true;
  const auto after = Index::open(dir_ + "/set", verify);
  EXPECT_EQ(live_ids(*after).size(), before.size() + batch.size() - 1);
  EXPECT_EQ(after->document(static_cast<uint32_t>(after->find("d4"))).text, batch[0].text);
}

// A shard server's copies (index::ShardCopies, what a Ray shard replica holds): after a write to
// the set, the copy the new set records is opened when first named, the old one still answers
// for searches on the old snapshot, and a copy that is on no disk is refused.
TEST_F(ShardSetWrites, AShardServerFollowsTheCopiesItsSetCommits) {
  build_shard_set(model_dir(), corpus_, dir_ + "/set", 3, small_opts());
  const std::string shard = dir_ + "/set/shard-000";
  size_t opened = 0;
  index::ShardCopies<Index> copies(shard, [&](const std::string&, const index::RecordedShard& at) {
    ++opened;
    IndexOpenOptions o;
    o.load_encoder = false;
    return std::shared_ptr<const Index>(index::open_shard_copy(at, o));
  });
  const std::string before = index::shard_identity(shard);
  const auto old_copy = copies.get(before);
  EXPECT_EQ(old_copy->size(), 32u);
  IndexWriter w(dir_ + "/set");
  std::vector<Document> add = docs_with_metadata(1, 8000, 3);
  add[0].id = "d1";  // an upsert of shard 0's document: shard 0 gets a new copy
  w.upsert(add);
  const std::string after = index::shard_identity(shard);
  ASSERT_NE(after, before);
  EXPECT_EQ(index::shard_set_identities(dir_ + "/set")[0], after);
  EXPECT_EQ(copies.get(before), old_copy);  // held: no reopening
  const auto new_copy = copies.get(after);
  EXPECT_EQ(opened, 2u);
  EXPECT_EQ(new_copy->size(), 33u);
  EXPECT_EQ(new_copy->find("d1"), 32);  // the new copy serves the replacement...
  EXPECT_EQ(old_copy->find("d1"), 1);   // ...the old one the document it replaced
  EXPECT_EQ(copies.latest(), after);
  EXPECT_EQ(copies.get(""), new_copy);
  EXPECT_NE(error_of([&] { copies.get("deadbeef"); }).find("not on disk"), std::string::npos);
}

// --- a process that dies mid-write ------------------------------------------------------------
// Each write runs in a process of its own (shard_set_crash_child) that exits at once (no cleanup,
// as a kill -9) at one step of the commit.

int crash_child(const std::string& set, const std::string& op, const std::string& step) {
  const CommandResult r = run_command(std::string(SIEVE_CRASH_CHILD) + " " + set + " " + op + " " + step + " 2>&1");
  if (r.exit_code != 9) std::fprintf(stderr, "%s", r.out.c_str());
  return r.exit_code;
}

TEST_F(ShardSetWrites, AProcessThatDiesAtAnyStepLeavesAllOfTheBatchOrNone) {
  const std::string tmpl = dir_ + "/tmpl";
  build_shard_set(model_dir(), corpus_, tmpl, 3, small_opts());
  const std::vector<std::string> gone = {"d2", "d31", "d64", "d88"};  // the child's
  struct Case {
    std::string op, step;
    bool applied;  // whether the batch is visible after the death
  };
  const std::vector<Case> cases = {{"add", "prepared", false},           {"add", "committed", true},
                                   {"delete", "prepared", false},        {"delete", "committed", true},
                                   {"compact", "compact-prepared", false}, {"compact", "compact-committed", true}};
  std::set<std::string> original;
  for (const Document& doc : docs_) original.insert(doc.id);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op + " " + c.step);
    const std::string d = dir_ + "/" + c.op + "-" + c.step;
    fs::copy(tmpl, d, fs::copy_options::recursive);
    ASSERT_EQ(crash_child(d, c.op, c.step), 9) << "the child did not die at the step";
    std::set<std::string> want = original;
    if (c.op == "add" && c.applied)
      for (int i = 0; i < 9; ++i) want.insert("c" + std::to_string(i));
    if (c.op == "compact" || (c.op == "delete" && c.applied))
      for (const std::string& id : gone) want.erase(id);
    // A reader (no lock, no repair) sees all of the batch or none of it.
    IndexOpenOptions plain;
    plain.load_encoder = false;
    const auto reader = Index::open(d, plain);
    EXPECT_EQ(live_ids(*reader), want);
    // The compaction died at the first shard with dead documents (shard 0: d2, d31); shard 2
    // (d64, d88) was not reached.
    if (c.op == "compact") EXPECT_EQ(reader->stats().deleted, c.applied ? 2u : 4u);
    if (c.op == "add" && c.applied)
      EXPECT_EQ(reader->document(static_cast<uint32_t>(reader->find("c4"))).text, "a document added while dying number 4");
    // The next writer completes or discards what it finds, and writes on.
    IndexWriter w(d);
    w.add(docs_with_metadata(2, 9000, 13));
    want.insert("d9000");
    want.insert("d9001");
    IndexOpenOptions verify;
    verify.verify = true;
    EXPECT_EQ(live_ids(*Index::open(d, verify)), want);
    for (const auto& e : fs::recursive_directory_iterator(d))
      EXPECT_TRUE(e.path().filename() != index::kNextManifestFile &&
                  e.path().string().find(index::kCompactingSuffix) == std::string::npos)
          << "left behind: " << e.path();
  }
  // A child that finishes (no such step) exits 0: the steps above are the write's own.
  const std::string d = dir_ + "/no-step";
  fs::copy(tmpl, d, fs::copy_options::recursive);
  EXPECT_EQ(crash_child(d, "add", "nowhere"), 0);
  EXPECT_GE(Index::open(d)->find("c8"), 0);
}

}  // namespace
}  // namespace sieve
