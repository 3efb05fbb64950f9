// `sieve train cross-encoder`: a BERT cross-encoder trained with binary cross-entropy on the
// logit of "[CLS] a [SEP] b [SEP]" (sentence-transformers' CrossEncoder.fit with one label).
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>
#include <random>

#include "core/file_util.h"
#include "core/log.h"
#include "model/bert_classifier.h"
#include "model/tensor_io.h"
#include "sieve/cross_encoder.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "sieve/safetensors.h"
#include "sieve/train.h"
#include "train/distributed.h"
#include "train/labelled_pairs.h"
#include "train/losses.h"
#include "train/run_state.h"
#include "train/train_data.h"
#include "train/trainable_encoder.h"

namespace sieve {

namespace {

using namespace train;
namespace fs = std::filesystem;

struct LabelledPair {
  std::pair<std::string, std::string> texts;
  float label = 0;
};

// One labelled pair, as the batches read it.
std::vector<LabelledPair> pairs_of(const std::vector<TrainExample>& examples) {
  std::vector<LabelledPair> out;
  out.reserve(examples.size());
  for (const auto& e : examples) out.push_back({{e.anchor, e.positive}, static_cast<float>(e.label)});
  return out;
}

// Row k of the stream of rows: epoch k / n in an order shuffled from (seed, epoch), or in file order. The state is
// the step alone, so a resumed run draws what an uninterrupted one would.
class EpochOrder {
 public:
  EpochOrder(size_t n, uint64_t seed, bool shuffle) : n_(n), seed_(seed), shuffle_(shuffle) {}
  size_t row(size_t k) {
    if (!shuffle_) return k % n_;
    const size_t epoch = k / n_;
    if (epoch != epoch_ || order_.empty()) {
      order_.resize(n_);
      std::iota(order_.begin(), order_.end(), size_t{0});
      std::mt19937_64 rng(seed_ * 1000003u + epoch);
      std::shuffle(order_.begin(), order_.end(), rng);
      epoch_ = epoch;
    }
    return order_[k % n_];
  }
  size_t epoch_of(size_t k) const { return k / n_; }

 private:
  size_t n_;
  uint64_t seed_;
  bool shuffle_;
  size_t epoch_ = 0;
  std::vector<size_t> order_;
};

// The non-weight files a cross-encoder folder takes from its source: tokenizer files only (the
// sentence-transformers files describe a bi-encoder and would mislead).
void copy_tokenizer_files(const std::string& from, const std::string& to) {
  for (const char* f : {"vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}) {
    fs::path p = fs::path(from) / f;
    if (fs::is_regular_file(p)) fs::copy_file(p, fs::path(to) / f, fs::copy_options::overwrite_existing);
  }
}

}  // namespace

TrainReport train_cross_encoder(const CrossEncoderTrainOptions& o) {
  const TrainCommon& c = o.common;
  check_common(c);
  SIEVE_THROW_IF_NOT(!o.model_dir.empty(), "a model to start from is required (--model)");
  SIEVE_THROW_IF_NOT(!o.train_path.empty(), "training data is required (--train)");
  SIEVE_THROW_IF_NOT(o.lr > 0, "--lr must be positive");
  set_compute_threads(c.threads);
  const std::vector<LabelledPair> data = pairs_of(read_labelled_pairs(o.train_path));
  SIEVE_THROW_IF_NOT(data.size() >= c.batch_size,
                     "'" << o.train_path << "' has " << data.size() << " pairs, fewer than one batch of " << c.batch_size);
  const std::string cfg_text = read_file(path_join(o.model_dir, "config.json"));
  const BertConfig config = parse_bert_config(cfg_text, path_join(o.model_dir, "config.json"));
  const int64_t source_labels = classifier_num_labels(cfg_text);
  SIEVE_THROW_IF_NOT(source_labels == 0 || source_labels == 1,
                     o.model_dir << " is a classifier with " << source_labels << " labels; start from an encoder or a one-label cross-encoder");
  auto tokenizer = Tokenizer::from_model_dir(o.model_dir);
  const size_t max_length = o.max_length ? std::min<size_t>(o.max_length, static_cast<size_t>(max_sequence_length(config)))
                                         : cross_encoder_max_length(o.model_dir, config);
  SIEVE_THROW_IF_NOT(max_length >= 3, "--max-length must be at least 3");
  const int64_t pad_id = std::max<int32_t>(0, tokenizer->special_tokens().pad);

  RunDir run(c, "cross-encoder");
  DataParallel dp({c.world_size, c.rank, c.dist_store, /*timeout_s=*/3600});
  const c10::Device device(c.device);
  BertClassifier model(config, 1, o.dropout);
  {
    auto weights = SafetensorsFile::open(path_join(o.model_dir, "model.safetensors"));
    const auto got = model->load_weights(*weights);
    if (!got.classifier) model->init_head(c.seed, /*pooler=*/!got.pooler);
    if (!got.classifier && run.resume_from().empty())
      log_info(std::string("new classifier") + (got.pooler ? "" : " and pooler") + " initialised from seed " +
               std::to_string(c.seed));
  }
  model->to(device);
  at::manual_seed(c.seed + static_cast<uint64_t>(c.rank));  // dropout differs per rank

  // Where the folder came from: a cross-encoder passes its own record on.
  CrossEncoderMeta meta;
  if (source_labels == 1) meta = read_cross_encoder_meta(o.model_dir);
  if (meta.base_encoder.empty()) {
    meta.base_encoder = fs::absolute(o.model_dir).lexically_normal().string();
    meta.base_identity = model_identity(o.model_dir);
  }
  meta.threshold = std::numeric_limits<double>::quiet_NaN();  // new weights: calibrate again

  std::vector<torch::optim::OptimizerParamGroup> groups;
  std::vector<double> base_lr;
  add_adamw_groups(model->named_parameters(), o.lr, o.weight_decay, groups, base_lr);
  torch::optim::AdamW opt(groups);
  const std::vector<at::Tensor> params = model->parameters();
  // Writes a complete folder into the existing directory `dir`.
  auto write_into = [&](const std::string& dir) {
    if (!run.writer()) return;
    copy_tokenizer_files(o.model_dir, dir);
    write_file_atomic(path_join(dir, "config.json"), classifier_config_json(cfg_text, 1));
    write_tensors(path_join(dir, "model.safetensors"), model->hf_tensors(), {{"format", "pt"}});
    write_cross_encoder_meta(dir, meta);
  };
  LoopState state;
  if (!run.resume_from().empty()) {
    model->load_weights(*SafetensorsFile::open(path_join(run.resume_from(), "model.safetensors")));
    state = run.restore(opt);
    if (dp.active()) at::manual_seed(c.seed * 1000003 + state.step * 31 + static_cast<uint64_t>(c.rank));
    log_info("resuming from " + run.resume_from() + " at step " + std::to_string(state.step));
  }

  const size_t warmup = static_cast<size_t>(std::ceil(c.warmup_ratio * static_cast<double>(c.steps)));
  const size_t B = c.batch_size;
  EpochOrder order(data.size(), c.seed, o.shuffle);
  TrainReport report;
  Budget budget(c);
  Progress progress("train cross-encoder", c.progress ? c.steps : 0);
  progress.add(state.step);
  StepLog steps(run, c, budget, report);
  model->train();
  size_t truncated = 0;
  while (!budget.done(state.step)) {
    set_learning_rates(opt, base_lr, linear_schedule(state.step, c.steps, warmup));
    // This rank's share [begin, end) of the global batch.
    const size_t W = static_cast<size_t>(dp.world_size()), r = static_cast<size_t>(dp.rank());
    const size_t begin = B * r / W, end = B * (r + 1) / W;
    std::vector<const std::pair<std::string, std::string>*> texts;
    std::vector<float> labels;
    for (size_t i = begin; i < end; ++i) {
      const LabelledPair& p = data[order.row(state.step * B + i)];
      texts.push_back(&p.texts);
      labels.push_back(p.label);
    }
    PairBatch batch = encode_pair_batch(*tokenizer, texts, max_length, pad_id);
    truncated += batch.truncated;
    at::Tensor logits = model->forward(batch.ids.to(device), batch.mask.to(device), batch.types.to(device)).view({-1});
    at::Tensor target = at::tensor(labels, at::kFloat).to(device);
    // The share's part of the mean over the global batch: the ranks' gradients then sum to it.
    at::Tensor loss = at::binary_cross_entropy_with_logits(logits, target, {}, {}, at::Reduction::Sum) /
                      static_cast<double>(B);
    opt.zero_grad();
    loss.backward();
    dp.sum_gradients(params);
    dump_gradients(run, c, state.step, {{"", model->named_parameters()}});
    if (c.clip_norm > 0) torch::nn::utils::clip_grad_norm_(params, c.clip_norm);
    opt.step();
    ++state.step;
    progress.add(1);
    double accuracy = 0;
    {
      at::NoGradGuard g;
      accuracy = dp.sum(((logits > 0).to(at::kFloat) == target).sum().item<double>()) / static_cast<double>(B);
    }
    steps.add(state.step, B, dp.sum(loss.item<double>()), {{"accuracy", accuracy}},
              {{"lr", opt.param_groups()[0].options().get_lr()}, {"epoch", order.epoch_of(state.step * B)}});
    run.checkpoint_if_due(c.save_every, state, [] { return std::string(); }, opt, write_into);
  }
  progress.finish();
  if (truncated > 0) log_info(std::to_string(truncated) + " training pair(s) were cut to " + std::to_string(max_length) + " tokens");
  model->eval();
  report.seconds = budget.elapsed();
  report.samples_per_second = steps.samples_per_second();
  report.steps = state.step;
  run.checkpoint(state, opt, write_into);
  const std::string last = path_join(run.out(), "last");
  if (run.writer()) {
    const std::string staged = last + ".partial";
    std::error_code ec;
    fs::remove_all(staged, ec);
    fs::create_directories(staged);
    write_into(staged);
    replace_dir(staged, last);
  }
  report.final_dir = last;
  write_report(run, report, {{"max_length", max_length}, {"pairs", data.size()}, {"base_encoder", meta.base_encoder}});
  return report;
}

}  // namespace sieve
