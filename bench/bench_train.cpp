// Training throughput (prints one JSON object; see docs/benchmarks.md, "Training"):
//  - contrastive encoder training (sieve train encoder) of a MiniLM-L6-shaped model, batch 32,
//    64 tokens per text: samples/s, where a sample is one (anchor, positive) pair. Compare with
//    bench/train_step_pytorch.py (the same step in PyTorch eager);
//  - verifier training steps/s for F3 and F4, frozen and end to end.
// Usage: bench_train [--model DIR] [--steps 10] [--batch-size 32] [--seq-len 64] [--threads 2]
//                    [--verifier-batch 32] [--f3-batch 8] [--verifier-steps 3] [--skip-verifiers]
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "bench_util.h"
#include "sieve/encoder.h"
#include "sieve/model.h"
#include "sieve/train.h"

using namespace sieve;

namespace {

const char* kWords[] = {"the", "dog", "bit", "man", "red", "car", "near", "river", "old", "city",
                        "saw", "five", "birds", "above", "tree", "children", "house", "water", "road", "green"};

// A text of exactly `words` single-token words, different for each (row, salt).
std::string make_text(size_t words, size_t row, size_t salt) {
  std::string s;
  for (size_t i = 0; i < words; ++i) {
    if (i) s += ' ';
    s += kWords[(i * 7 + row * 13 + salt * 3 + (row / 20) * (i + 1)) % 20];
  }
  return s;
}

// Rows of (anchor, positive[, negative]); every text is unique (it ends with its row number).
std::string write_rows(const std::string& path, size_t rows, size_t words, bool negatives) {
  std::ofstream out(path);
  out << (negatives ? "anchor\tpositive\tnegative\n" : "anchor\tpositive\n");
  for (size_t r = 0; r < rows; ++r) {
    out << make_text(words, r, 0) << " " << r << "\t" << make_text(words, r, 1) << " " << r;
    if (negatives) out << "\t" << make_text(words, r, 2) << " " << r;
    out << "\n";
  }
  return path;
}

}  // namespace

int main(int argc, char** argv) {
  ensure_fast_blas(argv);
  tune_allocator();
  CLI::App app{"sieve training benchmark"};
  std::string model;
  size_t steps = 10, batch = 32, seq_len = 64, verifier_batch = 32, f3_batch = 8, verifier_steps = 3;
  int threads = 2;
  bool skip_verifiers = false;
  app.add_option("--model", model, "MiniLM-shaped model directory (default: a generated one)");
  app.add_option("--steps", steps);
  app.add_option("--batch-size", batch);
  app.add_option("--seq-len", seq_len);
  app.add_option("--threads", threads);
  app.add_option("--verifier-batch", verifier_batch);
  app.add_option("--f3-batch", f3_batch, "F3's batch (its B x B maps of 128 x 128 are slow on a CPU)");
  app.add_option("--verifier-steps", verifier_steps);
  app.add_flag("--skip-verifiers", skip_verifiers);
  CLI11_PARSE(app, argc, argv);

  char tmpl[] = "/tmp/sieve_bench_train_XXXXXX";
  const std::string work = ::mkdtemp(tmpl);
  if (model.empty()) {
    model = work + "/model";
    write_fixture_model(model, bench::minilm_fixture_options(256));
  }
  // seq_len tokens = [CLS] + (seq_len - 3) words + the row number + [SEP].
  const size_t rows = 4 * batch * (steps + 2);
  const std::string pairs = write_rows(work + "/pairs.tsv", rows, seq_len - 3, false);
  const std::string triplets = write_rows(work + "/triplets.tsv", rows, seq_len - 3, true);
  nlohmann::json out = {{"model", model}, {"threads", threads}};

  auto encoder_run = [&](size_t n, const std::string& dir) {
    EncoderTrainOptions o;
    o.model_dir = model;
    o.train_path = pairs;
    o.max_length = seq_len;
    o.common.out_dir = dir;
    o.common.steps = n;
    o.common.batch_size = batch;
    o.common.threads = threads;
    o.common.log_every = n;
    o.common.progress = false;
    return train_encoder(o);
  };
  encoder_run(2, work + "/warm");  // warm-up: allocations, thread pools
  TrainReport r = encoder_run(steps, work + "/enc");
  out["encoder"] = {{"batch", batch},
                    {"seq_len", seq_len},
                    {"steps", r.steps},
                    {"loss", "MNRL, in-batch negatives (anchor and positive per row)"},
                    {"samples_per_second", r.samples_per_second},
                    {"ms_per_step", 1e3 * r.seconds / static_cast<double>(r.steps)}};
  std::fprintf(stderr, "encoder: %.1f samples/s\n", r.samples_per_second);

  if (!skip_verifiers) {
    nlohmann::json v = nlohmann::json::object();
    for (VerifierKind kind : {VerifierKind::F4, VerifierKind::F3})
      for (VerifierRegime regime : {VerifierRegime::Frozen, VerifierRegime::EndToEnd}) {
        VerifierTrainOptions o;
        o.model_dir = model;
        o.train_path = triplets;
        o.verifier.kind = kind;
        o.regime = regime;
        o.max_length = seq_len;
        o.common.batch_size = kind == VerifierKind::F3 ? f3_batch : verifier_batch;
        o.common.steps = verifier_steps;
        o.common.threads = threads;
        o.common.log_every = verifier_steps;
        o.common.progress = false;
        const std::string name =
            std::string(verifier_kind_name(kind)) + (regime == VerifierRegime::Frozen ? "_frozen" : "_end_to_end");
        o.common.out_dir = work + "/" + name;
        TrainReport t = train_verifier(o);
        v[name] = {{"batch", o.common.batch_size},
                   {"steps", t.steps},
                   {"steps_per_second", static_cast<double>(t.steps) / t.seconds},
                   {"samples_per_second", t.samples_per_second}};
        std::fprintf(stderr, "%s: %.3f steps/s\n", name.c_str(), static_cast<double>(t.steps) / t.seconds);
      }
    out["verifiers"] = v;
  }
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
