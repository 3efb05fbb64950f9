// Live adds (prints one JSON object; see docs/benchmarks.md): the cost of adding a small batch to
// an index of N documents, through one IndexWriter (the server's and Python's path: encoder
// loaded once, keys appended, snapshot extended) against a one-off add_documents followed by
// Index::open (what each add cost before there was a writer: model load, open, reopen).
// Usage: bench_add --model DIR --corpus C --work DIR [--sizes 5000,100000] [--batch 10] [--adds 20]
//                  [--one-off-adds 5] [--max-length 128]
// The first N documents of the corpus make the index; the adds take the documents after them
// (the corpus is cycled, ids suffixed, when it has too few).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench_util.h"
#include "index/corpus_reader.h"
#include "index/manifest.h"
#include "sieve/index.h"

using namespace sieve;
using sieve::bench::Clock;
using sieve::bench::since;
namespace fs = std::filesystem;

namespace {

nlohmann::json ms_summary(const std::vector<double>& secs) {
  double total = 0;
  for (double s : secs) total += s;
  return {{"n", secs.size()},
          {"mean_ms", secs.empty() ? 0.0 : total / secs.size() * 1e3},
          {"p50_ms", bench::percentile(secs, 50) * 1e3},
          {"max_ms", bench::percentile(secs, 100) * 1e3}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sieve live-add benchmark"};
  std::string model, corpus, work, sizes_arg = "5000,100000";
  size_t batch = 10, adds = 20, one_off_adds = 5, max_length = 128;
  app.add_option("--model", model, "a model name or folder")->required();
  app.add_option("--corpus", corpus, "documents (BEIR JSON lines, TSV or text)")->required();
  app.add_option("--work", work, "scratch folder for the indexes")->required();
  app.add_option("--sizes", sizes_arg, "index sizes, comma-separated");
  app.add_option("--batch", batch, "documents per add");
  app.add_option("--adds", adds, "adds through the writer per size");
  app.add_option("--one-off-adds", one_off_adds, "adds through add_documents + Index::open per size");
  app.add_option("--max-length", max_length, "the encoder's max tokens (keys and token states)");
  CLI11_PARSE(app, argc, argv);
  std::vector<size_t> sizes;
  {
    std::stringstream ss(sizes_arg);
    for (std::string s; std::getline(ss, s, ',');) sizes.push_back(std::stoull(s));
  }
  const size_t biggest = *std::max_element(sizes.begin(), sizes.end());
  const size_t need = biggest + batch * (adds + one_off_adds);
  std::vector<Document> docs;
  for (size_t round = 0; docs.size() < need; ++round) {
    index::CorpusReader r(corpus);
    Document d;
    const size_t before = docs.size();
    while (docs.size() < need && r.next(d)) {
      if (round > 0) d.id += "#r" + std::to_string(round);
      docs.push_back(d);
    }
    if (docs.size() == before) {
      std::fprintf(stderr, "bench_add: '%s' has no documents\n", corpus.c_str());
      return 2;
    }
  }
  fs::create_directories(work);
  EncoderOptions enc;
  enc.max_length = max_length;
  nlohmann::json out = {{"bench", "add"}, {"model", model}, {"corpus", corpus}, {"batch", batch},
                        {"max_length", max_length}, {"sizes", nlohmann::json::array()}};
  for (size_t n : sizes) {
    const std::string dir = work + "/add-" + std::to_string(n);
    fs::remove_all(dir);
    std::fprintf(stderr, "bench_add: building %zu documents\n", n);
    auto t0 = Clock::now();
    IndexBuildOptions bo;
    build_index_from_documents(model, std::vector<Document>(docs.begin(), docs.begin() + n), dir, bo, enc);
    const double build_s = since(t0);
    size_t next = n;
    auto take = [&] {
      std::vector<Document> b(docs.begin() + next, docs.begin() + next + batch);
      next += batch;
      return b;
    };
    std::vector<double> writer_s, encode_s, open_s;
    t0 = Clock::now();
    IndexOpenOptions oo;
    oo.model_dir = model;
    oo.encoder = enc;
    {
      IndexWriter w(dir, oo);
      open_s.push_back(since(t0));
      for (size_t i = 0; i < adds; ++i) {
        auto b = take();
        auto t = Clock::now();
        const BuildReport rep = w.add(b);
        writer_s.push_back(since(t));
        encode_s.push_back(rep.encode_seconds);
      }
      if (w.snapshot()->size() != n + adds * batch) {
        std::fprintf(stderr, "bench_add: the writer's snapshot holds %zu documents, expected %zu\n",
                     w.snapshot()->size(), n + adds * batch);
        return 1;
      }
    }
    std::vector<double> one_off_s;
    for (size_t i = 0; i < one_off_adds; ++i) {
      auto b = take();
      auto t = Clock::now();
      add_documents(dir, b, IndexBuildOptions{}, enc, model);
      auto reopened = Index::open(dir, oo);
      one_off_s.push_back(since(t));
    }
    const index::Manifest m = index::read_manifest(dir, index::kManifestFile);
    out["sizes"].push_back({{"documents", n},
                            {"build_seconds", build_s},
                            {"writer_open_ms", open_s[0] * 1e3},
                            {"writer_add", ms_summary(writer_s)},
                            {"writer_add_encode", ms_summary(encode_s)},
                            {"one_off_add_and_reopen", ms_summary(one_off_s)},
                            {"vector_file_documents", m.vector_documents},
                            {"documents_after", m.documents}});
    std::fprintf(stderr, "bench_add: %zu documents: writer add p50 %.1f ms, one-off %.1f ms\n", n,
                 bench::percentile(writer_s, 50) * 1e3, bench::percentile(one_off_s, 50) * 1e3);
    fs::remove_all(dir);
  }
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
