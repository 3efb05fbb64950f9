// `sieve eval retrieval|nearmiss|space|aggregate`: evaluation on BEIR folders and pair files
// (docs/evaluation.md). Results go to stdout as JSON; files only where asked.
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <memory>

#include "cli/cli_common.h"
#include "core/file_util.h"
#include "core/log.h"
#include "eval/aggregate.h"
#include "eval/beir.h"
#include "eval/metrics.h"
#include "eval/pairs.h"
#include "eval/paraphrase_sets.h"
#include "experiment/experiment_data.h"
#include "experiment/nearmiss_eval.h"
#include "experiment/retrieval_eval.h"
#include "experiment/space_eval.h"
#include "sieve/error.h"
#include "sieve/model.h"
#include "sieve/index.h"

namespace sieve::cli {
namespace {

void print_json(const nlohmann::json& j) {
  const std::string s = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::fwrite(s.data(), 1, s.size(), stdout);
}

std::vector<size_t> parse_ks(const std::string& list) {
  std::vector<size_t> ks;
  for (uint64_t v : experiment::parse_uint_list(list, "cutoffs")) {
    SIEVE_THROW_IF_NOT(v > 0, "cutoffs must be at least 1");
    ks.push_back(static_cast<size_t>(v));
  }
  return ks;
}

void register_retrieval(CLI::App* group) {
  struct Opts {
    std::string beir, split = "test", index, queries, qrels, model, mode, fusion, verifier,
                                  run_out, qrels_out, index_dir, ks = "1,3,5,10,100";
    experiment::RetrievalEvalOptions r;
    DeviceFlags dev;
    bool per_query = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = group->add_subcommand(
      "retrieval", "nDCG, MRR, Acc (hit rate), recall, MAP of dense / BM25 / hybrid search, optionally reranked");
  cmd->add_option("--beir", o->beir, "BEIR folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv)");
  cmd->add_option("--split", o->split, "Qrels split of --beir")->capture_default_str();
  cmd->add_option("--index", o->index, "Index to search (default with --beir: one built with --model)");
  cmd->add_option("-q,--queries", o->queries, "Queries (BEIR queries.jsonl, TSV id/text); overrides --beir's");
  cmd->add_option("--qrels", o->qrels, "Judgements (BEIR qrels TSV or TREC qrels); overrides --beir's");
  cmd->add_option("-m,--model", o->model, "Encoder (to build the index for --beir; default: the index's)");
  cmd->add_option("--index-dir", o->index_dir,
                  "Where an index built for --beir is kept and reused (default: a temporary folder, removed)");
  cmd->add_option("--mode", o->mode, "dense, bm25 or hybrid (default: what the model folder recommends, else dense)")
      ->check(CLI::IsMember({"dense", "bm25", "hybrid"}));
  cmd->add_option("--fusion", o->fusion, "Hybrid fusion: rrf, weighted (min-max) or zscore (default: the model's recommendation, else rrf)")
      ->check(CLI::IsMember({"rrf", "weighted", "zscore"}));
  cmd->add_option("--rrf-k", o->r.search.rrf_k, "RRF constant (default: the model's recommendation, else 60)")
      ->check(kNonNegative);
  cmd->add_option("--dense-weight", o->r.search.dense_weight,
                  "Weighted fusion: weight of the dense scores (default: the model's recommendation, else 0.5)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--weight-slope", o->r.search.weight_slope,
                  "Weighted/zscore fusion: per query, the dense weight moves by this times (top z-score of the "
                  "dense list - top z-score of the BM25 list), clamped to [0, 1] (default: the model's "
                  "recommendation, else 0: one weight for all)")
      ->check(CLI::Range(-10.0, 10.0));
  cmd->add_option("--fusion-depth", o->r.search.depth,
                  "Hybrid: candidates taken from each list (default: the model's recommendation, else max(k, 100))");
  auto* verifier_opt = cmd->add_option("--verifier", o->verifier, std::string("Rerank the top --candidates with this verifier (file, cosine, F0, F1, F2, or default: the "
                              "one shipped for the index's model, else F1)") + kVerifierNames);
  cmd->add_flag("--gate", o->r.gate,
                "With --verifier: drop the candidates it rejects (score below its calibrated threshold, or "
                "--threshold); the JSON's \"gate\" counts what was dropped, relevant documents included")
      ->needs(verifier_opt);
  cmd->add_option("--threshold", o->r.threshold, "The gate's threshold (default: the verifier file's)")
      ->needs(verifier_opt);
  cmd->add_flag("--no-rerank{false}", o->r.rerank,
                "With --verifier: keep stage 1's order (with --gate: stage 1 + gate)")
      ->needs(verifier_opt);
  cmd->add_option("--candidates", o->r.candidates, "Stage-1 hits the verifier reranks")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--run-depth", o->r.depth, "Results kept per query in the run (scored and written by --run-out)")->capture_default_str()->check(kPositive);
  cmd->add_option("-k,--k,--cutoffs", o->ks, "Cutoffs of the measures, comma-separated (nDCG@k, recall@k, ...)")->capture_default_str();
  cmd->add_option("--max-queries", o->r.max_queries, "Evaluate only the first N judged queries (0 = all)")
      ->capture_default_str();
  cmd->add_option("--run-out", o->run_out, "Write the evaluated TREC run here");
  cmd->add_option("--qrels-out", o->qrels_out, "Write the judgements used as TREC qrels here (for trec_eval)");
  cmd->add_flag("--per-query", o->per_query, "Also print every query's measures");
  o->dev.add(cmd);
  on_run(cmd, [o, cmd] {
    std::string queries = o->queries, qrels = o->qrels, corpus;
    if (!o->beir.empty()) {
      const experiment::BeirFolder f = experiment::beir_folder(o->beir, o->split);
      if (queries.empty()) queries = f.queries;
      if (qrels.empty()) qrels = f.qrels;
      corpus = f.corpus;
    }
    SIEVE_THROW_IF_NOT(!queries.empty() && !qrels.empty(), "give --beir DIR, or --queries and --qrels");
    SIEVE_THROW_IF_NOT(!o->index.empty() || !corpus.empty(), "give --index INDEX, or --beir DIR to build one");
    if (o->index.empty()) o->model = resolve_model_dir(o->model);
    o->r.verifier = o->verifier;
    o->r.ks = parse_ks(o->ks);
    const auto q = eval::read_queries(queries);
    const auto j = eval::read_qrels(qrels);

    // A temporary index folder goes away however the command ends (a failed build included).
    struct Cleanup {
      std::string dir;
      ~Cleanup() {
        if (!dir.empty()) std::filesystem::remove_all(dir);
      }
    } cleanup;
    std::string index_dir = o->index;
    if (index_dir.empty()) {
      std::string cache = o->index_dir;
      if (cache.empty()) {
        char tmpl[] = "/tmp/sieve-eval-XXXXXX";
        SIEVE_THROW_IF_NOT(::mkdtemp(tmpl) != nullptr, "cannot create a temporary folder in /tmp");
        cache = cleanup.dir = tmpl;
        log_info("eval retrieval: no --index, so the corpus is indexed into a temporary folder, removed at the "
                 "end; --index-dir DIR keeps that index and reuses it in later runs");
      }
      index_dir = experiment::cached_index(o->model, corpus, cache, {}, o->dev.options());
    }
    apply_search_flags(*cmd, recommended_search_for_index(index_dir, o->model), o->mode, o->fusion, o->r.search);
    IndexOpenOptions oo;
    oo.model_dir = o->model;
    oo.encoder = o->dev.options();
    oo.load_encoder = o->r.search.mode != SearchMode::Bm25 || !o->verifier.empty();
    auto index = Index::open(index_dir, oo);
    const experiment::RetrievalEvalResult r = experiment::evaluate_retrieval(*index, q, j, o->r);
    if (!o->run_out.empty()) {
      std::ostringstream s;
      for (const auto& [qid, entries] : r.run) eval::write_trec_run(s, qid, entries, "sieve-" + r.system);
      write_file_atomic(o->run_out, s.str());
    }
    if (!o->qrels_out.empty()) {
      std::ostringstream s;
      eval::write_trec_qrels(s, r.qrels);
      write_file_atomic(o->qrels_out, s.str());
    }
    print_json(experiment::retrieval_json(r, o->per_query));
  });
}

void register_nearmiss_eval(CLI::App* group) {
  struct Opts {
    std::string pairs, model, positives, ignore, markdown;
    std::vector<std::string> verifiers;
    experiment::NearMissEvalOptions n;
    DeviceFlags dev;
  };
  auto o = std::make_shared<Opts>();
  o->positives = eval::default_positive_categories_list();
  o->ignore = "neutral";
  auto* cmd = group->add_subcommand(
      "nearmiss", "Near-miss rejection: per-category mean ± std, ROC-AUC, accuracy at a threshold, identity margin");
  cmd->add_option("--pairs", o->pairs, "Pairs (TSV/CSV with a header: sentence1, sentence2, category and/or label)")
      ->required();
  cmd->add_option("-m,--model", o->model, std::string("Encoder model directory or installed name (default: ") + kDefaultModel + ")");
  cmd->add_option("--verifier", o->verifiers,
                  std::string("Verifiers to evaluate besides the pooled cosine (files, or F0, F1, F2); repeatable") +
                      kVerifierNames);
  cmd->add_option("--positive-categories", o->positives, "Categories/labels that mark positive pairs")
      ->capture_default_str();
  cmd->add_option("--ignore-categories", o->ignore, "Categories/labels left out")->capture_default_str();
  cmd->add_option("--gamma", o->n.gamma, "Identity margin: s(q, q+) >= s(q, q-) + gamma")->capture_default_str();
  cmd->add_option("--max-pairs", o->n.max_pairs, "Only the first N pairs (0 = all)")->capture_default_str();
  cmd->add_option("--batch-size", o->n.batch_size, "Texts per forward pass")->capture_default_str()->check(kPositive);
  cmd->add_option("--token-codec", o->n.token_codec,
                  "Pass the candidates' token states through this codec, as an index stores them (sq8, sq4, pq, "
                  "pq32, pq64, res1, res2, fp16 or a FAISS codec; default: exact states)");
  cmd->add_option("--codec-train", o->n.codec_train_tokens, "Token states the codec trains on (sampled evenly)")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--markdown", o->markdown, "Also write the table as Markdown to this file");
  o->dev.add(cmd);
  on_run(cmd, [o] {
    o->n.positive_categories = split_list(o->positives, true);
    o->n.ignore_categories = split_list(o->ignore, true);
    o->n.encoder = o->dev.options();
    const auto pairs = eval::read_pairs(o->pairs);
    o->model = resolve_model_dir(o->model);
    const std::string identity = model_identity(o->model);
    std::vector<ResolvedVerifier> owned;
    owned.reserve(o->verifiers.size());  // the scorers point into it
    std::vector<experiment::Scorer> scorers = {{"cosine", nullptr}};
    for (const auto& v : o->verifiers) {
      owned.push_back(resolve_verifier(v, {o->model, identity}));
      const ResolvedVerifier& r = owned.back();
      require_calibrated_cascade(r);  // before any text is encoded
      scorers.push_back(r.cascade() ? experiment::Scorer{v, r.verifier.get(), nullptr, &r}
                                    : experiment::Scorer{v, r.verifier.get(), r.cross.get()});
    }
    const auto e = experiment::evaluate_nearmisses(o->model, pairs, scorers, o->n);
    if (!o->markdown.empty()) experiment::write_text(o->markdown, experiment::nearmiss_markdown(e));
    print_json(experiment::nearmiss_json(e));
  });
}

void register_space(CLI::App* group) {
  struct Opts {
    std::string a, b, pairs, out;
    experiment::SpaceEvalOptions s;
    DeviceFlags dev;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = group->add_subcommand("space", "Pooled-space analysis of Model A vs Model B on categorised pairs");
  cmd->add_option("--model-a", o->a, "Model A directory")->required();
  cmd->add_option("--model-b", o->b, "Model B directory")->required();
  cmd->add_option("--pairs", o->pairs, "Pairs (sentence1, sentence2, category)")->required();
  cmd->add_option("-o,--out", o->out, "Also write space.json, space.md and histogram SVGs here");
  cmd->add_option("--bins", o->s.bins, "Histogram bins on [-1, 1]")->capture_default_str()->check(kPositive);
  cmd->add_option("--max-pairs", o->s.max_pairs, "Only the first N pairs (0 = all)")->capture_default_str();
  o->dev.add(cmd);
  on_run(cmd, [o] {
    o->s.encoder = o->dev.options();
    const auto s = experiment::evaluate_space(o->a, o->b, eval::read_pairs(o->pairs), o->s);
    if (!o->out.empty()) experiment::write_space_report(s, o->out);
    print_json(experiment::space_json(s));
  });
}

void register_aggregate(CLI::App* group) {
  struct Opts {
    std::string dir, file = "results.json", out;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = group->add_subcommand(
      "aggregate", "Aggregate DIR/seed_<n>/FILE over seeds: every number becomes mean, std, min, max, count, values");
  cmd->add_option("dir", o->dir, "Folder holding seed_<n> sub-folders")->required();
  cmd->add_option("--file", o->file, "Result file name inside each seed folder")->capture_default_str();
  cmd->add_option("-o,--out", o->out, "Write the aggregate here as well as to stdout");
  on_run(cmd, [o] {
    const nlohmann::json agg = eval::aggregate_seed_dirs(o->dir, o->file);
    if (!o->out.empty()) experiment::write_json(o->out, agg);
    print_json(agg);
  });
}

void register_paraphrase_sets(CLI::App* group) {
  struct Opts {
    eval::ParaphraseSetOptions p;
    std::string out, positives = "synonym,passive,contraction,coordination,possessive,adverb_move,determiner,negated_antonym";
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = group->add_subcommand(
      "paraphrase-sets",
      "Build paraphrase-vs-near-miss sets (PAWS, MRPC, CondaQA, CANNOT, mixed) from the shared pair data, split once into train/dev/eval");
  cmd->add_option("--shared", o->p.shared_data, "Shared data folder (holds pairs/ and nearmiss/)")->required();
  cmd->add_option("-o,--out", o->out, "Output folder: <set>-{train,dev,eval}.tsv, report.json")->required();
  cmd->add_option("--generated", o->p.generated,
                  "Generated pairs of held-apart sentences (nearmiss generate); added to mixed-eval only");
  cmd->add_option("--generated-positive", o->positives, "Categories of --generated that keep the meaning")
      ->capture_default_str();
  cmd->add_option("--eval-fraction", o->p.eval_fraction, "Share of sentence components held for evaluation")
      ->capture_default_str();
  cmd->add_option("--dev-fraction", o->p.dev_fraction,
                  "Share of sentence components for development (calibration, choices; never training)")
      ->capture_default_str();
  cmd->add_option("--seed", o->p.seed, "Mixed into the split hash (0 = the documented split)")->capture_default_str();
  cmd->add_option("--sts-min", o->p.sts_min_score, "STS-B score that makes a pair a paraphrase")->capture_default_str();
  cmd->add_option("--min-overlap", o->p.contradiction_min_overlap,
                  "Word-set Jaccard a contradiction must share with its premise")
      ->capture_default_str();
  on_run(cmd, [o] {
    o->p.generated_positive = split_list(o->positives, true);
    const auto sets = eval::build_paraphrase_sets(o->p);
    eval::write_paraphrase_sets(sets, o->out);
    print_json(sets.report);
  });
}

}  // namespace

void register_eval(CLI::App& app) {
  auto* group = app.add_subcommand("eval", "Evaluate retrieval, near-miss rejection and pooled spaces");
  group->require_subcommand(1);
  register_retrieval(group);
  register_nearmiss_eval(group);
  register_space(group);
  register_aggregate(group);
  register_paraphrase_sets(group);
}

}  // namespace sieve::cli
