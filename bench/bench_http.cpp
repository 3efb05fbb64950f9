// The two HTTP libraries Debian offers, side by side on one handler: cpp-httplib (what `sieve
// serve` uses: a thread pool, blocking sockets) and Boost.Beast (asynchronous, on an io_context run
// by N threads). The handler does what /v1/embeddings does around the encoder: parse a JSON body
// {"input": "..."} and answer 384 floats as JSON. bench/bench_http.sh drives both with wrk.
//   bench_http --library httplib|beast --port P [--threads N]
#include <httplib.h>

#include "serve/http_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using json = nlohmann::json;

// The shared handler: 400 on a bad body, else an OpenAI-shaped answer with 384 numbers derived
// from the input (no model: this measures the HTTP layer and the JSON around it).
std::pair<int, std::string> handle(const std::string& body) {
  json in = json::parse(body, nullptr, false);
  if (in.is_discarded() || !in.contains("input") || !in["input"].is_string())
    return {400, R"({"error": {"message": "bad body", "type": "invalid_request_error"}})"};
  const std::string& text = in["input"].get_ref<const std::string&>();
  uint32_t h = 2166136261u;
  for (unsigned char c : text) h = (h ^ c) * 16777619u;
  std::vector<float> v(384);
  for (size_t i = 0; i < v.size(); ++i) {
    h = h * 1664525u + 1013904223u;
    v[i] = static_cast<float>(h >> 8) / 16777216.0f - 0.5f;
  }
  json out = {{"object", "list"},
              {"data", json::array({{{"object", "embedding"}, {"index", 0}, {"embedding", v}}})},
              {"model", "bench"}};
  return {200, out.dump()};
}

int run_httplib(int port, int threads) {
  httplib::Server svr;
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  svr.set_tcp_nodelay(true);
  svr.Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
    auto [status, body] = handle(req.body);
    res.status = status;
    res.set_content(body, "application/json");
  });
  if (!svr.bind_to_port("127.0.0.1", port)) {
    std::fprintf(stderr, "bench_http: cannot bind to port %d\n", port);
    return 1;
  }
  // As `sieve serve` does; SIEVE_HTTPLIB_BACKLOG=5 measures httplib's own backlog.
  const char* keep = std::getenv("SIEVE_HTTPLIB_BACKLOG");
  if (keep == nullptr || std::string(keep) != "5") sieve::serve::widen_listen_backlog(port);
  std::fprintf(stderr, "bench_http: httplib ready on %d\n", port);
  return svr.listen_after_bind() ? 0 : 1;
}

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// One keep-alive connection: read a request, answer, repeat.
class Session : public std::enable_shared_from_this<Session> {
 public:
  explicit Session(tcp::socket&& s) : stream_(std::move(s)) {}
  void start() {
    stream_.socket().set_option(tcp::no_delay(true));
    read();
  }

 private:
  void read() {
    req_ = {};
    http::async_read(stream_, buf_, req_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->close();
      self->respond();
    });
  }
  void respond() {
    auto res = std::make_shared<http::response<http::string_body>>();
    res->version(req_.version());
    res->keep_alive(req_.keep_alive());
    if (req_.method() != http::verb::post || req_.target() != "/echo") {
      res->result(http::status::not_found);
    } else {
      auto [status, body] = handle(req_.body());
      res->result(static_cast<http::status>(status));
      res->set(http::field::content_type, "application/json");
      res->body() = std::move(body);
    }
    res->prepare_payload();
    http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code ec, size_t) {
      if (ec || !res->keep_alive()) return self->close();
      self->read();
    });
  }
  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  }
  beast::tcp_stream stream_;
  beast::flat_buffer buf_;
  http::request<http::string_body> req_;
};

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(asio::io_context& io, tcp::endpoint ep) : io_(io), acceptor_(asio::make_strand(io)) {
    acceptor_.open(ep.protocol());
    acceptor_.set_option(asio::socket_base::reuse_address(true));
    acceptor_.bind(ep);
    acceptor_.listen(asio::socket_base::max_listen_connections);
  }
  void accept() {
    acceptor_.async_accept(asio::make_strand(io_), [self = shared_from_this()](beast::error_code ec, tcp::socket s) {
      if (!ec) std::make_shared<Session>(std::move(s))->start();
      self->accept();
    });
  }

 private:
  asio::io_context& io_;
  tcp::acceptor acceptor_;
};

int run_beast(int port, int threads) {
  asio::io_context io(threads);
  std::make_shared<Listener>(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)))
      ->accept();
  std::fprintf(stderr, "bench_http: beast ready on %d\n", port);
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back([&io] { io.run(); });
  io.run();
  for (auto& t : pool) t.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  CLI::App app("HTTP library comparison server (bench/bench_http.sh)");
  std::string library = "httplib";
  int port = 18800, threads = static_cast<int>(std::thread::hardware_concurrency());
  app.add_option("--library", library, "httplib or beast")->check(CLI::IsMember({"httplib", "beast"}));
  app.add_option("--port", port, "Port on 127.0.0.1");
  app.add_option("--threads", threads, "Server threads")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  return library == "beast" ? run_beast(port, threads) : run_httplib(port, threads);
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_http: %s\n", e.what());
  return 1;
}
