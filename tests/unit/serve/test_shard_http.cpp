// sieve's native shard path (issue 61): shard servers over HTTP and a router over them answer as
// one index; the wire format round-trips and refuses damage; a shard that is down or of another
// set is named in the router's 503.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "index/shard_bm25.h"
#include "serve/service.h"
#include "serve/shard_http.h"
#include "serve/shard_wire.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "support/fixtures.h"
#include "support/test_util.h"
#include "unit/serve/serve_test_util.h"

namespace sieve::serve {
namespace {

using json = nlohmann::json;
using test_util::kTexts;

std::string shard_dir(const std::string& set, size_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "/shard-%03zu", i);
  return set + buf;
}

// A fixture model, one index and a `shards`-shard set of the same 40 documents under DIR.
void write_set(const std::string& dir, uint64_t seed, size_t shards) {
  write_fixture_model(dir + "/model", test::tiny_model_options(seed));
  {
    std::ofstream f(dir + "/c.jsonl");
    for (int i = 0; i < 40; ++i) {
      json d = {{"_id", "d" + std::to_string(i)},
                {"text", std::string(kTexts[i % 7]) + " " + kTexts[(i * 3) % 7] + " " + std::to_string(i)}};
      if (i % 4 == 0) d["metadata"] = {{"kind", "even"}};
      f << d.dump() << "\n";
    }
  }
  IndexBuildOptions bo;
  bo.chunk_docs = 8;
  build_index(dir + "/model", dir + "/c.jsonl", dir + "/one", bo);
  build_shard_set(dir + "/model", dir + "/c.jsonl", dir + "/set", shards, bo);
}

struct Servers {
  std::vector<std::unique_ptr<ShardHttpServer>> servers;
  std::vector<std::string> urls;
  Servers(const std::string& set, size_t shards, const std::vector<std::string>& verifiers) {
    for (size_t i = 0; i < shards; ++i) {
      auto service = std::make_shared<const ShardService>(shard_dir(set, i), verifiers);
      servers.push_back(std::make_unique<ShardHttpServer>(service, "127.0.0.1", 0, 4));
      servers.back()->start();
      urls.push_back("http://127.0.0.1:" + std::to_string(servers.back()->port()));
    }
  }
};

json answer(Service& s, const json& body) {
  Response r = s.handle("POST", "/v1/search", body.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  for (auto& res : j["results"]) res.erase("timings");  // times differ, answers must not
  return j;
}

const std::vector<json>& bodies() {
  static const std::vector<json> b = {
      json{{"query", "who bit the man"}, {"mode", "dense"}, {"k", 5}},
      json{{"queries", {"the dog", "a red car"}}, {"mode", "dense"}, {"k", 7}},
      json{{"query", "the cat sat"}, {"mode", "hybrid"}, {"k", 5}, {"candidates", 12}, {"rerank", true}},
      json{{"query", "the man bit"}, {"mode", "hybrid"}, {"k", 8}, {"filter", {{"kind", "even"}}}},
      json{{"query", "the dog did not bite"}, {"mode", "dense"}, {"k", 6}, {"candidates", 20}, {"rerank", true}},
      json{{"queries", {"the dog bit the man", "a red car left", "the the of"}}, {"mode", "bm25"}, {"k", 9}},
      json{{"query", "the man bit the dog"}, {"mode", "bm25"}, {"k", 40}, {"filter", {{"kind", "even"}}}}};
  return b;
}

// The router over three shard servers (stage 2 at the shards) answers every search exactly as
// one index: the same ids, ranks, scores and verifier scores, bit for bit in the JSON.
TEST(ShardHttp, ARouterOverShardServersAnswersAsOneIndex) {
  const std::string dir = test::make_temp_dir("shard_http");
  write_set(dir, 31, 3);
  Servers shards(dir + "/set", 3, {"F1"});
  ServeOptions o = test_util::f1_options(dir + "/one");
  Service one(o);
  o.index_dir = dir + "/set";
  o.remote = std::make_shared<HttpShardRemote>(shards.urls);
  Service router(o);
  for (const json& body : bodies()) EXPECT_EQ(answer(one, body), answer(router, body)) << body.dump();
  // Where the router's time went: its wait for the shards, in each answer's timings (hybrid and
  // the gate: the dense lists, BM25's statistics and lists, stage 2's scores).
  const json gated = {{"query", "the man bit"}, {"mode", "hybrid"}, {"k", 5}, {"gate", true}, {"threshold", 0.1}};
  const json t = json::parse(router.handle("POST", "/v1/search", gated.dump()).body)["results"][0]["timings"];
  EXPECT_GT(t.value("shards_ms", 0.0), 0.0) << t.dump();
  EXPECT_LE(t.value("shards_ms", 0.0), t.value("total_ms", 0.0)) << t.dump();
  EXPECT_GE(t.value("shard_fanouts", 0), 3) << t.dump();
  EXPECT_FALSE(json::parse(one.handle("POST", "/v1/search", gated.dump()).body)["results"][0]["timings"].contains(
      "shards_ms"));

  // A shard that stops: every search needs it (BM25 too: the shards rank their own documents
  // with the set's statistics), a 503 naming the shard and its address.
  shards.servers[1]->stop();
  for (const char* mode : {"dense", "bm25"}) {
    Response r = router.handle("POST", "/v1/search", json{{"query", "the dog"}, {"mode", mode}}.dump());
    EXPECT_EQ(r.status, 503) << mode << ": " << r.body;
    EXPECT_NE(r.body.find("shard 1 at " + shards.urls[1]), std::string::npos) << r.body;
  }
}

// A router that holds only the set's manifest (shardset.json alone in its folder: what a router
// on another machine than the shards has) reads documents, ids and statistics from the shard
// servers too, and answers as one index: searches in every mode, with texts, a document by id, a
// missing one, /v1/info's counts. A write is refused with the reason (the set's folder is not here).
TEST(ShardHttp, ARouterWithOnlyTheManifestAnswersAsOneIndex) {
  const std::string dir = test::make_temp_dir("shard_http_manifest");
  write_set(dir, 36, 3);
  std::filesystem::create_directories(dir + "/router");
  std::filesystem::copy_file(dir + "/set/shardset.json", dir + "/router/shardset.json");
  Servers shards(dir + "/set", 3, {"F1"});
  ServeOptions o = test_util::f1_options(dir + "/one");
  Service one(o);
  o.index_dir = dir + "/router";
  o.remote = std::make_shared<HttpShardRemote>(shards.urls);
  Service router(o);
  std::vector<json> all = bodies();
  all.push_back(json{{"query", "the red car"}, {"mode", "hybrid"}, {"k", 6}, {"with_text", true}});
  for (const json& body : all) EXPECT_EQ(answer(one, body), answer(router, body)) << body.dump();
  for (const char* id : {"d0", "d17", "d39", "nope"}) {
    const Response a = one.handle("GET", std::string("/v1/documents/") + id, "");
    const Response b = router.handle("GET", std::string("/v1/documents/") + id, "");
    EXPECT_EQ(a.status, b.status) << id;
    EXPECT_EQ(a.body, b.body) << id;
  }
  const json ia = json::parse(one.handle("GET", "/v1/info", "").body)["index"];
  const json ib = json::parse(router.handle("GET", "/v1/info", "").body)["index"];
  for (const char* k : {"documents", "tokens", "token_codec", "deleted"}) EXPECT_EQ(ia[k], ib[k]) << k;
  const Response w = router.handle("POST", "/v1/documents", json{{"documents", {{{"_id", "x1"}, {"text", "a new one"}}}}}.dump());
  EXPECT_NE(w.status, 200) << w.body;
  EXPECT_NE(w.body.find("only the shard set's manifest"), std::string::npos) << w.body;
  // Nothing of the shards is on the router's disk: it holds the manifest alone.
  size_t files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir + "/router")) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
}

// A shard server of another set (the same model, other documents) is refused by the copy
// check on the first call: a 503 naming the shard, never a merged answer.
TEST(ShardHttp, AShardOfAnotherSetIsRefused) {
  const std::string dir = test::make_temp_dir("shard_http_other");
  std::filesystem::create_directories(dir + "/a");
  std::filesystem::create_directories(dir + "/b");
  write_set(dir + "/a", 32, 2);
  write_set(dir + "/b", 32, 2);
  {  // set b: other documents in shard 1
    std::ofstream f(dir + "/b/c2.tsv");
    for (int i = 0; i < 40; ++i) f << "x" << i << "\t" << kTexts[(i * 5) % 7] << " other " << i << "\n";
  }
  IndexBuildOptions bo;
  bo.chunk_docs = 8;
  build_shard_set(dir + "/b/model", dir + "/b/c2.tsv", dir + "/b/set2", 2, bo);
  Servers a(dir + "/a/set", 2, {"F1"});
  auto other = std::make_shared<const ShardService>(shard_dir(dir + "/b/set2", 1), std::vector<std::string>{"F1"});
  ShardHttpServer wrong(other, "127.0.0.1", 0, 2);
  wrong.start();
  ServeOptions o = test_util::f1_options(dir + "/a/set");
  o.model_dir = dir + "/a/model";
  o.remote = std::make_shared<HttpShardRemote>(
      std::vector<std::string>{a.urls[0], "http://127.0.0.1:" + std::to_string(wrong.port())});
  Service router(o);
  Response r = router.handle("POST", "/v1/search", json{{"query", "the dog"}, {"mode", "dense"}}.dump());
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_NE(r.body.find("shard 1 at"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("another copy"), std::string::npos) << r.body;
}

// Replicas: a shard whose first replica does not answer, one whose replica serves another set's
// copy, one whose replica stops under way: every search still equals one index (the call goes to
// the next replica); the router's view names the failed ones. With no replica left, a 503 naming
// each; a new membership (Ray's, after a restart) makes the set whole again.
TEST(ShardHttp, AReplicaThatFailsIsLeftForAnother) {
  const std::string dir = test::make_temp_dir("shard_http_replicas");
  std::filesystem::create_directories(dir + "/a");
  std::filesystem::create_directories(dir + "/b");
  write_set(dir + "/a", 34, 2);
  write_set(dir + "/b", 35, 2);  // another model and set: its shard 1 is another copy
  const std::string set = dir + "/a/set";
  Servers first(set, 2, {"F1"}), second(set, 2, {"F1"}), other(dir + "/b/set", 2, {"F1"});
  std::string dead;  // an address nothing listens on any more
  {
    ShardHttpServer gone(std::make_shared<const ShardService>(shard_dir(set, 0), std::vector<std::string>{"F1"}),
                         "127.0.0.1", 0, 1);
    gone.start();
    dead = "http://127.0.0.1:" + std::to_string(gone.port());
    gone.stop();
  }
  ServeOptions o = test_util::f1_options(dir + "/a/one");
  Service one(o);
  o.index_dir = set;
  auto remote = std::make_shared<HttpShardRemote>(
      ShardReplicas{{dead, first.urls[0]}, {other.urls[1], first.urls[1], second.urls[1]}});
  o.remote = remote;
  Service router(o);
  for (int round = 0; round < 2; ++round)  // each replica in turn comes first
    for (const json& body : bodies()) EXPECT_EQ(answer(one, body), answer(router, body)) << body.dump();
  auto states = remote->replica_states();
  EXPECT_TRUE(states[0][0].down);
  EXPECT_GT(states[0][0].failures, 0u);
  EXPECT_NE(states[0][0].last_error.find("did not answer"), std::string::npos) << states[0][0].last_error;
  EXPECT_GT(states[0][1].calls, 0u);
  EXPECT_NE(states[1][0].last_error.find("409"), std::string::npos) << states[1][0].last_error;
  EXPECT_GT(states[1][1].calls + states[1][2].calls, 0u);

  first.servers[1]->stop();  // shard 1 now has one good replica left
  for (const json& body : bodies()) EXPECT_EQ(answer(one, body), answer(router, body)) << body.dump();
  second.servers[1]->stop();  // and none
  Response r = router.handle("POST", "/v1/search", json{{"query", "the dog"}, {"mode", "dense"}}.dump());
  EXPECT_EQ(r.status, 503) << r.body;
  for (const std::string& u : {other.urls[1], first.urls[1], second.urls[1]})
    EXPECT_NE(r.body.find("shard 1 at " + u), std::string::npos) << r.body;

  // A replica started again (on another port): the new membership makes the set whole.
  Servers again(set, 2, {"F1"});
  EXPECT_THROW(remote->set_replicas({{first.urls[0]}}), Error);  // one shard of two: refused, nothing changes
  EXPECT_EQ(remote->set_replicas({{first.urls[0]}, {second.urls[1], again.urls[1]}}), 2u);
  for (const json& body : bodies()) EXPECT_EQ(answer(one, body), answer(router, body)) << body.dump();
  const json seen = json::parse(remote->describe());
  EXPECT_EQ(seen["generation"], 2);
  ASSERT_EQ(seen["shards"].size(), 2u);
  EXPECT_EQ(seen["shards"][1][1]["url"], again.urls[1]);
  EXPECT_EQ(seen["shards"][1][1]["down"], false);
}

// The router's sums of the shards' BM25 statistics: asked once a term per snapshot (a query whose
// terms are all known asks nothing), summed over the shards, the documents and length included.
TEST(ShardBm25, TheSetsStatisticsAreSummedAndAskedOnceATerm) {
  index::SetBm25Stats stats;
  std::vector<std::vector<std::string>> asked;
  const auto ask = [&](std::shared_ptr<const std::vector<std::string>> terms) {
    asked.push_back(*terms);
    std::vector<index::Bm25Stats> parts(2);
    for (size_t s = 0; s < 2; ++s) {
      parts[s].documents = 10 + s;
      parts[s].total_length = 100 + s;
      for (const std::string& t : *terms) parts[s].termfreqs.push_back(t.size() + s);  // "dog": 3 and 4
    }
    return parts;
  };
  index::Bm25Stats a = stats.get({"bit", "dog"}, ask);
  EXPECT_EQ(a.documents, 21u);
  EXPECT_EQ(a.total_length, 201u);
  EXPECT_EQ(a.termfreqs, (std::vector<uint64_t>{7, 7}));
  index::Bm25Stats b = stats.get({"dog"}, ask);  // known: no call
  EXPECT_EQ(b.termfreqs, (std::vector<uint64_t>{7}));
  EXPECT_EQ(b.documents, 21u);
  index::Bm25Stats c = stats.get({"bit", "horse"}, ask);  // only the new term is asked for
  EXPECT_EQ(c.termfreqs, (std::vector<uint64_t>{7, 11}));
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(asked[1], std::vector<std::string>{"horse"});
}

TEST(ShardHttp, ShardAddressesAndMembershipFilesAreChecked) {
  const std::string dir = test::make_temp_dir("shard_http_members");
  EXPECT_EQ(parse_shard_urls({"http://a:1,http://b:2", "http://c:3"}),
            (ShardReplicas{{"http://a:1", "http://b:2"}, {"http://c:3"}}));
  EXPECT_THROW(parse_shard_urls({"http://a:1,"}), Error);  // an empty address
  EXPECT_THROW(parse_shard_urls({}), Error);
  const auto write = [&](const std::string& text) {
    std::ofstream(dir + "/m.json") << text;
    return dir + "/m.json";
  };
  EXPECT_EQ(read_shard_membership(write(R"({"shards": [["http://a:1"], ["http://b:2", "http://c:3"]]})")),
            (ShardReplicas{{"http://a:1"}, {"http://b:2", "http://c:3"}}));
  for (const char* bad : {"", "[]", R"({"shards": [[]]})", R"({"shards": [["a:1"]]})", R"({"shards": [[1]]})",
                          R"({"shards": ["http://a:1"]})"}) {
    try {
      read_shard_membership(write(bad));
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("m.json"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(read_shard_membership(dir + "/nowhere.json"), Error);
  // A file that cannot be used leaves the membership as it was.
  HttpShardRemote remote(ShardReplicas{{"http://a:1"}, {"http://b:2"}});
  const std::string said = reload_shard_membership(remote, write(R"({"shards": [["http://a:1"]]})"));
  EXPECT_NE(said.find("stays"), std::string::npos) << said;
  uint64_t generation = 0;
  EXPECT_EQ(remote.replica_states(&generation)[1][0].url, "http://b:2");
  EXPECT_EQ(generation, 1u);
  const std::string ok = reload_shard_membership(remote, write(R"({"shards": [["http://a:1"], ["http://d:4"]]})"));
  EXPECT_NE(ok.find("membership 2"), std::string::npos) << ok;
  EXPECT_EQ(remote.replica_states()[1][0].url, "http://d:4");
}

// The command line: `sieve shard serve` starts, says where it serves once ready, and stops on
// SIGTERM with exit 0; bad addresses, a shard count that does not match and a folder that is not
// a shard are refused at start-up, exit 1, the reason named. (An index outside a set may be
// served: a shard copied to another machine without its set; the router's copy check guards.)
TEST(ShardCli, ServesStopsAndRefusesBadStarts) {
  const std::string dir = test::make_temp_dir("shard_cli");
  write_set(dir, 33, 2);
  const std::string log = dir + "/log", cli = test::cli_path();
  auto r = test::run_command("bash -c '" + cli + " shard serve --index " + shard_dir(dir + "/set", 1) +
                             " --port 0 2> " + log + " & pid=$!; for i in $(seq 300); do grep -q ready " + log +
                             " && break; sleep 0.1; done; kill -TERM $pid; wait $pid; echo exit=$?'");
  const std::string logged = test_util::read_all(log);
  EXPECT_NE(r.out.find("exit=0"), std::string::npos) << r.out << logged;
  EXPECT_NE(logged.find("shard-001"), std::string::npos) << logged;
  EXPECT_NE(logged.find("http://127.0.0.1:"), std::string::npos) << logged;
  const auto refused = [&](const std::string& args, const std::string& why) {
    auto bad = test::run_command(cli + " " + args + " 2>&1");
    EXPECT_EQ(bad.exit_code, 1) << args << ": " << bad.out;
    EXPECT_NE(bad.out.find(why), std::string::npos) << args << ": " << bad.out;
  };
  refused("shard serve --index " + dir + "/set --port 0", "not a shard");
  refused("shard serve --index " + dir + "/nowhere --port 0", "not a shard");
  refused("serve --index " + dir + "/set --shard-url http://127.0.0.1:1 --port 0", "has 2 shards");
  refused("serve --index " + dir + "/one --shard-url http://127.0.0.1:1 --port 0", "need --index SET");
  refused("serve --index " + dir + "/set --shard-url 127.0.0.1:1 --shard-url http://127.0.0.1:2 --port 0",
          "http://HOST:PORT");
  refused("serve --index " + dir + "/set --shard-url http://127.0.0.1:1 --shard-url http://127.0.0.1:2 "
          "--shard-membership " + dir + "/m.json --port 0", "not both");
  refused("serve --index " + dir + "/set --shard-membership " + dir + "/nowhere.json --port 0", "nowhere.json");
}

TEST(ShardWire, MessagesRoundTripAndDamageIsRefused) {
  shard_wire::DenseRequest d;
  d.n = 2;
  d.dim = 3;
  d.depth = 7;
  d.ef_search = 64;
  d.nprobe = -1;
  d.now = 1.5e9;
  d.filter = R"({"kind": "even"})";
  d.pooled = {0.1f, -0.2f, 0.3f, 1e-30f, -0.f, 3.4e38f};
  const std::string body = shard_wire::encode(d);
  const shard_wire::DenseRequest back = shard_wire::decode_dense_request(body);
  EXPECT_EQ(back.n, 2u);
  EXPECT_EQ(back.depth, 7u);
  EXPECT_EQ(back.ef_search, 64);
  EXPECT_EQ(back.nprobe, -1);
  EXPECT_EQ(back.now, 1.5e9);
  EXPECT_EQ(back.filter, d.filter);
  EXPECT_EQ(std::memcmp(back.pooled.data(), d.pooled.data(), d.pooled.size() * 4), 0);  // bit for bit
  // Every truncation, a trailing byte, another magic: refused, never read past the body.
  for (size_t cut = 0; cut < body.size(); ++cut) EXPECT_THROW(shard_wire::decode_dense_request(body.substr(0, cut)), Error);
  EXPECT_THROW(shard_wire::decode_dense_request(body + "x"), Error);
  std::string other = body;
  other[0] = 'X';
  EXPECT_THROW(shard_wire::decode_dense_request(other), Error);

  const shard_wire::Lists lists = {{{3, 0.75}, {1, -0.25}}, {}};
  EXPECT_EQ(shard_wire::decode_lists(shard_wire::encode_lists(lists)), lists);
  TokenStates t;
  t.length = 2;
  t.values = {1, 2, 3, 4, 5, 6};
  const auto states = shard_wire::decode_states(shard_wire::encode_states({t, TokenStates{}}, 3));
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states[0].values, t.values);
  EXPECT_EQ(states[1].length, 0u);
  EXPECT_THROW(shard_wire::encode_states({t}, 4), Error);  // rows of another width
  shard_wire::ScoresRequest s;
  s.verifier = "F1";
  s.dim = 3;
  s.query = t;
  s.query.ids = {101, 102};
  s.docs = {4, 9};
  const auto sb = shard_wire::decode_scores_request(shard_wire::encode(s));
  EXPECT_EQ(sb.verifier, "F1");
  EXPECT_EQ(sb.query.values, t.values);
  EXPECT_EQ(sb.query.ids, s.query.ids);
  EXPECT_EQ(sb.docs, s.docs);
  const std::string huge = shard_wire::encode_floats({1.f});
  std::string lying = huge;
  lying[4] = '\xff';  // a count far past the body: refused before any allocation of that size
  EXPECT_THROW(shard_wire::decode_floats(lying), Error);
  EXPECT_THROW(HttpShardRemote({"127.0.0.1:1"}), Error);  // not an http:// address

  // BM25 at the shards: terms, statistics, requests.
  const std::vector<std::string> terms = {"bit", "dog", "\xff\x00x"};
  EXPECT_EQ(shard_wire::decode_terms(shard_wire::encode_terms(terms)), terms);
  index::Bm25Stats st{40, 123456789012ull, {3, 0, 40}};
  const index::Bm25Stats st2 = shard_wire::decode_bm25_stats(shard_wire::encode(st));
  EXPECT_EQ(st2.documents, 40u);
  EXPECT_EQ(st2.total_length, 123456789012ull);
  EXPECT_EQ(st2.termfreqs, st.termfreqs);
  shard_wire::Bm25Request b;
  b.depth = 12;
  b.now = 7.25;
  b.filter = R"({"kind": "even"})";
  b.documents = 40;
  b.total_length = 400;
  b.queries = {index::Bm25Query{{"bit", "dog"}, {1, 2}, {3, 5}}, index::Bm25Query{}};
  const std::string bb = shard_wire::encode(b);
  const shard_wire::Bm25Request b2 = shard_wire::decode_bm25_request(bb);
  EXPECT_EQ(b2.depth, 12u);
  EXPECT_EQ(b2.now, 7.25);
  EXPECT_EQ(b2.filter, b.filter);
  EXPECT_EQ(b2.total_length, 400u);
  ASSERT_EQ(b2.queries.size(), 2u);
  EXPECT_EQ(b2.queries[0].terms, b.queries[0].terms);
  EXPECT_EQ(b2.queries[0].wqf, b.queries[0].wqf);
  EXPECT_EQ(b2.queries[0].termfreqs, b.queries[0].termfreqs);
  EXPECT_TRUE(b2.queries[1].terms.empty());
  const std::string stb = shard_wire::encode(st), tb = shard_wire::encode_terms(terms);
  for (size_t cut = 0; cut < bb.size(); ++cut) EXPECT_THROW(shard_wire::decode_bm25_request(bb.substr(0, cut)), Error);
  for (size_t cut = 0; cut < stb.size(); ++cut) EXPECT_THROW(shard_wire::decode_bm25_stats(stb.substr(0, cut)), Error);
  for (size_t cut = 0; cut < tb.size(); ++cut) EXPECT_THROW(shard_wire::decode_terms(tb.substr(0, cut)), Error);
  EXPECT_THROW(shard_wire::decode_bm25_request(bb + "x"), Error);
}

}  // namespace
}  // namespace sieve::serve
