// `sieve shard serve`: one shard of a set over sieve's shard protocol (HTTP/1.1 with keep-alive,
// serve/shard_http.h), for a router started as `sieve serve --index SET --shard-url URL ...`
// (docs/scale.md). Flags only; the shard service is src/serve/shard_service.cpp.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_common.h"
#include "serve/shard_http.h"
#include "sieve/error.h"

namespace sieve::cli {

void register_shard(CLI::App& app) {
  auto* shard = app.add_subcommand("shard", "One shard of a shard set, served to a router elsewhere");
  shard->require_subcommand(1);
  struct Opts {
    std::string dir, host = "127.0.0.1", model;
    int port = 8090;
    size_t threads = 16;
    std::vector<std::string> verifiers;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = shard->add_subcommand(
      "serve", "Serve one shard of a set (its dense search, keys, token states and stage 2) over sieve's shard protocol");
  cmd->add_option("--index", o->dir, "The shard's folder (one index of a set: SET/shard-NNN)")->required();
  cmd->add_option("--host", o->host, "Address to bind")->capture_default_str();
  cmd->add_option("--port", o->port, "Port (0: any free one; the log names it)")->capture_default_str();
  cmd->add_option("--threads", o->threads, "Calls served at once")->capture_default_str();
  cmd->add_option("--verifier", o->verifiers,
                  "The router's stage-2 verifier (repeatable; default: the model's shipped gate, and F0-F2)");
  cmd->add_option("-m,--model", o->model, "The encoder folder the verifiers are checked against (default: the shard's)");
  on_run(cmd, [o] {
    std::vector<std::string> verifiers = o->verifiers;
    if (verifiers.empty()) verifiers.push_back("default");
    auto service = std::make_shared<const serve::ShardService>(
        o->dir, verifiers, o->model.empty() ? "" : resolve_model_dir(o->model));
    serve::ShardHttpServer server(service, o->host, o->port, o->threads);
    // SIGTERM / SIGINT stop it; run() returns once in-flight calls are answered.
    serve_with_signals([&server] { server.run(); },  // the log names the address once bound ("ready")
                       [&server](int) { server.stop(); }, /*hangup=*/false);
    std::fprintf(stderr, "sieve shard serve: stopped\n");
  });
}

}  // namespace sieve::cli
