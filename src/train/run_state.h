// What every trainer shares: the output directory's layout, resumable checkpoints (model files +
// optimizer + sampler + RNG + counters), the metrics log, the learning-rate schedule and the
// stopping rule. Layout (docs/training.md):
//   OUT/metrics.jsonl        one JSON object per logged step or evaluation (appended on resume)
//   OUT/checkpoint-<step>/   resumable state; only the newest is kept
//   OUT/last/, OUT/best/     model directories (best: highest evaluation metric, if evaluated)
//   OUT/report.json          the run's summary
#pragma once

#include <torch/optim/optimizer.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "sieve/train.h"

namespace sieve::train {

/// True when out_dir holds a checkpoint-<step> folder with its trainer state.
bool any_checkpoint(const std::string& out_dir);

/// Counters and text state saved with a checkpoint.
struct LoopState {
  size_t step = 0;
  double best_metric = -1;
  size_t best_step = 0;
  std::string sampler;  ///< BatchSampler::state()
  nlohmann::json extra = nlohmann::json::object();
};

class RunDir {
 public:
  /// Creates out_dir. With `resume`, finds the newest checkpoint (throws when there is none).
  /// Only the writer (rank 0 of a data-parallel group) writes; other ranks only read checkpoints.
  RunDir(const TrainCommon& common, const std::string& kind);
  bool writer() const { return writer_; }

  const std::string& out() const { return out_; }
  /// The checkpoint to resume from, or "" for a fresh run.
  const std::string& resume_from() const { return resume_from_; }

  /// Writes a checkpoint directory for `state` (model files written by `write_model` into the
  /// directory it is given), then removes older checkpoints.
  void checkpoint(const LoopState& state, torch::optim::Optimizer& opt,
                  const std::function<void(const std::string& dir)>& write_model);
  /// checkpoint() when `save_every` (> 0) divides the state's step; `sampler` gives the sampler's
  /// state (asked only then).
  void checkpoint_if_due(size_t save_every, LoopState& state, const std::function<std::string()>& sampler,
                         torch::optim::Optimizer& opt, const std::function<void(const std::string& dir)>& write_model);
  /// Restores optimizer, RNG and counters from resume_from().
  LoopState restore(torch::optim::Optimizer& opt) const;

  /// Appends one line to metrics.jsonl (flushed).
  void log(const nlohmann::json& line);

 private:
  std::string out_, kind_, resume_from_;
  bool writer_ = true;
  std::ofstream metrics_;
};

/// Sets every parameter group's learning rate to its base rate times `factor`.
void set_learning_rates(torch::optim::Optimizer& opt, const std::vector<double>& base, double factor);

/// The stopping rule: `steps` (or `stop_after`, when > 0) reached, or `seconds` (> 0) of
/// training time spent.
class Budget {
 public:
  explicit Budget(const TrainCommon& c)
      : steps_(c.stop_after > 0 ? std::min(c.stop_after, c.steps) : c.steps),
        seconds_(c.seconds),
        start_(std::chrono::steady_clock::now()) {}
  bool done(size_t step) const { return step >= steps_ || (seconds_ > 0 && elapsed() >= seconds_); }
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  size_t steps_;
  double seconds_;
  std::chrono::steady_clock::time_point start_;
};

/// Per-step bookkeeping: the loss window, throughput, a metrics line every log_every steps (and at
/// the last step), first/last window losses into the report.
class StepLog {
 public:
  StepLog(RunDir& run, const TrainCommon& c, const Budget& budget, TrainReport& report)
      : run_(run), c_(c), budget_(budget), report_(report) {}
  /// Records a step. Throws sieve::Error on a non-finite loss. `averaged`: numbers averaged over
  /// the window (e.g. accuracy); `extra`: fields copied into the line as they are.
  void add(size_t step, size_t rows, double loss, const nlohmann::json& averaged = nlohmann::json::object(),
           const nlohmann::json& extra = nlohmann::json::object());
  double samples_per_second() const { return static_cast<double>(samples_) / std::max(1e-9, budget_.elapsed()); }

 private:
  RunDir& run_;
  const TrainCommon& c_;
  const Budget& budget_;
  TrainReport& report_;
  double loss_ = 0;
  nlohmann::json sums_ = nlohmann::json::object();
  size_t n_ = 0, samples_ = 0;
  bool first_ = true;
};

/// The first step's gradients of `named` (prefixed) to c.gradients_file, when set, on the writer.
void dump_gradients(const RunDir& run, const TrainCommon& c, size_t step,
                    const std::vector<std::pair<std::string, torch::OrderedDict<std::string, at::Tensor>>>& named);

/// Writes OUT/report.json from the report and `extra` fields.
void write_report(const RunDir& run, const TrainReport& report, const nlohmann::json& extra);

/// Validates the options every trainer shares (throws sieve::Error).
void check_common(const TrainCommon& c);

}  // namespace sieve::train

namespace sieve::train {

/// AdamW parameter groups as Hugging Face's Trainer builds them: weight decay on weights, none
/// on biases and LayerNorm parameters. Appends to `groups` and the base rates to `base_lr`.
void add_adamw_groups(const torch::OrderedDict<std::string, at::Tensor>& named, double lr, double weight_decay,
                      std::vector<torch::optim::OptimizerParamGroup>& groups, std::vector<double>& base_lr);

}  // namespace sieve::train
