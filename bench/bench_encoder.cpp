// Encoder throughput (sentences/s) of the real all-MiniLM-L6-v2 when SIEVE_BENCH_MODEL names it (a
// model name or folder), else of a MiniLM-L6-shaped random model: 6 layers, hidden 384, 12 heads,
// FFN 1536, vocab 30522 (the same arithmetic); batch 1/32; 16, 128 and 256 tokens; 1 and 2 threads.
// lengths=0: every text has exactly `tokens` tokens; lengths=1: lengths spread evenly over
// [tokens/2, tokens], as real sentences vary (the batch pads to `tokens`).
// SIEVE_BENCH_PRECISION=int8 runs the int8 path (default fp32).
// Compare with bench/pytorch_encoder.py (the same shapes in PyTorch eager). Run:
//   build/bench/bench_encoder --benchmark_format=json
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "sieve/encoder.h"
#include "sieve/model.h"

namespace {

const std::string& model_dir() {
  static std::string dir = [] {
    if (const char* m = std::getenv("SIEVE_BENCH_MODEL"); m != nullptr && *m != '\0')
      return sieve::resolve_model_dir(m);
    char tmpl[] = "/tmp/sieve_bench_minilm_XXXXXX";
    std::string d = ::mkdtemp(tmpl);
    sieve::write_fixture_model(d, sieve::bench::minilm_fixture_options(256));
    return d;
  }();
  return dir;
}

// A text of `words` words from the fixture vocabulary: each word is one token, so the encoded
// length is words + 2.
std::string make_text(int words, int salt) {
  static const char* kWords[] = {"the", "dog", "bit", "man", "red", "car", "near", "river", "old", "city",
                                 "saw", "five", "birds", "above", "tree", "children"};
  std::string s;
  for (int i = 0; i < words; ++i) {
    if (i) s += ' ';
    s += kWords[(i * 7 + salt) % 16];
  }
  return s;
}

void BM_Encode(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  const int tokens = static_cast<int>(state.range(1));
  const int threads = static_cast<int>(state.range(2));
  const bool varied = state.range(3) != 0;
  static std::unique_ptr<sieve::Encoder> enc;
  if (!enc) {
    sieve::EncoderOptions eo;
    if (const char* p = std::getenv("SIEVE_BENCH_PRECISION"); p != nullptr && *p != '\0')
      eo.precision = sieve::precision_from_name(p);
    if (const char* e = std::getenv("SIEVE_BENCH_ENGINE"); e != nullptr && *e != '\0')
      eo.engine = sieve::engine_from_name(e);
    enc = sieve::Encoder::load(model_dir(), eo);
  }
  sieve::set_compute_threads(threads);
  std::vector<std::string> texts;
  for (int i = 0; i < batch; ++i) {
    int len = varied && batch > 1 ? tokens / 2 + (tokens / 2) * i / (batch - 1) : tokens;
    texts.push_back(make_text(len - 2, i));
  }
  sieve::EncodeCall call;
  call.batch_size = static_cast<size_t>(batch);
  for (auto _ : state) {
    auto e = enc->encode(texts, call);
    benchmark::DoNotOptimize(e.pooled.data());
  }
  state.counters["sentences_per_s"] =
      benchmark::Counter(static_cast<double>(batch) * state.iterations(), benchmark::Counter::kIsRate);
}

void Args(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2})
    for (int tokens : {16, 128, 256})
      for (int batch : {1, 32})
        for (int varied : {0, 1})
          if (batch > 1 || varied == 0) b->Args({batch, tokens, threads, varied});
  b->ArgNames({"batch", "tokens", "threads", "lengths"})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
}

BENCHMARK(BM_Encode)->Apply(Args);

}  // namespace

int main(int argc, char** argv) {
  sieve::ensure_fast_blas(argv);
  sieve::tune_allocator();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
