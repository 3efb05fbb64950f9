// `sieve experiment tradeoff|verifiers`: the paper's two tables, one command each
// (docs/experiments.md). A profile sets the sizes; any flag given explicitly wins over it.
#include <cstdio>
#include <memory>

#include "cli/cli_common.h"
#include "experiment/experiment_data.h"
#include "experiment/tradeoff.h"
#include "experiment/verifier_experiment.h"
#include "sieve/error.h"

namespace sieve::cli {
namespace {

// Sets `field` to `value` unless the user gave `flag`.
template <class T>
void preset(CLI::App* cmd, const char* flag, T& field, T value) {
  if (cmd->count(flag) == 0) field = value;
}

void register_tradeoff(CLI::App* group) {
  struct Opts {
    experiment::TradeoffOptions t;
    std::string profile = "full", seeds;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = group->add_subcommand(
      "tradeoff", "Model A vs Model B (+ structural negatives): train per seed, evaluate zero-shot, aggregate");
  cmd->add_option("-m,--model,--backbone", o->t.backbone, "Model to fine-tune (the backbone): an installed name or a folder")->required();
  cmd->add_option("--train", o->t.train, "Model A data: triplet/pair files or BEIR folders (train qrels); repeatable")
      ->required();
  cmd->add_option("--hard-negatives", o->t.hard_negatives,
                  "Hard negatives per retriever (BM25, then the backbone's dense search) mined for each query of a "
                  "BEIR --train folder; 0 = plain (query, passage) pairs")
      ->capture_default_str();
  cmd->add_option("--train-categories", o->t.train_categories,
                  "Keep only these categories of the --train files' rows (e.g. headword_definition,gloss_example); "
                  "default: all")
      ->delimiter(',');
  cmd->add_option("--nearmiss-set", o->t.nearmiss_sets,
                  "Human-written pair set for the pooled-space separation (e.g. SugarCrepe, CondaQA edits, CANNOT); "
                  "repeatable. A set without positives is scored against the generated positives");
  cmd->add_option("--structural", o->t.structural,
                  "Near-miss pairs (sentence1, sentence2, category) added to Model B as identity triplets "
                  "(default: generated from WordNet's example sentences)");
  cmd->add_option("--nearmiss-test", o->t.nearmiss_test,
                  "Pairs for the pooled-space analysis (default: generated from held-apart WordNet sentences)");
  cmd->add_option("--beir", o->t.beir, "BEIR folders to evaluate on; repeatable")->required();
  cmd->add_option("--split", o->t.split, "Qrels split of the BEIR folders")->capture_default_str();
  cmd->add_option("-o,--out", o->t.out_dir, "Output folder (re-running resumes: finished seeds are kept)")->required();
  cmd->add_option("--profile", o->profile, "quick (minutes, small model) or full (the documented sizes)")
      ->check(CLI::IsMember({"quick", "full"}))
      ->capture_default_str();
  cmd->add_option("--seeds", o->seeds, "Seeds, comma-separated (quick: 42,43; full: 42,43,44)");
  cmd->add_option("--steps", o->t.steps, "Training steps per model (quick: 40; full: 500)");
  cmd->add_option("--batch-size", o->t.batch_size, "Rows per batch (quick: 16; full: 64)");
  cmd->add_option("--max-length", o->t.max_length, "Token cap while training (quick: 64; full: 128)");
  cmd->add_option("--lr", o->t.lr, "Peak learning rate")->capture_default_str();
  cmd->add_option("--weight-decay", o->t.weight_decay, "AdamW weight decay")->capture_default_str();
  cmd->add_option("--scale", o->t.scale, "MNRL similarity scale (1 / temperature)")->capture_default_str();
  cmd->add_option("--max-train-rows", o->t.max_train_rows,
                  "Cap on each --train source's rows, kept round-robin over categories (quick: 2000; full: all)");
  cmd->add_option("--max-structural", o->t.max_structural, "Cap on the near-misses Model B adds (quick: 1000; full: all)");
  cmd->add_option("--max-queries", o->t.max_queries, "Queries evaluated per BEIR folder (quick: 100; full: all)");
  cmd->add_option("--max-test-pairs", o->t.max_test_pairs, "Cap on the pooled-space pairs (quick: 1000; full: all)");
  cmd->add_option("--threads", o->t.threads, "Compute threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--device", o->t.device, "cpu, cuda or cuda:N (training and encoding)")->capture_default_str();
  cmd->add_option("--save-every", o->t.save_every, "Steps between resumable checkpoints (0 = a tenth of --steps)")
      ->capture_default_str();
  cmd->add_option("--eval-name", o->t.eval_name,
                  "Folder of this evaluation under OUT/evaluations (default: eval- and a hash of the evaluation "
                  "settings); evaluating the trained models on other --beir or --nearmiss-set data trains nothing");
  cmd->add_flag("--train-only", o->t.train_only,
                "Train every model and stop (evaluate later by running the same command without it)");
  on_run(cmd, [o, cmd] {
    auto& t = o->t;
    t.backbone = resolve_model_dir(t.backbone);  // an installed name or a folder, as everywhere
    const bool quick = o->profile == "quick";
    preset(cmd, "--steps", t.steps, size_t(quick ? 40 : 500));
    preset(cmd, "--batch-size", t.batch_size, size_t(quick ? 16 : 64));
    preset(cmd, "--max-length", t.max_length, size_t(quick ? 64 : 128));
    preset(cmd, "--max-train-rows", t.max_train_rows, size_t(quick ? 2000 : 0));
    preset(cmd, "--max-structural", t.max_structural, size_t(quick ? 1000 : 0));
    preset(cmd, "--max-queries", t.max_queries, size_t(quick ? 100 : 0));
    preset(cmd, "--max-test-pairs", t.max_test_pairs, size_t(quick ? 1000 : 0));
    t.seeds = experiment::parse_uint_list(o->seeds.empty() ? (quick ? "42,43" : "42,43,44") : o->seeds);
    const std::string md = experiment::run_tradeoff(t);
    std::fwrite(md.data(), 1, md.size(), stdout);
  });
}

void register_verifiers(CLI::App* group) {
  struct Opts {
    experiment::VerifierExperimentOptions v;
    std::string profile = "full", seeds, kinds = "F0,F1,F2,F3,F4", regimes = "frozen,end-to-end";
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = group->add_subcommand(
      "verifiers", "F0-F4, frozen and end to end: train per seed, evaluate reranking and near-miss rejection");
  cmd->add_option("-m,--model,--encoder", o->v.encoder, "Encoder: an installed name or a folder")->required();
  cmd->add_option("--train", o->v.train,
                  "Verifier training triplets, or pairs read as identity triplets (default: near-misses generated "
                  "from WordNet's example sentences)");
  cmd->add_option("--nearmiss-test", o->v.nearmiss_test,
                  "Near-miss test pairs (default: generated from held-apart WordNet sentences, with positives)");
  cmd->add_option("--beir", o->v.beir, "BEIR folders to evaluate reranking on; repeatable")->required();
  cmd->add_option("--split", o->v.split, "Qrels split of the BEIR folders")->capture_default_str();
  cmd->add_option("-o,--out", o->v.out_dir, "Output folder (re-running resumes: finished cells are kept)")->required();
  cmd->add_option("--profile", o->profile, "quick (minutes, small model) or full (the documented sizes)")
      ->check(CLI::IsMember({"quick", "full"}))
      ->capture_default_str();
  cmd->add_option("--seeds", o->seeds, "Seeds, comma-separated (quick: 42; full: 42,43,44)");
  cmd->add_option("--kinds", o->kinds, "Verifiers, comma-separated")->capture_default_str();
  cmd->add_option("--regimes", o->regimes, "frozen and/or end-to-end, comma-separated")->capture_default_str();
  cmd->add_option("--steps-light", o->v.steps_light, "End-to-end steps of F0-F2 (quick: 10; full: 400)");
  cmd->add_option("--steps-f3", o->v.steps_f3, "F3 steps (quick: 4; full: 300)");
  cmd->add_option("--steps-f4", o->v.steps_f4, "F4 steps (quick: 20; full: 600)");
  cmd->add_option("--batch-light", o->v.batch_light, "Batch of F0-F2 (quick: 16; full: 128)");
  cmd->add_option("--batch-map", o->v.batch_map, "Batch of F3/F4 (quick: 8; full: 32)");
  cmd->add_option("--max-length", o->v.max_length, "Encoder token cap while training (quick: 48; full: 128)");
  cmd->add_option("--max-tokens", o->v.max_tokens, "Verifier map size, tokens per side (quick: 64; full: 128)");
  cmd->add_option("--candidates", o->v.candidates, "Stage-1 top K reranked (quick: 20; full: 100)");
  cmd->add_option("--max-queries", o->v.max_queries, "Queries per BEIR folder (quick: 30; full: all)");
  cmd->add_option("--max-train-rows", o->v.max_train_rows, "Cap on training rows (quick: 2000; full: all)");
  cmd->add_option("--max-test-pairs", o->v.max_test_pairs, "Cap on near-miss test pairs (quick: 400; full: all)");
  cmd->add_option("--lr-verifier", o->v.lr_verifier, "Verifier learning rate")->capture_default_str();
  cmd->add_option("--lr-encoder", o->v.lr_encoder, "Encoder learning rate (end to end)")->capture_default_str();
  cmd->add_option("--threads", o->v.threads, "Compute threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--device", o->v.device, "cpu, cuda or cuda:N (training and encoding)")->capture_default_str();
  on_run(cmd, [o, cmd] {
    auto& v = o->v;
    v.encoder = resolve_model_dir(v.encoder);  // an installed name or a folder, as everywhere
    const bool quick = o->profile == "quick";
    preset(cmd, "--steps-light", v.steps_light, size_t(quick ? 10 : 400));
    preset(cmd, "--steps-f3", v.steps_f3, size_t(quick ? 4 : 300));
    preset(cmd, "--steps-f4", v.steps_f4, size_t(quick ? 20 : 600));
    preset(cmd, "--batch-light", v.batch_light, size_t(quick ? 16 : 128));
    preset(cmd, "--batch-map", v.batch_map, size_t(quick ? 8 : 32));
    preset(cmd, "--max-length", v.max_length, size_t(quick ? 48 : 128));
    preset(cmd, "--max-tokens", v.max_tokens, size_t(quick ? 64 : 128));
    preset(cmd, "--candidates", v.candidates, size_t(quick ? 20 : 100));
    preset(cmd, "--max-queries", v.max_queries, size_t(quick ? 30 : 0));
    preset(cmd, "--max-train-rows", v.max_train_rows, size_t(quick ? 2000 : 0));
    preset(cmd, "--max-test-pairs", v.max_test_pairs, size_t(quick ? 400 : 0));
    v.seeds = experiment::parse_uint_list(o->seeds.empty() ? (quick ? "42" : "42,43,44") : o->seeds);
    v.kinds = split_list(o->kinds);
    v.regimes = split_list(o->regimes);
    const std::string md = experiment::run_verifier_experiment(v);
    std::fwrite(md.data(), 1, md.size(), stdout);
  });
}

}  // namespace

void register_experiment(CLI::App& app) {
  auto* group = app.add_subcommand("experiment", "Reproduce the paper's experiments (tables, JSON, plots)");
  group->require_subcommand(1);
  register_tradeoff(group);
  register_verifiers(group);
}

}  // namespace sieve::cli
