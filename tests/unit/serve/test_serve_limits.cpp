// What keeps `sieve serve` up (docs/server.md, "Limits"): per-client token buckets and requests in
// flight (429 with Retry-After), and deadlines (504 in the encoder queue; a search past its
// deadline answers stage 1's hits, flagged).
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "serve/http_server.h"
#include "serve/limits.h"
#include "serve/service.h"
#include "sieve/index.h"
#include "sieve/pipeline.h"
#include "sieve/verify.h"
#include "support/fixtures.h"
#include "support/test_util.h"
#include "unit/serve/serve_test_util.h"

namespace sieve::serve {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace test_util;

Clock::time_point at(double seconds) {
  return Clock::time_point{} + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6)) + std::chrono::hours(1);
}

// A hand-worked schedule: rate 2/s, burst 3.
TEST(ClientLimiter, TokenBucketFollowsAHandSchedule) {
  ClientLimiter l;
  ClientLimits lim;
  lim.rate = 2;
  lim.burst = 3;
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(l.admit("a", lim, at(0)).admitted) << i;  // the burst
  ClientLimiter::Verdict v = l.admit("a", lim, at(0));
  EXPECT_FALSE(v.admitted);
  EXPECT_NEAR(v.retry_after, 0.5, 1e-9);  // one token takes 1/rate
  EXPECT_NE(v.why.find("rate of 2 requests/s"), std::string::npos) << v.why;
  v = l.admit("a", lim, at(0.25));
  EXPECT_FALSE(v.admitted);
  EXPECT_NEAR(v.retry_after, 0.25, 1e-6);
  EXPECT_TRUE(l.admit("a", lim, at(0.5)).admitted);
  EXPECT_FALSE(l.admit("a", lim, at(0.5)).admitted);
  EXPECT_TRUE(l.admit("b", lim, at(0.5)).admitted);  // clients are apart
  // Ten idle seconds refill the bucket to its burst, not to 20.
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(l.admit("a", lim, at(10.5)).admitted) << i;
  EXPECT_FALSE(l.admit("a", lim, at(10.5)).admitted);
  // No burst given: the rate, at least 1.
  ClientLimits slow;
  slow.rate = 0.5;
  EXPECT_TRUE(l.admit("c", slow, at(0)).admitted);
  v = l.admit("c", slow, at(0));
  EXPECT_FALSE(v.admitted);
  EXPECT_NEAR(v.retry_after, 2.0, 1e-9);
  EXPECT_EQ(retry_after_header(v.retry_after), 2);
  EXPECT_EQ(retry_after_header(0.01), 1);
  EXPECT_EQ(retry_after_header(1.2), 2);
}

// Against an independent formulation: the generic cell rate algorithm (virtual scheduling, as in
// ATM traffic policing) admits exactly what a token bucket of rate r and burst b admits.
TEST(ClientLimiter, TokenBucketEqualsGenericCellRateAlgorithm) {
  std::mt19937_64 rng(20261203);
  for (const auto& [rate, burst] : std::vector<std::pair<double, double>>{{1, 1}, {5, 5}, {10, 3}, {0.7, 4}, {50, 20}}) {
    ClientLimiter l;
    ClientLimits lim;
    lim.rate = rate;
    lim.burst = burst;
    const double T = 1 / rate, tau = (burst - 1) * T;
    double tat = 0, t = 0;
    bool first = true;
    std::exponential_distribution<double> gap(rate * 1.6);  // arrivals faster than the rate: many refusals
    size_t admitted = 0, refused = 0;
    for (int i = 0; i < 4000; ++i) {
      t += gap(rng);
      const double tq = std::round(t * 1e6) / 1e6;  // the limiter's clock has microseconds
      const double limit = first ? -1e300 : tat - tau;  // GCRA: admitted when t >= TAT - tau
      bool want = tq >= limit;
      const bool got = l.admit("c", lim, at(tq)).admitted;
      // Within a microsecond of the boundary the two roundings may differ: follow the limiter.
      if (std::fabs(tq - limit) < 1e-5) want = got;
      ASSERT_EQ(got, want) << "rate " << rate << " burst " << burst << " request " << i << " at " << tq;
      if (want) {
        tat = (first ? tq : std::max(tat, tq)) + T;
        first = false;
      }
      (got ? admitted : refused) += 1;
    }
    EXPECT_GT(admitted, 100u);
    EXPECT_GT(refused, 100u);
  }
}

TEST(ClientLimiter, RequestsInFlightAreCappedAndGivenBack) {
  ClientLimiter l;
  ClientLimits lim;
  lim.concurrent = 2;
  EXPECT_TRUE(l.admit("a", lim).admitted);
  EXPECT_TRUE(l.admit("a", lim).admitted);
  const ClientLimiter::Verdict v = l.admit("a", lim);
  EXPECT_FALSE(v.admitted);
  EXPECT_EQ(v.retry_after, 1);
  EXPECT_NE(v.why.find("2 requests of this client are in flight, its limit is 2"), std::string::npos) << v.why;
  EXPECT_TRUE(l.admit("b", lim).admitted);
  l.release("a");
  EXPECT_TRUE(l.admit("a", lim).admitted);
  EXPECT_FALSE(l.admit("a", lim).admitted);
  // Idle clients with full buckets are forgotten once there are many.
  ClientLimits rate;
  rate.rate = 1000;
  for (int i = 0; i < 5000; ++i) l.admit("addr" + std::to_string(i), rate, at(0));
  l.admit("late", rate, at(60));
  EXPECT_LT(l.clients(), 100u);
}

// Issue 45's review: a burst between 0 and 1 never holds a whole request, so its client would be
// refused forever while told to retry: refused at start-up, from the command line's options, a
// key file's line and the server's options alike.
TEST(ClientLimiter, SettingsThatCanNeverAdmitAreRefusedAtStart) {
  for (double burst : {0.5, 0.999, -1.0, std::nan("")}) {
    ClientLimits l;
    l.rate = 10;
    l.burst = burst;
    test::expect_error([&] { check_client_limits(l, "--burst"); }, "burst");
    HttpOptions o;
    o.limits = l;
    test::expect_error([&] { HttpServer(o, [] { return std::unique_ptr<Service>(); }); }, "burst");
  }
  ClientLimits ok;
  ok.rate = 0.5;  // a slow rate with the default burst (at least 1) is fine, as is a burst of 1
  EXPECT_NO_THROW(check_client_limits(ok, "x"));
  ok.burst = 1;
  EXPECT_NO_THROW(check_client_limits(ok, "x"));
  const std::string dir = test::make_temp_dir("limits_keys");
  std::ofstream(dir + "/keys") << "k1 read rate=5 burst=0.5\n";
  test::expect_error([&] { read_api_keys(dir + "/keys"); }, "burst= must be 0 (the rate) or at least 1");
}

// The client map: scanned for idle clients when it passes 4,096 and then at each doubling, not
// on every admit (5,000 busy clients made about 900 scans); bounded at kMaxClients, where a new
// client is refused and a known one still served.
TEST(ClientLimiter, TheClientMapIsScannedRarelyAndBounded) {
  ClientLimiter l;
  ClientLimits busy;
  busy.concurrent = 2;  // each client keeps one request in flight: none is ever idle
  for (int i = 0; i < 5000; ++i) ASSERT_TRUE(l.admit("c" + std::to_string(i), busy, at(0)).admitted);
  EXPECT_EQ(l.clients(), 5000u);
  EXPECT_EQ(l.idle_scans(), 1u);  // once past 4,096, and not again until 8,194
  for (size_t i = 5000; i < ClientLimiter::kMaxClients; ++i)
    ASSERT_TRUE(l.admit("c" + std::to_string(i), busy, at(0)).admitted);
  EXPECT_LE(l.idle_scans(), 5u);  // 4,097, 8,195, 16,391, 32,783
  const size_t scans = l.idle_scans();
  ClientLimiter::Verdict v = l.admit("newcomer", busy, at(5));  // scanned (none idle), refused
  EXPECT_FALSE(v.admitted);
  EXPECT_NE(v.why.find("as many clients as it may"), std::string::npos) << v.why;
  EXPECT_EQ(l.idle_scans(), scans + 1);
  v = l.admit("newcomer2", busy, at(5.5));  // within the second: refused without a scan
  EXPECT_FALSE(v.admitted);
  EXPECT_EQ(l.idle_scans(), scans + 1);
  EXPECT_EQ(l.clients(), ClientLimiter::kMaxClients);
  EXPECT_TRUE(l.admit("c7", busy, at(5.5)).admitted);  // a known client is still served (its second place)
  // Once clients go idle they are forgotten and room is made again.
  for (size_t i = 0; i < ClientLimiter::kMaxClients; ++i) l.release("c" + std::to_string(i));
  l.release("c7");
  EXPECT_TRUE(l.admit("newcomer", busy, at(7)).admitted);
  EXPECT_LT(l.clients(), 10u);
}

// Held refusals: at most `most` per client and `most_total` together, given back by end_hold.
TEST(ClientLimiter, HeldRefusalsHaveAGlobalCap) {
  ClientLimiter l;
  ClientLimits one;
  one.concurrent = 1;
  for (const char* c : {"a", "b", "c"}) l.admit(c, one);
  EXPECT_TRUE(l.begin_hold("a", 16, 2));
  EXPECT_TRUE(l.begin_hold("b", 16, 2));
  EXPECT_FALSE(l.begin_hold("c", 16, 2));  // two held already, by other clients
  EXPECT_FALSE(l.begin_hold("a", 16, 2));
  l.end_hold("a");
  EXPECT_TRUE(l.begin_hold("c", 16, 2));
  EXPECT_FALSE(l.begin_hold("c", 1, 16));  // its own cap
}

httplib::Headers as(const std::string& key) { return {{"Authorization", "Bearer " + key}}; }

// Behind a proxy the client is the address the proxy wrote: the rightmost of X-Forwarded-For
// (issue 45: the whole header was the identity, so a client naming itself anew each time evaded
// its limit). By hand, then over HTTP with a rate of 0.5/s.
// Admission alone, as both faces use it (sieve serve's HTTP layer, Ray Serve's router through
// _sieve.Admission): keys and scopes, the open routes, per-client limits with a held 429, the
// place in flight given back, the body cap.
TEST(Admission, KeysScopesLimitsAndTheBodyCapInOnePlace) {
  AdmissionOptions o;
  ApiKey reader;
  reader.key = "r-key";
  reader.scope = KeyScope::Read;
  reader.rate = 1;
  reader.burst = 1;
  ApiKey admin;
  admin.key = "a-key";
  admin.concurrent = 1;
  o.api_keys = {reader, admin};
  o.max_body = 100;
  o.refusal_delay_ms = 250;
  Admission a(o, 8);
  // The open routes need no key and are never limited.
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(a.admit("GET", "/health", "", "10.0.0.1").refusal);
  auto no_key = a.admit("POST", "/v1/search", "", "10.0.0.1");
  ASSERT_TRUE(no_key.refusal);
  EXPECT_EQ(no_key.refusal->status, 401);
  EXPECT_EQ(a.admit("POST", "/v1/search", "Bearer nope", "10.0.0.1").refusal->status, 401);
  auto wrong_scope = a.admit("POST", "/v1/documents", "Bearer r-key", "10.0.0.1");
  ASSERT_TRUE(wrong_scope.refusal);
  EXPECT_EQ(wrong_scope.refusal->status, 403);
  EXPECT_NE(wrong_scope.refusal->body.find("needs a key of scope 'write'"), std::string::npos);
  // The cache: a lookup and an entry by id are reads; a store and every removal are writes.
  EXPECT_EQ(scope_needed("POST", "/v1/cache/lookup"), KeyScope::Read);
  EXPECT_EQ(scope_needed("GET", "/v1/cache/abc"), KeyScope::Read);
  for (const auto& [m, p] : std::vector<std::pair<std::string, std::string>>{
           {"POST", "/v1/cache"}, {"POST", "/v1/cache/delete"}, {"DELETE", "/v1/cache/abc"}})
    EXPECT_EQ(scope_needed(m, p), KeyScope::Write) << m << " " << p;
  // Ray Serve's router's counters are the admin's, as /metrics.
  EXPECT_EQ(a.admit("GET", "/router/stats", "Bearer r-key", "10.0.0.1").refusal->status, 403);
  // The reader's own rate (1/s, burst 1): the first passes, the second is a 429 held for
  // min(250 ms, Retry-After), counted per key whatever the address.
  auto first = a.admit("POST", "/v1/search", "Bearer r-key", "10.0.0.1");
  EXPECT_FALSE(first.refusal);
  EXPECT_EQ(first.client, "key r-key");
  auto second = a.admit("POST", "/v1/search", "Bearer r-key", "10.0.0.2");
  ASSERT_TRUE(second.refusal);
  EXPECT_EQ(second.refusal->status, 429);
  EXPECT_DOUBLE_EQ(second.hold_seconds, 0.25);
  a.end_hold(second.client);
  // The admin's one place in flight: taken by an admitted request, refused to the next, given
  // back when the first one's ticket ends.
  {
    auto in = a.admit("GET", "/metrics", "Bearer a-key", "x");
    EXPECT_FALSE(in.refusal);
    EXPECT_TRUE(in.ticket.held());
    EXPECT_EQ(a.in_flight("key a-key"), 1u);
    auto more = a.admit("GET", "/metrics", "Bearer a-key", "x");
    ASSERT_TRUE(more.refusal);
    EXPECT_EQ(more.refusal->status, 429);
    a.end_hold(more.client);
  }
  EXPECT_EQ(a.in_flight("key a-key"), 0u);
  EXPECT_FALSE(a.admit("GET", "/metrics", "Bearer a-key", "x").refusal);
  // A place handed over is the caller's to give back.
  auto handed = a.admit("GET", "/metrics", "Bearer a-key", "x");
  handed.ticket.hand_over();
  EXPECT_EQ(a.in_flight("key a-key"), 1u);
  a.release("key a-key");
  EXPECT_EQ(a.in_flight("key a-key"), 0u);
  // The body cap.
  EXPECT_FALSE(a.body_refusal(100));
  ASSERT_TRUE(a.body_refusal(101));
  EXPECT_EQ(a.body_refusal(101)->status, 413);
  // Keys replaced: the old ones stop working at once; no keys: every route is open.
  a.set_api_keys({});
  EXPECT_FALSE(a.admit("POST", "/v1/documents", "", "10.0.0.1").refusal);
  // Settings that could never admit are refused when it is made.
  AdmissionOptions bad;
  bad.limits.rate = 1;
  bad.limits.burst = 0.5;
  EXPECT_THROW(Admission(bad, 8), Error);
}

TEST(ServeLimits, AForwardedForClientCannotChooseItsIdentity) {
  EXPECT_EQ(client_address_from_header("203.0.113.7"), "203.0.113.7");
  EXPECT_EQ(client_address_from_header("1.2.3.4, 198.51.100.9"), "198.51.100.9");
  EXPECT_EQ(client_address_from_header("spoof,  198.51.100.9 "), "198.51.100.9");
  EXPECT_EQ(client_address_from_header(" , "), "");
  const std::string dir = test::make_temp_dir("serve_forwarded");
  write_text_index(dir, 41);
  HttpOptions h;
  h.port = 0;
  h.limits.rate = 0.5;
  h.client_header = "X-Forwarded-For";
  const ServeOptions o = text_index_service(dir);
  RunningServer running(h, o);
  ASSERT_TRUE(running.server.ready());
  httplib::Client cli("127.0.0.1", running.port);
  auto from = [](const std::string& xff) { return httplib::Headers{{"X-Forwarded-For", xff}}; };
  EXPECT_EQ(cli.Get("/v1/documents/d0", from("10.0.0.1, 198.51.100.9"))->status, 200);
  EXPECT_EQ(cli.Get("/v1/documents/d0", from("10.0.0.2, 198.51.100.9"))->status, 429);  // the same client
  EXPECT_EQ(cli.Get("/v1/documents/d0", from("198.51.100.10"))->status, 200);            // another one
}

// A key's own rate (from its line) over HTTP: 429 with Retry-After and a JSON error, other keys
// and the open routes untouched; without keys, the server's limits hold per address.
TEST(ServeLimits, RatesPerKeyAndPerAddress) {
  const std::string dir = test::make_temp_dir("serve_rates");
  write_text_index(dir, 41);
  std::ofstream(dir + "/keys") << "slow read rate=0.5 burst=2\nfree read\n";
  HttpOptions h;
  h.port = 0;
  h.api_keys = read_api_keys(dir + "/keys");
  ASSERT_EQ(h.api_keys[0].rate.value_or(-1), 0.5);
  const ServeOptions o = text_index_service(dir);
  {
    RunningServer running(h, o);
    ASSERT_TRUE(running.server.ready());
    httplib::Client cli("127.0.0.1", running.port);
    EXPECT_EQ(cli.Get("/v1/documents/d0", as("slow"))->status, 200);
    EXPECT_EQ(cli.Get("/v1/documents/d1", as("slow"))->status, 200);
    auto r = cli.Get("/v1/documents/d2", as("slow"));  // the burst is spent; a token takes 2 s
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 429);
    EXPECT_EQ(r->get_header_value("Retry-After"), "2");
    const json err = json::parse(r->body);
    EXPECT_EQ(err["error"]["type"], "rate_limited");
    EXPECT_NE(err["error"]["message"].get<std::string>().find("rate of 0.5 requests/s"), std::string::npos) << r->body;
    EXPECT_EQ(err["error"]["message"].get<std::string>().find("slow"), std::string::npos) << "names the key";
    for (int i = 0; i < 20; ++i) EXPECT_EQ(cli.Get("/v1/documents/d0", as("free"))->status, 200) << i;
    for (int i = 0; i < 5; ++i) EXPECT_EQ(cli.Get("/health")->status, 200) << i;
    EXPECT_EQ(cli.Get("/v1/documents/d0", as("nobody"))->status, 401);  // a wrong key is not limited, but refused
  }
  HttpOptions open;
  open.port = 0;
  open.limits.rate = 0.5;
  RunningServer running(open, o);
  ASSERT_TRUE(running.server.ready());
  httplib::Client cli("127.0.0.1", running.port);
  EXPECT_EQ(cli.Get("/v1/documents/d0")->status, 200);
  EXPECT_EQ(cli.Get("/v1/documents/d0")->status, 429);
  EXPECT_EQ(cli.Get("/openapi.json")->status, 200);
}

// Refusals are held (the 429 answered after min(--refusal-delay-ms, Retry-After)), at most
// refusals_held (here 4) at once per client: more are answered at once and their connection closed.
TEST(ServeLimits, RefusalsAreHeldAFewAtATime) {
  const std::string dir = test::make_temp_dir("serve_hold");
  write_text_index(dir, 45);
  HttpOptions h;
  h.port = 0;
  h.limits.rate = 0.01;  // one request, then a refusal for 100 s
  h.refusal_delay_ms = 1500;
  h.refusals_held = 4;
  const ServeOptions o = text_index_service(dir);
  RunningServer running(h, o);
  ASSERT_TRUE(running.server.ready());
  httplib::Client first("127.0.0.1", running.port);
  EXPECT_EQ(first.Get("/v1/documents/d0")->status, 200);
  std::vector<std::future<std::pair<int, std::string>>> calls;
  for (int i = 0; i < 8; ++i)
    calls.push_back(std::async(std::launch::async, [&] {
      httplib::Client cli("127.0.0.1", running.port);
      cli.set_keep_alive(true);  // else every answer says Connection: close
      auto r = cli.Get("/v1/documents/d1");
      return r ? std::make_pair(r->status, r->get_header_value("Connection")) : std::make_pair(-1, std::string());
    }));
  int held = 0, closed = 0;
  for (auto& c : calls) {
    const auto [status, connection] = c.get();
    EXPECT_EQ(status, 429);
    (connection == "close" ? closed : held) += 1;
  }
  EXPECT_EQ(held, 4);
  EXPECT_EQ(closed, 4);
  EXPECT_EQ(first.Get("/health")->status, 200);
}

// A client's requests in flight: one held in the encoder queue (its batching window is 1.5 s)
// makes the client's next a 429, and its place comes back when it ends.
TEST(ServeLimits, RequestsInFlightPerClient) {
  const std::string dir = test::make_temp_dir("serve_inflight");
  write_fixture_model(dir + "/model", test::tiny_model_options(42));
  HttpOptions h;
  h.port = 0;
  h.limits.concurrent = 1;
  ServeOptions o;
  o.model_dir = dir + "/model";
  o.encoder_workers = 1;
  o.batching.max_batch = 64;
  o.batching.max_wait_ms = 1500;
  RunningServer running(h, o);
  ASSERT_TRUE(running.server.ready());
  auto held = std::async(std::launch::async, [&] {
    httplib::Client cli("127.0.0.1", running.port);
    cli.set_read_timeout(30, 0);
    auto r = cli.Post("/embed", R"({"inputs": ["held in the queue"]})", "application/json");
    return r ? r->status : -1;
  });
  // Wait for the event itself: the first request admitted and in flight (it then waits 1.5 s in
  // the encoder queue for company).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (running.server.in_flight("address 127.0.0.1") == 0 && std::chrono::steady_clock::now() < give_up)
    std::this_thread::yield();
  ASSERT_EQ(running.server.in_flight("address 127.0.0.1"), 1u);
  httplib::Client cli("127.0.0.1", running.port);
  auto r = cli.Post("/embed", R"({"inputs": ["second"]})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429) << r->body;
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  EXPECT_NE(r->body.find("in flight, its limit is 1"), std::string::npos) << r->body;
  EXPECT_EQ(cli.Get("/health")->status, 200);
  EXPECT_EQ(held.get(), 200);
  EXPECT_EQ(cli.Post("/embed", R"({"inputs": ["third"]})", "application/json")->status, 200);
}

// Texts that wait in the encoder queue past their deadline are answered 504 and never encoded.
TEST(ServeLimits, ADeadlineInTheEncoderQueueIs504) {
  const std::string dir = test::make_temp_dir("serve_deadline_queue");
  write_fixture_model(dir + "/model", test::tiny_model_options(43));
  ServeOptions o;
  o.model_dir = dir + "/model";
  o.encoder_workers = 1;
  o.batching.max_batch = 64;
  o.batching.max_wait_ms = 800;  // a lone text waits this long for company
  o.request_timeout_ms = 100;
  Service s(o);
  for (const auto& [path, body] : std::vector<std::pair<std::string, std::string>>{
           {"/embed", R"({"inputs": ["late"]})"},
           {"/v1/embeddings", R"({"input": ["late"]})"},
           {"/v1/embeddings", R"({"input": [[2, 7, 3]]})"},
           {"/v1/verify", R"({"pairs": [["a", "b"]]})"}}) {
    const Response r = s.handle("POST", path, body);
    EXPECT_EQ(r.status, 504) << path << " " << r.body;
    EXPECT_EQ(json::parse(r.body)["error"]["type"], "deadline_exceeded") << r.body;
  }
  const std::string m = s.handle("GET", "/metrics", "").body;
  EXPECT_NE(m.find("sieve_batch_size_count 0\n"), std::string::npos) << m;  // nothing was encoded
  o.request_timeout_ms = 0;  // no deadline
  Service patient(o);
  EXPECT_EQ(patient.handle("POST", "/embed", R"({"inputs": ["late"]})").status, 200);
  // With no limit of the server's, a body's timeout_ms may ask a day at most, and the served spec
  // says so (it said nothing, and schemathesis's bodies past a day were refused).
  const json spec = json::parse(patient.handle("GET", "/openapi.json", "").body);
  for (const char* schema : {"SearchRequest", "ExplainRequest"})
    EXPECT_EQ(spec["components"]["schemas"][schema]["properties"]["timeout_ms"]["oneOf"][0]["maximum"], 86400000) << schema;
  const Response past = patient.handle("POST", "/v1/explain", R"({"query": "a", "candidate": "b", "timeout_ms": 86400001})");
  EXPECT_EQ(past.status, 422) << past.body;
  EXPECT_NE(past.body.find("86400000"), std::string::npos) << past.body;
}

class DeadlineSearch : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(test::make_temp_dir("serve_deadline"));
    write_text_index(*dir_, 44);
    write_test_verifier(*dir_ + "/ix", *dir_ + "/v.safetensors");
    ServeOptions o;
    o.index_dir = *dir_ + "/ix";
    o.verifier = *dir_ + "/v.safetensors";
    o.encoder_workers = 1;
    o.request_timeout_ms = 30000;
    service_ = new Service(o);
  }
  static void TearDownTestSuite() {
    delete service_;
    delete dir_;
  }
  static json search(json body, Clock::time_point arrived = Clock::now(), int want = 200) {
    const Response r = service_->handle("POST", "/v1/search", body.dump(), {}, arrived);
    EXPECT_EQ(r.status, want) << body.dump() << " -> " << r.body;
    return json::parse(r.body);
  }
  static std::string* dir_;
  static Service* service_;
};
std::string* DeadlineSearch::dir_ = nullptr;
Service* DeadlineSearch::service_ = nullptr;

// A request that arrived long ago: its first query's stage 1 runs and its hits come back as a
// stage-1 search's (same ids, scores and keys), flagged; later queries are not searched.
TEST_F(DeadlineSearch, PastTheDeadlineStageOneHitsComeBackFlagged) {
  for (const char* mode : {"dense", "hybrid", "bm25"}) {
    const json stage1 = search({{"queries", {kTexts[0], kTexts[1]}}, {"k", 3}, {"mode", mode}});
    const json gated = search({{"queries", {kTexts[0], kTexts[1]}}, {"k", 3}, {"mode", mode}, {"gate", true}});
    EXPECT_FALSE(gated.contains("deadline_exceeded"));
    EXPECT_TRUE(gated["results"][0]["hits"][0].contains("verifier_score"));
    const json late = search({{"queries", {kTexts[0], kTexts[1]}}, {"k", 3}, {"mode", mode}, {"gate", true}, {"timeout_ms", 1000}},
                             Clock::now() - std::chrono::seconds(5));
    EXPECT_EQ(late["deadline_exceeded"], true);
    const json& first = late["results"][0];
    EXPECT_EQ(first["deadline_exceeded"], true);
    EXPECT_EQ(first["stages_run"], 1);
    EXPECT_EQ(first["hits"], stage1["results"][0]["hits"]) << mode;
    EXPECT_FALSE(first.contains("note"));
    const json& second = late["results"][1];
    EXPECT_EQ(second["stages_run"], 0);
    EXPECT_TRUE(second["hits"].empty());
    EXPECT_EQ(second["query"], kTexts[1]);
    // Stage 1 alone past the deadline: the first query is whole (nothing was cut), the second not run.
    const json plain = search({{"queries", {kTexts[0], kTexts[1]}}, {"k", 3}, {"mode", mode}, {"timeout_ms", 1000}},
                              Clock::now() - std::chrono::seconds(5));
    EXPECT_FALSE(plain["results"][0].contains("deadline_exceeded"));
    EXPECT_EQ(plain["results"][0]["hits"], stage1["results"][0]["hits"]);
    EXPECT_EQ(plain["results"][1]["stages_run"], 0);
  }
}

TEST_F(DeadlineSearch, TimeoutsAreChecked) {
  const json over = search({{"query", "x"}, {"timeout_ms", 40000}}, Clock::now(), 422);
  EXPECT_NE(over["error"]["message"].get<std::string>().find("--request-timeout-ms"), std::string::npos) << over.dump();
  search({{"query", "x"}, {"timeout_ms", 0}}, Clock::now(), 400);
  search({{"query", "x"}, {"timeout_ms", "soon"}}, Clock::now(), 400);
  const json ok = search({{"query", "x"}, {"timeout_ms", 30000}, {"gate", true}});
  EXPECT_FALSE(ok.contains("deadline_exceeded"));
  const Response r = service_->handle("POST", "/v1/explain", json{{"query", "a"}, {"candidate", "b"}, {"timeout_ms", 5}}.dump());
  EXPECT_EQ(r.status, 200) << r.body;  // a free slot: the explanation runs
  const json info = json::parse(service_->handle("GET", "/v1/info", "").body);
  EXPECT_EQ(info["limits"]["request_timeout_ms"], 30000);
  const json spec = json::parse(service_->handle("GET", "/openapi.json", "").body);
  EXPECT_EQ(spec["components"]["schemas"]["SearchRequest"]["properties"]["timeout_ms"]["oneOf"][0]["maximum"], 30000);
}

// The library's side: a deadline already passed gives stage 1's top k with every verifier kind.
TEST_F(DeadlineSearch, SearchVerifiedSkipsStageTwoPastItsDeadline) {
  auto ix = Index::open(*dir_ + "/ix");
  PipelineParams pp;
  pp.k = 3;
  pp.candidates = 5;
  pp.gate = true;
  pp.threshold = 0.5;
  pp.deadline = Clock::now() - std::chrono::milliseconds(1);
  SearchParams sp = pp.stage1;
  sp.k = 5;
  const SearchResult want = ix->search(kTexts[2], sp);
  for (const std::string spec : {*dir_ + "/v.safetensors", std::string("cosine")}) {
    const ResolvedVerifier v = resolve_verifier(spec, VerifierContext{*dir_ + "/model", ""});
    Stage2Timing st;
    const auto hits = search_verified(*ix, v, kTexts[2], pp, &st);
    EXPECT_TRUE(st.skipped) << spec;
    ASSERT_EQ(hits.size(), 3u) << spec;
    for (size_t i = 0; i < hits.size(); ++i) {
      EXPECT_EQ(hits[i].hit.id, want.hits[i].id);
      EXPECT_EQ(hits[i].hit.score, want.hits[i].score);
      EXPECT_EQ(hits[i].stage1_rank, i + 1);
      EXPECT_TRUE(std::isnan(hits[i].verifier_score));
    }
    pp.deadline = Clock::time_point::max();
    Stage2Timing none;
    search_verified(*ix, v, kTexts[2], pp, &none);
    EXPECT_FALSE(none.skipped);
    pp.deadline = Clock::now() - std::chrono::milliseconds(1);
  }
}

}  // namespace
}  // namespace sieve::serve
