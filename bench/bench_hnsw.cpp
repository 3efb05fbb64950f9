// The HNSW graph's construction cost against its recall (issue 44, item 4: a build's overhead
// over encoding is mostly the graph). Reads the keys of a built index, holds some out as queries,
// builds each graph (factory x efConstruction) on one thread as the build's writer does, and
// measures recall@10 against exact search at several efSearch values. JSON lines out.
// (Measured here and left out: construction on a bfloat16 copy of the keys, half the bytes read,
// was 11 % slower than on the fp32 keys at the same recall.)
//   bench_hnsw --index DIR [--graphs HNSW32:80,HNSW16:40] [--queries 2000] [--ef-search 32,64,128]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <omp.h>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "index/vector_index.h"
#include "sieve/index.h"

using namespace sieve;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"HNSW construction time against recall on a built index's keys (JSON lines)"};
  std::string dir;
  std::vector<std::string> graphs = {"HNSW32:80", "HNSW32:40", "HNSW16:80", "HNSW16:40"};
  std::vector<int> ef_search = {32, 64, 128};
  size_t n_queries = 2000;
  int threads = 1;
  app.add_option("--index", dir, "a built index (its keys are read)")->required();
  app.add_option("--graphs", graphs, "factory:efConstruction pairs")->delimiter(',')->capture_default_str();
  app.add_option("--queries", n_queries, "keys held out of the graph and searched")->capture_default_str();
  app.add_option("--ef-search", ef_search, "efSearch values")->delimiter(',')->capture_default_str();
  app.add_option("--threads", threads, "OpenMP threads for construction (the build's writer uses 1)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  auto idx = Index::open(dir);
  const size_t n = idx->size();
  const size_t d = idx->key(0).size();
  if (n_queries * 2 > n) n_queries = n / 2;
  // Queries: a fixed random spread of documents, left out of every graph.
  std::vector<uint32_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i);
  std::mt19937_64 rng(7);
  std::shuffle(order.begin(), order.end(), rng);
  std::unordered_set<uint32_t> held(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n_queries));
  std::vector<float> base, queries;
  base.reserve((n - n_queries) * d);
  for (uint32_t i = 0; i < n; ++i) {
    const std::vector<float> k = idx->key(i);
    (held.count(i) ? queries : base).insert((held.count(i) ? queries : base).end(), k.begin(), k.end());
  }
  const size_t nb = base.size() / d, k = 10;
  std::fprintf(stderr, "bench_hnsw: %zu keys of dimension %zu, %zu queries\n", nb, d, n_queries);

  // Exact neighbours.
  index::FaissVectorIndex flat("Flat", d, 0);
  flat.add(nb, base.data());
  std::vector<int64_t> truth(n_queries * k);
  std::vector<float> scores(n_queries * k);
  flat.search(n_queries, queries.data(), index::VectorSearchParams{k, 0, 0}, truth.data(), scores.data());

  for (const std::string& g : graphs) {
    const auto colon = g.find(':');
    const std::string factory = g.substr(0, colon);
    const int efc = colon == std::string::npos ? 80 : std::stoi(g.substr(colon + 1));
    omp_set_num_threads(threads);
    index::FaissVectorIndex h(factory, d, efc);
    auto t0 = Clock::now();
    // In chunks of 512, as the build adds them.
    for (size_t s = 0; s < nb; s += 512) h.add(std::min<size_t>(512, nb - s), base.data() + s * d);
    const double build_s = since(t0);
    nlohmann::json out = {{"graph", factory}, {"ef_construction", efc}, {"keys", nb}, {"threads", threads},
                          {"build_seconds", build_s}, {"us_per_key", build_s / nb * 1e6}};
    omp_set_num_threads(1);
    for (int ef : ef_search) {
      std::vector<int64_t> got(n_queries * k);
      auto tq = Clock::now();
      h.search(n_queries, queries.data(), index::VectorSearchParams{k, ef, 0}, got.data(), scores.data());
      const double search_s = since(tq);
      size_t hit = 0;
      for (size_t q = 0; q < n_queries; ++q)
        for (size_t a = 0; a < k; ++a)
          for (size_t b = 0; b < k; ++b) hit += got[q * k + a] == truth[q * k + b] && got[q * k + a] >= 0;
      out["recall@10_ef" + std::to_string(ef)] = double(hit) / double(n_queries * k);
      out["search_us_ef" + std::to_string(ef)] = search_s / n_queries * 1e6;
    }
    std::printf("%s\n", out.dump().c_str());
    std::fflush(stdout);
  }
  return 0;
}
