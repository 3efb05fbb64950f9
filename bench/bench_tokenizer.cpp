// Tokenizer throughput (MB of text per second, one thread) of a tokenizer.json through sieve's
// Hugging Face pipeline: every line encoded with its special tokens, no truncation, repeated
// until --min-time seconds have passed. bench/bench_tokenizer.sh runs it beside Hugging Face's
// own library (npm `tokenizers`, bench/hf_tokenize_bench.js) on the same files.
//   bench_tokenizer TOKENIZER_JSON TEXT_FILE [--min-time 2]
// prints {"impl": "sieve", "tokenizer", "lines", "bytes", "tokens", "seconds", "mb_per_s"}.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "sieve/tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_tokenizer TOKENIZER_JSON TEXT_FILE [--min-time SECONDS]\n");
    return 2;
  }
  double min_time = 2.0;
  for (int i = 3; i + 1 < argc; i += 2)
    if (std::string(argv[i]) == "--min-time") min_time = std::atof(argv[i + 1]);
  auto tok = sieve::load_tokenizer_json(argv[1]);
  std::vector<std::string> lines;
  std::ifstream in(argv[2], std::ios::binary);
  size_t bytes = 0;
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) {
      bytes += l.size();
      lines.push_back(std::move(l));
    }
  sieve::EncodeOptions eo;
  eo.max_length = size_t(1) << 30;
  size_t tokens = 0, rounds = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double s = 0;
  do {
    for (const auto& l : lines) tokens += tok->encode(l, eo).ids.size();
    ++rounds;
    s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (s < min_time);
  std::string name = argv[1];
  name = name.substr(name.find_last_of('/') + 1);
  std::printf("{\"impl\": \"sieve\", \"tokenizer\": \"%s\", \"lines\": %zu, \"bytes\": %zu, \"tokens\": %zu, "
              "\"seconds\": %.3f, \"mb_per_s\": %.3f}\n",
              name.c_str(), lines.size(), bytes, tokens / rounds, s, static_cast<double>(bytes * rounds) / s / 1e6);
  return 0;
}
