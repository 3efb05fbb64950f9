// The server's request handling (Service::handle, what every HTTP request reaches) on arbitrary
// bodies for each route, with a small random model and no index. The answer must be JSON (or the
// metrics text, page or SVG) with a status from the documented table; never a crash.
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "fuzz_target.h"
#include "serve/service.h"
#include "sieve/model.h"

namespace {
sieve::serve::Service& service() {
  static const std::unique_ptr<sieve::serve::Service> s = [] {
    sieve::FixtureModelOptions f;
    f.config.hidden_size = 32;
    f.config.num_hidden_layers = 1;
    f.config.num_attention_heads = 2;
    f.config.intermediate_size = 64;
    f.config.vocab_size = 300;
    const std::string dir = sieve::fuzz::scratch_dir() + "/model";
    sieve::write_fixture_model(dir, f);
    sieve::serve::ServeOptions o;
    o.model_dir = dir;
    o.encoder_workers = 1;
    o.max_texts = 16;
    return std::make_unique<sieve::serve::Service>(o);
  }();
  return *s;
}
}  // namespace

SIEVE_FUZZ_TARGET(http) {
  static const char* routes[][2] = {
      {"POST", "/v1/embeddings"}, {"POST", "/embed"},   {"POST", "/rerank"},          {"POST", "/v1/verify"},
      {"POST", "/v1/explain"},    {"POST", "/v1/search"}, {"POST", "/v1/documents"}, {"GET", "/v1/info"},
      {"GET", "/health"},         {"GET", "/metrics"},  {"DELETE", "/v1/embeddings"}, {"GET", "/v1/explain.svg"}};
  if (size == 0) return 0;
  const auto& r = routes[data[0] % (sizeof routes / sizeof routes[0])];
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  std::map<std::string, std::string> query;
  if (std::string(r[1]) == "/v1/explain.svg") {
    const size_t cut = body.find('&');
    query["query"] = body.substr(0, std::min<size_t>(cut, 200));
    if (cut != std::string::npos) query["candidate"] = body.substr(cut + 1, 200);
  }
  const sieve::serve::Response res = service().handle(r[0], r[1], body, query);
  static const int allowed[] = {200, 400, 404, 405, 409, 413, 422, 503};
  bool ok = false;
  for (int a : allowed) ok = ok || res.status == a;
  if (!ok) std::abort();
  if (res.content_type == "application/json" && nlohmann::json::parse(res.body, nullptr, false).is_discarded()) std::abort();
  return 0;
}
