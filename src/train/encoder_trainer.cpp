// `sieve train encoder`: contrastive dual-encoder training (the paper's Model A / Model B).
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "core/file_util.h"
#include "core/log.h"
#include "eval/beir.h"
#include "eval/metrics.h"
#include "index/corpus_reader.h"
#include "model/tensor_io.h"
#include "sieve/encoder.h"
#include "sieve/error.h"
#include "sieve/safetensors.h"
#include "sieve/train.h"
#include "train/distributed.h"
#include "train/losses.h"
#include "train/run_state.h"
#include "train/train_data.h"
#include "train/trainable_encoder.h"

namespace sieve {

namespace train {

/// A BEIR evaluation set held in memory: nDCG@10 of exact dense search with the current weights.
class DenseEvaluator {
 public:
  DenseEvaluator(const std::string& dir, const std::string& split, size_t max_queries) {
    const std::string qrels_path = path_join(dir, "qrels/" + split + ".tsv");
    SIEVE_THROW_IF_NOT(is_file(qrels_path), "evaluation: '" << qrels_path << "' not found");
    qrels_ = eval::read_qrels(qrels_path);
    std::map<std::string, std::string> text;
    for (auto& q : eval::read_queries(path_join(dir, "queries.jsonl"))) text[q.id] = q.text;
    for (const auto& [qid, rels] : qrels_) {
      if (queries_.size() >= max_queries) break;
      auto it = text.find(qid);
      SIEVE_THROW_IF_NOT(it != text.end(), "evaluation: query '" << qid << "' of " << qrels_path << " is not in queries.jsonl");
      queries_.push_back({qid, it->second});
    }
    index::CorpusReader reader(path_join(dir, "corpus.jsonl"));
    Document d;
    while (reader.next(d)) {
      doc_ids_.push_back(d.id);
      docs_.push_back(encoder_text(d));
    }
    // Encode in length order so batches pad little.
    order_.resize(docs_.size());
    for (size_t i = 0; i < order_.size(); ++i) order_[i] = i;
    std::stable_sort(order_.begin(), order_.end(), [&](size_t a, size_t b) { return docs_[a].size() > docs_[b].size(); });
  }

  double ndcg10(TrainableEncoder& enc) {
    const bool was_training = enc.model()->is_training();
    enc.model()->eval();
    at::NoGradGuard no_grad;
    auto embed_all = [&](const std::vector<std::string>& texts, const std::vector<size_t>& order) {
      at::Tensor out = at::empty({static_cast<int64_t>(texts.size()), static_cast<int64_t>(enc.info().config.hidden_size)});
      for (size_t s = 0; s < order.size(); s += 64) {
        std::vector<std::string> batch;
        std::vector<int64_t> rows;
        for (size_t i = s; i < std::min(order.size(), s + 64); ++i) {
          batch.push_back(texts[order[i]]);
          rows.push_back(static_cast<int64_t>(order[i]));
        }
        out.index_copy_(0, at::tensor(rows), enc.embed(batch).to(at::kCPU));
      }
      return out;
    };
    std::vector<std::string> qtexts;
    std::vector<size_t> qorder;
    for (size_t i = 0; i < queries_.size(); ++i) {
      qtexts.push_back(queries_[i].text);
      qorder.push_back(i);
    }
    at::Tensor D = embed_all(docs_, order_), Q = embed_all(qtexts, qorder);
    const int64_t k = std::min<int64_t>(100, D.size(0));
    auto top = at::mm(Q, D.t()).topk(k, 1);
    at::Tensor idx = std::get<1>(top).contiguous();
    at::Tensor val = std::get<0>(top).contiguous();
    eval::Run run;
    for (size_t q = 0; q < queries_.size(); ++q) {
      auto& list = run[queries_[q].id];
      for (int64_t r = 0; r < k; ++r)
        list.push_back({doc_ids_[static_cast<size_t>(idx[q][r].item<int64_t>())], val[q][r].item<double>()});
    }
    eval::Qrels used;
    for (const auto& q : queries_) used[q.id] = qrels_[q.id];
    if (was_training) enc.model()->train();
    return eval::evaluate(run, used).ndcg10;
  }

  size_t queries() const { return queries_.size(); }
  size_t documents() const { return docs_.size(); }

 private:
  eval::Qrels qrels_;
  std::vector<eval::Query> queries_;
  std::vector<std::string> doc_ids_, docs_;
  std::vector<size_t> order_;
};

}  // namespace train

namespace train {
namespace {

// The rows' texts: anchors, and candidates = positives then every row's negatives in row order.
void batch_texts(const std::vector<TrainExample>& data, const std::vector<size_t>& rows,
                 std::vector<std::string>& anchors, std::vector<std::string>& positives,
                 std::vector<std::string>& negatives) {
  for (size_t r : rows) {
    anchors.push_back(data[r].anchor);
    positives.push_back(data[r].positive);
    for (const auto& n : data[r].negatives) negatives.push_back(n);
  }
}

at::Tensor batch_loss(TrainableEncoder& enc, const std::vector<TrainExample>& data, const std::vector<size_t>& rows,
                      const EncoderTrainOptions& o) {
  std::vector<std::string> texts, positives, negatives;
  batch_texts(data, rows, texts, positives, negatives);
  // One forward pass over anchors, positives and negatives: larger matrix products.
  const auto B = static_cast<int64_t>(texts.size());
  texts.insert(texts.end(), positives.begin(), positives.end());
  texts.insert(texts.end(), negatives.begin(), negatives.end());
  at::Tensor e = enc.embed(texts);
  return mnrl_loss(e.narrow(0, 0, B), e.narrow(0, B, e.size(0) - B), o.scale, o.symmetric);
}

// One rank's share of a global batch. Each rank embeds a contiguous slice of the rows, gathers
// everyone's embeddings, and computes the loss of the whole batch with only its own slice
// carrying gradients; the sum of the ranks' gradients is then exactly the full batch's gradient
// (every term of the loss reaches each embedding through the rank that computed it).
at::Tensor shared_batch_loss(TrainableEncoder& enc, DataParallel& dp, const std::vector<TrainExample>& data,
                             const std::vector<size_t>& rows, const EncoderTrainOptions& o) {
  const size_t W = static_cast<size_t>(dp.world_size()), r = static_cast<size_t>(dp.rank());
  const size_t begin = rows.size() * r / W, end = rows.size() * (r + 1) / W;
  std::vector<size_t> mine(rows.begin() + static_cast<long>(begin), rows.begin() + static_cast<long>(end));
  std::vector<std::string> anchors, positives, negatives;
  batch_texts(data, mine, anchors, positives, negatives);
  const int64_t H = enc.info().config.hidden_size;
  auto embed = [&](const std::vector<std::string>& t) {
    return t.empty() ? at::zeros({0, H}, at::TensorOptions().device(enc.device())) : enc.embed(t);
  };
  // Splices this rank's rows (with gradients) into the gathered rows of all ranks.
  auto spliced = [&](const at::Tensor& local) {
    at::Tensor all = dp.all_gather(local.detach());
    at::Tensor before = dp.all_gather(at::full({1}, local.size(0), at::kLong)).cumsum(0);
    const int64_t start = r == 0 ? 0 : before[static_cast<int64_t>(r) - 1].item<int64_t>();
    return at::cat({all.narrow(0, 0, start), local, all.narrow(0, start + local.size(0), all.size(0) - start - local.size(0))});
  };
  at::Tensor A = spliced(embed(anchors)), P = spliced(embed(positives)), N = spliced(embed(negatives));
  return mnrl_loss(A, at::cat({P, N}), o.scale, o.symmetric);
}

}  // namespace
}  // namespace train

TrainReport train_encoder(const EncoderTrainOptions& o) {
  using namespace train;
  const TrainCommon& c = o.common;
  check_common(c);
  SIEVE_THROW_IF_NOT(!o.model_dir.empty(), "a starting model is required (--model)");
  SIEVE_THROW_IF_NOT(!o.train_path.empty(), "training data is required (--train)");
  SIEVE_THROW_IF_NOT(o.lr > 0, "--lr must be positive");
  SIEVE_THROW_IF_NOT(o.scale > 0, "--scale must be positive");
  set_compute_threads(c.threads);

  // Everything that can be wrong with the inputs is found before training starts.
  std::vector<TrainExample> data = read_training_data(o.train_path, o.identity_pairs);
  SIEVE_THROW_IF_NOT(data.size() >= c.batch_size,
                     "'" << o.train_path << "' has " << data.size() << " usable rows, fewer than one batch of " << c.batch_size);
  std::unique_ptr<DenseEvaluator> evaluator;  // rank 0 evaluates; the others wait at the next collective
  if (!o.eval_dir.empty() && c.rank == 0)
    evaluator = std::make_unique<DenseEvaluator>(o.eval_dir, o.eval_split, o.eval_max_queries);
  RunDir run(c, "encoder");
  DataParallel dp({c.world_size, c.rank, c.dist_store, /*timeout_s=*/3600});
  TrainableEncoder enc(o.model_dir, o.max_length, c10::Device(c.device), o.dropout);
  at::manual_seed(c.seed + static_cast<uint64_t>(c.rank));  // dropout differs per rank

  std::vector<torch::optim::OptimizerParamGroup> groups;
  std::vector<double> base_lr;
  add_adamw_groups(enc.model()->named_parameters(), o.lr, o.weight_decay, groups, base_lr);
  torch::optim::AdamW opt(groups);
  const std::vector<at::Tensor> params = enc.model()->parameters();
  BatchSampler sampler(data, c.batch_size, c.seed);
  LoopState state;
  if (!run.resume_from().empty()) {
    auto weights = SafetensorsFile::open(path_join(run.resume_from(), "model.safetensors"));
    enc.model()->load_weights(*weights);
    state = run.restore(opt);
    // The checkpoint holds rank 0's RNG; the other ranks derive their own from it.
    if (dp.active()) at::manual_seed(c.seed * 1000003 + state.step * 31 + static_cast<uint64_t>(c.rank));
    sampler.restore(state.sampler);
    log_info("resuming from " + run.resume_from() + " at step " + std::to_string(state.step));
  }
  const size_t warmup = static_cast<size_t>(std::ceil(c.warmup_ratio * static_cast<double>(c.steps)));
  auto save_model = [&](const std::string& dir) {
    if (run.writer()) enc.save(dir);
  };
  auto evaluate = [&](size_t step) {
    double ndcg = evaluator->ndcg10(enc);
    run.log({{"step", step}, {"eval_ndcg@10", ndcg}, {"eval_queries", evaluator->queries()}});
    if (ndcg > state.best_metric) {
      state.best_metric = ndcg;
      state.best_step = step;
      save_model(path_join(run.out(), "best"));
    }
    return ndcg;
  };
  if (evaluator && state.step == 0) evaluate(0);

  TrainReport report;
  Budget budget(c);
  Progress progress("train encoder", c.progress ? c.steps : 0);
  progress.add(state.step);
  StepLog steps(run, c, budget, report);
  enc.model()->train();
  while (!budget.done(state.step)) {
    set_learning_rates(opt, base_lr, linear_schedule(state.step, c.steps, warmup));
    std::vector<size_t> rows = sampler.next();  // the global batch: the same on every rank
    at::Tensor loss = dp.active() ? shared_batch_loss(enc, dp, data, rows, o) : batch_loss(enc, data, rows, o);
    opt.zero_grad();
    loss.backward();
    dp.sum_gradients(params);  // each rank holds its share of the full batch's gradient
    dump_gradients(run, c, state.step, {{"", enc.model()->named_parameters()}});
    if (c.clip_norm > 0) torch::nn::utils::clip_grad_norm_(params, c.clip_norm);
    opt.step();
    ++state.step;
    progress.add(1);
    steps.add(state.step, rows.size(), loss.item<double>(), nlohmann::json::object(),
              {{"lr", opt.param_groups()[0].options().get_lr()}, {"epoch", sampler.epoch()}});
    if (evaluator && o.eval_every > 0 && state.step % o.eval_every == 0) evaluate(state.step);
    run.checkpoint_if_due(c.save_every, state, [&] { return sampler.state(); }, opt, save_model);
  }
  progress.finish();
  report.seconds = budget.elapsed();
  report.samples_per_second = steps.samples_per_second();
  if (evaluator && (o.eval_every == 0 || state.step % o.eval_every != 0)) evaluate(state.step);
  state.sampler = sampler.state();
  run.checkpoint(state, opt, save_model);
  save_model(path_join(run.out(), "last"));
  report.steps = state.step;
  report.best_metric = evaluator ? state.best_metric : -1;
  report.best_step = state.best_step;
  report.final_dir = path_join(run.out(), evaluator ? "best" : "last");
  write_report(run, report, {{"best_ndcg@10", report.best_metric}, {"best_step", report.best_step}});
  return report;
}

}  // namespace sieve
