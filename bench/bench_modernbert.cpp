// ModernBERT encoder throughput and peak memory at the gte-modernbert-base shape (22 layers,
// hidden 768, 12 heads, intermediate 1152, vocab 50368, sliding window 128, every third layer
// global), with random weights and random token ids (Encoder::encode_ids, so the tokenizer is not
// measured). One case per process, so that the peak resident memory (VmHWM) is the case's own:
//   bench_modernbert --case 32x128|4x2048|1x8192 [--threads N] [--iters K] [--model DIR]
// prints {"impl": "sieve", "case", "batch", "tokens", "threads", "sentences_per_s",
// "ms_per_batch", "peak_rss_mb"}. bench/bench_modernbert.sh runs it beside
// bench/pytorch_modernbert.py (the same graph in PyTorch eager).
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "sieve/encoder.h"
#include "sieve/model.h"

namespace {

sieve::FixtureModelOptions gte_modernbert_base() {
  sieve::FixtureModelOptions f;
  auto& c = f.config;
  c.model_type = "modernbert";
  c.hidden_size = 768;
  c.num_hidden_layers = 22;
  c.num_attention_heads = 12;
  c.intermediate_size = 1152;
  c.vocab_size = 50368;
  c.max_position_embeddings = 8192;
  c.local_attention = 128;
  c.global_attn_every_n_layers = 3;
  c.global_rope_theta = 160000.0;
  c.local_rope_theta = 10000.0;
  c.layer_norm_eps = 1e-5;
  c.norm_bias = c.attention_bias = c.mlp_bias = false;
  f.max_seq_length = 8192;
  f.init_std = 0.02f;
  f.pooling = sieve::Pooling::Cls;
  return f;
}

long peak_rss_kb() {
  std::ifstream in("/proc/self/status");
  std::string key;
  long value = 0;
  while (in >> key) {
    if (key == "VmHWM:") {
      in >> value;
      return value;
    }
    std::string rest;
    std::getline(in, rest);
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  sieve::ensure_fast_blas(argv);
  sieve::tune_allocator();  // as the sieve CLI does
  std::string which = "32x128", model = "/tmp/sieve_bench_gte_modernbert";
  int threads = 0, iters = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--case") which = argv[i + 1];
    else if (a == "--threads") threads = std::atoi(argv[i + 1]);
    else if (a == "--iters") iters = std::atoi(argv[i + 1]);
    else if (a == "--model") model = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: bench_modernbert --case 32x128|4x2048|1x8192 [--threads N] [--iters K] [--model DIR]\n");
      return 2;
    }
  }
  const size_t x = which.find('x');
  if (x == std::string::npos) {
    std::fprintf(stderr, "bench_modernbert: --case must be BATCHxTOKENS\n");
    return 2;
  }
  const int batch = std::atoi(which.substr(0, x).c_str()), tokens = std::atoi(which.substr(x + 1).c_str());
  struct stat st {};
  if (::stat((model + "/config.json").c_str(), &st) != 0) sieve::write_fixture_model(model, gte_modernbert_base());
  sieve::EncoderOptions eo;
  eo.threads = threads;
  auto enc = sieve::Encoder::load(model, eo);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> id(5, 50000);
  std::vector<std::vector<int32_t>> ids(static_cast<size_t>(batch));
  for (auto& row : ids)
    for (int t = 0; t < tokens; ++t) row.push_back(id(rng));
  sieve::EncodeCall call;
  call.batch_size = static_cast<size_t>(batch);
  enc->encode_ids({ids[0]}, call);  // warm-up (allocator, BLAS threads)
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) enc->encode_ids(ids, call);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "{\"impl\": \"sieve\", \"case\": \"%s\", \"batch\": %d, \"tokens\": %d, \"threads\": %d, \"sentences_per_s\": %.4g, "
      "\"ms_per_batch\": %.1f, \"peak_rss_mb\": %.0f}\n",
      which.c_str(), batch, tokens, sieve::compute_threads(), batch * iters / s, 1000 * s / iters,
      static_cast<double>(peak_rss_kb()) / 1024.0);
  return 0;
}
