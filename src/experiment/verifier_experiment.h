// `sieve experiment verifiers`: the paper's second table. For one encoder and each seed, trains
// F0-F4 frozen and end to end (frozen F0-F2 have nothing to train and are scored zero-shot),
// evaluates reranking of stage 1's top K on BEIR folders and near-miss rejection on held-apart
// pairs, and aggregates over seeds into JSON, Markdown and SVG plots.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sieve::experiment {

struct VerifierExperimentOptions {
  std::string encoder;                  ///< model directory
  std::string train;                    ///< triplets, or pairs read as identity triplets; "" = generated
  std::string nearmiss_test;            ///< test pairs; "" = generated from held-apart WordNet sentences
  std::vector<std::string> beir;
  std::string split = "test";
  std::vector<std::string> kinds = {"F0", "F1", "F2", "F3", "F4"};
  std::vector<std::string> regimes = {"frozen", "end-to-end"};
  std::vector<uint64_t> seeds = {42, 43, 44};
  std::string out_dir;
  size_t steps_light = 400;             ///< end-to-end steps of F0-F2 (encoder only)
  size_t steps_f3 = 300, steps_f4 = 600;
  size_t batch_light = 128, batch_map = 32;  ///< the authors' batches: 128 for F0-F2, 32 for F3/F4
  double lr_verifier = 1e-4, lr_encoder = 1.5e-5;
  double wd_verifier_light = 0.0, wd_verifier_map = 0.01, wd_encoder = 0.005;
  size_t max_length = 128;              ///< encoder token cap while training
  size_t max_tokens = 128;              ///< map size (tokens per side) of the verifiers
  size_t candidates = 100;              ///< stage-1 top K reranked
  size_t max_queries = 0;
  size_t max_train_rows = 0, max_test_pairs = 0;
  int threads = 0;
  std::string device = "cpu";           ///< training and encoding: cpu, cuda or cuda:N
};

/// Runs (or resumes) the experiment; writes OUT/results.json, OUT/table.md, OUT/plots/*.svg.
/// Returns the Markdown.
std::string run_verifier_experiment(const VerifierExperimentOptions& opt);

}  // namespace sieve::experiment
