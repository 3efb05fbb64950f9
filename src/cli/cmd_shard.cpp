// `sieve shard serve`: one shard of a set over sieve's shard protocol (HTTP/1.1 with keep-alive,
// serve/shard_http.h), for a router started as `sieve serve --index SET --shard-url URL ...`
// (docs/scale.md). Flags only; the shard service is src/serve/shard_service.cpp.
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <exception>
#include <thread>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_common.h"
#include "serve/shard_http.h"
#include "sieve/error.h"

namespace sieve::cli {

namespace {
// SIGTERM / SIGINT write their number to a pipe (async-signal-safe); a waiting thread stops the
// server, whose run() then returns.
int g_stop_pipe[2] = {-1, -1};
void on_stop(int sig) {
  const int saved = errno;
  if (::write(g_stop_pipe[1], &sig, sizeof sig) < 0) {
  }
  errno = saved;
}
}  // namespace

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
    SIEVE_THROW_IF_NOT(::pipe(g_stop_pipe) == 0, "cannot create a pipe for signal handling");
    std::signal(SIGTERM, on_stop);
    std::signal(SIGINT, on_stop);
    std::thread waiter([&server] {
      int sig = 0;
      if (::read(g_stop_pipe[0], &sig, sizeof sig) == static_cast<ssize_t>(sizeof sig) && sig != 0) server.stop();
    });
    std::exception_ptr failed;
    try {
      server.run();  // the log names the address once it is bound ("ready")
    } catch (...) {
      failed = std::current_exception();
    }
    const int zero = 0;  // wakes the waiter when no signal came
    if (::write(g_stop_pipe[1], &zero, sizeof zero) < 0) std::perror("sieve shard serve");
    waiter.join();
    std::signal(SIGTERM, SIG_DFL);
    std::signal(SIGINT, SIG_DFL);
    if (failed) std::rethrow_exception(failed);
    std::fprintf(stderr, "sieve shard serve: stopped\n");
  });
}

}  // namespace sieve::cli
