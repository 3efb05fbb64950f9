// Search at scale (docs/benchmarks.md, "At scale"; run by bench/bench_scale.sh): opens a built
// index and runs queries one at a time in each stage-1 mode, alone and then with stage 2 (the
// verifier over the top K, gating and reranking). Prints one JSON object: per mode p50/p99 latency
// and QPS, how many results the gate kept, the index's bytes on disk per document and per part,
// and this process's peak RSS after opening and after searching.
// Usage: bench_scale --index DIR --queries FILE [--verifier FILE] [--candidates 100] [--k 10]
//                    [--max-queries 200]
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench_util.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "sieve/pipeline.h"
#include "sieve/verify.h"

using namespace sieve;
using sieve::bench::Clock;
using sieve::bench::latency_json;
using sieve::bench::since;

namespace {

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace

int main(int argc, char** argv) {
  ensure_fast_blas(argv);
  tune_allocator();
  CLI::App app{"sieve search at scale: per-mode latency with and without stage 2, disk and memory"};
  std::string index_dir, queries_path, verifier_path = "models/sieve-mini/verifier.safetensors";
  size_t candidates = 100, k = 10, max_queries = 200;
  app.add_option("--index", index_dir, "Index directory")->required();
  app.add_option("--queries", queries_path, "Queries, one per line")->required();
  app.add_option("--verifier", verifier_path, "Verifier file for stage 2")->capture_default_str();
  app.add_option("--candidates", candidates, "Stage-1 hits the verifier reads (K)")->capture_default_str();
  app.add_option("--k", k, "Results per query")->capture_default_str();
  app.add_option("--max-queries", max_queries, "Queries to run per mode")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string> queries;
  {
    std::ifstream in(queries_path);
    for (std::string line; std::getline(in, line) && queries.size() < max_queries;)
      if (!line.empty()) queries.push_back(line);
  }
  if (queries.empty()) {
    std::fprintf(stderr, "bench_scale: no queries in '%s'\n", queries_path.c_str());
    return 2;
  }
  nlohmann::json out;
  try {
    auto t_open = Clock::now();
    auto index = Index::open(index_dir);
    out["open_seconds"] = since(t_open);
    out["peak_rss_mb_after_open"] = peak_rss_mb();
    const IndexStats& st = index->stats();
    out["documents"] = st.documents;
    out["vector_factory"] = st.vector_factory;
    out["token_codec"] = st.token_codec;
    out["bytes_on_disk"] = st.bytes_on_disk;
    out["bytes_per_document"] = static_cast<double>(st.bytes_on_disk) / static_cast<double>(st.documents);
    for (const auto& [part, bytes] : st.file_bytes) out["bytes_per_document_by_part"][part] = double(bytes) / st.documents;
    auto verifier = Verifier::load(verifier_path, st.model_identity);

    for (auto [name, mode] : {std::pair{"bm25", SearchMode::Bm25}, std::pair{"dense", SearchMode::Dense},
                              std::pair{"hybrid", SearchMode::Hybrid}}) {
      SearchParams sp;
      sp.mode = mode;
      sp.k = k;
      std::vector<double> alone, gated;
      size_t kept = 0, hits = 0;
      index->search(queries[0], sp);  // warm-up: first touch of the maps and the encoder
      for (const auto& q : queries) {
        auto t0 = Clock::now();
        auto r = index->search(q, sp);
        alone.push_back(since(t0));
        hits += r.hits.size();
      }
      PipelineParams pp;
      pp.stage1 = sp;
      pp.candidates = candidates;
      pp.k = k;
      pp.gate = true;
      for (const auto& q : queries) {
        auto t0 = Clock::now();
        auto r = search_verified(*index, *verifier, q, pp);
        gated.push_back(since(t0));
        kept += r.size();
      }
      out["modes"][name]["stage1"] = latency_json(alone);
      out["modes"][name]["stage1"]["hits_per_query"] = double(hits) / queries.size();
      out["modes"][name]["with_gate"] = latency_json(gated);
      out["modes"][name]["with_gate"]["kept_per_query"] = double(kept) / queries.size();
      std::fprintf(stderr, "bench_scale: %s done\n", name);
    }
    out["candidates"] = candidates;
    out["k"] = k;
    out["peak_rss_mb"] = peak_rss_mb();
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_scale: %s\n", e.what());
    return 1;
  }
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
