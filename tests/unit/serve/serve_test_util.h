// Shared by the serve tests: the seven test texts, an index of them, and `sieve serve` started
// as a separate process.
#pragma once

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "serve/http_server.h"
#include "serve/service.h"
#include "sieve/index.h"
#include "sieve/verify.h"
#include "support/fixtures.h"
#include "support/test_util.h"

namespace sieve::serve::test_util {

inline const char* const kTexts[] = {"the dog bit the man",  "the man bit the dog",      "a red car is parked",
                                     "the cat sat on the mat", "a man walks a dog",       "blue house near the river",
                                     "the dog did not bite the man"};

inline std::string read_all(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

/// A fixture model (seed) at DIR/model and an index of kTexts (ids d0..d6) at DIR/ix.
inline void write_text_index(const std::string& dir, uint64_t seed) {
  write_fixture_model(dir + "/model", test::tiny_model_options(seed));
  {
    std::ofstream f(dir + "/c.tsv");
    for (int i = 0; i < 7; ++i) f << "d" << i << "\t" << kTexts[i] << "\n";
  }
  build_index(dir + "/model", dir + "/c.tsv", dir + "/ix");
}

/// A service over `index_dir` with one encoder worker and F1 as its verifier.
inline ServeOptions f1_options(const std::string& index_dir) {
  ServeOptions o;
  o.encoder_workers = 1;
  o.verifier = "F1";
  o.index_dir = index_dir;
  return o;
}

/// The service over write_text_index's index at DIR/ix, with one encoder worker.
inline ServeOptions text_index_service(const std::string& dir) {
  ServeOptions o;
  o.index_dir = dir + "/ix";
  o.encoder_workers = 1;
  return o;
}

/// A learned verifier (F4, threshold 0) at `path` for the index at `index_dir`, so that the gate's
/// decisions are exercised.
inline void write_test_verifier(const std::string& index_dir, const std::string& path) {
  VerifierConfig c;
  c.kind = VerifierKind::F4;
  c.encoder_dim = 32;
  c.encoder_identity = Index::open(index_dir)->stats().model_identity;
  c.threshold = 0.0;
  Verifier::create(c, 3)->save(path);
}

/// An HttpServer over a Service made from `o`, running on its own thread until destroyed.
struct RunningServer {
  RunningServer(const HttpOptions& h, const ServeOptions& o)
      : server(h, [o] { return std::make_unique<Service>(o); }), port(server.bind()), thread([this] { server.run(); }) {
    for (int i = 0; i < 1000 && !server.ready(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ~RunningServer() {
    server.stop();
    thread.join();
  }
  HttpServer server;
  int port;
  std::thread thread;
};

/// `sieve serve ARGS --port 0` in the background, logging to `log`: its pid, and the port once it
/// says "ready" (0 when it did not within 10 s).
struct CliServer {
  int pid = 0, port = 0;
};
inline CliServer start_cli_server(const std::string& args, const std::string& log) {
  CliServer s;
  s.pid = std::stoi(test::run_command("bash -c '" + test::cli_path() + " serve " + args + " --port 0 2> " + log +
                                      " > /dev/null & echo $!'").out);
  for (int i = 0; i < 200 && s.port == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::string text = read_all(log);
    const size_t at = text.find("127.0.0.1:");
    if (text.find("ready") != std::string::npos && at != std::string::npos) s.port = std::stoi(text.substr(at + 10));
  }
  return s;
}

}  // namespace sieve::serve::test_util
