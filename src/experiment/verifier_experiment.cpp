#include "experiment/verifier_experiment.h"

#include <cmath>
#include <filesystem>
#include <set>

#include "core/file_util.h"
#include "core/log.h"
#include "eval/pairs.h"
#include "eval/report.h"
#include "experiment/experiment_data.h"
#include "experiment/experiment_eval.h"
#include "experiment/nearmiss_eval.h"
#include "sieve/error.h"
#include "sieve/train.h"
#include "sieve/verify.h"

namespace sieve::experiment {
namespace {

bool learned(VerifierKind k) { return k == VerifierKind::F3 || k == VerifierKind::F4; }

std::string regime_key(const std::string& r) { return r == "frozen" ? "frozen" : "end_to_end"; }

VerifierRegime regime_of(const std::string& r) {
  if (r == "frozen") return VerifierRegime::Frozen;
  if (r == "end-to-end" || r == "end_to_end" || r == "e2e") return VerifierRegime::EndToEnd;
  throw Error("unknown regime '" + r + "' (frozen, end-to-end)");
}

struct Shared {
  const VerifierExperimentOptions& opt;
  std::vector<EvalSet> sets;
  std::string train, cache;
  std::vector<eval::SentencePair> test;
};

// Trains (or reuses) one verifier; returns {file, encoder, report}.
nlohmann::json train_cell(const Shared& sh, VerifierKind kind, const std::string& regime, uint64_t seed,
                          const std::string& dir) {
  const auto& opt = sh.opt;
  nlohmann::json j;
  const bool e2e = regime_of(regime) == VerifierRegime::EndToEnd;
  if (!e2e && !learned(kind)) {  // frozen F0-F2: nothing to learn, scored zero-shot
    j["verifier"] = verifier_kind_name(kind);
    j["encoder"] = opt.encoder;
    j["report"] = {{"skipped", true}, {"seconds", 0.0}, {"steps", 0}};
    return j;
  }
  const std::string report = path_join(dir, "report.json");
  if (!is_file(report) || !is_file(path_join(dir, "verifier.safetensors"))) {
    VerifierTrainOptions v;
    v.common.out_dir = dir;
    v.common.steps = kind == VerifierKind::F3 ? opt.steps_f3 : kind == VerifierKind::F4 ? opt.steps_f4 : opt.steps_light;
    v.common.batch_size = learned(kind) ? opt.batch_map : opt.batch_light;
    v.common.seed = seed;
    v.common.threads = opt.threads;
    v.common.device = opt.device;
    v.common.log_every = std::max<size_t>(1, v.common.steps / 20);
    v.model_dir = opt.encoder;
    v.train_path = sh.train;
    v.verifier.kind = kind;
    v.verifier.max_tokens = opt.max_tokens;
    v.regime = regime_of(regime);
    v.lr_verifier = opt.lr_verifier;
    v.weight_decay_verifier = learned(kind) ? opt.wd_verifier_map : opt.wd_verifier_light;
    v.lr_encoder = opt.lr_encoder;
    v.weight_decay_encoder = opt.wd_encoder;
    v.max_length = opt.max_length;
    train_verifier(v);
  } else {
    log_info("reusing the trained verifier in " + dir);
  }
  j["verifier"] = path_join(dir, "verifier.safetensors");
  j["encoder"] = e2e ? path_join(dir, "encoder") : opt.encoder;
  j["report"] = read_json(report);
  return j;
}

nlohmann::json evaluate_cell(const Shared& sh, VerifierKind kind, const std::string& regime, uint64_t seed,
                             const std::string& dir) {
  const auto& opt = sh.opt;
  const std::string cell_file = path_join(dir, "cell.json");
  if (is_file(cell_file)) return read_json(cell_file);
  const nlohmann::json trained = train_cell(sh, kind, regime, seed, dir);
  const std::string encoder = trained["encoder"], verifier_ref = trained["verifier"];
  auto verifier = load_verifier_for_model(verifier_ref, encoder);

  nlohmann::json c;
  c["verifier_type"] = verifier_kind_name(kind);
  c["training_mode"] = regime_key(regime);
  c["num_parameters"] = verifier->parameter_count();
  c["training_time_seconds"] = trained["report"].value("seconds", 0.0);
  c["steps"] = trained["report"].value("steps", 0);
  EncoderOptions enc;
  enc.threads = opt.threads;
  enc.device = opt.device;
  RetrievalEvalOptions ro;
  ro.verifier = verifier_ref;
  ro.candidates = opt.candidates;
  ro.depth = opt.candidates;
  ro.max_queries = opt.max_queries;
  ro.ks = {1, 10, 100};
  // The base encoder's index serves every frozen cell; an end-to-end encoder's is built and dropped.
  c["retrieval"] = evaluate_on_sets(encoder, sh.sets, sh.cache, ro, encoder == opt.encoder, enc);
  NearMissEvalOptions no;
  no.encoder = enc;
  no.max_pairs = opt.max_test_pairs;
  const NearMissEval ne = evaluate_nearmisses(encoder, sh.test, {{"encoder", nullptr}, {"verifier", verifier.get()}}, no);
  c["nearmiss"] = nearmiss_json(ne);
  write_json(cell_file, c);
  return c;
}

std::string label(const std::string& kind, const std::string& regime) {
  return kind + " " + (regime == "frozen" ? "frozen" : "E2E");
}

std::string render(const nlohmann::json& agg, const VerifierExperimentOptions& opt,
                   const std::vector<std::string>& categories, size_t seeds) {
  std::string md = "## Reranking the top " + std::to_string(opt.candidates) + " (mean over the evaluation sets)\n\n";
  eval::MarkdownTable r({"Verifier", "Mode", "Enc. nDCG@10", "+V nDCG@10", "+V MRR@10", "+V Acc@1", "+V Acc@10",
                         "Params", "Train (s)"});
  for (const auto& regime : opt.regimes)
    for (const auto& kind : opt.kinds) {
      const std::vector<std::string> base = {regime_key(regime), kind};
      auto at = [&](std::vector<std::string> tail) {
        std::vector<std::string> p = base;
        p.insert(p.end(), tail.begin(), tail.end());
        return cell(agg, p);
      };
      r.add_row({kind, regime == "frozen" ? "Frozen" : "End-to-end",
                 eval::fmt_mean_std(at({"retrieval", "mean", "encoder", "ndcg@10"})),
                 eval::fmt_mean_std(at({"retrieval", "mean", "ndcg@10"})),
                 eval::fmt_mean_std(at({"retrieval", "mean", "mrr@10"})),
                 eval::fmt_mean_std(at({"retrieval", "mean", "acc@1"})),
                 eval::fmt_mean_std(at({"retrieval", "mean", "acc@10"})), eval::fmt_num(at({"num_parameters"}).mean, 0),
                 eval::fmt_num(at({"training_time_seconds"}).mean, 1)});
    }
  md += r.str();
  md += "\n## Near-misses: mean score per category (lower is better), ROC-AUC against positives, "
        "balanced accuracy at the threshold\n\n";
  std::vector<std::string> header = {"Verifier", "Mode", "Scorer"};
  header.insert(header.end(), categories.begin(), categories.end());
  for (const char* h : {"Overall", "Positives", "AUC", "Bal. acc."}) header.push_back(h);
  eval::MarkdownTable n(header);
  for (const auto& regime : opt.regimes)
    for (const auto& kind : opt.kinds)
      for (const char* scorer : {"encoder", "verifier"}) {
        const std::vector<std::string> base = {regime_key(regime), kind, "nearmiss", "scorers", scorer};
        auto at = [&](std::vector<std::string> tail) {
          std::vector<std::string> p = base;
          p.insert(p.end(), tail.begin(), tail.end());
          return cell(agg, p);
        };
        std::vector<std::string> row = {kind, regime == "frozen" ? "Frozen" : "End-to-end",
                                        std::string(scorer) == "encoder" ? "Encoder" : "+Verifier"};
        for (const auto& cat : categories) row.push_back(eval::fmt_mean_std(at({"categories", cat, "score", "mean"})));
        row.push_back(eval::fmt_mean_std(at({"overall", "score", "mean"})));
        row.push_back(eval::fmt_mean_std(at({"positives", "mean"})));
        row.push_back(eval::fmt_mean_std(at({"auc"})));
        row.push_back(eval::fmt_mean_std(at({"balanced_accuracy"})));
        n.add_row(row);
      }
  md += n.str();
  md += "\nCells are mean ± std over " + std::to_string(seeds) +
        " seed(s). Acc@1 is the hit rate at rank 1 alone (the authors' tables averaged Acc@1 with Acc@10).\n";
  return md;
}

void write_plots(const nlohmann::json& agg, const VerifierExperimentOptions& opt, const std::string& dir) {
  std::vector<std::string> groups;
  eval::BarSeries enc{"Encoder", {}, {}}, ver{"+Verifier", {}, {}}, enc_auc{"Encoder cosine", {}, {}},
      ver_auc{"Verifier", {}, {}};
  auto push = [](eval::BarSeries& s, const eval::MeanStd& m) {
    s.values.push_back(m.mean);
    s.errors.push_back(std::isnan(m.std) ? 0.0 : m.std);
  };
  for (const auto& regime : opt.regimes)
    for (const auto& kind : opt.kinds) {
      groups.push_back(label(kind, regime));
      const std::string rk = regime_key(regime);
      push(enc, cell(agg, {rk, kind, "retrieval", "mean", "encoder", "ndcg@10"}));
      push(ver, cell(agg, {rk, kind, "retrieval", "mean", "ndcg@10"}));
      push(enc_auc, cell(agg, {rk, kind, "nearmiss", "scorers", "encoder", "auc"}));
      push(ver_auc, cell(agg, {rk, kind, "nearmiss", "scorers", "verifier", "auc"}));
    }
  write_text(path_join(dir, "verifiers_ndcg10.svg"),
             eval::svg_bar_chart("nDCG@10 before and after reranking", groups, {enc, ver}, "nDCG@10"));
  write_text(path_join(dir, "verifiers_nearmiss_auc.svg"),
             eval::svg_bar_chart("Near-miss rejection (ROC-AUC, positives vs near-misses)", groups, {enc_auc, ver_auc},
                                 "ROC-AUC"));
}

}  // namespace

std::string run_verifier_experiment(const VerifierExperimentOptions& opt) {
  SIEVE_THROW_IF_NOT(!opt.out_dir.empty(), "the experiment needs an output folder");
  SIEVE_THROW_IF_NOT(!opt.encoder.empty(), "the experiment needs an encoder model");
  SIEVE_THROW_IF_NOT(!opt.beir.empty(), "the experiment needs at least one BEIR folder to evaluate on (--beir)");
  for (const auto& k : opt.kinds) verifier_kind_from_name(k);  // fail early on a bad name
  for (const auto& r : opt.regimes) regime_of(r);
  // Kinds and regimes may grow between runs (cells are kept per kind); everything else must match.
  check_options(opt.out_dir,
                {{"encoder", opt.encoder}, {"train", opt.train}, {"nearmiss_test", opt.nearmiss_test},
                 {"beir", opt.beir}, {"split", opt.split}, {"steps_light", opt.steps_light},
                 {"steps_f3", opt.steps_f3}, {"steps_f4", opt.steps_f4}, {"batch_light", opt.batch_light},
                 {"batch_map", opt.batch_map}, {"lr_verifier", opt.lr_verifier}, {"lr_encoder", opt.lr_encoder},
                 {"max_length", opt.max_length}, {"max_tokens", opt.max_tokens}, {"candidates", opt.candidates},
                 {"max_queries", opt.max_queries}, {"max_train_rows", opt.max_train_rows},
                 {"max_test_pairs", opt.max_test_pairs}});
  Shared sh{opt, load_eval_sets(opt.beir, opt.split), opt.train, path_join(opt.out_dir, "indexes"), {}};
  std::string test = opt.nearmiss_test;
  if (sh.train.empty() || test.empty()) {
    const GeneratedNearMisses g = generate_nearmiss_data(path_join(opt.out_dir, "data"), 42, 0, 0);
    if (sh.train.empty()) {
      sh.train = g.train_pairs;
      if (opt.max_train_rows > 0) {  // the trainer reads whole files: write the capped rows
        sh.train = path_join(opt.out_dir, "data/verifier_train.jsonl");
        if (!is_file(sh.train)) write_training_jsonl(sh.train, identity_triplets(g.train_pairs, opt.max_train_rows));
      }
    }
    if (test.empty()) test = g.test_pairs;
  }
  sh.test = eval::read_pairs(test);

  for (uint64_t seed : opt.seeds) {
    const std::string sd = path_join(opt.out_dir, "seed_" + std::to_string(seed));
    const std::string results = path_join(sd, "results.json");
    if (is_file(results)) {
      log_info("seed " + std::to_string(seed) + " already done (" + results + ")");
      continue;
    }
    nlohmann::json j;
    for (const auto& regime : opt.regimes)
      for (const auto& kind : opt.kinds) {
        log_info("seed " + std::to_string(seed) + ": " + label(kind, regime));
        const std::string dir = path_join(sd, regime_key(regime) + "/" + kind);
        j[regime_key(regime)][kind] = evaluate_cell(sh, verifier_kind_from_name(kind), regime, seed, dir);
      }
    j["seed"] = seed;
    write_json(results, j);
  }
  std::filesystem::remove_all(sh.cache);

  nlohmann::json agg = aggregate_seed_results(opt.out_dir, opt.seeds);
  std::set<std::string> cats;
  for (const auto& regime : opt.regimes)
    for (const auto& kind : opt.kinds) {
      const nlohmann::json& a = agg;
      const std::vector<std::string> path = {regime_key(regime), kind, "nearmiss", "scorers", "encoder", "categories"};
      const nlohmann::json* c = &a;
      for (const auto& p : path) c = c && c->is_object() && c->contains(p) ? &(*c)[p] : nullptr;
      if (c)
        for (const auto& [cat, v] : c->items()) cats.insert(cat);
    }
  std::vector<std::string> set_names;
  for (const auto& s : sh.sets) set_names.push_back(s.folder.name);
  nlohmann::json summary = {{"experiment", "verifiers"}, {"encoder", opt.encoder}, {"train", sh.train},
                            {"nearmiss_test", test},     {"datasets", set_names},   {"candidates", opt.candidates},
                            {"seeds", agg}};
  write_json(path_join(opt.out_dir, "results.json"), summary);
  const size_t nseeds = agg.contains("seeds") ? agg["seeds"].size() : opt.seeds.size();
  std::string md = "# Verifiers F0–F4: reranking and near-miss rejection\n\nEncoder `" + opt.encoder +
                   "`; evaluation sets: ";
  for (size_t i = 0; i < set_names.size(); ++i) md += (i ? ", " : "") + set_names[i];
  md += "; near-miss pairs: `" + test + "`.\n\n";
  md += render(agg, opt, std::vector<std::string>(cats.begin(), cats.end()), nseeds);
  write_text(path_join(opt.out_dir, "table.md"), md);
  write_plots(agg, opt, path_join(opt.out_dir, "plots"));
  return md;
}

}  // namespace sieve::experiment
