#include "experiment/tradeoff.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>

#include "core/checksum.h"
#include "core/file_util.h"
#include "core/log.h"
#include "eval/pairs.h"
#include "eval/report.h"
#include "experiment/experiment_data.h"
#include "experiment/experiment_eval.h"
#include "experiment/hard_negatives.h"
#include "experiment/space_eval.h"
#include "experiment/tradeoff_eval.h"
#include "sieve/error.h"
#include "sieve/train.h"

namespace sieve::experiment {
namespace {

// Trains one model, reuses it when a previous run finished it, or resumes it from its newest
// checkpoint when a previous run was interrupted.
nlohmann::json train_once(const TradeoffOptions& opt, const std::string& data, const std::string& out, uint64_t seed) {
  const std::string report = path_join(out, "report.json");
  if (is_file(report) && is_dir(path_join(out, "last"))) {
    log_info("reusing the trained model in " + out);
    return read_json(report);
  }
  EncoderTrainOptions t;
  t.common.out_dir = out;
  t.common.steps = opt.steps;
  t.common.batch_size = opt.batch_size;
  t.common.seed = seed;
  t.common.threads = opt.threads;
  t.common.device = opt.device;
  t.common.log_every = std::max<size_t>(1, opt.steps / 20);
  t.common.save_every = opt.save_every ? opt.save_every : std::max<size_t>(1, opt.steps / 10);
  t.common.resume = has_checkpoint(out);
  if (t.common.resume) log_info("resuming the interrupted training in " + out);
  t.model_dir = opt.backbone;
  t.train_path = data;
  t.lr = opt.lr;
  t.weight_decay = opt.weight_decay;
  t.scale = opt.scale;
  t.max_length = opt.max_length;
  train_encoder(t);
  return read_json(report);
}

std::string pct(double delta, double base) {
  return base != 0 && !std::isnan(base) ? eval::fmt_signed(100.0 * delta / base, 1) + "%" : "n/a";
}

// One measure: rows backbone, A, B, B - A and its relative size; columns the sets and their mean.
std::string render_table(const nlohmann::json& agg, const nlohmann::json& backbone,
                         const std::vector<std::string>& sets, size_t seeds, const std::string& m) {
  std::vector<std::string> cols = sets;
  cols.push_back("mean");
  std::vector<std::string> header = {"Model"};
  for (const auto& c : cols) header.push_back(c);
  eval::MarkdownTable t(header);
  std::vector<std::string> row = {"Backbone (zero-shot)"};
  for (const auto& c : cols) row.push_back(eval::fmt_mean_std(cell(backbone, {c, m})));
  t.add_row(row);
  for (const char* model : {"model_a", "model_b"}) {
    row = {std::string(model) == "model_a" ? "Model A" : "Model B (+ structural negatives)"};
    for (const auto& c : cols) row.push_back(eval::fmt_mean_std(cell(agg, {model, c, m})));
    t.add_row(row);
  }
  row = {"Δ (B − A)"};
  std::vector<std::string> rel = {"Δ (B − A) relative"};
  for (const auto& c : cols) {
    const eval::MeanStd a = cell(agg, {"model_a", c, m}), b = cell(agg, {"model_b", c, m});
    const eval::MeanStd d = eval::difference(a, b);
    row.push_back(eval::fmt_signed(d.mean) + (seeds > 1 ? " ± " + eval::fmt_num(d.std) : ""));
    rel.push_back(pct(d.mean, a.mean));
  }
  t.add_row(row);
  t.add_row(rel);
  return t.str();
}

std::string render_space_table(const nlohmann::json& agg) {
  eval::MarkdownTable t({"Perturbation", "N", "A", "B", "Δ (B − A)", "B-win rate"});
  if (!agg.contains("space")) return t.str();
  auto add = [&](const std::string& name, const std::vector<std::string>& base) {
    auto path = [&](std::vector<std::string> tail) {
      std::vector<std::string> p = base;
      p.insert(p.end(), tail.begin(), tail.end());
      return p;
    };
    t.add_row({name, eval::fmt_num(cell(agg, path({"n"})).mean, 0),
               eval::fmt_num(cell(agg, path({"model_a", "mean"})).mean),
               eval::fmt_num(cell(agg, path({"model_b", "mean"})).mean),
               eval::fmt_signed(cell(agg, path({"delta", "mean"})).mean),
               eval::fmt_num(100.0 * cell(agg, path({"b_win_rate"})).mean, 1) + "%"});
  };
  if (agg["space"].contains("categories"))
    for (const auto& [cat, v] : agg["space"]["categories"].items()) add(cat, {"space", "categories", cat});
  add("overall", {"space", "overall"});
  return t.str();
}

void write_plots(const nlohmann::json& agg, const nlohmann::json& backbone, const std::vector<std::string>& sets,
                 const std::string& dir) {
  std::vector<std::string> groups = sets;
  groups.push_back("mean");
  for (const auto& metric : std::vector<std::pair<std::string, std::string>>{{"ndcg@10", "nDCG@10"}, {"acc@1", "Acc@1"}}) {
    const std::string& m = metric.first;  // (not a structured binding: C++17 lambdas cannot capture one)
    const std::string& label = metric.second;
    std::vector<eval::BarSeries> series;
    auto add = [&](const std::string& name, const nlohmann::json& j, const std::string& model) {
      eval::BarSeries s;
      s.name = name;
      for (const auto& g : groups) {
        const eval::MeanStd c = model.empty() ? cell(j, {g, m}) : cell(j, {model, g, m});
        s.values.push_back(c.mean);
        s.errors.push_back(std::isnan(c.std) ? 0.0 : c.std);
      }
      series.push_back(std::move(s));
    };
    add("Backbone", backbone, "");
    add("Model A", agg, "model_a");
    add("Model B", agg, "model_b");
    write_text(path_join(dir, "tradeoff_" + std::string(m == "ndcg@10" ? "ndcg10" : "acc1") + ".svg"),
               eval::svg_bar_chart("Zero-shot " + label + ": Model A vs Model B", groups, series, label));
  }
}

}  // namespace

namespace {

// Category counts of training rows ("" counts as "uncategorised").
nlohmann::json category_counts(const std::vector<train::TrainExample>& rows) {
  std::map<std::string, size_t> n;
  for (const auto& r : rows) ++n[r.category.empty() ? "uncategorised" : r.category];
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [c, k] : n) j[c] = k;
  return j;
}

size_t negatives_in(const std::vector<train::TrainExample>& rows) {
  size_t n = 0;
  for (const auto& r : rows) n += r.negatives.size();
  return n;
}

// Model A's rows (every --train source, each capped) and Model B's (A's + identity triplets of
// the structural near-misses), written once to DATA/model_{a,b}.jsonl with DATA/report.json.
void build_training_data(const TradeoffOptions& opt, const std::string& data_dir, const std::string& structural) {
  const std::string a_data = path_join(data_dir, "model_a.jsonl"), b_data = path_join(data_dir, "model_b.jsonl");
  const std::string report_path = path_join(data_dir, "report.json");
  if (is_file(a_data) && is_file(b_data) && is_file(report_path)) return;
  nlohmann::json report;
  std::vector<train::TrainExample> rows;
  EncoderOptions enc;
  enc.threads = opt.threads;
  enc.device = opt.device;
  enc.max_length = opt.max_length;  // as the paper's script: max_seq_length 128 for every run
  for (const auto& src : opt.train) {
    std::vector<train::TrainExample> part;
    nlohmann::json s = {{"source", src}};
    if (is_dir(src) && opt.hard_negatives > 0) {
      HardNegativeOptions h;
      h.per_ranker = opt.hard_negatives;
      MiningReport m;
      part = beir_triplets(src, "train", opt.backbone, path_join(opt.out_dir, "indexes"), h, enc, &m);
      s["kind"] = "BEIR train qrels with mined hard negatives";
      s["mining"] = {{"queries", m.queries},
                     {"rows", m.rows},
                     {"negatives", m.negatives},
                     {"per_ranker", m.per_ranker},
                     {"per_ranker_depth", h.depth},
                     {"rows_without_negative", m.rows_without_negative},
                     {"miner", opt.backbone}};
    } else {
      part = train::read_training_data(src);
      s["kind"] = is_dir(src) ? "BEIR train qrels as pairs" : "training file";
      s["rows_read"] = part.size();
      if (!opt.train_categories.empty() && !is_dir(src)) {
        const size_t before = part.size();
        part.erase(std::remove_if(part.begin(), part.end(),
                                  [&](const train::TrainExample& r) {
                                    return std::find(opt.train_categories.begin(), opt.train_categories.end(),
                                                     r.category) == opt.train_categories.end();
                                  }),
                   part.end());
        s["rows_outside_categories"] = before - part.size();
      }
    }
    if (!s.contains("rows_read")) s["rows_read"] = part.size();
    cap_by_category(part, opt.max_train_rows);
    s["rows"] = part.size();
    s["negatives"] = negatives_in(part);
    s["categories"] = category_counts(part);
    report["model_a"]["sources"].push_back(s);
    rows.insert(rows.end(), part.begin(), part.end());
  }
  write_training_jsonl(a_data, rows);
  report["model_a"]["rows"] = rows.size();
  report["model_a"]["categories"] = category_counts(rows);
  const size_t a_rows = rows.size();
  auto extra = identity_triplets(structural, opt.max_structural);
  nlohmann::json sb = {{"source", structural},
                       {"kind", "identity triplets of near-misses (anchor = positive = original, negative = edit)"},
                       {"rows", extra.size()},
                       {"categories", category_counts(extra)}};
  rows.insert(rows.end(), extra.begin(), extra.end());
  write_training_jsonl(b_data, rows);
  report["model_b"]["sources"] = report["model_a"]["sources"];
  report["model_b"]["sources"].push_back(sb);
  report["model_b"]["rows"] = rows.size();
  report["model_b"]["categories"] = category_counts(rows);
  for (const char* m : {"model_a", "model_b"}) {
    const double n = report[m]["rows"].get<double>();
    report[m]["rows_seen"] = opt.steps * opt.batch_size;
    report[m]["epochs"] = n > 0 ? static_cast<double>(opt.steps * opt.batch_size) / n : 0.0;
  }
  write_json(report_path, report);
  log_info("Model A: " + std::to_string(a_rows) + " training rows; Model B: " + std::to_string(rows.size()) + " (+" +
           std::to_string(extra.size()) + " identity triplets of near-misses); see " + report_path);
}

// Evaluates one model (retrieval on every set, pooled-space separation on every pair set), or
// reads the evaluation a previous run wrote to `file`.
nlohmann::json evaluate_model(const std::string& model, const std::vector<EvalSet>& sets,
                              const std::vector<PairSet>& pair_sets, const std::string& cache,
                              const RetrievalEvalOptions& ro, const EncoderOptions& enc, const std::string& file) {
  if (is_file(file)) return read_json(file);
  nlohmann::json j = evaluate_on_sets(model, sets, cache, ro, false, enc,
                                      path_join(std::filesystem::path(file).parent_path().string(), "runs"));
  j["separation"] = separation_json(model, pair_sets, enc);
  write_json(file, j);
  return j;
}


// The same file or folder named by another path (relative, through a link) is the same option.
std::string canonical(const std::string& p) {
  if (p.empty()) return p;
  std::error_code ec;
  const auto c = std::filesystem::weakly_canonical(p, ec);
  return ec ? p : c.string();
}

std::vector<std::string> canonical(std::vector<std::string> ps) {
  for (auto& p : ps) p = canonical(p);
  return ps;
}

}  // namespace

std::string run_tradeoff(const TradeoffOptions& given) {
  TradeoffOptions opt = given;
  opt.backbone = canonical(opt.backbone);
  opt.train = canonical(opt.train);
  opt.structural = canonical(opt.structural);
  opt.nearmiss_test = canonical(opt.nearmiss_test);
  opt.beir = canonical(opt.beir);
  opt.nearmiss_sets = canonical(opt.nearmiss_sets);
  SIEVE_THROW_IF_NOT(!opt.out_dir.empty(), "the experiment needs an output folder");
  SIEVE_THROW_IF_NOT(!opt.backbone.empty(), "the experiment needs a backbone model");
  SIEVE_THROW_IF_NOT(!opt.train.empty(), "the experiment needs training data for Model A (--train)");
  SIEVE_THROW_IF_NOT(!opt.beir.empty(), "the experiment needs at least one BEIR folder to evaluate on (--beir)");
  const std::string out = opt.out_dir;
  // What a trained model depends on; the evaluation's own settings are checked apart, so that a
  // --train-only run can be evaluated later.
  check_options(out, {{"backbone", opt.backbone}, {"train", opt.train}, {"hard_negatives", opt.hard_negatives},
                      {"train_categories", opt.train_categories},
                      {"structural", opt.structural}, {"nearmiss_test", opt.nearmiss_test},
                      {"steps", opt.steps}, {"batch_size", opt.batch_size}, {"max_length", opt.max_length},
                      {"lr", opt.lr}, {"weight_decay", opt.weight_decay}, {"scale", opt.scale},
                      {"max_train_rows", opt.max_train_rows}, {"max_structural", opt.max_structural},
                      {"max_test_pairs", opt.max_test_pairs}});
  const std::string data_dir = path_join(out, "data"), cache = path_join(out, "indexes");
  const std::vector<EvalSet> sets = load_eval_sets(opt.beir, opt.split);  // fail early on a bad folder
  std::vector<std::string> set_names;
  for (const auto& s : sets) set_names.push_back(s.folder.name);
  for (const auto& f : opt.nearmiss_sets) SIEVE_THROW_IF_NOT(is_file(f), "near-miss set '" << f << "' does not exist");

  std::string structural = opt.structural, test_pairs = opt.nearmiss_test;
  if (structural.empty() || test_pairs.empty()) {
    const GeneratedNearMisses g = generate_nearmiss_data(data_dir, 42, 0, opt.max_test_pairs);
    if (structural.empty()) structural = g.train_pairs;
    if (test_pairs.empty()) test_pairs = g.test_pairs;
  }
  build_training_data(opt, data_dir, structural);
  const std::string a_data = path_join(data_dir, "model_a.jsonl"), b_data = path_join(data_dir, "model_b.jsonl");

  // Training first, for every seed: the long part, resumable model by model.
  std::map<uint64_t, nlohmann::json> trained;
  for (uint64_t seed : opt.seeds) {
    const std::string sd = path_join(out, "seed_" + std::to_string(seed));
    trained[seed]["model_a"] = train_once(opt, a_data, path_join(sd, "model_a"), seed);
    trained[seed]["model_b"] = train_once(opt, b_data, path_join(sd, "model_b"), seed);
  }
  if (opt.train_only) {
    log_info("trained every model (--train-only); run again without it to evaluate");
    return "";
  }
  // Each evaluation (its sets and settings) has its own folder, so that the trained models can be
  // evaluated again on other data without training anything.
  const nlohmann::json eval_options = {{"beir", opt.beir},
                                       {"split", opt.split},
                                       {"max_queries", opt.max_queries},
                                       {"max_test_pairs", opt.max_test_pairs},
                                       {"nearmiss_sets", opt.nearmiss_sets}};
  const std::string settings = eval_options.dump();
  const std::string eval_name =
      !opt.eval_name.empty() ? opt.eval_name : "eval-" + sha256_hex(settings.data(), settings.size()).substr(0, 8);
  const std::string ev = path_join(out, "evaluations/" + eval_name);
  check_options(ev, eval_options);
  log_info("evaluating into " + ev);

  EncoderOptions enc;
  enc.threads = opt.threads;
  enc.device = opt.device;
  enc.max_length = opt.max_length;  // as the paper's script: max_seq_length 128 for every run
  RetrievalEvalOptions ro;
  ro.max_queries = opt.max_queries;
  ro.ks = {1, 10, 100};
  const std::vector<PairSet> pair_sets = load_pair_sets(test_pairs, opt.nearmiss_sets, opt.max_test_pairs);
  const nlohmann::json backbone =
      evaluate_model(opt.backbone, sets, pair_sets, cache, ro, enc, path_join(ev, "backbone/results.json"));

  std::vector<eval::SentencePair> test = eval::read_pairs(test_pairs);
  for (uint64_t seed : opt.seeds) {
    const std::string sd = path_join(out, "seed_" + std::to_string(seed));
    const std::string ed = path_join(ev, "seed_" + std::to_string(seed));
    const std::string results = path_join(ed, "results.json");
    if (is_file(results)) {
      log_info("seed " + std::to_string(seed) + " already done (" + results + ")");
      continue;
    }
    nlohmann::json j;
    j["train"] = trained[seed];
    const std::string a = path_join(sd, "model_a/last"), b = path_join(sd, "model_b/last");
    j["model_a"] = evaluate_model(a, sets, pair_sets, cache, ro, enc, path_join(ed, "model_a/eval.json"));
    j["model_b"] = evaluate_model(b, sets, pair_sets, cache, ro, enc, path_join(ed, "model_b/eval.json"));
    SpaceEvalOptions so;
    so.max_pairs = opt.max_test_pairs;
    so.encoder = enc;
    const SpaceEval space = evaluate_space(a, b, test, so);
    write_space_report(space, path_join(ed, "space"));
    j["space"] = space_json(space);
    j["seed"] = seed;
    write_json(results, j);
  }

  nlohmann::json agg = aggregate_seed_results(ev, opt.seeds);
  const nlohmann::json data_report = read_json(path_join(data_dir, "report.json"));
  nlohmann::json summary = {{"experiment", "tradeoff"},     {"backbone_model", opt.backbone},
                            {"train", opt.train},           {"structural", structural},
                            {"nearmiss_test", test_pairs},  {"nearmiss_sets", opt.nearmiss_sets},
                            {"datasets", set_names},        {"steps", opt.steps},
                            {"batch_size", opt.batch_size}, {"evaluation", eval_name},
                            {"data", data_report},          {"backbone", backbone},
                            {"seeds", agg}};
  const size_t nseeds = agg.contains("seeds") ? agg["seeds"].size() : opt.seeds.size();
  std::string md = "# Identity trade-off: Model A vs Model B\n\n";
  md += "Backbone `" + opt.backbone + "`, " + std::to_string(nseeds) + " seed(s), " + std::to_string(opt.steps) +
        " steps of batch " + std::to_string(opt.batch_size) + ". Cells are mean ± std over seeds (population std); " +
        "Δ's std is sqrt(σA² + σB²). Evaluation `" + eval_name + "`.\n\n";
  md += "## Training data\n\n" + render_data_table(data_report) + "\n";
  for (const auto& [key, label] : std::vector<std::pair<std::string, std::string>>{
           {"ndcg@10", "nDCG@10"}, {"mrr@10", "MRR@10"}, {"acc@1", "Acc@1"}, {"acc@10", "Acc@10"}}) {
    md += "## Zero-shot " + label + "\n\n" + render_table(agg, backbone, set_names, nseeds, key) + "\n";
  }
  md += "## Pooled cosine of held-apart pairs, A against B (mean over seeds; lower separates better)\n\n";
  md += render_space_table(agg);
  md += "\n" + render_separation_tables(backbone, agg, pair_sets);
  // The evaluation's own folder, and OUT's top level (the latest evaluation).
  for (const std::string& dir : {ev, out}) {
    write_json(path_join(dir, "results.json"), summary);
    write_text(path_join(dir, "table.md"), md);
    write_plots(agg, backbone, set_names, path_join(dir, "plots"));
    write_tradeoff_scatter(ev, backbone, opt.seeds, path_join(dir, "plots/ndcg_vs_nearmiss_auc.svg"));
  }
  return md;
}

}  // namespace sieve::experiment
