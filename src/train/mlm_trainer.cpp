// `sieve train mlm`: masked-language-model pretraining of a new BERT (issue 8's default model
// starts here, since no pretrained weights exist offline).
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/file_util.h"
#include "core/log.h"
#include "model/tensor_io.h"
#include "sieve/error.h"
#include "sieve/safetensors.h"
#include "sieve/train.h"
#include "train/distributed.h"
#include "train/losses.h"
#include "train/mlm.h"
#include "train/run_state.h"
#include "train/trainable_encoder.h"

namespace sieve {

namespace {

using namespace train;

// Reads one sentence per line; a blank line ends a document. Returns token ids per sentence.
std::vector<std::vector<std::vector<int32_t>>> read_documents(const std::vector<std::string>& files,
                                                              const Tokenizer& tok, bool progress) {
  std::vector<std::vector<std::vector<int32_t>>> docs(1);
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    SIEVE_THROW_IF_NOT(in.is_open(), "cannot read text file '" << f << "'");
    Progress bar("tokenize " + f, 0);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      bool blank = line.find_first_not_of(" \t") == std::string::npos;
      if (blank) {
        if (!docs.back().empty()) docs.emplace_back();
        continue;
      }
      std::vector<int32_t> ids;
      for (const auto& piece : tok.tokenize(line)) ids.push_back(piece.id);
      if (!ids.empty()) docs.back().push_back(std::move(ids));
      if (progress) bar.add(1);
    }
    bar.finish();
    if (!docs.back().empty()) docs.emplace_back();  // files are separate documents
  }
  if (docs.back().empty()) docs.pop_back();
  return docs;
}

// Epoch-wise shuffled order of the sequences; the state is (epoch, position).
class SequenceSampler {
 public:
  SequenceSampler(size_t n, size_t batch, uint64_t seed) : n_(n), batch_(batch), seed_(seed) { shuffle(); }
  std::vector<size_t> next() {
    std::vector<size_t> out;
    while (out.size() < batch_) {
      if (pos_ == n_) {
        ++epoch_;
        pos_ = 0;
        shuffle();
      }
      out.push_back(order_[pos_++]);
    }
    return out;
  }
  std::string state() const { return std::to_string(epoch_) + " " + std::to_string(pos_); }
  void restore(const std::string& s) {
    std::istringstream in(s);
    size_t e = 0, p = 0;
    SIEVE_THROW_IF_NOT((in >> e >> p) && p <= n_, "damaged sampler state '" << s << "'");
    epoch_ = e;
    shuffle();
    pos_ = p;
  }
  size_t epoch() const { return epoch_; }

 private:
  void shuffle() {
    order_.resize(n_);
    for (size_t i = 0; i < n_; ++i) order_[i] = i;
    std::mt19937_64 rng(seed_ * 1000003 + epoch_);
    for (size_t i = n_; i > 1; --i) std::swap(order_[i - 1], order_[rng() % i]);
  }
  size_t n_, batch_, pos_ = 0, epoch_ = 0;
  uint64_t seed_;
  std::vector<size_t> order_;
};

}  // namespace

TrainReport train_mlm(const MlmTrainOptions& o) {
  const TrainCommon& c = o.common;
  check_common(c);
  SIEVE_THROW_IF_NOT(!o.text_files.empty(), "at least one text file is required (--text)");
  SIEVE_THROW_IF_NOT(o.mask_prob > 0 && o.mask_prob < 1, "--mask-prob must lie in (0, 1)");
  SIEVE_THROW_IF_NOT(o.lr > 0, "--lr must be positive");
  set_compute_threads(c.threads);
  RunDir run(c, "mlm");
  DataParallel dp({c.world_size, c.rank, c.dist_store, /*timeout_s=*/3600});

  // The model directory training starts from: a given one, or a new one written from the config.
  std::string source = o.init_dir;
  if (source.empty()) {
    SIEVE_THROW_IF_NOT(!o.vocab_file.empty() && is_file(o.vocab_file), "a vocabulary is required (--vocab vocab.txt)");
    SIEVE_THROW_IF_NOT(o.seq_len <= static_cast<size_t>(o.config.max_position_embeddings),
                       "--seq-len " << o.seq_len << " exceeds max_position_embeddings " << o.config.max_position_embeddings);
    source = path_join(run.out(), "init");
    FixtureModelOptions f;
    f.config = o.config;
    f.vocab_file = o.vocab_file;
    f.pooling = o.pooling;
    f.max_seq_length = o.seq_len;
    if (run.writer()) write_fixture_model(source, f);  // weights replaced below by Hugging Face's initialisation
    dp.barrier();                                       // the other ranks read it
  }
  TrainableEncoder enc(source, o.seq_len, c10::Device(c.device));
  const BertConfig& cfg = enc.info().config;
  // The MLM head and the saved names are BertForMaskedLM's ("cls.", "bert.").
  SIEVE_THROW_IF_NOT(cfg.model_type == "bert", "MLM pre-training writes BERT models; model_type '"
                                                   << cfg.model_type << "' is not supported here");
  const Tokenizer& tok = enc.tokenizer();
  const SpecialTokens sp = tok.special_tokens();
  SIEVE_THROW_IF_NOT(sp.cls >= 0 && sp.sep >= 0 && sp.mask >= 0, "the vocabulary needs [CLS], [SEP] and [MASK]");

  auto docs = read_documents(o.text_files, tok, c.progress);
  auto seqs = pack_sequences(docs, o.seq_len, sp.cls, sp.sep);
  docs.clear();
  SIEVE_THROW_IF_NOT(seqs.size() >= c.batch_size,
                     "the text gives " << seqs.size() << " sequences of " << o.seq_len << " tokens, fewer than one batch");
  log_info("MLM: " + std::to_string(seqs.size()) + " sequences of up to " + std::to_string(o.seq_len) + " tokens");

  at::manual_seed(c.seed);
  MlmHead head(cfg.hidden_size, cfg.vocab_size, cfg.layer_norm_eps);
  if (o.init_dir.empty()) hf_init(*enc.model(), o.init_range, cfg.pad_token_id);
  hf_init(*head, o.init_range, -1);
  dp.broadcast(enc.model()->parameters());  // every rank starts from rank 0's initialisation
  dp.broadcast(head->parameters());
  at::manual_seed(c.seed + static_cast<uint64_t>(c.rank));  // masks and dropout differ per rank
  head->to(enc.device());
  head->train();
  enc.model()->train();

  std::vector<torch::optim::OptimizerParamGroup> groups;
  std::vector<double> base_lr;
  add_adamw_groups(enc.model()->named_parameters(), o.lr, o.weight_decay, groups, base_lr);
  add_adamw_groups(head->named_parameters(), o.lr, o.weight_decay, groups, base_lr);
  torch::optim::AdamW opt(groups);
  std::vector<at::Tensor> all_params = enc.model()->parameters();
  for (auto& p : head->parameters()) all_params.push_back(p);

  auto head_tensors = [&] {
    return std::vector<std::pair<std::string, at::Tensor>>{
        {"cls.predictions.transform.dense.weight", head->dense->weight},
        {"cls.predictions.transform.dense.bias", head->dense->bias},
        {"cls.predictions.transform.LayerNorm.weight", head->norm->weight},
        {"cls.predictions.transform.LayerNorm.bias", head->norm->bias},
        {"cls.predictions.bias", head->bias}};
  };
  auto write_model = [&](const std::string& dir) {
    if (run.writer()) enc.save(dir, head_tensors(), "bert.");
  };
  SequenceSampler sampler(seqs.size(), c.batch_size, c.seed);
  LoopState state;
  if (!run.resume_from().empty()) {
    auto f = SafetensorsFile::open(path_join(run.resume_from(), "model.safetensors"));
    enc.model()->load_weights(*f);
    at::NoGradGuard g;
    for (auto& [name, t] : head_tensors()) {
      at::Tensor dst = t;
      SIEVE_THROW_IF_NOT(f->contains(name), f->path() << ": tensor '" << name << "' is missing");
      copy_tensor(*f, f->get(name), dst);
    }
    state = run.restore(opt);
    // The checkpoint holds rank 0's RNG; the other ranks derive their own from it.
    if (dp.active()) at::manual_seed(c.seed * 1000003 + state.step * 31 + static_cast<uint64_t>(c.rank));
    sampler.restore(state.sampler);
  }

  const size_t warmup = static_cast<size_t>(std::ceil(c.warmup_ratio * static_cast<double>(c.steps)));
  const std::vector<int32_t> special = {sp.cls, sp.sep, sp.pad, sp.mask};
  const int64_t pad = std::max<int32_t>(0, sp.pad);
  TrainReport report;
  Budget budget(c);
  StepLog steps(run, c, budget, report);
  Progress progress("train mlm", c.progress ? c.steps : 0);
  progress.add(state.step);
  while (!budget.done(state.step)) {
    set_learning_rates(opt, base_lr, linear_schedule(state.step, c.steps, warmup));
    std::vector<size_t> rows = sampler.next();  // the global batch; this rank takes a contiguous share
    if (dp.active()) {
      const size_t W = static_cast<size_t>(dp.world_size()), r = static_cast<size_t>(dp.rank()), n = rows.size();
      rows = std::vector<size_t>(rows.begin() + static_cast<long>(n * r / W), rows.begin() + static_cast<long>(n * (r + 1) / W));
    }
    size_t L = 0;
    for (size_t r : rows) L = std::max(L, seqs[r].size());
    const auto B = static_cast<int64_t>(rows.size());
    at::Tensor ids = at::full({B, static_cast<int64_t>(L)}, pad, at::kLong);
    at::Tensor mask = at::zeros({B, static_cast<int64_t>(L)}, at::kLong);
    for (int64_t b = 0; b < B; ++b) {
      const auto& s = seqs[rows[b]];
      for (size_t j = 0; j < s.size(); ++j) {
        ids[b][static_cast<int64_t>(j)] = s[j];
        mask[b][static_cast<int64_t>(j)] = 1;
      }
    }
    Masked m = mask_tokens(ids, mask, special, sp.mask, cfg.vocab_size, o.mask_prob, at::detail::getDefaultCPUGenerator());
    at::Tensor states = enc.model()->forward(m.input.to(enc.device()), mask.to(enc.device()));
    // Only the chosen positions go through the MLM head: the others carry no loss, and the product
    // with the whole vocabulary is the costliest part of a step (6-7x less work at 15% masking).
    const at::Tensor all_labels = m.labels.view({-1}).to(enc.device());
    const at::Tensor picked = (all_labels != -100).nonzero().view({-1});
    const at::Tensor labels = all_labels.index_select(0, picked);
    at::Tensor logits = head->forward(states.reshape({-1, states.size(-1)}).index_select(0, picked),
                                      enc.model()->word_embeddings());
    // Mean over the chosen positions of the global batch (a batch may, rarely, have none: loss 0,
    // no update); each rank sums its share and divides by the global count.
    const double chosen = dp.sum(static_cast<double>(picked.numel()));
    at::Tensor loss = at::cross_entropy_loss(logits, labels, {}, at::Reduction::Sum, -100) / std::max(1.0, chosen);
    opt.zero_grad();
    loss.backward();
    dp.sum_gradients(all_params);
    dump_gradients(run, c, state.step, {{"bert.", enc.model()->named_parameters()}, {"cls.", head->named_parameters()}});
    if (c.clip_norm > 0) torch::nn::utils::clip_grad_norm_(all_params, c.clip_norm);
    opt.step();
    ++state.step;
    progress.add(1);
    const double l = dp.sum(loss.item<double>());
    steps.add(state.step, rows.size() * static_cast<size_t>(dp.world_size()), l, nlohmann::json::object(),
              {{"lr", opt.param_groups()[0].options().get_lr()}, {"epoch", sampler.epoch()}});
    run.checkpoint_if_due(c.save_every, state, [&] { return sampler.state(); }, opt, write_model);
  }
  progress.finish();
  report.seconds = budget.elapsed();
  report.samples_per_second = steps.samples_per_second();
  report.steps = state.step;
  state.sampler = sampler.state();
  run.checkpoint(state, opt, write_model);
  report.final_dir = path_join(run.out(), "last");
  write_model(report.final_dir);
  write_report(run, report, {{"sequences", seqs.size()}, {"seq_len", o.seq_len}});
  return report;
}

}  // namespace sieve
