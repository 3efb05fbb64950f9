// `sieve train encoder|mlm|verifier|cross-encoder`: the training commands (docs/training.md).
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "sieve/error.h"
#include "sieve/model.h"
#include "sieve/train.h"
#include "train/distributed.h"

namespace sieve::cli {
namespace {

// Flags every trainer shares.
void add_common(CLI::App* cmd, TrainCommon& c) {
  cmd->add_option("-o,--out", c.out_dir, "Output directory (checkpoints, last/, best/, metrics.jsonl)")->required();
  cmd->add_option("--steps", c.steps, "Optimizer steps (length of the LR schedule)")->capture_default_str();
  cmd->add_option("--seconds", c.seconds, "Also stop after this many seconds of training (0 = no limit)")
      ->capture_default_str();
  cmd->add_option("--batch-size", c.batch_size, "Rows per batch")->capture_default_str();
  cmd->add_option("--warmup", c.warmup_ratio, "Warm-up fraction of the steps (linear warm-up, then linear decay)")
      ->capture_default_str();
  cmd->add_option("--clip", c.clip_norm, "Gradient-norm clipping (0 = off)")->capture_default_str();
  cmd->add_option("--seed", c.seed, "Seed of initialisation, shuffling and dropout")->capture_default_str();
  cmd->add_option("--log-every", c.log_every, "Steps per metrics line")->capture_default_str();
  cmd->add_option("--save-every", c.save_every, "Steps per resumable checkpoint (0 = at the end only)")
      ->capture_default_str();
  cmd->add_option("--stop-after", c.stop_after, "Stop this invocation at this step (continue later with --resume)")
      ->capture_default_str();
  cmd->add_flag("--resume", c.resume, "Continue the run from the newest checkpoint in --out");
  cmd->add_option("--device", c.device, "cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--threads", c.threads, "Compute threads per process (0 = all cores / processes)")
      ->capture_default_str();
  cmd->add_option("--world-size", c.world_size,
                  "Data-parallel processes on this machine (torch.distributed, Gloo); each takes a share of every batch")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--dump-gradients", c.gradients_file,
                  "Diagnostic: write the first step's gradients (after the data-parallel sum) to this safetensors file");
}

// This process's command line (for starting the data-parallel workers as copies of it).
std::vector<std::string> own_argv() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  std::string a;
  while (std::getline(in, a, '\0')) args.push_back(a);
  return args;
}

// Runs `train` in this process, and with --world-size N > 1 in N - 1 more copies of it that
// join through torch.distributed; a copy started that way finds its rank in the environment.
template <class Fn>
void run_data_parallel(TrainCommon& c, Fn&& train) {
  train::DistOptions env = train::dist_options_from_env();
  if (c.world_size > 1 && c.threads == 0) c.threads = std::max(1, static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)) / c.world_size);
  if (env.world_size > 1) {  // a worker, or rank 0 after spawning
    c.world_size = env.world_size;
    c.rank = env.rank;
    c.dist_store = env.store;
    train();
    return;
  }
  if (c.world_size == 1) {
    train();
    return;
  }
  std::vector<std::string> args = own_argv();
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<int> pids = train::spawn_local_workers(c.world_size, argv.data());
  env = train::dist_options_from_env();
  c.rank = env.rank;
  c.dist_store = env.store;
  try {
    train();
  } catch (...) {
    train::kill_workers(pids);
    throw;
  }
  int rc = train::wait_workers(pids);
  SIEVE_THROW_IF_NOT(rc == 0, "a data-parallel worker failed (exit status " << rc << ")");
}

void print_report(const TrainReport& r) {
  nlohmann::json j = {{"steps", r.steps},           {"seconds", r.seconds},
                      {"samples_per_second", r.samples_per_second}, {"first_loss", r.first_loss},
                      {"last_loss", r.last_loss},   {"final_dir", r.final_dir}};
  if (r.best_metric >= 0) {
    j["best_ndcg@10"] = r.best_metric;
    j["best_step"] = r.best_step;
  }
  std::printf("%s\n", j.dump().c_str());
}

}  // namespace

void register_train(CLI::App& app) {
  auto* group = app.add_subcommand("train", "Train encoders (contrastive, MLM) and verifiers");
  group->require_subcommand(1);
  {
    auto o = std::make_shared<EncoderTrainOptions>();
    auto* cmd = group->add_subcommand(
        "encoder", "Contrastive dual-encoder training: InfoNCE over in-batch negatives and hard negatives");
    cmd->add_option("-m,--model", o->model_dir, "Model to start from (folder or installed name)")->required();
    cmd->add_option("--train", o->train_path,
                    "Triplets/pairs (.csv, .tsv, .jsonl) or a BEIR folder (its train qrels)")
        ->required();
    cmd->add_flag("--identity", o->identity_pairs,
                  "Pairs become identity triplets: anchor = positive = sentence1, negative = sentence2");
    cmd->add_option("--lr", o->lr, "Peak learning rate (AdamW)")->capture_default_str();
    cmd->add_option("--weight-decay", o->weight_decay, "AdamW weight decay (not on biases and LayerNorms)")
        ->capture_default_str();
    cmd->add_option("--scale", o->scale, "Similarity scale = 1 / temperature")->capture_default_str();
    cmd->add_flag("--symmetric", o->symmetric, "Add the positive -> anchor direction to the loss");
    cmd->add_option("--max-length", o->max_length, "Token cap (0 = the model's max_seq_length)")->capture_default_str();
    cmd->add_option("--dropout", o->dropout, "Encoder dropout while training")->capture_default_str();
    cmd->add_option("--eval", o->eval_dir, "BEIR folder to evaluate nDCG@10 on (the best model is kept)");
    cmd->add_option("--eval-split", o->eval_split, "Qrels split of --eval")->capture_default_str();
    cmd->add_option("--eval-every", o->eval_every, "Steps between evaluations (0 = start and end)")
        ->capture_default_str();
    cmd->add_option("--eval-queries", o->eval_max_queries, "Evaluate on at most this many queries")
        ->capture_default_str();
    add_common(cmd, o->common);
    on_run(cmd, [o] {
      o->model_dir = resolve_model_dir(o->model_dir);
      run_data_parallel(o->common, [&] {
        TrainReport r = train_encoder(*o);
        if (o->common.rank == 0) print_report(r);
      });
    });
  }
  {
    auto o = std::make_shared<MlmTrainOptions>();
    auto pooling = std::make_shared<std::string>("mean");
    auto* cmd = group->add_subcommand("mlm", "Masked-language-model pretraining of a new BERT from a config");
    cmd->add_option("--text", o->text_files, "Text files: one sentence per line, a blank line ends a document")
        ->required();
    cmd->add_option("--vocab", o->vocab_file, "vocab.txt of the new model (WordPiece)");
    cmd->add_option("--init", o->init_dir, "Continue from this model directory instead of a new one");
    cmd->add_option("--hidden", o->config.hidden_size, "Hidden size")->capture_default_str();
    cmd->add_option("--layers", o->config.num_hidden_layers, "Encoder layers")->capture_default_str();
    cmd->add_option("--heads", o->config.num_attention_heads, "Attention heads")->capture_default_str();
    cmd->add_option("--ffn", o->config.intermediate_size, "Intermediate (FFN) size")->capture_default_str();
    cmd->add_option("--max-positions", o->config.max_position_embeddings, "max_position_embeddings")
        ->capture_default_str();
    cmd->add_option("--seq-len", o->seq_len, "Tokens per packed sequence ([CLS] and [SEP] included)")
        ->capture_default_str();
    cmd->add_option("--mask-prob", o->mask_prob, "Fraction of tokens masked")->capture_default_str();
    cmd->add_option("--lr", o->lr, "Peak learning rate (AdamW)")->capture_default_str();
    cmd->add_option("--weight-decay", o->weight_decay, "AdamW weight decay")->capture_default_str();
    cmd->add_option("--pooling", *pooling, "Pooling written for sentence-transformers")
        ->capture_default_str()
        ->check(CLI::IsMember({"cls", "mean", "last"}));
    add_common(cmd, o->common);
    on_run(cmd, [o, pooling] {
      o->pooling = pooling_from_name(*pooling);
      run_data_parallel(o->common, [&] {
        TrainReport r = train_mlm(*o);
        if (o->common.rank == 0) print_report(r);
      });
    });
  }
  {
    auto o = std::make_shared<VerifierTrainOptions>();
    auto kind = std::make_shared<std::string>("F4");
    auto regime = std::make_shared<std::string>("frozen");
    auto objective = std::make_shared<std::string>("infonce");
    auto* cmd = group->add_subcommand(
        "verifier", "Verifier training: in-batch InfoNCE over verifier scores, or BCE on labelled pairs (frozen or end to end)");
    cmd->add_option("-m,--model", o->model_dir, "Encoder (folder or installed name)")->required();
    cmd->add_option("--train", o->train_path, "Triplets, or pairs read as identity triplets (.csv, .tsv, .jsonl)")
        ->required();
    cmd->add_option("--kind", *kind, "Verifier kind")->capture_default_str()->check(CLI::IsMember({"F0", "F1", "F2", "F3", "F4"}));
    cmd->add_option("--regime", *regime, "frozen (verifier only, cached token states) or end-to-end")
        ->capture_default_str()
        ->check(CLI::IsMember({"frozen", "end-to-end"}));
    cmd->add_option("--objective", *objective,
                    "infonce (the paper's: triplets) or pairs (labelled pairs sentence1, sentence2, label, or "
                    "triplets as two labelled pairs: BCE of score / tau)")
        ->capture_default_str()
        ->check(CLI::IsMember({"infonce", "pairs"}));
    cmd->add_flag("!--no-swap-sides", o->swap_sides,
                  "Pairs objective: keep each pair's order (by default either side may be the query)");
    cmd->add_option("--tau", o->tau, "Temperature of the loss (score / tau)")->capture_default_str();
    cmd->add_option("--token-cache", o->token_cache,
                    "Frozen: folder of the float16 token-state cache, shared by runs on the same encoder "
                    "(default OUT/token-cache)");
    cmd->add_option("--pointwise-weight", o->pointwise_weight,
                    "Weight of a pointwise term beside the InfoNCE (BCE of score / tau: own positive 1, own "
                    "near-miss 0), for one absolute threshold; 0 = the paper's loss")
        ->capture_default_str()
        ->check(kNonNegative);
    cmd->add_option("--maps-per-pass", o->maps_per_pass,
                    "InfoNCE: similarity maps scored per forward/backward pass (whole anchor rows of B + 1 maps, "
                    "at least one row); bounds memory, the gradients are the same")
        ->capture_default_str()
        ->check(kPositive);
    cmd->add_option("--lr", o->lr_verifier, "Verifier learning rate")->capture_default_str();
    cmd->add_option("--weight-decay", o->weight_decay_verifier, "Verifier weight decay")->capture_default_str();
    cmd->add_option("--lr-encoder", o->lr_encoder, "Encoder learning rate (end to end)")->capture_default_str();
    cmd->add_option("--weight-decay-encoder", o->weight_decay_encoder, "Encoder weight decay (end to end)")
        ->capture_default_str();
    cmd->add_option("--max-length", o->max_length, "Encoder token cap")->capture_default_str();
    cmd->add_option("--dropout", o->dropout, "Encoder dropout (end to end)")->capture_default_str();
    auto vdrop = std::make_shared<double>(0.1);
    cmd->add_option("--verifier-dropout", *vdrop, "F3/F4 dropout")->capture_default_str()->each([o](const std::string& v) {
      o->verifier.f3.dropout = o->verifier.f4.dropout = std::stod(v);
    });
    cmd->add_option("--max-tokens", o->verifier.max_tokens, "Tokens per side of the map")->capture_default_str();
    cmd->add_option("--f3-hidden", o->verifier.f3.hidden, "F3 channels of the first block")->capture_default_str();
    cmd->add_option("--f3-blocks", o->verifier.f3.blocks, "F3 conv blocks")->capture_default_str();
    cmd->add_option("--f4-width", o->verifier.f4.width, "F4 width (0 = the encoder's)")->capture_default_str();
    cmd->add_option("--f4-layers", o->verifier.f4.layers, "F4 layers")->capture_default_str();
    cmd->add_option("--f4-heads", o->verifier.f4.heads, "F4 attention heads")->capture_default_str();
    cmd->add_option("--f4-ff", o->verifier.f4.ff, "F4 feed-forward width")->capture_default_str();
    cmd->add_option("--f4-patch", o->verifier.f4.patch, "F4 patch side (map cells per patch side)")->capture_default_str();
    cmd->add_flag_callback(
        "--exact-match", [o] { o->verifier.f3.exact_match = o->verifier.f4.exact_match = true; },
        "F3/F4: one more map channel, 1 where the query and candidate tokens have the same id "
        "(docs/verifiers.md, \"Exact-match channel\")");
    auto cues = std::make_shared<bool>(false);
    cmd->add_flag("--negation-cues", *cues,
                  "F4: one more map channel that marks negation cue words (not, no, never, n't, ...) on either side "
                  "(docs/training.md, \"Cue channel\")");
    add_common(cmd, o->common);
    on_run(cmd, [o, kind, regime, objective, cues] {
      o->model_dir = resolve_model_dir(o->model_dir);
      o->verifier.kind = verifier_kind_from_name(*kind);
      if (*cues) {
        SIEVE_THROW_IF_NOT(o->verifier.kind == VerifierKind::F4, "--negation-cues is a channel of F4 (--kind F4)");
        o->verifier.f4.cue_ids = negation_cues(*Tokenizer::from_model_dir(o->model_dir));
      }
      o->verifier.kind = verifier_kind_from_name(*kind);
      o->objective = *objective == "pairs" ? VerifierObjective::Pairs : VerifierObjective::InfoNCE;
      o->regime = *regime == "frozen" ? VerifierRegime::Frozen : VerifierRegime::EndToEnd;
      run_data_parallel(o->common, [&] {
        TrainReport r = train_verifier(*o);
        if (o->common.rank != 0) return;
        if (r.skipped) {
          std::printf("%s\n", nlohmann::json({{"skipped", true}, {"reason", "no parameters to train in the frozen regime"},
                                               {"verifier", r.final_dir}}).dump().c_str());
          return;
        }
        print_report(r);
      });
    });
  }
  {
    auto o = std::make_shared<CrossEncoderTrainOptions>();
    auto* cmd = group->add_subcommand(
        "cross-encoder",
        "Cross-encoder training (BERT for sequence classification, one label): binary cross-entropy on pairs");
    cmd->add_option("-m,--model", o->model_dir, "BERT encoder (or cross-encoder) to start from: folder or installed name")->required();
    cmd->add_option("--train", o->train_path,
                    "Labelled pairs (sentence1, sentence2, label) or triplets (anchor, positive, negative); .tsv, .csv, .jsonl")
        ->required();
    cmd->add_option("--lr", o->lr, "Peak learning rate (AdamW)")->capture_default_str();
    cmd->add_option("--weight-decay", o->weight_decay, "AdamW weight decay (not on biases and LayerNorms)")
        ->capture_default_str();
    cmd->add_option("--max-length", o->max_length, "Pair token cap (0 = the tokenizer's model_max_length, as CrossEncoder)")
        ->capture_default_str();
    cmd->add_option("--dropout", o->dropout, "Dropout while training")->capture_default_str();
    cmd->add_flag("!--no-shuffle", o->shuffle,
                  "Take the pairs in file order, epoch after epoch (default: each epoch shuffled from --seed)");
    add_common(cmd, o->common);
    on_run(cmd, [o] {
      o->model_dir = resolve_model_dir(o->model_dir);
      run_data_parallel(o->common, [&] {
        TrainReport r = train_cross_encoder(*o);
        if (o->common.rank == 0) print_report(r);
      });
    });
  }
}

}  // namespace sieve::cli
