// The semantic cache (issue 60): a lookup serves an entry only when the gate accepts it, never one
// of another scope, never after its expiry; invalidation by id and by scope; bad input refused
// with the field named and nothing stored. On the fixture encoder with the F1 verifier at a
// threshold set here (what is tested is the cache's logic); the shipped gate on the real
// all-MiniLM-L6-v2 refuses the negated question of the README.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "core/file_util.h"
#include "sieve/cache.h"
#include "sieve/error.h"
#include "sieve/model.h"
#include "support/fixtures.h"
#include "support/test_util.h"

namespace sieve {
namespace {
namespace fs = std::filesystem;

struct FakeClock {
  double t = 2.0e9;  // 2033
  std::function<double()> fn() {
    return [this] { return t; };
  }
};

std::string fixture_model() {
  static const std::string dir = [] {
    const std::string d = test::make_temp_dir("cache_model") + "/model";
    write_fixture_model(d, test::tiny_model_options(61));
    return d;
  }();
  return dir;
}

// A cache on the fixture model whose gate is F1 at `threshold`.
std::unique_ptr<SemanticCache> fixture_cache(const std::string& dir, double threshold, FakeClock* clock = nullptr) {
  CacheOptions o;
  o.model_dir = fixture_model();
  o.verifier = "F1";
  o.threshold = threshold;
  if (clock) o.clock = clock->fn();
  return SemanticCache::open(dir, o);
}

TEST(SemanticCache, AnEmptyCacheMissesAndCreatesNothing) {
  const std::string dir = test::make_temp_dir("cache_empty") + "/c";
  auto c = fixture_cache(dir, 0.5);
  const CacheLookup r = c->lookup("the dog bit the man");
  EXPECT_FALSE(r.hit);
  EXPECT_EQ(r.candidates, 0u);
  EXPECT_EQ(r.threshold, 0.5);
  EXPECT_EQ(c->size(), 0u);
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_EQ(c->compact().documents_before, 0u);  // nothing stored: nothing to do
  EXPECT_FALSE(fs::exists(dir));
  CacheEntry e;
  EXPECT_FALSE(c->get("x", &e));
  EXPECT_EQ(c->invalidate({"x"}), 0u);
}

TEST(SemanticCache, AHitIsTheEntryTheGateAcceptsAndStoringAgainReplacesIt) {
  const std::string dir = test::make_temp_dir("cache_hit") + "/c";
  auto c = fixture_cache(dir, 0.99);
  const std::string id = c->store("the dog bit the man", "answer one");
  EXPECT_EQ(id, cache_entry_id("the dog bit the man", {}));
  c->store("a red car left of the house", "answer two");
  CacheLookup r = c->lookup("the dog bit the man");
  ASSERT_TRUE(r.hit);
  EXPECT_EQ(r.id, id);
  EXPECT_EQ(r.answer, "answer one");
  EXPECT_EQ(r.prompt, "the dog bit the man");
  EXPECT_GE(r.score, 0.99);
  EXPECT_NEAR(r.stage1_score, 1.0, 1e-4);  // the same text: cosine 1
  // Another question is a miss even though it is the nearest entry: the gate rejects it, and the
  // answer says how near it came.
  r = c->lookup("the man bit the dog");
  EXPECT_FALSE(r.hit);
  EXPECT_TRUE(r.answer.empty());
  EXPECT_LT(r.score, 0.99);
  EXPECT_GT(r.candidates, 0u);
  // The same prompt in the same scope has one entry: storing it again replaces the answer.
  EXPECT_EQ(c->store("the dog bit the man", "answer three"), id);
  EXPECT_EQ(c->lookup("the dog bit the man").answer, "answer three");
  EXPECT_EQ(c->size(), 2u);
  // Reopened (another process), the entries are there.
  auto again = fixture_cache(dir, 0.99);
  EXPECT_EQ(again->lookup("the dog bit the man").answer, "answer three");
  // Without the gate's threshold the acceptance is the threshold's: at -inf everything is a hit.
  auto lax = fixture_cache(dir, -1e9);
  EXPECT_TRUE(lax->lookup("the man bit the dog").hit);
}

TEST(SemanticCache, ALookupNeverSeesAnotherScope) {
  const std::string dir = test::make_temp_dir("cache_scope") + "/c";
  auto c = fixture_cache(dir, -1e9);  // every candidate accepted: only the scope keeps entries apart
  const std::string prompt = "the cat sat on the mat";
  c->store(prompt, "for tenant a", {{"tenant", "a"}});
  c->store(prompt, "for tenant a on model m", {{"tenant", "a"}, {"model", "m"}});
  c->store(prompt + " today", "for tenant b", {{"tenant", "b"}});
  EXPECT_EQ(c->lookup(prompt, {{"tenant", "a"}}).answer, "for tenant a");
  EXPECT_EQ(c->lookup(prompt, {{"tenant", "a"}, {"model", "m"}}).answer, "for tenant a on model m");
  EXPECT_EQ(c->lookup(prompt, {{"tenant", "b"}}).answer, "for tenant b");
  EXPECT_FALSE(c->lookup(prompt, {{"tenant", "c"}}).hit);
  EXPECT_FALSE(c->lookup(prompt).hit);  // the empty scope is a scope of its own
  EXPECT_FALSE(c->lookup(prompt, {{"model", "m"}}).hit);
  // Invalidation by a partial scope: every entry of tenant a, whatever its model.
  EXPECT_EQ(c->invalidate_scope({{"tenant", "a"}}), 2u);
  EXPECT_FALSE(c->lookup(prompt, {{"tenant", "a"}}).hit);
  EXPECT_TRUE(c->lookup(prompt, {{"tenant", "b"}}).hit);
  // By id, and everything.
  const std::string id = c->store("green door", "x", {{"model", "m"}});
  EXPECT_EQ(c->invalidate({id, "no-such-id"}), 1u);
  CacheEntry e;
  EXPECT_FALSE(c->get(id, &e));
  EXPECT_EQ(c->invalidate_scope({}), 1u);
  EXPECT_EQ(c->size(), 0u);
  EXPECT_FALSE(c->lookup(prompt, {{"tenant", "b"}}).hit);
}

TEST(SemanticCache, EntriesExpireOnTime) {
  const std::string dir = test::make_temp_dir("cache_ttl") + "/c";
  FakeClock clock;
  auto c = fixture_cache(dir, -1e9, &clock);
  const std::string id = c->store("blue bird on the stone", "short-lived", {}, 60);
  c->store("small river under the tree", "kept");
  CacheEntry e;
  ASSERT_TRUE(c->get(id, &e));
  EXPECT_DOUBLE_EQ(e.expires_at, clock.t + 60);
  clock.t += 59;
  EXPECT_EQ(c->lookup("blue bird on the stone").answer, "short-lived");
  EXPECT_EQ(c->size(), 2u);
  EXPECT_EQ(c->dead(), 0u);
  clock.t += 1;  // its instant
  EXPECT_EQ(c->dead(), 1u);  // expired: on disk, dead (what compaction removes)
  const CacheLookup r = c->lookup("blue bird on the stone");
  EXPECT_NE(r.answer, "short-lived");  // the other entry may serve it (threshold -inf), never the expired one
  EXPECT_FALSE(c->get(id, &e));
  EXPECT_EQ(c->size(), 1u);
  // Compaction removes the expired entry for good; the live one still serves.
  const CompactReport compacted = c->compact();
  EXPECT_EQ(compacted.documents_before, 2u);
  EXPECT_EQ(compacted.documents, 1u);
  EXPECT_EQ(compacted.removed, 1u);
  EXPECT_EQ(c->dead(), 0u);
  EXPECT_EQ(c->lookup("small river under the tree").answer, "kept");
  EXPECT_EQ(fixture_cache(dir, -1e9, &clock)->compact().removed, 0u);
}

TEST(SemanticCache, BadInputIsRefusedByFieldAndStoresNothing) {
  const std::string dir = test::make_temp_dir("cache_bad") + "/c";
  auto c = fixture_cache(dir, 0.5);
  c->store("the dog bit the man", "a");
  test::expect_error([&] { c->store("", "a"); }, "prompt: empty");
  test::expect_error([&] { c->store(std::string(4097, 'x'), "a"); }, "prompt: 4097 characters");
  test::expect_error([&] { c->store("q", std::string(8193, 'x')); }, "answer: 8193 characters");
  test::expect_error([&] { c->store("q", "a", {{"colour", "red"}}); }, "scope.colour");
  test::expect_error([&] { c->store("q", "a", {{"model", std::string(257, 'm')}}); }, "scope.model: 257 characters");
  test::expect_error([&] { c->lookup("q", {{"model", std::string(257, 'm')}}); }, "scope.model");
  std::string wide;  // 256 characters of 3 bytes each: within the limit (it counts characters, as JSON Schema)
  for (int i = 0; i < 256; ++i) wide += "\xe2\x82\xac";
  EXPECT_FALSE(c->lookup("q", {{"model", wide}}).hit);
  test::expect_error([&] { c->store("q", "a", {}, -1); }, "ttl_s");
  test::expect_error([&] { c->store("q", "a", {}, std::nan("")); }, "ttl_s");
  test::expect_error([&] { c->lookup("q", {{"colour", "red"}}); }, "scope.colour");
  test::expect_error([&] { c->lookup(""); }, "prompt: empty");
  test::expect_error([&] { c->invalidate_scope({{"colour", "red"}}); }, "scope.colour");
  EXPECT_EQ(c->size(), 1u);
  // A cosine cache needs its threshold; a folder that holds something else is refused.
  CacheOptions cos;
  cos.model_dir = fixture_model();
  cos.verifier = "cosine";
  test::expect_error([&] { SemanticCache::open(dir, cos); }, "threshold");
  const std::string other = test::make_temp_dir("cache_other");
  write_file_atomic(other + "/notes.txt", "x");
  test::expect_error([&] { fixture_cache(other, 0.5); }, "neither a sieve cache nor an empty folder");
}

// The README's example on the real model and its shipped gate: the cached answer of "does aspirin
// reduce fever?" is served to a paraphrase and refused to its negation.
TEST(SemanticCache, TheShippedGateRefusesTheNegatedQuestion) {
  const std::string model = find_installed_model("all-MiniLM-L6-v2");
  if (model.empty()) SIEVE_SKIP_ORACLE("all-MiniLM-L6-v2 is not installed (scripts/setup.sh installs it)");
  const std::string dir = test::make_temp_dir("cache_real") + "/c";
  CacheOptions o;
  o.model_dir = model;
  auto c = SemanticCache::open(dir, o);
  c->store("does aspirin reduce fever?", "Yes: aspirin lowers a fever.", {{"model", "gpt-x"}});
  c->store("what is the capital of France?", "Paris.", {{"model", "gpt-x"}});
  const CacheLookup neg = c->lookup("does aspirin not reduce fever?", {{"model", "gpt-x"}});
  EXPECT_FALSE(neg.hit) << "gate " << neg.score << " threshold " << neg.threshold;
  EXPECT_GT(neg.stage1_score, 0.8);  // what a cosine cache at its usual threshold would have served
  const CacheLookup para = c->lookup("does aspirin lower a fever?", {{"model", "gpt-x"}});
  EXPECT_TRUE(para.hit) << "gate " << para.score << " threshold " << para.threshold;
  EXPECT_EQ(para.answer, "Yes: aspirin lowers a fever.");
}

}  // namespace
}  // namespace sieve
