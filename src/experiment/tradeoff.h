// `sieve experiment tradeoff`: the paper's first table. For one backbone and each seed, trains
// Model A (the training triplets/pairs) and Model B (the same plus identity triplets of
// structural near-misses), evaluates both zero-shot on BEIR folders, compares their pooled spaces
// on held-apart near-misses, and aggregates over seeds into JSON, Markdown and SVG plots.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sieve::experiment {

struct TradeoffOptions {
  std::string backbone;                 ///< model directory to fine-tune
  /// Model A data: triplet/pair files, or BEIR folders (their train qrels as (query, positive)
  /// rows with hard negatives mined by BM25 and by the backbone, see hard_negatives.h)
  std::vector<std::string> train;
  size_t hard_negatives = 1;            ///< per retriever for BEIR folders; 0 = plain pairs
  std::vector<std::string> train_categories;  ///< keep only these categories of --train files' rows; empty = all
  std::string structural;               ///< near-miss pairs for Model B; "" = generated from WordNet
  std::string nearmiss_test;            ///< pairs for the pooled-space analysis; "" = generated (held apart)
  std::vector<std::string> beir;        ///< evaluation folders (qrels/<split>.tsv)
  std::string split = "test";
  std::vector<uint64_t> seeds = {42, 43, 44};
  std::string out_dir;
  size_t steps = 500, batch_size = 64, max_length = 128;
  double lr = 1e-4, weight_decay = 0.001, scale = 10.0;  ///< the authors' MiniLM-L6 values
  size_t max_train_rows = 0;            ///< > 0: cap on each --train source's rows, kept round-robin over categories
  size_t max_structural = 0;            ///< > 0: cap on the near-miss rows Model B adds
  size_t max_queries = 0;               ///< > 0: per evaluation folder
  size_t max_test_pairs = 0;            ///< > 0: cap on the pooled-space pairs
  /// Human-written pair sets for the pooled-space separation (SugarCrepe, CondaQA, CANNOT, ...); a
  /// set without positive pairs is scored against the generated test set's positives.
  std::vector<std::string> nearmiss_sets;
  int threads = 0;
  std::string device = "cpu";           ///< training and encoding: cpu, cuda or cuda:N
  size_t save_every = 0;                ///< resumable checkpoint every N steps; 0 = steps / 10
  bool train_only = false;              ///< train every model (resumable), evaluate nothing
  /// The evaluation's folder, OUT/evaluations/NAME; "" = "eval-" + a hash of the evaluation's
  /// settings (sets, split, caps), so that evaluating on other data never mixes results.
  std::string eval_name;
};

/// Runs (or resumes: trained models, interrupted trainings and finished evaluations are reused)
/// the experiment: OUT/data/report.json (what each model saw), the models in OUT/seed_<s>/, and
/// the evaluation in OUT/evaluations/<name>/ (results.json, table.md, plots/*.svg, per-seed
/// results and TREC runs), whose results.json, table.md and plots are also copied to OUT.
/// Returns the Markdown table ("" with train_only).
std::string run_tradeoff(const TradeoffOptions& opt);

}  // namespace sieve::experiment
