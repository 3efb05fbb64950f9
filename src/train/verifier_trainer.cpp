// `sieve train verifier`: the paper's verifier training, frozen (cached token states) or end to
// end (encoder and verifier together).
#include <torch/csrc/autograd/autograd.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <unordered_map>

#include "core/checksum.h"
#include "core/file_util.h"
#include "core/log.h"
#include "sieve/encoder.h"
#include "sieve/error.h"
#include "sieve/safetensors.h"
#include "sieve/index.h"
#include "sieve/train.h"
#include "train/distributed.h"
#include "train/labelled_pairs.h"
#include "train/losses.h"
#include "train/run_state.h"
#include "train/token_cache.h"
#include "train/train_data.h"
#include "train/trainable_encoder.h"
#include "verify/verifier_module.h"

namespace sieve {

namespace {

using namespace train;

// Token states of a batch of texts with masks: [B, L, d] and [B, L] (float).
struct Side {
  at::Tensor states, mask;
  at::Tensor ids;  ///< [B, L] int64 when the verifier reads token ids, else undefined
};

// Where a step's token states come from: a cache of the frozen encoder's outputs, or the
// encoder being trained.
class TokenSource {
 public:
  virtual ~TokenSource() = default;
  virtual Side side(const std::vector<std::string>& texts) = 0;
};

// Frozen token states from the disk cache (train/token_cache.h): every distinct text of the data
// is encoded once, here or by an earlier run with the same encoder and token cap.
class CachedStates final : public TokenSource {
 public:
  CachedStates(const Encoder& enc, const std::vector<TrainExample>& data, TokenStateCache& cache, size_t max_tokens,
               bool progress)
      : cache_(cache), max_tokens_(max_tokens), dim_(enc.dim()) {
    std::vector<std::string> texts;
    for (const auto& e : data) {
      texts.push_back(e.anchor);
      texts.push_back(e.positive);
      for (const auto& n : e.negatives) texts.push_back(n);
    }
    cache_.add(enc, texts, progress);
    log_info("token cache: " + std::to_string(cache_.size()) + " texts in " + cache_.states_path() + " (" +
             std::to_string(cache_.reused()) + " there before this run)");
  }

  Side side(const std::vector<std::string>& texts) override {
    std::vector<TokenStates> states;
    states.reserve(texts.size());
    for (const auto& t : texts) states.push_back(cache_.get(t));
    std::vector<const TokenStates*> ptrs;
    for (const auto& t : states) ptrs.push_back(&t);
    Side s;
    verify::pack_tokens(ptrs, dim_, max_tokens_, s.states, s.mask);
    s.ids = verify::pack_ids(ptrs, max_tokens_, s.states.size(1));
    return s;
  }

 private:
  TokenStateCache& cache_;
  size_t max_tokens_, dim_;
};

class LiveStates final : public TokenSource {
 public:
  LiveStates(TrainableEncoder& enc, size_t max_tokens) : enc_(enc), max_tokens_(static_cast<int64_t>(max_tokens)) {}
  Side side(const std::vector<std::string>& texts) override {
    TokenBatch b = enc_.tokenize(texts);
    Side s;
    const int64_t L = std::min<int64_t>(b.ids.size(1), max_tokens_);
    s.states = enc_.states(b).narrow(1, 0, L);
    s.mask = b.mask.narrow(1, 0, L).to(at::kFloat);
    s.ids = b.ids.narrow(1, 0, L).to(at::kLong).masked_fill(s.mask == 0, -1);
    return s;
  }

 private:
  TrainableEncoder& enc_;
  int64_t max_tokens_;
};

// Whether row `i` of step `step` is read the other way round: a hash of (seed, step, row), so that
// a resumed run draws the same sides.
bool swapped(uint64_t seed, size_t step, int64_t row) {
  // A high bit of FNV-1a (its low bit is only the parity of the bytes' low bits).
  return ((fnv1a(std::to_string(seed) + ":" + std::to_string(step) + ":" + std::to_string(row)) >> 40) & 1) != 0;
}

}  // namespace

TrainReport train_verifier(const VerifierTrainOptions& o) {
  const TrainCommon& c = o.common;
  check_common(c);
  SIEVE_THROW_IF_NOT(!o.model_dir.empty(), "an encoder is required (--model)");
  SIEVE_THROW_IF_NOT(!o.train_path.empty(), "training data is required (--train)");
  SIEVE_THROW_IF_NOT(o.tau > 0, "--tau must be positive");
  SIEVE_THROW_IF_NOT(o.pointwise_weight >= 0, "--pointwise-weight must not be negative");
  SIEVE_THROW_IF_NOT(o.lr_verifier > 0 && o.lr_encoder > 0, "learning rates must be positive");
  SIEVE_THROW_IF_NOT(o.maps_per_pass > 0, "--maps-per-pass must be positive");
  set_compute_threads(c.threads);
  const bool pair_objective = o.objective == VerifierObjective::Pairs;
  // InfoNCE: pairs become identity triplets, as the paper's loader does; every row needs a negative.
  std::vector<TrainExample> data =
      pair_objective ? read_labelled_pairs(o.train_path) : read_training_data(o.train_path, /*identity=*/true);
  if (!pair_objective)
    for (size_t i = 0; i < data.size(); ++i)
      SIEVE_THROW_IF_NOT(!data[i].negatives.empty(),
                         "'" << o.train_path << "': row " << i + 1 << " has no negative (verifier training needs one)");
  SIEVE_THROW_IF_NOT(data.size() >= c.batch_size,
                     "'" << o.train_path << "' has " << data.size() << " usable rows, fewer than one batch of " << c.batch_size);
  const bool end_to_end = o.regime == VerifierRegime::EndToEnd;
  ModelInfo info = read_model_info(o.model_dir);
  RunDir run(c, end_to_end ? "verifier-e2e" : "verifier-frozen");
  DataParallel dp({c.world_size, c.rank, c.dist_store, /*timeout_s=*/3600});
  const std::string verifier_path = path_join(run.out(), "verifier.safetensors");

  VerifierConfig vc = o.verifier;
  vc.encoder_dim = static_cast<size_t>(info.config.hidden_size);
  vc.encoder_identity = model_identity(o.model_dir);
  verify::VerifierModule vm(vc, c.seed);
  TrainReport report;
  report.final_dir = verifier_path;
  if (!vm.module() && !end_to_end) {
    if (run.writer()) vm.write(verifier_path, vm.config());
    report.skipped = true;
    log_info(std::string(verifier_kind_name(vc.kind)) + " has no parameters: frozen training skipped");
    return report;
  }

  at::manual_seed(c.seed + static_cast<uint64_t>(c.rank));  // dropout differs per rank
  std::unique_ptr<Encoder> frozen;
  std::unique_ptr<TrainableEncoder> live;
  std::unique_ptr<TokenStateCache> cache;
  std::unique_ptr<TokenSource> source;
  if (end_to_end) {
    live = std::make_unique<TrainableEncoder>(o.model_dir, o.max_length, c10::Device(c.device), o.dropout);
    source = std::make_unique<LiveStates>(*live, vc.max_tokens);
  } else {
    EncoderOptions eo;
    eo.device = c.device;
    eo.threads = c.threads;
    eo.max_length = o.max_length;
    eo.engine = o.engine;
    frozen = Encoder::load(o.model_dir, eo);
    cache = std::make_unique<TokenStateCache>(o.token_cache.empty() ? path_join(c.out_dir, "token-cache") : o.token_cache,
                                              vc.encoder_identity, frozen->dim(), o.max_length);
    source = std::make_unique<CachedStates>(*frozen, data, *cache, vc.max_tokens, c.progress);
  }

  // Parameter groups: the verifier's (lr_v, wd_v), then the encoder's (lr_e, wd_e).
  std::vector<torch::optim::OptimizerParamGroup> groups;
  std::vector<double> base_lr;
  std::vector<at::Tensor> vparams, eparams;
  if (vm.module()) {
    vparams = vm.module()->parameters();
    groups.emplace_back(vparams, std::make_unique<torch::optim::AdamWOptions>(
                                     torch::optim::AdamWOptions(o.lr_verifier).weight_decay(o.weight_decay_verifier)));
    base_lr.push_back(o.lr_verifier);
    vm.module()->train();
  }
  if (live) {
    eparams = live->model()->parameters();
    groups.emplace_back(eparams, std::make_unique<torch::optim::AdamWOptions>(
                                     torch::optim::AdamWOptions(o.lr_encoder).weight_decay(o.weight_decay_encoder)));
    base_lr.push_back(o.lr_encoder);
  }
  torch::optim::AdamW opt(groups);
  std::vector<at::Tensor> all_params = vparams;
  all_params.insert(all_params.end(), eparams.begin(), eparams.end());
  BatchSampler sampler(data, c.batch_size, c.seed);
  LoopState state;
  auto write_model = [&](const std::string& dir) {
    if (!run.writer()) return;
    VerifierConfig out = vm.config();
    if (live) {
      live->save(dir);
      out.encoder_identity = model_identity(dir);
    }
    vm.write(path_join(dir, "verifier.safetensors"), out);
  };
  if (!run.resume_from().empty()) {
    if (live) live->model()->load_weights(*SafetensorsFile::open(path_join(run.resume_from(), "model.safetensors")));
    vm.load_weights(*SafetensorsFile::open(path_join(run.resume_from(), "verifier.safetensors")));
    state = run.restore(opt);
    // The checkpoint holds rank 0's RNG; the other ranks derive their own from it.
    if (dp.active()) at::manual_seed(c.seed * 1000003 + state.step * 31 + static_cast<uint64_t>(c.rank));
    sampler.restore(state.sampler);
  }

  const size_t warmup = static_cast<size_t>(std::ceil(c.warmup_ratio * static_cast<double>(c.steps)));
  const auto B = static_cast<int64_t>(c.batch_size);
  const bool with_ids = reads_token_ids(vm.config());
  Budget budget(c);
  Progress progress("train verifier", c.progress ? c.steps : 0);
  progress.add(state.step);
  StepLog steps(run, c, budget, report);
  while (!budget.done(state.step)) {
    set_learning_rates(opt, base_lr, linear_schedule(state.step, c.steps, warmup));
    // The global batch; this rank scores the rows [begin, end) against every positive.
    std::vector<size_t> rows = sampler.next();
    const auto W = static_cast<int64_t>(dp.world_size()), rank = static_cast<int64_t>(dp.rank());
    const int64_t begin = B * rank / W, end = B * (rank + 1) / W, b = end - begin;
    at::Tensor loss, P;
    Side p;
    double accuracy = 0;
    if (pair_objective) {
      // Each row's own pair, labelled: BCE of score / tau (score 0 is the boundary).
      std::vector<std::string> left, right;
      std::vector<float> y;
      for (int64_t i = begin; i < end; ++i) {
        const TrainExample& e = data[rows[static_cast<size_t>(i)]];
        const bool swap = o.swap_sides && swapped(c.seed, state.step, i);
        left.push_back(swap ? e.positive : e.anchor);
        right.push_back(swap ? e.anchor : e.positive);
        y.push_back(static_cast<float>(e.label));
      }
      Side a = source->side(left);
      p = source->side(right);
      at::Tensor s = vm.scores(verify::similarity_maps(a.states, a.mask, p.states, p.mask, with_ids ? a.ids : at::Tensor(),
                                                       with_ids ? p.ids : at::Tensor()),
                               /*inference=*/false);
      at::Tensor Y = at::tensor(y, s.options());
      loss = verifier_labelled_bce(s, Y, o.tau, B);
      at::NoGradGuard g;
      accuracy = dp.sum(((s > 0) == (Y > 0.5)).sum().item<double>()) / static_cast<double>(B);
    } else {
      std::vector<std::string> anchors, positives, negatives;
      for (int64_t i = begin; i < end; ++i) {
        const TrainExample& e = data[rows[static_cast<size_t>(i)]];
        anchors.push_back(e.anchor);
        positives.push_back(e.positive);
        negatives.push_back(e.negatives[0]);
      }
      Side a = source->side(anchors), n = source->side(negatives);
      p = source->side(positives);
      // All B positives: with several ranks, gathered (padded to one length) as a leaf whose
      // gradient is summed over the ranks and handed back to this rank's own positives.
      P = p.states;
      at::Tensor Pm = p.mask;
      if (dp.active()) {
        const int64_t L = p.states.size(1);
        const int64_t Lmax = dp.all_gather(at::full({1}, L, at::kLong)).max().item<int64_t>();
        P = dp.all_gather(at::constant_pad_nd(p.states.detach(), {0, 0, 0, Lmax - L}, 0.0));
        Pm = dp.all_gather(at::constant_pad_nd(p.mask, {0, Lmax - L}, 0.0));
      }
      // Token ids for the exact-match channel travel like the masks (gathered with the positives).
      at::Tensor Pid = p.ids;
      if (with_ids && dp.active()) {
        const int64_t L = p.states.size(1);
        const int64_t Lmax = dp.all_gather(at::full({1}, L, at::kLong)).max().item<int64_t>();
        Pid = dp.all_gather(at::constant_pad_nd(p.ids, {0, Lmax - L}, -1));
      }
      // The b x B in-batch maps (S[i][k] = V(anchor i, positive k)) and the b own negatives are
      // scored a few anchors at a time, each share's loss backpropagated at once: the loss is a
      // sum over rows, so the gradients are the whole batch's while only one share's maps are held
      // (F3 at 128 tokens keeps about 40 MB of activations per map). With a live encoder and
      // several shares the token states are cut into leaves here; their summed gradients reach
      // the encoder once, below. One share backpropagates straight through.
      const int64_t per_pass = std::max<int64_t>(1, static_cast<int64_t>(o.maps_per_pass) / (B + 1));
      const bool cut = live && per_pass < b;
      at::Tensor A = cut ? a.states.detach().requires_grad_(true) : a.states;
      at::Tensor N = cut ? n.states.detach().requires_grad_(true) : n.states;
      if (cut && !dp.active()) P = p.states.detach();
      if (live && (cut || dp.active())) P.requires_grad_(true);
      double loss_sum = 0, hits = 0;
      opt.zero_grad();
      for (int64_t r0 = 0; r0 < b; r0 += per_pass) {
        const int64_t r = std::min(per_pass, b - r0);
        at::Tensor As = A.narrow(0, r0, r), Am = a.mask.narrow(0, r0, r);
        at::Tensor Aid = with_ids ? a.ids.narrow(0, r0, r) : at::Tensor();
        verify::Maps all = verify::similarity_maps(As.repeat_interleave(B, 0), Am.repeat_interleave(B, 0),
                                                   P.repeat({r, 1, 1}), Pm.repeat({r, 1}),
                                                   with_ids ? Aid.repeat_interleave(B, 0) : at::Tensor(),
                                                   with_ids ? Pid.repeat({r, 1}) : at::Tensor());
        at::Tensor S = vm.scores(all, /*inference=*/false).view({r, B});
        at::Tensor neg = vm.scores(verify::similarity_maps(As, Am, N.narrow(0, r0, r), n.mask.narrow(0, r0, r), Aid,
                                                           with_ids ? n.ids.narrow(0, r0, r) : at::Tensor()),
                                   false);
        const int64_t first = begin + r0;
        at::Tensor share = verifier_infonce(S, neg, o.tau, first, B);
        if (o.pointwise_weight > 0) {
          at::Tensor own = S.gather(1, at::arange(first, first + r, S.options().dtype(at::kLong)).view({r, 1})).squeeze(1);
          share = share + o.pointwise_weight * verifier_pointwise(own, neg, o.tau, B);
        }
        share.backward();
        at::NoGradGuard g;
        loss_sum += share.item<double>();
        at::Tensor logits = at::cat({S, neg.view({r, 1})}, 1);
        hits += (logits.argmax(1) == at::arange(first, first + r, at::kLong)).sum().item<double>();
      }
      loss = at::scalar_tensor(loss_sum, at::kDouble);
      accuracy = dp.sum(hits) / static_cast<double>(B);
      if (live) {  // the leaves' gradients into the encoder, once
        std::vector<at::Tensor> outs, grads;
        auto hand_back = [&](const at::Tensor& states, const at::Tensor& grad) {
          if (grad.defined()) {
            outs.push_back(states);
            grads.push_back(grad);
          }
        };
        if (cut) {
          hand_back(a.states, A.grad());
          hand_back(n.states, N.grad());
        }
        if (dp.active()) {
          dp.sum_gradients({P});
          if (P.grad().defined()) hand_back(p.states, P.grad().narrow(0, begin, b).narrow(1, 0, p.states.size(1)));
        } else if (cut) {
          hand_back(p.states, P.grad());
        }
        if (!outs.empty()) torch::autograd::backward(outs, grads);
      }
    }
    if (pair_objective) {
      opt.zero_grad();
      loss.backward();
    }
    if (dp.active()) dp.sum_gradients(all_params);
    {
      std::vector<std::pair<std::string, torch::OrderedDict<std::string, at::Tensor>>> named;
      if (vm.module()) named.emplace_back("verifier.", vm.module()->named_parameters());
      if (live) named.emplace_back("encoder.", live->model()->named_parameters());
      dump_gradients(run, c, state.step, named);
    }
    if (c.clip_norm > 0) {  // clipped per group, as the paper does
      if (!vparams.empty()) torch::nn::utils::clip_grad_norm_(vparams, c.clip_norm);
      if (!eparams.empty()) torch::nn::utils::clip_grad_norm_(eparams, c.clip_norm);
    }
    opt.step();
    ++state.step;
    progress.add(1);
    steps.add(state.step, rows.size(), dp.sum(loss.item<double>()), {{"accuracy", accuracy}},
              {{"lr_verifier", vparams.empty() ? 0.0 : opt.param_groups()[0].options().get_lr()}});
    run.checkpoint_if_due(c.save_every, state, [&] { return sampler.state(); }, opt, write_model);
  }
  progress.finish();
  report.seconds = budget.elapsed();
  report.samples_per_second = steps.samples_per_second();
  report.steps = state.step;
  state.sampler = sampler.state();
  if (vm.module()) vm.module()->eval();
  run.checkpoint(state, opt, write_model);
  if (run.writer()) {
    VerifierConfig final_config = vm.config();
    if (live) {
      const std::string enc_dir = path_join(run.out(), "encoder");
      live->save(enc_dir);
      final_config.encoder_identity = model_identity(enc_dir);
    }
    vm.write(verifier_path, final_config);
  }
  write_report(run, report, {{"regime", end_to_end ? "end_to_end" : "frozen"}});
  return report;
}

}  // namespace sieve
