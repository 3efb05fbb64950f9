// `sieve serve`: the search service over HTTP (docs/server.md). Flags only; the service is
// src/serve/.
#include <signal.h>

#include <cstdio>
#include <fstream>

#include "cli/cli_common.h"
#include "serve/http_server.h"
#include "serve/shard_http.h"
#include "sieve/error.h"
#include "sieve/model.h"

namespace sieve::cli {

void register_serve(CLI::App& app) {
  struct Opts {
    serve::ServeOptions s;
    serve::HttpOptions h;
    DeviceFlags dev;
    std::string api_key_file;
    std::vector<std::string> shard_urls;
    std::string shard_membership;
    std::shared_ptr<serve::HttpShardRemote> shard_remote;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "serve", "Serve search, embeddings (OpenAI- and TEI-compatible), reranking and verification over HTTP/JSON");
  cmd->add_option("--index", o->s.index_dir, "Index to search (none: embedding and verification only)");
  cmd->add_option("-m,--model", o->s.model_dir, std::string("Model directory or installed name (default: the index's model; without --index, ") + kDefaultModel + ")");
  cmd->add_option("--verifier", o->s.verifier,
                  std::string("Stage-2 verifier: file, or cosine, F0, F1, F2, cross:DIR (default: the model folder's "
                              "verifier.safetensors, else F1; a file must be made for the serving model)") +
                      kVerifierNames);
  cmd->add_option("--gate-mode", o->s.gate_mode,
                  "The gate by mode instead of --verifier: fast (the model's gate), accurate (a cross-encoder), "
                  "cascade (the fast gate, the cross-encoder within its calibrated band) or auto")
      ->check(CLI::IsMember({"auto", "fast", "accurate", "cascade"}));
  cmd->add_option("--cross", o->s.cross, "The cross-encoder folder of --gate-mode accurate|cascade (default: "
                                         "MODEL_DIR/cross-encoder)");
  cmd->add_option("--cache", o->s.cache_dir,
                  "Serve a semantic cache from this folder at /v1/cache (docs/cache.md; created by the first store)");
  cmd->add_option("--cache-verifier", o->s.cache_verifier, "The cache's gate (default: the model's shipped one)")
      ->capture_default_str();
  cmd->add_option("--cache-threshold", o->s.cache_threshold,
                  "The cache's acceptance threshold (default: the gate's calibrated one; needed for cosine)");
  cmd->add_option("--host", o->h.host, "Address to bind (0.0.0.0 exposes the server to the network)")->capture_default_str();
  cmd->add_option("--port", o->h.port, "Port (0: any free port, printed at start)")->capture_default_str()->check(CLI::Range(0, 65535));
  cmd->add_option("--api-key-file", o->api_key_file,
                  "File of API keys, one 'KEY [SCOPE] [rate=R] [burst=B] [concurrent=N]' a line (read: search, embed, "
                  "rerank, verify, explain; write: also add documents; admin or none: everything; the limits replace "
                  "--rate-limit, --burst and --max-concurrent for that key): every request but /health, GET / and "
                  "/openapi.json then needs 'Authorization: Bearer KEY'. SIGHUP re-reads it");
  cmd->add_option("--rate-limit", o->h.limits.rate,
                  "Requests per second each client may sustain (per key; per address without keys); more: 429 with "
                  "Retry-After. 0: no limit")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--burst", o->h.limits.burst, "Requests a client may send at once after idling (0: the rate, at least 1)")
      ->capture_default_str()
      ->check(kNonNegative);
  cmd->add_option("--max-concurrent", o->h.limits.concurrent,
                  "Requests of one client in flight at once; more: 429 with Retry-After. 0: no limit")
      ->capture_default_str();
  cmd->add_option("--refusal-delay-ms", o->h.refusal_delay_ms,
                  "A 429 is answered after this long (at most its Retry-After; 16 held at once per client, more "
                  "answered at once and their connection closed), so that a client ignoring Retry-After cannot make "
                  "the server spend its cores refusing it. 0: at once")
      ->capture_default_str();
  cmd->add_option("--client-address-header", o->h.client_header,
                  "Behind a reverse proxy: the header holding the client's address (e.g. X-Real-IP, set by the "
                  "proxy), for the per-address limits; only a proxy that always sets it can be trusted");
  cmd->add_option("--request-timeout-ms", o->s.request_timeout_ms,
                  "A request's deadline when its body gives no timeout_ms, and the most one may ask: a search still "
                  "waiting for a slot then is 504; one whose stage 1 ends past it answers stage 1's hits with "
                  "\"deadline_exceeded\": true. 0: none")
      ->capture_default_str();
  cmd->add_option("--max-body", o->h.max_body, "Largest request body in bytes (larger: 413)")->capture_default_str();
  cmd->add_option("--max-texts", o->s.max_texts, "Texts, pairs or queries per request (more: 422)")->capture_default_str();
  cmd->add_option("--compact-dead-share", o->s.compact_dead_share,
                  "Compact the index (and the --cache) in the background once deleted, replaced and expired documents are this share "
                  "of it (and at least --compact-min-dead); 0 = never (then `sieve index compact`)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--compact-min-dead", o->s.compact_min_dead, "Fewest dead documents worth a background compaction")
      ->capture_default_str();
  cmd->add_option("--max-batch", o->s.batching.max_batch, "Texts per encoder pass (dynamic batching)")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--max-wait-ms", o->s.batching.max_wait_ms, "How long a text waits for others to batch with (default: 2 with one encoder worker, 0 with several)")
      ->check(kNonNegative);
  cmd->add_option("--encoder-workers", o->s.encoder_workers,
                  "Batches encoded at once, each by one single-threaded worker (searches single-threaded too): the "
                  "most throughput under many connections. 1: one batch at a time on all --threads. 0: one "
                  "worker per core on a CPU (--threads of them when given), 1 on a GPU")
      ->capture_default_str();
  cmd->add_option("--max-queue", o->s.batching.max_queue, "Texts waiting for the encoder; more: 503 with Retry-After")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--connections", o->h.connection_threads, "Requests served at once (threads)")->capture_default_str();
  cmd->add_option("--shard-url", o->shard_urls,
                  "With --index SET: each shard served by `sieve shard serve` at this address (http://HOST:PORT), "
                  "one per shard in the set's order; URL,URL,... for a shard's replicas (a call that fails on one "
                  "is tried on the next). The shards' vectors are then not loaded here");
  cmd->add_option("--shard-membership", o->shard_membership,
                  "With --index SET: the shards' replicas from this file, {\"shards\": [[URL, ...], ...]}, instead "
                  "of --shard-url; SIGHUP re-reads it (Ray's deployment rewrites it as replicas come and go)");
  cmd->add_option("--search-slots", o->s.search_slots,
                  "Searches computed at once; more wait for a slot (0 = the compute threads)")
      ->capture_default_str();
  o->dev.add(cmd);
  on_run(cmd, [o] {
    // An installed model's name, as every other command takes it.
    if (!o->s.model_dir.empty()) o->s.model_dir = resolve_model_dir(o->s.model_dir);
    if (!o->api_key_file.empty()) o->h.api_keys = serve::read_api_keys(o->api_key_file);
    o->s.encoder = o->dev.options();
    if (!o->shard_urls.empty() || !o->shard_membership.empty()) {
      o->shard_remote = serve::open_shard_remote(o->s.index_dir, o->shard_urls, o->shard_membership);
      o->s.remote = o->shard_remote;
      o->s.shard_servers = [r = o->shard_remote] { return r->describe(); };
    }
    serve::check_serve_options(o->s);  // before announcing an address that would then fail
    serve::HttpServer server(o->h, [o] {
      auto s = std::make_unique<serve::Service>(o->s);
      std::fprintf(stderr, "sieve serve: ready\n");
      return s;
    });
    const int port = server.bind();
    std::fprintf(stderr, "sieve serve: listening on http://%s:%d (loading the model)\n", o->h.host.c_str(), port);
    // SIGTERM / SIGINT: stop accepting, let in-flight requests finish, exit 0. SIGHUP: the shard
    // membership file and the API key file read again (a broken file keeps what was read before).
    serve_with_signals([&server] { server.run(); },
                       [&server, o](int sig) {
                         if (sig != SIGHUP) {
                           std::fprintf(stderr, "sieve serve: %s, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
                           server.stop();
                           return;
                         }
                         if (o->shard_remote) {
                           const std::string said = serve::reload_shard_membership(*o->shard_remote, o->shard_membership);
                           std::fprintf(stderr, "sieve serve: SIGHUP: %s\n", said.c_str());
                           if (o->api_key_file.empty()) return;
                         }
                         if (o->api_key_file.empty()) {
                           std::fprintf(stderr, "sieve serve: SIGHUP: no --api-key-file to re-read\n");
                           return;
                         }
                         try {
                           auto keys = serve::read_api_keys(o->api_key_file);
                           const size_t n = keys.size();
                           server.set_api_keys(std::move(keys));
                           std::fprintf(stderr, "sieve serve: SIGHUP: %zu API key(s) read from %s\n", n,
                                        o->api_key_file.c_str());
                         } catch (const std::exception& e) {
                           std::fprintf(stderr, "sieve serve: SIGHUP: the old keys stay: %s\n", e.what());
                         }
                       },
                       /*hangup=*/true);
    std::fprintf(stderr, "sieve serve: stopped\n");
  });
}

}  // namespace sieve::cli
