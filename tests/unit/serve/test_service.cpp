// The service behind `sieve serve`, called directly (no sockets): every endpoint against the
// library's own results (an independently loaded encoder, index and verifier), the bad-input
// table, concurrent clients against sequential answers, live documents, the full queue.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <sstream>
#include <condition_variable>
#include <fstream>
#include <cctype>
#include <map>
#include <set>
#include <future>
#include <nlohmann/json.hpp>
#include <atomic>
#include <thread>

#include <signal.h>

#include "serve/http_server.h"
#include "serve/service.h"
#include "sieve/encoder.h"
#include "sieve/index.h"
#include "core/checksum.h"
#include "sieve/cross_encoder.h"
#include "sieve/pipeline.h"
#include "sieve/train.h"
#include "support/fixtures.h"
#include "support/test_util.h"
#include "unit/serve/serve_test_util.h"

namespace sieve::serve {
namespace {

using json = nlohmann::json;

using namespace test_util;

class ServeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(test::make_temp_dir("serve"));
    write_fixture_model(*dir_ + "/model", test::tiny_model_options(21));
    {
      std::ofstream f(*dir_ + "/c.tsv");
      for (int i = 0; i < 7; ++i) f << "d" << i << "\t" << kTexts[i] << "\n";
    }
    build_index(*dir_ + "/model", *dir_ + "/c.tsv", *dir_ + "/ix");
    write_test_verifier(*dir_ + "/ix", *dir_ + "/v.safetensors");
    ServeOptions o;
    o.index_dir = *dir_ + "/ix";
    o.verifier = *dir_ + "/v.safetensors";
    o.max_texts = 16;
    o.max_k = 50;
    o.encoder_workers = 1;  // one worker on all threads; SeveralEncoderWorkersGiveTheSameAnswers compares
    service_ = new Service(o);
    enc_ = Encoder::load(*dir_ + "/model").release();
  }
  static void TearDownTestSuite() {
    delete service_;
    delete enc_;
    delete dir_;
  }
  static json post(const std::string& path, const json& body, int want = 200) {
    Response r = service_->handle("POST", path, body.dump());
    EXPECT_EQ(r.status, want) << path << " " << body.dump() << " -> " << r.body;
    return json::parse(r.body);
  }
  static std::string* dir_;
  static Service* service_;
  static Encoder* enc_;
};
std::string* ServeTest::dir_ = nullptr;
Service* ServeTest::service_ = nullptr;
Encoder* ServeTest::enc_ = nullptr;

TEST_F(ServeTest, OpenAiEmbeddingsAreTheEncodersKeys) {
  const std::vector<std::string> texts = {kTexts[0], kTexts[3], ""};
  json r = post("/v1/embeddings", {{"input", texts}, {"model", "m"}});
  Embeddings e = enc_->encode(texts);
  EXPECT_EQ(r["object"], "list");
  EXPECT_EQ(r["model"], "m");
  ASSERT_EQ(r["data"].size(), 3u);
  size_t tokens = 0;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r["data"][i]["index"], i);
    auto v = r["data"][i]["embedding"].get<std::vector<float>>();
    ASSERT_EQ(v.size(), e.dim);
    for (size_t d = 0; d < e.dim; ++d) EXPECT_FLOAT_EQ(v[d], e.pooled[i * e.dim + d]);
    tokens += e.encodings[i].ids.size();
  }
  EXPECT_EQ(r["usage"]["prompt_tokens"], tokens);
  // base64: the little-endian float32 bytes of the same vector.
  json b = post("/v1/embeddings", {{"input", kTexts[0]}, {"encoding_format", "base64"}});
  const std::string s = b["data"][0]["embedding"].get<std::string>();
  std::vector<unsigned char> bytes;
  const std::string alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i + 3 < s.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      v <<= 6;
      if (s[i + k] == '=') ++pad;
      else v |= static_cast<uint32_t>(alpha.find(s[i + k]));
    }
    bytes.push_back(static_cast<unsigned char>(v >> 16));
    if (pad < 2) bytes.push_back(static_cast<unsigned char>(v >> 8));
    if (pad < 1) bytes.push_back(static_cast<unsigned char>(v));
  }
  ASSERT_EQ(bytes.size(), e.dim * 4);
  const auto as_float = post("/v1/embeddings", {{"input", kTexts[0]}})["data"][0]["embedding"].get<std::vector<float>>();
  for (size_t d = 0; d < e.dim; ++d) {
    float f;
    std::memcpy(&f, &bytes[d * 4], 4);
    EXPECT_EQ(f, as_float[d]);             // the same floats, bit for bit
    EXPECT_NEAR(f, e.pooled[d], 1e-6);     // (e encoded three texts in one padded batch)
  }
  // Token arrays go in as given.
  json t = post("/v1/embeddings", {{"input", json::array({e.encodings[0].ids})}});
  auto v = t["data"][0]["embedding"].get<std::vector<float>>();
  for (size_t d = 0; d < e.dim; ++d) EXPECT_NEAR(v[d], e.pooled[d], 1e-6);
}

TEST_F(ServeTest, TeiEmbedAndRerankFollowTheLibrary) {
  json r = post("/embed", {{"inputs", {kTexts[1], kTexts[2]}}});
  Embeddings e = enc_->encode({kTexts[1], kTexts[2]}, EncodeCall{32, true});
  for (size_t i = 0; i < 2; ++i)
    for (size_t d = 0; d < e.dim; ++d) EXPECT_FLOAT_EQ(r[i][d].get<float>(), e.pooled[i * e.dim + d]);
  // normalize=false: the mean of the token states (the fixture pools by mean), by hand.
  json raw = post("/embed", {{"inputs", kTexts[1]}, {"normalize", false}});
  for (size_t d = 0; d < e.dim; ++d) {
    double m = 0;
    for (size_t t = 0; t < e.tokens[0].length; ++t) m += e.tokens[0].values[t * e.dim + d];
    EXPECT_NEAR(raw[0][d].get<double>(), m / e.tokens[0].length, 1e-5);
  }
  std::string long_text;
  for (int i = 0; i < 100; ++i) long_text += "dog ";
  EXPECT_NE(post("/embed", {{"inputs", long_text}}, 422)["error"]["message"].get<std::string>().find("truncate"),
            std::string::npos);
  EXPECT_EQ(post("/embed", {{"inputs", long_text}, {"truncate", true}}).size(), 1u);

  // rerank: the verifier's scores on the encoder's token states, best first.
  auto v = Verifier::load(*dir_ + "/v.safetensors");
  const std::vector<std::string> cands = {kTexts[1], kTexts[4], kTexts[6]};
  Embeddings q = enc_->encode({kTexts[0], kTexts[1], kTexts[4], kTexts[6]}, EncodeCall{32, true});
  auto want = v->score(q.tokens[0], {&q.tokens[1], &q.tokens[2], &q.tokens[3]});
  json rr = post("/rerank", {{"query", kTexts[0]}, {"texts", cands}, {"raw_scores", true}, {"return_text", true}});
  ASSERT_EQ(rr.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const size_t idx = rr[i]["index"].get<size_t>();
    EXPECT_NEAR(rr[i]["score"].get<double>(), want[idx], 1e-5);
    EXPECT_EQ(rr[i]["text"], cands[idx]);
    if (i) EXPECT_GE(rr[i - 1]["score"].get<double>(), rr[i]["score"].get<double>());
  }
  json mapped = post("/rerank", {{"query", kTexts[0]}, {"texts", cands}});
  EXPECT_NEAR(mapped[0]["score"].get<double>(), (rr[0]["score"].get<double>() + 1) / 2, 1e-6);
}

// TEI's /rerank answers on [0, 1]: a similarity verifier's [-1, 1] scores are mapped there, but a
// probability (the mlp gate's, a cross-encoder's) is already there and is answered as it is, the
// same with raw_scores or without (mapped, every score would land in [0.5, 1]).
TEST_F(ServeTest, TeiRerankAnswersAGateProbabilityUnmapped) {
  VerifierConfig c;
  c.kind = VerifierKind::Mlp;
  c.max_tokens = 64;
  c.encoder_dim = enc_->dim();
  c.encoder_identity = model_identity(*dir_ + "/model");
  c.symmetric = true;
  c.mlp = mlp_gate_lexicon(enc_->tokenizer());
  if (c.mlp.cue_ids.empty()) c.mlp.cue_ids = {{1}};  // the fixture's vocabulary may lack the cue words
  c.mlp.features = gate_feature_names();
  c.mlp.mean.assign(c.mlp.features.size(), 0.0);
  c.mlp.scale.assign(c.mlp.features.size(), 1.0);
  c.mlp.weights.assign(c.mlp.features.size(), 0.0);
  c.mlp.weights[0] = 4.0;  // on the pooled cosine alone
  c.mlp.bias = -3.0;       // so that the probabilities spread below and above 0.5
  const std::string path = *dir_ + "/mlp.safetensors";
  Verifier::create(c)->save_with_threshold(path, 0.5);
  ServeOptions o;
  o.index_dir = *dir_ + "/ix";
  o.verifier = path;
  o.encoder_workers = 1;
  Service svc(o);
  const std::vector<std::string> cands = {kTexts[1], kTexts[4], kTexts[6], kTexts[0]};
  auto rerank = [&](bool raw) {
    Response r = svc.handle("POST", "/rerank", json({{"query", kTexts[0]}, {"texts", cands}, {"raw_scores", raw}}).dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body);
  };
  const json raw = rerank(true), plain = rerank(false);
  ASSERT_EQ(raw.size(), cands.size());
  // The verifier's own probabilities (an independent load of the file, on the encoder's states).
  auto v = Verifier::load(path);
  Embeddings e = enc_->encode({kTexts[0], kTexts[1], kTexts[4], kTexts[6], kTexts[0]}, EncodeCall{32, true});
  const auto want = v->score(e.tokens[0], {&e.tokens[1], &e.tokens[2], &e.tokens[3], &e.tokens[4]});
  bool below_half = false;
  for (size_t i = 0; i < raw.size(); ++i) {
    const size_t idx = plain[i]["index"].get<size_t>();
    EXPECT_EQ(raw[i]["index"], plain[i]["index"]);
    EXPECT_NEAR(plain[i]["score"].get<double>(), want[idx], 1e-5) << idx;
    EXPECT_EQ(plain[i]["score"].get<double>(), raw[i]["score"].get<double>()) << idx;
    below_half = below_half || plain[i]["score"].get<double>() < 0.5;
  }
  EXPECT_TRUE(below_half) << "no probability below 0.5: the fixture does not test the mapping";
  EXPECT_TRUE(scores_are_probabilities(resolve_verifier(path, {*dir_ + "/model", ""})));
  EXPECT_FALSE(scores_are_probabilities(resolve_verifier("F1", {*dir_ + "/model", ""})));
  EXPECT_FALSE(scores_are_probabilities(resolve_verifier("cosine", {*dir_ + "/model", ""})));
}

// The verifier file at `from` with every float32 weight set to NaN (what a diverged training run
// saves): a safetensors file is an 8-byte little-endian header length, the JSON header, the data.
void write_nan_verifier(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  const json header = json::parse(bytes.substr(8, n));
  const float nan = std::nanf("");
  size_t poisoned = 0;
  for (const auto& [name, t] : header.items()) {
    if (name == "__metadata__" || t.value("dtype", "") != "F32") continue;
    const auto off = t.at("data_offsets").get<std::vector<size_t>>();
    for (size_t b = off[0]; b + 4 <= off[1]; b += 4, ++poisoned) std::memcpy(&bytes[8 + n + b], &nan, 4);
  }
  ASSERT_GT(poisoned, 0u);
  std::ofstream(to, std::ios::binary) << bytes;
}

// A verifier that scores NaN: /rerank's sort would break on it (undefined behaviour), /v1/verify
// would answer "accepted": false and /v1/explain "reject" as if the score were low. All three
// refuse it and name the first bad score.
TEST_F(ServeTest, NonFiniteVerifierScoresAreRefused) {
  write_nan_verifier(*dir_ + "/v.safetensors", *dir_ + "/nan.safetensors");
  ServeOptions o;
  o.index_dir = *dir_ + "/ix";
  o.verifier = *dir_ + "/nan.safetensors";
  o.encoder_workers = 1;
  Service s(o);
  auto call = [&](const std::string& path, const json& body) {
    Response r = s.handle("POST", path, body.dump());
    EXPECT_EQ(r.status, 422) << path << " -> " << r.body;
    return json::parse(r.body)["error"]["message"].get<std::string>();
  };
  const std::string why = "scores must be finite numbers";
  std::string m = call("/rerank", {{"query", kTexts[0]}, {"texts", {kTexts[1], kTexts[4], kTexts[6]}}});
  // (NaN weights give -nan or nan, by platform)
  EXPECT_NE(m.find("scored text 0 (0-based) "), std::string::npos) << m;
  EXPECT_NE(m.find("nan: "), std::string::npos) << m;
  EXPECT_NE(m.find(why), std::string::npos) << m;
  m = call("/v1/verify", {{"pairs", json::array({json::array({kTexts[0], kTexts[1]})})}, {"threshold", 0.5}});
  EXPECT_NE(m.find("scored pair 0 (0-based) "), std::string::npos) << m;
  EXPECT_NE(m.find("nan: "), std::string::npos) << m;
  m = call("/v1/explain", {{"query", kTexts[0]}, {"candidate", kTexts[1]}});
  EXPECT_NE(m.find("verifier's score of this pair is "), std::string::npos) << m;
  EXPECT_NE(m.find("nan: "), std::string::npos) << m;
}

TEST_F(ServeTest, VerifyAndSearchAreThePipelines) {
  auto v = Verifier::load(*dir_ + "/v.safetensors");
  Embeddings e = enc_->encode({kTexts[0], kTexts[1], kTexts[6]}, EncodeCall{32, true});
  json r = post("/v1/verify", {{"pairs", {{kTexts[0], kTexts[1]}, {{"query", kTexts[0]}, {"candidate", kTexts[6]}}}}});
  ASSERT_EQ(r["results"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const float want = v->score(e.tokens[0], {&e.tokens[i + 1]})[0];
    EXPECT_NEAR(r["results"][i]["score"].get<double>(), want, 1e-5);
    EXPECT_EQ(r["results"][i]["accepted"].get<bool>(), want >= 0.0);
  }
  // Search with stage 2 equals search_verified; without it, Index::search.
  auto index = Index::open(*dir_ + "/ix");
  PipelineParams pp;
  pp.stage1.mode = SearchMode::Dense;
  pp.candidates = 5;
  pp.k = 3;
  pp.rerank = true;
  auto want = search_verified(*index, *v, "who bit the man", pp);
  json s = post("/v1/search", {{"query", "who bit the man"}, {"mode", "dense"}, {"candidates", 5}, {"k", 3},
                               {"rerank", true}, {"with_text", true}});
  const json& hits = s["results"][0]["hits"];
  ASSERT_EQ(hits.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(hits[i]["id"], want[i].hit.id);
    EXPECT_NEAR(hits[i]["verifier_score"].get<double>(), want[i].verifier_score, 1e-6);
    EXPECT_NEAR(hits[i]["stage1_score"].get<double>(), want[i].hit.score, 1e-6);
    EXPECT_EQ(hits[i]["stage1_rank"], want[i].stage1_rank);
    EXPECT_EQ(hits[i]["text"], index->document(want[i].hit.doc).text);
  }
  EXPECT_TRUE(s["results"][0]["timings"].contains("verifier_ms"));
  SearchParams sp;
  sp.mode = SearchMode::Bm25;
  sp.k = 4;
  auto plain = index->search("the dog", sp);
  json b = post("/v1/search", {{"queries", {"the dog"}}, {"mode", "bm25"}, {"k", 4}});
  ASSERT_EQ(b["results"][0]["hits"].size(), plain.hits.size());
  for (size_t i = 0; i < plain.hits.size(); ++i) {
    EXPECT_EQ(b["results"][0]["hits"][i]["id"], plain.hits[i].id);
    EXPECT_NEAR(b["results"][0]["hits"][i]["score"].get<double>(), plain.hits[i].score, 1e-9);
  }
}

TEST_F(ServeTest, ExplainIsTheCosineMapAndTheVerifiersVerdict) {
  json x = post("/v1/explain", {{"query", kTexts[0]}, {"candidate", kTexts[1]}});
  Embeddings e = enc_->encode({kTexts[0], kTexts[1]}, EncodeCall{32, true});
  const auto& q = e.tokens[0];
  const auto& c = e.tokens[1];
  ASSERT_EQ(x["map"].size(), q.length);
  ASSERT_EQ(x["candidate_tokens"].size(), c.length);
  EXPECT_EQ(x["query_tokens"][1], e.encodings[0].tokens[1]);
  for (size_t i = 0; i < q.length; ++i)
    for (size_t j = 0; j < c.length; ++j) {
      double dot = 0, a = 0, b = 0;
      for (size_t d = 0; d < e.dim; ++d) {
        dot += double(q.values[i * e.dim + d]) * c.values[j * e.dim + d];
        a += double(q.values[i * e.dim + d]) * q.values[i * e.dim + d];
        b += double(c.values[j * e.dim + d]) * c.values[j * e.dim + d];
      }
      EXPECT_NEAR(x["map"][i][j].get<double>(), dot / std::sqrt(a * b), 6e-5);
    }
  const float want = Verifier::load(*dir_ + "/v.safetensors")->score(q, {&c})[0];
  EXPECT_NEAR(x["score"].get<double>(), want, 1e-5);
  EXPECT_EQ(x["decision"], want >= 0 ? "accept" : "reject");
  Response svg = service_->handle("GET", "/v1/explain.svg", "", {{"query", kTexts[0]}, {"candidate", kTexts[1]}});
  EXPECT_EQ(svg.status, 200);
  EXPECT_EQ(svg.content_type, "image/svg+xml");
  EXPECT_EQ(svg.body.rfind("<svg", 0), 0u) << svg.body.substr(0, 80);
  EXPECT_NE(svg.body.find(">dog<"), std::string::npos);
  EXPECT_EQ(service_->handle("GET", "/v1/explain.svg", "", {{"query", "x"}}).status, 400);
  Response page = service_->handle("GET", "/", "");
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("/v1/search"), std::string::npos);
  EXPECT_EQ(page.body.find("http://"), std::string::npos);  // nothing fetched from elsewhere
  EXPECT_EQ(page.body.find("https://"), std::string::npos);
}

// docs/openapi.json, served at /openapi.json, is the contract: it lists exactly the routes the
// service answers (each with its method), each JSON body's schema lists exactly the fields the
// service reads and forbids others, and every operation documents a 200 and its errors as the
// Error schema.
TEST_F(ServeTest, OpenApiSpecDescribesEveryRouteAndNoOther) {
  Response r = service_->handle("GET", "/openapi.json", "");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  json spec = json::parse(r.body);
  json& dims = spec["components"]["schemas"]["EmbeddingsRequest"]["properties"]["dimensions"]["oneOf"][0];
  const size_t dim = json::parse(service_->handle("POST", "/v1/embeddings", R"({"input": "x"})").body)["data"][0]["embedding"].size();
  EXPECT_EQ(dims["enum"], json::array({dim}));  // the running model's width
  dims.erase("enum");
  json& token_id = spec["components"]["schemas"]["TokenId"];
  EXPECT_GT(token_id["maximum"].get<int64_t>(), 0);  // the vocabulary's last id
  token_id.erase("maximum");
  std::ifstream in(std::string(SIEVE_SOURCE_DIR) + "/docs/openapi.json");
  EXPECT_EQ(spec, json::parse(in)) << "the served spec is not docs/openapi.json (rebuild)";
  EXPECT_EQ(spec["openapi"], "3.1.0");
  std::set<std::pair<std::string, std::string>> documented, served;
  for (const auto& [path, ops] : spec["paths"].items())
    for (const auto& [method, op] : ops.items()) {
      std::string m = method;
      std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
      documented.emplace(path, m);
      SCOPED_TRACE(path + " " + m);
      ASSERT_TRUE(op.contains("responses"));
      EXPECT_TRUE(op["responses"].contains("200"));
      for (const auto& [status, resp] : op["responses"].items())
        if (status != "200") EXPECT_EQ(resp, json({{"$ref", "#/components/responses/Error"}})) << status;
      const std::vector<std::string>& fields = Service::body_fields(path, m);
      if (fields.empty()) {
        EXPECT_FALSE(op.contains("requestBody"));
        continue;
      }
      const std::string ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"];
      const json schema = spec["components"]["schemas"][ref.substr(ref.rfind('/') + 1)];
      EXPECT_EQ(schema["additionalProperties"], false);
      std::set<std::string> props;
      for (const auto& [k, v] : schema["properties"].items()) props.insert(k);
      EXPECT_EQ(props, std::set<std::string>(fields.begin(), fields.end()));
    }
  for (const auto& route : Service::routes()) served.insert(route);
  EXPECT_EQ(documented, served);
  // The routes the table names are the ones answered: each exists (no 404) with its method, and
  // a method it does not take is a 405 whose Allow lists those it takes.
  std::map<std::string, std::string> allow;
  for (const auto& [path, method] : served) allow[path] += (allow[path].empty() ? "" : ", ") + method;
  for (const auto& [path, method] : served) {
    const std::string p = path == "/v1/documents/{id}" ? "/v1/documents/d1" : path == "/v1/cache/{id}" ? "/v1/cache/c1" : path;
    Response x = service_->handle(method, p, method == "POST" ? "{}" : "", {{"query", "a"}, {"candidate", "b"}});
    EXPECT_EQ(x.body.find("no route"), std::string::npos) << path << " " << x.body;
    EXPECT_NE(x.status, 405) << path;
    EXPECT_TRUE(Service::allows(p, method)) << path;
    const std::string other = allow[path].find("GET") == std::string::npos ? "GET" : allow[path].find("POST") == std::string::npos ? "POST" : "PUT";
    EXPECT_FALSE(Service::allows(p, other)) << path;
    Response wrong = service_->handle(other, p, "");
    EXPECT_EQ(wrong.status, 405) << path;
    EXPECT_EQ(wrong.headers, (std::vector<std::pair<std::string, std::string>>{{"Allow", allow[path]}})) << path;
  }
  EXPECT_EQ(allow["/"], "GET, POST");
  // TEI's aliases of /embed answer exactly what /embed does.
  const std::string embed = R"({"inputs": ["the dog bit the man", "a red car"]})";
  const std::string want = service_->handle("POST", "/embed", embed).body;
  EXPECT_EQ(service_->handle("POST", "/", embed).body, want);
  EXPECT_EQ(service_->handle("POST", "/invocations", embed).body, want);
  EXPECT_EQ(service_->handle("GET", "/v1/documents/{id}", "").status, 404);
  EXPECT_EQ(service_->handle("GET", "/v1/cache/{id}", "").status, 404);
}

// The cache routes over the library's SemanticCache (docs/cache.md): a store, a hit only through
// the gate and only in its scope, an entry read and removed by id, removal by scope; bad input is
// a 422 naming the field with nothing stored; a server without --cache answers 404.
TEST_F(ServeTest, TheCacheRoutes) {
  const json none = json::parse(service_->handle("POST", "/v1/cache/lookup", R"({"prompt": "x"})").body);
  EXPECT_NE(none["error"]["message"].get<std::string>().find("no cache"), std::string::npos) << none.dump();
  ServeOptions o;
  o.model_dir = *dir_ + "/model";
  o.cache_dir = test::make_temp_dir("serve_cache") + "/c";
  o.cache_verifier = "F1";
  o.cache_threshold = 0.99;
  o.encoder_workers = 1;
  Service s(o);
  auto call = [&](const std::string& method, const std::string& path, const json& body, int want = 200) {
    Response r = s.handle(method, path, body.is_null() ? "" : body.dump());
    EXPECT_EQ(r.status, want) << method << " " << path << " " << body.dump() << " -> " << r.body;
    return json::parse(r.body);
  };
  EXPECT_FALSE(call("POST", "/v1/cache/lookup", {{"prompt", "the dog bit the man"}})["hit"]);  // empty: a miss
  const std::string id =
      call("POST", "/v1/cache", {{"prompt", "the dog bit the man"}, {"answer", "A"}, {"scope", {{"tenant", "t"}}}})["id"];
  EXPECT_EQ(id, cache_entry_id("the dog bit the man", {{"tenant", "t"}}));
  json hit = call("POST", "/v1/cache/lookup", {{"prompt", "the dog bit the man"}, {"scope", {{"tenant", "t"}}}});
  EXPECT_TRUE(hit["hit"]);
  EXPECT_EQ(hit["answer"], "A");
  EXPECT_EQ(hit["id"], id);
  EXPECT_EQ(hit["threshold"], 0.99);
  EXPECT_FALSE(call("POST", "/v1/cache/lookup", {{"prompt", "the dog bit the man"}, {"scope", {{"tenant", "u"}}}})["hit"]);
  json miss = call("POST", "/v1/cache/lookup", {{"prompt", "the man bit the dog"}, {"scope", {{"tenant", "t"}}}});
  EXPECT_FALSE(miss["hit"]);
  EXPECT_TRUE(miss["answer"].is_null());
  EXPECT_LT(miss["score"].get<double>(), 0.99);
  EXPECT_EQ(call("GET", "/v1/cache/" + id, nullptr)["scope"], json({{"tenant", "t"}}));
  // Bad input: 422 naming the field, nothing stored.
  for (const json& bad : {json{{"prompt", ""}, {"answer", "a"}}, json{{"prompt", "p"}, {"answer", "a"}, {"ttl_s", -1}},
                          json{{"prompt", "p"}, {"answer", "a"}, {"scope", {{"colour", "red"}}}},
                          json{{"prompt", "p"}, {"answer", "a"}, {"ttl_s", "soon"}}, json{{"prompt", "p"}, {"answer", 3}}})
    call("POST", "/v1/cache", bad, bad.contains("answer") && !bad["answer"].is_string() ? 400 : 422);
  call("POST", "/v1/cache/lookup", {{"prompt", "p"}, {"scope", {{"colour", "red"}}}}, 422);
  call("POST", "/v1/cache/delete", {{"ids", {"a"}}, {"scope", json::object()}}, 400);
  call("POST", "/v1/cache/delete", {{"ids", {"a"}}, {"scope", nullptr}}, 400);  // both named
  call("POST", "/v1/cache/delete", {{"scope", nullptr}}, 422);  // never "everything" by accident
  EXPECT_EQ(s.handle("GET", "/v1/cache/nope", "").status, 404);
  // Removal by scope and by id.
  call("POST", "/v1/cache", {{"prompt", "a red car"}, {"answer", "B"}, {"scope", {{"tenant", "u"}}}});
  EXPECT_EQ(call("POST", "/v1/cache/delete", {{"scope", {{"tenant", "u"}}}})["deleted"], 1);
  EXPECT_EQ(call("DELETE", "/v1/cache/" + id, nullptr)["deleted"], 1);
  EXPECT_EQ(s.handle("DELETE", "/v1/cache/" + id, "").status, 404);
  EXPECT_FALSE(call("POST", "/v1/cache/lookup", {{"prompt", "the dog bit the man"}, {"scope", {{"tenant", "t"}}}})["hit"]);
  EXPECT_EQ(s.handle("PUT", "/v1/cache/" + id, "{}").status, 405);
}

TEST_F(ServeTest, BadInputTable) {
  struct Case {
    std::string method, path, body;
    int status;
    std::string message;
  };
  const std::string many = json{{"input", std::vector<std::string>(17, "x")}}.dump();
  for (const Case& c : std::vector<Case>{
           {"POST", "/v1/embeddings", "{not json", 400, "malformed JSON at line 1, column 3 (byte 3), near \"{not json\""},
           {"POST", "/v1/search", "{\"query\": \"x\",\n \"k\": 3,}", 400, "line 2, column 9"},
           {"POST", "/v1/search", "{\"query\": \"x", 400, "ends too early"},
           {"POST", "/v1/search", "", 400, "the body is empty"},
           {"POST", "/v1/search", R"({"query": "x", "kk": 3})", 422, "unknown field(s) 'kk' (accepted: query, queries, k,"},
           {"POST", "/v1/search", R"({"query": "x", "text": true, "gates": true})", 422, "'gates', 'text'"},
           {"POST", "/v1/embeddings", R"({"input": "x", "dimension": 3})", 422, "unknown field(s) 'dimension'"},
           {"POST", "/v1/embeddings", R"({"input": "x", "dimensions": 3})", 422, "model's"},
           {"POST", "/embed", R"({"inputs": "x", "truncation_direction": "Left"})", 422, "\"right\""},
           {"POST", "/embed", R"({"inputs": "x", "prompt_name": "query"})", 422, "no prompts"},
           {"POST", "/rerank", R"({"query": "x", "texts": ["a"], "top_n": 1})", 422, "'top_n'"},
           {"POST", "/v1/verify", R"({"pairs": [["a", "b"]], "treshold": 1})", 422, "'treshold'"},
           {"POST", "/v1/explain", R"({"query": "a", "candidate": "b", "k": 1})", 422, "'k'"},
           {"POST", "/v1/embeddings", "[1, 2]", 400, "JSON object"},
           {"POST", "/v1/embeddings", "{}", 400, "missing field 'input'"},
           {"POST", "/v1/embeddings", R"({"input": 5})", 400, "string or an array"},
           {"POST", "/v1/embeddings", R"({"input": "x", "encoding_format": "hex"})", 400, "encoding_format"},
           {"POST", "/v1/embeddings", many, 422, "more than the limit 16"},
           {"POST", "/embed", R"({"inputs": []})", 400, "empty"},
           {"POST", "/embed", R"({"inputs": "x", "normalize": "yes"})", 400, "true or false"},
           {"POST", "/rerank", R"({"texts": ["a"]})", 400, "'query'"},
           {"POST", "/v1/verify", R"({"pairs": [["a"]]})", 400, "[query, candidate]"},
           {"POST", "/v1/search", R"({"query": "x", "k": 0})", 400, "positive integer"},
           {"POST", "/v1/search", R"({"query": "x", "k": 2.5})", 400, "positive integer"},
           {"POST", "/v1/embeddings", R"({"input": [2, 3.5]})", 400, "must hold integers"},
           {"POST", "/v1/search", R"({"query": "x", "k": 51})", 422, "limit 50"},
           {"POST", "/v1/search", R"({"query": "x", "mode": "fuzzy"})", 400, "fuzzy"},
           {"POST", "/v1/search", R"({"query": "x", "queries": ["y"]})", 400, "not both"},
           {"GET", "/v1/search", "", 405, "takes POST"},
           {"POST", "/health", "", 405, "takes GET"},
           {"GET", "/nowhere", "", 404, "no route"},
       }) {
    Response r = service_->handle(c.method, c.path, c.body);
    EXPECT_EQ(r.status, c.status) << c.path << " " << c.body << " -> " << r.body;
    json j = json::parse(r.body);
    ASSERT_TRUE(j.contains("error")) << r.body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(c.message), std::string::npos) << r.body;
    EXPECT_TRUE(j["error"]["type"].is_string());
  }
  // An integer written with a zero fraction is that integer (JSON Schema's reading; schemathesis
  // sends them): k 3.0 is k 3.
  EXPECT_EQ(json::parse(service_->handle("POST", "/v1/search", R"({"query": "dog", "k": 3.0})").body)["results"][0]["hits"].size(),
            json::parse(service_->handle("POST", "/v1/search", R"({"query": "dog", "k": 3})").body)["results"][0]["hits"].size());
  EXPECT_EQ(service_->handle("POST", "/v1/embeddings", R"({"input": [[2.0, 3]]})").status, 200);
  // What real clients send beside the fields sieve reads passes: OpenAI's model, user and the
  // model's own dimensions; TEI's truncation_direction and a null prompt_name; the reranker's truncate.
  const size_t dim = json::parse(service_->handle("POST", "/v1/embeddings", R"({"input": "x"})").body)["data"][0]["embedding"].size();
  for (const auto& [path, body] : std::vector<std::pair<std::string, json>>{
           {"/v1/embeddings", {{"input", "x"}, {"model", "m"}, {"user", "u-1"}, {"dimensions", dim}, {"encoding_format", "base64"}}},
           {"/embed", {{"inputs", "x"}, {"truncation_direction", "Right"}, {"prompt_name", nullptr}, {"truncate", true}}},
           {"/rerank", {{"query", "x"}, {"texts", {"a", "b"}}, {"truncate", true}, {"truncation_direction", "right"}}}}) {
    Response r = service_->handle("POST", path, body.dump());
    EXPECT_EQ(r.status, 200) << path << " " << r.body;
  }
  // The metrics count them by endpoint and status.
  const std::string m = service_->handle("GET", "/metrics", "").body;
  EXPECT_NE(m.find("sieve_requests_total{endpoint=\"/v1/search\",status=\"405\"} "), std::string::npos) << m;
  EXPECT_NE(m.find("sieve_request_duration_seconds_bucket{endpoint=\"/v1/embeddings\",le=\"+Inf\"}"), std::string::npos);
  EXPECT_NE(m.find("sieve_documents 7"), std::string::npos);
}

// Equal JSON up to float rounding: concurrent requests are batched with others (other padding),
// which moves the last bits of a float.
bool near_json(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return std::abs(a.get<double>() - b.get<double>()) <= 1e-5;
  if (a.type() != b.type() || a.size() != b.size()) return false;
  if (a.is_array()) {
    for (size_t i = 0; i < a.size(); ++i)
      if (!near_json(a[i], b[i])) return false;
    return true;
  }
  if (a.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it)
      if (!b.contains(it.key()) || !near_json(it.value(), b.at(it.key()))) return false;
    return true;
  }
  return a == b;
}

// Concurrent clients of `concurrent` get what sequential calls of the test suite's service get.
void expect_concurrent_answers_are_sequential(Service& concurrent, Service& sequential_service) {
  std::vector<std::pair<std::string, json>> requests;
  for (int i = 0; i < 7; ++i) {
    requests.push_back({"/v1/embeddings", {{"input", {kTexts[i], kTexts[(i + 2) % 7]}}}});
    requests.push_back({"/v1/search", {{"query", kTexts[i]}, {"mode", "hybrid"}, {"gate", true}, {"k", 3}}});
    requests.push_back({"/v1/verify", {{"pairs", json::array({json::array({kTexts[i], kTexts[(i + 1) % 7]})})}}});
  }
  auto call = [](Service& s, const std::pair<std::string, json>& req) {
    Response r = s.handle("POST", req.first, req.second.dump());
    EXPECT_EQ(r.status, 200) << req.first << " " << r.body;
    json j = json::parse(r.body);
    if (j.contains("results"))  // timings differ from call to call
      for (auto& q : j["results"]) q.erase("timings");
    return j;
  };
  std::vector<json> sequential;
  for (const auto& req : requests) sequential.push_back(call(sequential_service, req));
  std::vector<std::future<std::vector<json>>> clients;
  for (int c = 0; c < 8; ++c)
    clients.push_back(std::async(std::launch::async, [&, c] {
      std::vector<json> got(requests.size());
      for (size_t k = 0; k < requests.size(); ++k) {
        const size_t i = (k + static_cast<size_t>(c) * 5) % requests.size();
        got[i] = call(concurrent, requests[i]);
      }
      return got;
    }));
  for (auto& f : clients) {
    auto got = f.get();
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(near_json(got[i], sequential[i])) << requests[i].first << "\n" << got[i] << "\n" << sequential[i];
  }
}

TEST_F(ServeTest, ConcurrentClientsGetTheSequentialAnswers) { expect_concurrent_answers_are_sequential(*service_, *service_); }

// Several encoder workers (each batch and each search single-threaded) answer as one worker does.
TEST_F(ServeTest, SeveralEncoderWorkersGiveTheSameAnswers) {
  ServeOptions o;
  o.index_dir = *dir_ + "/ix";
  o.verifier = *dir_ + "/v.safetensors";
  o.max_texts = 16;
  o.max_k = 50;
  o.encoder_workers = 3;
  {
    Service workers(o);
    EXPECT_EQ(compute_threads(), 1);
    expect_concurrent_answers_are_sequential(workers, *service_);
    const std::string m = workers.handle("GET", "/metrics", "").body;
    EXPECT_NE(m.find("sieve_encoder_busy_seconds_total "), std::string::npos) << m;
  }
  set_compute_threads(0);
}

// A hit has the same keys in the server's answer and in `sieve search`'s JSON lines (both
// hit_json), with and without stage 2, and the same values (the CLI's to 7 digits).
TEST_F(ServeTest, HitsHaveTheKeysAndValuesOfSieveSearch) {
  for (const bool stage2 : {false, true}) {
    json s = post("/v1/search", {{"query", "who bit the man"}, {"mode", "hybrid"}, {"k", 4}, {"candidates", 6},
                                 {"verifier", stage2}, {"rerank", stage2}, {"with_text", true}});
    auto r = test::run_command(test::cli_path() + " search --index " + *dir_ + "/ix --mode hybrid -k 4 --text" +
                               (stage2 ? " --candidates 6 --rerank --verifier " + *dir_ + "/v.safetensors" : "") +
                               " 'who bit the man' 2>/dev/null");
    ASSERT_EQ(r.exit_code, 0);
    const json cli = json::parse(r.out)["hits"], server = s["results"][0]["hits"];
    ASSERT_EQ(cli.size(), server.size()) << r.out;
    ASSERT_FALSE(cli.empty());
    bool both_lists = false;
    for (size_t i = 0; i < cli.size(); ++i) {
      std::vector<std::string> ck, sk;
      for (auto it = cli[i].begin(); it != cli[i].end(); ++it) ck.push_back(it.key());
      for (auto it = server[i].begin(); it != server[i].end(); ++it) sk.push_back(it.key());
      std::sort(ck.begin(), ck.end());
      EXPECT_EQ(ck, sk) << cli[i] << "\n" << server[i];
      for (auto it = cli[i].begin(); it != cli[i].end(); ++it) {
        if (it->is_number_float())
          EXPECT_NEAR(it->get<double>(), server[i][it.key()].get<double>(), 1e-6 * (1 + std::fabs(it->get<double>())))
              << it.key();
        else
          EXPECT_EQ(*it, server[i][it.key()]) << it.key();
      }
      for (const char* k : {HitKeys::rank, HitKeys::id, HitKeys::title, HitKeys::text})
        EXPECT_TRUE(server[i].contains(k)) << k << " " << server[i];
      EXPECT_EQ(server[i].contains(HitKeys::verifier_score), stage2) << server[i];
      EXPECT_EQ(server[i].contains(HitKeys::score), !stage2) << server[i];
      both_lists = both_lists || (server[i].contains(HitKeys::dense_rank) && server[i].contains(HitKeys::bm25_rank));
    }
    EXPECT_TRUE(both_lists) << "a hybrid hit from both lists carries both scores and ranks: " << s;
  }
}

// The pooled cosine as the server's verifier: /v1/verify, /rerank and stage-2 search score by it,
// as the library's search_verified_cosine does.
TEST_F(ServeTest, CosineVerifierScoresEveryRouteByThePooledCosine) {
  ServeOptions o;
  o.index_dir = *dir_ + "/ix";
  o.verifier = "cosine";
  o.encoder_workers = 1;
  Service s(o);
  auto call = [&](const std::string& path, const json& b) {
    Response r = s.handle("POST", path, b.dump());
    EXPECT_EQ(r.status, 200) << path << " -> " << r.body;
    return json::parse(r.body);
  };
  EXPECT_EQ(json::parse(s.handle("GET", "/v1/info", "").body)["verifier"]["kind"], "cosine");
  Embeddings e = enc_->encode({kTexts[0], kTexts[1], kTexts[2]});
  auto cosine = [&](size_t a, size_t b) {
    double dot = 0;
    for (size_t d = 0; d < e.dim; ++d) dot += double(e.pooled[a * e.dim + d]) * e.pooled[b * e.dim + d];
    return dot;
  };
  json pairs = json::array({json::array({kTexts[0], kTexts[1]}), json::array({kTexts[0], kTexts[2]})});
  json v = call("/v1/verify", {{"pairs", pairs}});
  EXPECT_NEAR(v["results"][0]["score"].get<double>(), cosine(0, 1), 1e-5);
  EXPECT_NEAR(v["results"][1]["score"].get<double>(), cosine(0, 2), 1e-5);
  EXPECT_EQ(v["verifier"], "cosine");
  json rr = call("/rerank", {{"query", kTexts[0]}, {"texts", {kTexts[1], kTexts[2]}}, {"raw_scores", true}});
  ASSERT_EQ(rr.size(), 2u);
  for (const auto& x : rr) EXPECT_NEAR(x["score"].get<double>(), cosine(0, 1 + x["index"].get<size_t>()), 1e-5);
  auto index = Index::open(*dir_ + "/ix");
  PipelineParams pp;
  pp.stage1.mode = SearchMode::Dense;
  pp.candidates = 5;
  pp.k = 3;
  auto want = search_verified_cosine(*index, "who bit the man", pp);
  json h = call("/v1/search", {{"query", "who bit the man"}, {"mode", "dense"}, {"candidates", 5}, {"k", 3},
                               {"verifier", true}})["results"][0]["hits"];
  ASSERT_EQ(h.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(h[i]["id"], want[i].hit.id);
    EXPECT_NEAR(h[i]["verifier_score"].get<double>(), want[i].verifier_score, 1e-5);
  }
}

// Without an index the verifier is still checked against the encoder that feeds it.
TEST_F(ServeTest, AVerifierForAnotherModelIsRefusedWithoutAnIndex) {
  ServeOptions o;
  o.model_dir = *dir_ + "/model";
  o.verifier = *dir_ + "/v.safetensors";
  EXPECT_NO_THROW(Service{o});  // made for this model
  const std::string other = test::make_temp_dir("serve_other");
  write_fixture_model(other + "/model", test::tiny_model_options(77));
  o.model_dir = other + "/model";
  test::expect_error([&] { Service{o}; }, "not for this one");
}

// Without an index, however the verifier is named (a file given, or the verifier.safetensors that
// sits in the model folder), a file recorded for another encoder is refused with both identities
// named (the file's and the serving model's model_identity); the built-ins, which need none, serve.
TEST_F(ServeTest, WithoutAnIndexAForeignVerifierIsRefusedNamingBothIdentities) {
  const std::string other = test::make_temp_dir("serve_other_ids");
  write_fixture_model(other + "/model", test::tiny_model_options(78));
  const std::string recorded = model_identity(*dir_ + "/model"), serving = model_identity(other + "/model");
  ASSERT_NE(recorded, serving);
  ServeOptions o;
  o.model_dir = other + "/model";
  o.encoder_workers = 1;
  o.verifier = *dir_ + "/v.safetensors";  // recorded for *dir_/model (the fixture's index model)
  const std::string given = test::error_of([&] { Service{o}; });
  EXPECT_NE(given.find(recorded), std::string::npos) << given;
  EXPECT_NE(given.find(serving), std::string::npos) << given;
  // The model folder's own verifier, recorded for another model (copied along with a checkpoint).
  std::filesystem::copy_file(*dir_ + "/v.safetensors", other + "/model/verifier.safetensors");
  o.verifier = "";
  const std::string shipped = test::error_of([&] { Service{o}; });
  EXPECT_NE(shipped.find(recorded), std::string::npos) << shipped;
  EXPECT_NE(shipped.find(serving), std::string::npos) << shipped;
  for (const char* builtin : {"F1", "cosine"}) {
    o.verifier = builtin;
    EXPECT_NO_THROW(Service{o}) << builtin;
  }
}

// Two jobs kept apart: when the model's calibrated verifier (an identity gate) is taken by default,
// "gate" uses it and relevance reranking ("rerank" alone, TEI /rerank) uses F1; a verifier named
// at start-up serves both.
TEST_F(ServeTest, TheDefaultGateGatesAndF1Reranks) {
  const std::string other = test::make_temp_dir("serve_two_jobs");
  write_fixture_model(other + "/model", test::tiny_model_options(21));  // the same weights: the same identity
  ASSERT_EQ(model_identity(other + "/model"), model_identity(*dir_ + "/model"));
  build_index(other + "/model", *dir_ + "/c.tsv", other + "/ix");
  std::filesystem::copy_file(*dir_ + "/v.safetensors", other + "/model/verifier.safetensors");
  auto service = [&](const std::string& verifier) {
    ServeOptions o;
    o.index_dir = other + "/ix";
    o.verifier = verifier;
    o.encoder_workers = 1;
    return std::make_unique<Service>(o);
  };
  auto call = [](Service& s, const std::string& path, const json& body) {
    Response r = s.handle("POST", path, body.dump());
    EXPECT_EQ(r.status, 200) << path << " " << r.body;
    return json::parse(r.body);
  };
  auto by_default = service("");
  const std::string gate = other + "/model/verifier.safetensors";
  const json q = {{"query", kTexts[0]}, {"k", 3}};
  auto verifier_of = [&](json body) { return call(*by_default, "/v1/search", body)["verifier"]; };
  json b = q;
  b["rerank"] = true;
  EXPECT_EQ(verifier_of(b), "F1");
  b["gate"] = true;
  EXPECT_EQ(verifier_of(b), gate);
  b.erase("rerank");
  EXPECT_EQ(verifier_of(b), gate);
  // TEI /rerank: the default service answers as an F1 service does, a service named the gate otherwise.
  const json r = {{"query", kTexts[0]}, {"texts", {kTexts[1], kTexts[2], kTexts[3], kTexts[0]}}, {"raw_scores", true}};
  auto f1 = service("F1"), named = service(gate);
  EXPECT_EQ(call(*by_default, "/rerank", r), call(*f1, "/rerank", r));
  EXPECT_NE(call(*named, "/rerank", r), call(*f1, "/rerank", r));
  // Named at start-up, the gate serves rerank too.
  b = q;
  b["rerank"] = true;
  EXPECT_EQ(call(*named, "/v1/search", b)["verifier"], gate);
}

// --gate-mode cascade: the service's stage 2 and /v1/verify are the library's cascade, and the
// timings say how many candidates went to the cross-encoder.
TEST_F(ServeTest, GateModeCascadeIsTheLibrarysAndReportsWhatItSent) {
  const std::string other = test::make_temp_dir("serve_cascade");
  write_fixture_model(other + "/model", test::tiny_model_options(21));  // the index's model, its identity
  std::filesystem::copy_file(*dir_ + "/v.safetensors", other + "/model/verifier.safetensors");
  build_index(other + "/model", *dir_ + "/c.tsv", other + "/ix");
  {
    std::ofstream f(other + "/pairs.tsv");
    f << "sentence1\tsentence2\tlabel\n";
    for (int i = 0; i < 7; ++i) f << kTexts[i] << "\t" << kTexts[(i + i % 2) % 7] << "\t" << (i % 2 ? 0 : 1) << "\n";
  }
  CrossEncoderTrainOptions t;
  t.model_dir = other + "/model";
  t.train_path = other + "/pairs.tsv";
  t.lr = 1e-2;
  t.common.out_dir = other + "/ce";
  t.common.steps = 2;
  t.common.batch_size = 4;
  t.common.progress = false;
  t.common.threads = 1;
  train_cross_encoder(t);
  const std::string ce = other + "/ce/last";
  ServeOptions o;
  o.index_dir = other + "/ix";
  o.encoder_workers = 1;
  o.gate_mode = "cascade";
  o.cross = ce;
  // No band yet for this gate: refused at start-up.
  test::expect_error([&] { Service s(o); }, "calibrate");
  CrossEncoderMeta m = read_cross_encoder_meta(ce);
  m.threshold = 0.5;
  m.cascade_low = -1e9;  // every candidate goes to the cross-encoder
  m.cascade_high = 1e9;
  m.cascade_fast_sha256 = sha256_file_hex(other + "/model/verifier.safetensors");
  write_cross_encoder_meta(ce, m);
  Service service(o);
  const json body = {{"query", kTexts[0]}, {"k", 7}, {"candidates", 7}, {"gate", true}, {"rerank", true}};
  Response r = service.handle("POST", "/v1/search", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json got = json::parse(r.body);
  EXPECT_EQ(got["verifier"], "cascade:" + ce);
  const json& timings = got["results"][0]["timings"];
  EXPECT_EQ(timings["sent_to_cross"], 7);
  EXPECT_EQ(timings["scored"], 7);
  EXPECT_TRUE(timings.contains("cross_ms"));
  const ResolvedVerifier rv = resolve_verifier("cascade:" + ce, {other + "/model", ""});
  auto index = Index::open(other + "/ix");
  PipelineParams pp;
  pp.candidates = pp.k = 7;
  pp.gate = pp.rerank = true;
  const auto want = search_verified(*index, rv, kTexts[0], pp);
  ASSERT_EQ(got["results"][0]["hits"].size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got["results"][0]["hits"][i]["id"], want[i].hit.id);
    EXPECT_NEAR(got["results"][0]["hits"][i]["verifier_score"].get<double>(), want[i].verifier_score, 1e-6);
  }
  // /v1/verify: the cascade's pair scores.
  json vb;
  vb["pairs"] = json::array({json::array({kTexts[0], kTexts[1]}), json::array({kTexts[2], kTexts[2]})});
  r = service.handle("POST", "/v1/verify", vb.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  auto enc = Encoder::load(other + "/model");
  const auto s = score_text_pairs(enc.get(), rv, {{kTexts[0], kTexts[1]}, {kTexts[2], kTexts[2]}});
  EXPECT_NEAR(json::parse(r.body)["results"][0]["score"].get<double>(), s[0], 1e-6);
  EXPECT_NEAR(json::parse(r.body)["results"][1]["score"].get<double>(), s[1], 1e-6);
  // A gate mode and a verifier together are refused.
  o.verifier = "F1";
  test::expect_error([&] { check_serve_options(o); }, "not both");
}

// A shard set served: every search answer equals the one-index service's, byte for byte, before
// and after the same writes through each (add, upsert, delete by id and by filter): a search
// after a write's answer sees it on every shard.
TEST(ServeShardSet, AnswersEqualOneIndexBeforeAndAfterWrites) {
  const std::string dir = test::make_temp_dir("serve_set");
  write_fixture_model(dir + "/model", test::tiny_model_options(21));
  {
    std::ofstream f(dir + "/c.tsv");
    for (int i = 0; i < 40; ++i) f << "d" << i << "\t" << kTexts[i % 7] << " " << kTexts[(i * 3) % 7] << " " << i << "\n";
  }
  IndexBuildOptions bo;
  bo.chunk_docs = 8;
  build_index(dir + "/model", dir + "/c.tsv", dir + "/one", bo);
  build_shard_set(dir + "/model", dir + "/c.tsv", dir + "/set", 3, bo);
  ServeOptions o = test_util::f1_options(dir + "/one");
  Service one(o);
  o.index_dir = dir + "/set";
  Service set(o);
  const auto same_answers = [&](const std::string& when) {
    for (const json& body : {json{{"query", "who bit the man"}, {"mode", "dense"}, {"k", 5}},
                             json{{"queries", {"the dog", "a red car"}}, {"mode", "bm25"}, {"k", 5}},
                             json{{"query", "the cat sat"}, {"mode", "hybrid"}, {"k", 5}, {"candidates", 12}, {"rerank", true}},
                             json{{"query", "the man bit"}, {"mode", "hybrid"}, {"k", 8}, {"filter", {{"kind", "new"}}}}}) {
      Response a = one.handle("POST", "/v1/search", body.dump());
      Response b = set.handle("POST", "/v1/search", body.dump());
      ASSERT_EQ(a.status, 200) << a.body;
      ASSERT_EQ(b.status, 200) << b.body;
      json ja = json::parse(a.body), jb = json::parse(b.body);
      for (json* j : {&ja, &jb})
        for (auto& r : (*j)["results"]) r.erase("timings");  // times differ, answers must not
      EXPECT_EQ(ja, jb) << when << ": " << body.dump();
    }
  };
  same_answers("as built");
  const auto both = [&](const std::string& method, const std::string& path, const json& body) {
    Response a = one.handle(method, path, body.dump());
    Response b = set.handle(method, path, body.dump());
    EXPECT_EQ(a.status, 200) << a.body;
    EXPECT_EQ(b.status, 200) << b.body;
    return json::parse(b.body);
  };
  json added = both("POST", "/v1/documents",
                    json{{"documents", {{{"_id", "new1"}, {"text", "the man bit the dog"}, {"metadata", {{"kind", "new"}}}},
                                        {{"_id", "new2"}, {"text", "a red car left of the house"}, {"metadata", {{"kind", "new"}}}},
                                        {{"_id", "new3"}, {"text", "the cat sat on the mat"}, {"metadata", {{"kind", "new"}}}}}}});
  EXPECT_EQ(added["documents"], 43) << added.dump();
  same_answers("after an add");
  Response found = set.handle("GET", "/v1/documents/new1", "");
  EXPECT_EQ(found.status, 200) << found.body;
  both("PUT", "/v1/documents/d7", json{{"text", "the dog did not bite the man"}, {"metadata", {{"kind", "changed"}}}});
  same_answers("after an upsert");
  both("DELETE", "/v1/documents/new2", json{});
  both("POST", "/v1/documents/delete", json{{"filter", {{"kind", "new"}}}});
  same_answers("after deletes");
  EXPECT_EQ(set.handle("GET", "/v1/documents/new2", "").status, 404);
}

// Shards served elsewhere (Ray Serve's router): a shard that does not answer makes a search that
// needs it a 503 with Retry-After, not a 422 or a 500; BM25 alone still answers.
TEST(ServeShardSet, AShardThatDoesNotAnswerIs503) {
  struct DownRemote final : ShardRemote {
    std::vector<std::vector<std::pair<uint32_t, double>>> dense_lists(size_t, const std::string&, size_t, size_t,
                                                                     const float*, size_t,
                                                                     const SearchParams&) const override {
      throw ShardUnavailable("shard 1 did not answer: replica died");
    }
    std::vector<TokenStates> tokens(size_t, const std::string&, const std::vector<uint32_t>&, size_t,
                                    std::chrono::steady_clock::time_point) const override {
      throw ShardUnavailable("shard 1 did not answer");
    }
    std::vector<float> keys(size_t, const std::string&, const std::vector<uint32_t>&,
                            std::chrono::steady_clock::time_point) const override {
      throw ShardUnavailable("shard 1 did not answer");
    }
  };
  const std::string dir = test::make_temp_dir("serve_set_down");
  write_fixture_model(dir + "/model", test::tiny_model_options(22));
  {
    std::ofstream f(dir + "/c.tsv");
    for (int i = 0; i < 30; ++i) f << "d" << i << "\t" << kTexts[i % 7] << " " << i << "\n";
  }
  IndexBuildOptions bo;
  bo.chunk_docs = 8;
  build_shard_set(dir + "/model", dir + "/c.tsv", dir + "/set", 2, bo);
  ServeOptions o;
  o.encoder_workers = 1;
  o.verifier = "F1";
  o.index_dir = dir + "/set";
  o.remote = std::make_shared<DownRemote>();
  Service set(o);
  Response r = set.handle("POST", "/v1/search", json{{"query", "the dog"}, {"mode", "dense"}}.dump());
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(json::parse(r.body)["error"]["type"], "shard_unavailable");
  EXPECT_NE(r.body.find("replica died"), std::string::npos) << r.body;
  bool retry_after = false;
  for (const auto& [k, v] : r.headers) retry_after |= k == "Retry-After";
  EXPECT_TRUE(retry_after);
  EXPECT_EQ(set.handle("POST", "/v1/search", json{{"query", "the dog"}, {"mode", "bm25"}}.dump()).status, 200);
  r = set.handle("POST", "/v1/search", json{{"query", "the dog"}, {"mode", "bm25"}, {"rerank", true}}.dump());
  EXPECT_EQ(r.status, 503) << r.body;  // stage 2 reads token states from the shards
}

// Live documents: a batch is searchable once answered, whole; ids must be new; readers running
// meanwhile see the old or the new snapshot, never an error.
TEST(ServeDocuments, AddedBatchesAreSearchableAndIdsAreChecked) {
  const std::string dir = test::make_temp_dir("serve_docs");
  write_text_index(dir, 25);
  ServeOptions o;
  o.index_dir = dir + "/ix";
  Service s(o);
  auto call = [&](const std::string& m, const std::string& p, const json& b) { return s.handle(m, p, b.dump()); };
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0}, searches{0};
  std::thread reader([&] {
    size_t last = 0;
    while (!stop) {
      Response r = call("POST", "/v1/search", {{"query", "zebra giraffe"}, {"mode", "bm25"}, {"k", 50}});
      if (r.status != 200) ++errors;
      const size_t n = json::parse(r.body)["results"][0]["hits"].size();
      if (n < last || n % 2 != 0) ++errors;  // batches of two: never half of one, never fewer later
      last = n;
      ++searches;
    }
  });
  for (int b = 0; b < 4; ++b) {
    json docs = json::array();
    for (int k = 0; k < 2; ++k)
      docs.push_back({{"_id", "z" + std::to_string(b * 2 + k)}, {"title", "zoo"}, {"text", "zebra giraffe " + std::to_string(b)}});
    Response r = call("POST", "/v1/documents", {{"documents", docs}});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(json::parse(r.body)["documents"], 7 + 2 * (b + 1));
    // Visible to the next search as soon as it is answered.
    Response q = call("POST", "/v1/search", {{"query", "zebra giraffe"}, {"mode", "bm25"}, {"k", 50}});
    EXPECT_EQ(json::parse(q.body)["results"][0]["hits"].size(), size_t(2 * (b + 1)));
  }
  stop = true;
  reader.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(searches.load(), 0);
  // Dense search sees them too (the snapshot shares the loaded encoder).
  Response dense = call("POST", "/v1/search", {{"query", "zebra giraffe 3"}, {"mode", "dense"}, {"k", 15}});
  EXPECT_NE(dense.body.find("\"z7\""), std::string::npos) << dense.body;
  Response g = s.handle("GET", "/v1/documents/z3", "");
  ASSERT_EQ(g.status, 200);
  EXPECT_EQ(json::parse(g.body)["text"], "zebra giraffe 1");
  EXPECT_EQ(s.handle("GET", "/v1/documents/nope", "").status, 404);
  EXPECT_EQ(s.handle("PATCH", "/v1/documents/z3", "").status, 405);
  // Conflicts: an id already there, an id twice in one batch; nothing of such a batch is added.
  Response dup = call("POST", "/v1/documents", {{"documents", {{{"_id", "d1"}, {"text", "x"}}}}});
  EXPECT_EQ(dup.status, 409);
  EXPECT_NE(dup.body.find("already in the index"), std::string::npos);
  Response twice = call("POST", "/v1/documents", {{"documents", {{{"_id", "n1"}, {"text", "x"}}, {{"_id", "n1"}, {"text", "y"}}}}});
  EXPECT_EQ(twice.status, 409);
  EXPECT_EQ(call("POST", "/v1/documents", {{"documents", {{{"text", "no id"}}}}}).status, 400);
  EXPECT_EQ(call("POST", "/v1/documents", {{"documents", {{{"_id", "n3"}, {"id", ""}, {"text", "x"}}}}}).status, 400);
  Response extra = call("POST", "/v1/documents", {{"documents", {{{"_id", "n2"}, {"text", "x"}, {"tags", "a"}}}}});
  EXPECT_EQ(extra.status, 422);  // a field the index would drop silently
  EXPECT_NE(extra.body.find("documents[0]: unknown field 'tags'"), std::string::npos) << extra.body;
  EXPECT_EQ(json::parse(s.handle("GET", "/v1/info", "").body)["index"]["documents"], 15);
  // What was acknowledged is on disk: a fresh open (with a full check) holds it.
  IndexOpenOptions oo;
  oo.verify = true;
  oo.load_encoder = false;
  auto fresh = Index::open(dir + "/ix", oo);
  EXPECT_EQ(fresh->size(), 15u);
  EXPECT_GE(fresh->find("z7"), 0);
}

// Documents that change, through the server: metadata in, filters on /v1/search (every hit passes;
// a malformed filter is a 422 naming its place), upsert by POST and PUT, delete by id, by ids and
// by filter, expiry; every answer is durable (a fresh open holds it) and seen by the next search.
TEST(ServeDocuments, FiltersDeletesUpsertsAndExpiry) {
  const std::string dir = test::make_temp_dir("serve_docs_life");
  write_text_index(dir, 26);
  ServeOptions o;
  o.index_dir = dir + "/ix";
  Service s(o);
  auto call = [&](const std::string& m, const std::string& p, const json& b) { return s.handle(m, p, b.dump()); };
  auto ids_of = [&](const json& filter, const std::string& mode) {
    json body = {{"query", "zebra giraffe"}, {"mode", mode}, {"k", 50}, {"with_text", true}};
    if (!filter.is_null()) body["filter"] = filter;
    Response r = call("POST", "/v1/search", body);
    EXPECT_EQ(r.status, 200) << r.body;
    const json answer = json::parse(r.body);
    std::set<std::string> out;
    for (const json& h : answer["results"][0]["hits"]) out.insert(h["id"].get<std::string>());
    return out;
  };
  json docs = json::array();
  for (int i = 0; i < 6; ++i)
    docs.push_back({{"_id", "z" + std::to_string(i)}, {"text", "zebra giraffe " + std::to_string(i)},
                    {"metadata", {{"lang", i % 2 ? "de" : "en"}, {"year", 2020 + i}}}});
  docs[5]["ttl_s"] = 1e9;  // far off
  ASSERT_EQ(call("POST", "/v1/documents", {{"documents", docs}}).status, 200);
  for (const std::string mode : {"bm25", "dense", "hybrid"}) {
    EXPECT_EQ(ids_of({{"lang", "de"}}, mode), (std::set<std::string>{"z1", "z3", "z5"})) << mode;
    EXPECT_EQ(ids_of({{"year", {{"$gte", 2024}}}}, mode), (std::set<std::string>{"z4", "z5"})) << mode;
  }
  Response bad_filter = call("POST", "/v1/search", {{"query", "x"}, {"filter", {{"year", {{"$gt", "soon"}}}}}});
  EXPECT_EQ(bad_filter.status, 422);
  EXPECT_NE(bad_filter.body.find("filter.year.$gt"), std::string::npos) << bad_filter.body;
  EXPECT_EQ(call("POST", "/v1/search", {{"query", "x"}, {"filter", {{"a", {{"$regex", "b"}}}}}}).status, 422);
  // Gating on a server whose verifier has no threshold: the server cannot, the request is fine.
  Response no_threshold = call("POST", "/v1/search", {{"query", "x"}, {"gate", true}});
  EXPECT_EQ(no_threshold.status, 409) << no_threshold.body;
  EXPECT_EQ(call("POST", "/v1/search", {{"query", "x"}, {"gate", true}, {"threshold", 0.5}}).status, 200);
  Response got = s.handle("GET", "/v1/documents/z1", "");
  EXPECT_EQ(json::parse(got.body)["metadata"], json({{"lang", "de"}, {"year", 2021}}));
  EXPECT_GT(json::parse(s.handle("GET", "/v1/documents/z5", "").body)["expires_at"].get<double>(), 1e9);
  // Upsert: POST with "upsert", and PUT; the old text is found no more.
  EXPECT_EQ(call("POST", "/v1/documents", {{"documents", {{{"_id", "z0"}, {"text", "okapi"}}}}}).status, 409);
  Response up = call("POST", "/v1/documents", {{"documents", {{{"_id", "z0"}, {"text", "okapi tapir"}}}}, {"upsert", true}});
  ASSERT_EQ(up.status, 200) << up.body;
  EXPECT_EQ(json::parse(up.body)["replaced"], 1);
  Response put = call("PUT", "/v1/documents/z2", {{"text", "okapi quagga"}, {"metadata", {{"lang", "fr"}}}});
  ASSERT_EQ(put.status, 200) << put.body;
  EXPECT_EQ(json::parse(put.body)["created"], false);
  EXPECT_EQ(json::parse(call("PUT", "/v1/documents/new1", {{"text", "okapi"}}).body)["created"], true);
  EXPECT_EQ(ids_of(nullptr, "bm25"), (std::set<std::string>{"z1", "z3", "z4", "z5"}));
  EXPECT_EQ(json::parse(s.handle("GET", "/v1/documents/z2", "").body)["text"], "okapi quagga");
  // Deletes: one by id, a batch by ids (missing ones refuse it unless missing_ok), by filter.
  EXPECT_EQ(s.handle("DELETE", "/v1/documents/z1", "").status, 200);
  EXPECT_EQ(s.handle("DELETE", "/v1/documents/z1", "").status, 404);
  Response refused = call("POST", "/v1/documents/delete", {{"ids", {"z3", "nope"}}});
  EXPECT_EQ(refused.status, 404);
  EXPECT_EQ(ids_of(nullptr, "bm25").count("z3"), 1u) << "a refused batch deleted something";
  Response ok = call("POST", "/v1/documents/delete", {{"ids", {"z3", "nope"}}, {"missing_ok", true}});
  EXPECT_EQ(json::parse(ok.body)["missing"], json::array({"nope"}));
  Response by_filter = call("POST", "/v1/documents/delete", {{"filter", {{"year", 2024}}}});
  EXPECT_EQ(json::parse(by_filter.body)["deleted"], 1);
  EXPECT_EQ(call("POST", "/v1/documents/delete", {{"filter", json::object()}}).status, 400);
  EXPECT_EQ(ids_of(nullptr, "bm25"), (std::set<std::string>{"z5"}));
  // Bad metadata and expiry refuse the batch (422), nothing written.
  for (const json& bad : {json{{"_id", "b"}, {"text", "x"}, {"metadata", {{"a", {{"b", 1}}}}}},
                          json{{"_id", "b"}, {"text", "x"}, {"expires_at", "someday"}},
                          json{{"_id", "b"}, {"text", "x"}, {"ttl_s", -3}},
                          json{{"_id", "b"}, {"text", "x"}, {"ttl_s", 5}, {"expires_at", 1e10}}}) {
    Response r = call("POST", "/v1/documents", {{"documents", {bad}}});
    EXPECT_EQ(r.status, 422) << bad.dump() << " " << r.body;
  }
  EXPECT_EQ(s.handle("GET", "/v1/documents/b", "").status, 404);
  // An expiry in the past: stored, never seen.
  ASSERT_EQ(call("POST", "/v1/documents", {{"documents", {{{"_id", "old"}, {"text", "zebra giraffe"}, {"expires_at", "2001-01-01T00:00:00Z"}}}}}).status, 200);
  EXPECT_EQ(ids_of(nullptr, "bm25").count("old"), 0u);
  EXPECT_EQ(s.handle("GET", "/v1/documents/old", "").status, 404);
  // Everything acknowledged is on disk.
  IndexOpenOptions oo;
  oo.verify = true;
  oo.load_encoder = false;
  auto fresh = Index::open(dir + "/ix", oo);
  EXPECT_EQ(fresh->find("z1"), -1);
  EXPECT_EQ(fresh->find("z4"), -1);
  EXPECT_EQ(fresh->document(static_cast<uint32_t>(fresh->find("z2"))).metadata, R"({"lang":"fr"})");
  EXPECT_EQ(fresh->stats().deleted, 5u);  // z0 and z2 replaced, z1, z3, z4 deleted
}

// Past the dead share the server compacts on its own, in the background: /v1/info counts the
// compaction, the index then holds only the live documents (none deleted), and every
// acknowledged write before, during and after it stands.
TEST(ServeDocuments, CompactsOnItsOwnPastTheDeadShare) {
  const std::string dir = test::make_temp_dir("serve_docs_compact");
  write_text_index(dir, 27);
  ServeOptions o;
  o.index_dir = dir + "/ix";
  o.compact_dead_share = 0.3;
  o.compact_min_dead = 8;
  Service s(o);
  auto call = [&](const std::string& m, const std::string& p, const json& b) { return s.handle(m, p, b.dump()); };
  json docs = json::array();
  for (int i = 0; i < 20; ++i) docs.push_back({{"_id", "c" + std::to_string(i)}, {"text", "okapi number " + std::to_string(i)}});
  ASSERT_EQ(call("POST", "/v1/documents", {{"documents", docs}}).status, 200);
  json ids = json::array();
  for (int i = 0; i < 12; ++i) ids.push_back("c" + std::to_string(i));
  ASSERT_EQ(call("POST", "/v1/documents/delete", {{"ids", ids}}).status, 200);  // 12 of 27: past 0.3
  // Writes go on while it runs.
  ASSERT_EQ(call("POST", "/v1/documents", {{"documents", {{{"_id", "late"}, {"text", "okapi late"}}}}}).status, 200);
  json info;
  for (int i = 0; i < 6000; ++i) {  // the compaction's own report, not a time guess
    info = json::parse(s.handle("GET", "/v1/info", "").body)["index"];
    if (info["compactions"] == 1 && info["compacting"] == false) break;
    std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(info["compactions"], 1) << info.dump();
  ASSERT_EQ(call("POST", "/v1/documents/delete", {{"ids", {"c12"}}}).status, 200);
  info = json::parse(s.handle("GET", "/v1/info", "").body)["index"];
  EXPECT_LE(info["documents"].get<int>(), 7 + 8 + 1);  // the dead are gone from disk
  std::set<std::string> found;
  const json r = json::parse(call("POST", "/v1/search", {{"query", "okapi"}, {"mode", "bm25"}, {"k", 50}}).body);
  for (const json& h : r["results"][0]["hits"]) found.insert(h["id"].get<std::string>());
  std::set<std::string> want = {"late"};
  for (int i = 13; i < 20; ++i) want.insert("c" + std::to_string(i));
  EXPECT_EQ(found, want);
}

// A full encoder queue answers 503 with Retry-After instead of growing; what was admitted is
// answered normally, and the batches respect max_batch.
// One encoder worker whose first text waits 3 s for company (the batch cannot fill: 64 > the
// queue's 6), long enough for twelve concurrent requests to arrive even on a loaded machine.
ServeOptions tight_queue(const std::string& model) {
  ServeOptions o;
  o.model_dir = model;
  o.encoder_workers = 1;
  o.batching.max_batch = 64;
  o.batching.max_wait_ms = 3000;
  o.batching.max_queue = 6;
  return o;
}

TEST(ServeBatching, FullQueueAnswers503AndBatchesStayBounded) {
  const std::string dir = test::make_temp_dir("serve_queue");
  write_fixture_model(dir + "/model", test::tiny_model_options(28));
  // The queue admits three 2-text requests and refuses the rest, and the three run as one pass.
  Service s(tight_queue(dir + "/model"));
  std::vector<std::future<Response>> calls;
  for (int i = 0; i < 12; ++i)
    calls.push_back(std::async(std::launch::async, [&s, i] {
      return s.handle("POST", "/v1/embeddings", json{{"input", {"text " + std::to_string(i), "more"}}}.dump());
    }));
  int ok = 0, full = 0;
  for (auto& c : calls) {
    Response r = c.get();
    if (r.status == 200) {
      ++ok;
      EXPECT_EQ(json::parse(r.body)["data"].size(), 2u);
    } else {
      ++full;
      EXPECT_EQ(r.status, 503) << r.body;
      EXPECT_NE(r.body.find("queue is full"), std::string::npos) << r.body;
      ASSERT_EQ(r.headers.size(), 1u);
      EXPECT_EQ(r.headers[0].first, "Retry-After");
    }
  }
  EXPECT_EQ(ok, 3);
  EXPECT_EQ(full, 9);
  // The three admitted requests ran as one forward pass of 6 texts (histogram bucket le=8).
  const std::string m = s.handle("GET", "/metrics", "").body;
  EXPECT_NE(m.find("sieve_batch_size_bucket{le=\"4\"} 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("sieve_batch_size_bucket{le=\"8\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("sieve_batch_size_count 1\n"), std::string::npos) << m;
}

// Token arrays (OpenAI's other /v1/embeddings input) go through the same queue: its limit gives
// them the same 503, and each admitted request runs as a pass of its own, exactly encode_ids'.
TEST(ServeBatching, TokenArraysQueueToo) {
  const std::string dir = test::make_temp_dir("serve_queue_ids");
  write_fixture_model(dir + "/model", test::tiny_model_options(29));
  Service s(tight_queue(dir + "/model"));
  const std::vector<std::vector<int32_t>> ids = {{2, 7, 9, 3}, {2, 11, 3}};
  std::vector<std::future<Response>> calls;
  for (int i = 0; i < 12; ++i)
    calls.push_back(std::async(std::launch::async, [&s, &ids] {
      return s.handle("POST", "/v1/embeddings", json{{"input", ids}}.dump());
    }));
  const Embeddings want = Encoder::load(dir + "/model")->encode_ids(ids);
  int ok = 0, full = 0;
  for (auto& c : calls) {
    Response r = c.get();
    if (r.status == 200) {
      ++ok;
      const json data = json::parse(r.body)["data"];
      ASSERT_EQ(data.size(), 2u);
      for (size_t t = 0; t < 2; ++t)
        for (size_t d = 0; d < want.dim; ++d)
          EXPECT_NEAR(data[t]["embedding"][d].get<double>(), want.pooled[t * want.dim + d], 1e-6);
    } else {
      ++full;
      EXPECT_EQ(r.status, 503) << r.body;
      EXPECT_NE(r.body.find("queue is full"), std::string::npos) << r.body;
    }
  }
  EXPECT_EQ(ok, 3);
  EXPECT_EQ(full, 9);
  const std::string m = s.handle("GET", "/metrics", "").body;
  EXPECT_NE(m.find("sieve_batch_size_count 3\n"), std::string::npos) << m;  // one pass each
}

}  // namespace
}  // namespace sieve::serve
