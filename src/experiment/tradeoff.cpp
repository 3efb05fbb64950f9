#include "experiment/tradeoff.h"

#include <chrono>
#include <cmath>
#include <filesystem>

#include "core/file_util.h"
#include "core/log.h"
#include "eval/pairs.h"
#include "eval/report.h"
#include "experiment/experiment_data.h"
#include "experiment/experiment_eval.h"
#include "experiment/space_eval.h"
#include "sieve/error.h"
#include "sieve/train.h"

namespace sieve::experiment {
namespace {

// Trains one model, or reuses it when a previous run of the experiment finished it.
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

std::string render_table(const nlohmann::json& agg, const nlohmann::json& backbone,
                         const std::vector<std::string>& sets, size_t seeds) {
  std::vector<std::string> cols = sets;
  cols.push_back("mean");
  std::vector<std::string> header = {"Model"};
  for (const auto& c : cols)
    for (const char* m : {"nDCG@10", "Acc@1"}) header.push_back(c + " " + m);
  eval::MarkdownTable t(header);
  std::vector<std::string> row = {"Backbone (zero-shot)"};
  for (const auto& c : cols)
    for (const char* m : {"ndcg@10", "acc@1"}) row.push_back(eval::fmt_mean_std(cell(backbone, {c, m})));
  t.add_row(row);
  for (const char* model : {"model_a", "model_b"}) {
    row = {std::string(model) == "model_a" ? "Model A" : "Model B (+ structural negatives)"};
    for (const auto& c : cols)
      for (const char* m : {"ndcg@10", "acc@1"}) row.push_back(eval::fmt_mean_std(cell(agg, {model, c, m})));
    t.add_row(row);
  }
  row = {"Δ (B − A)"};
  std::vector<std::string> rel = {"Δ (B − A) relative"};
  for (const auto& c : cols)
    for (const char* m : {"ndcg@10", "acc@1"}) {
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

std::string run_tradeoff(const TradeoffOptions& opt) {
  SIEVE_THROW_IF_NOT(!opt.out_dir.empty(), "the experiment needs an output folder");
  SIEVE_THROW_IF_NOT(!opt.backbone.empty(), "the experiment needs a backbone model");
  SIEVE_THROW_IF_NOT(!opt.train.empty(), "the experiment needs training data for Model A (--train)");
  SIEVE_THROW_IF_NOT(!opt.beir.empty(), "the experiment needs at least one BEIR folder to evaluate on (--beir)");
  const std::string out = opt.out_dir;
  check_options(out, {{"backbone", opt.backbone}, {"train", opt.train}, {"structural", opt.structural},
                      {"nearmiss_test", opt.nearmiss_test}, {"beir", opt.beir}, {"split", opt.split},
                      {"steps", opt.steps}, {"batch_size", opt.batch_size}, {"max_length", opt.max_length},
                      {"lr", opt.lr}, {"weight_decay", opt.weight_decay}, {"scale", opt.scale},
                      {"max_train_rows", opt.max_train_rows}, {"max_structural", opt.max_structural},
                      {"max_queries", opt.max_queries}, {"max_test_pairs", opt.max_test_pairs}});
  const std::string data_dir = path_join(out, "data"), cache = path_join(out, "indexes");
  const std::vector<EvalSet> sets = load_eval_sets(opt.beir, opt.split);  // fail early on a bad folder
  std::vector<std::string> set_names;
  for (const auto& s : sets) set_names.push_back(s.folder.name);

  // Data: Model A's rows, Model B's = A's + identity triplets of the structural near-misses.
  std::string structural = opt.structural, test_pairs = opt.nearmiss_test;
  if (structural.empty() || test_pairs.empty()) {
    const GeneratedNearMisses g = generate_nearmiss_data(data_dir, 42, 0, opt.max_test_pairs);
    if (structural.empty()) structural = g.train_pairs;
    if (test_pairs.empty()) test_pairs = g.test_pairs;
  }
  const std::string a_data = path_join(data_dir, "model_a.jsonl"), b_data = path_join(data_dir, "model_b.jsonl");
  if (!is_file(a_data) || !is_file(b_data)) {
    std::vector<train::TrainExample> rows;
    for (const auto& src : opt.train) {
      auto part = train::read_training_data(src);
      rows.insert(rows.end(), part.begin(), part.end());
    }
    if (opt.max_train_rows > 0 && rows.size() > opt.max_train_rows) rows.resize(opt.max_train_rows);
    write_training_jsonl(a_data, rows);
    const size_t a_rows = rows.size();
    auto extra = identity_triplets(structural, opt.max_structural);
    rows.insert(rows.end(), extra.begin(), extra.end());
    write_training_jsonl(b_data, rows);
    log_info("Model A: " + std::to_string(a_rows) + " training rows; Model B: " + std::to_string(rows.size()) +
             " (+" + std::to_string(extra.size()) + " identity triplets of near-misses)");
  }

  EncoderOptions enc;
  enc.threads = opt.threads;
  enc.device = opt.device;
  RetrievalEvalOptions ro;
  ro.max_queries = opt.max_queries;
  ro.ks = {1, 10, 100};
  const std::string backbone_file = path_join(out, "backbone/results.json");
  if (!is_file(backbone_file)) write_json(backbone_file, evaluate_on_sets(opt.backbone, sets, cache, ro, false, enc));
  const nlohmann::json backbone = read_json(backbone_file);

  std::vector<eval::SentencePair> test = eval::read_pairs(test_pairs);
  for (uint64_t seed : opt.seeds) {
    const std::string sd = path_join(out, "seed_" + std::to_string(seed));
    const std::string results = path_join(sd, "results.json");
    if (is_file(results)) {
      log_info("seed " + std::to_string(seed) + " already done (" + results + ")");
      continue;
    }
    nlohmann::json j;
    j["train"]["model_a"] = train_once(opt, a_data, path_join(sd, "model_a"), seed);
    j["train"]["model_b"] = train_once(opt, b_data, path_join(sd, "model_b"), seed);
    const std::string a = path_join(sd, "model_a/last"), b = path_join(sd, "model_b/last");
    j["model_a"] = evaluate_on_sets(a, sets, cache, ro, false, enc);
    j["model_b"] = evaluate_on_sets(b, sets, cache, ro, false, enc);
    SpaceEvalOptions so;
    so.max_pairs = opt.max_test_pairs;
    so.encoder = enc;
    const SpaceEval space = evaluate_space(a, b, test, so);
    write_space_report(space, path_join(sd, "space"));
    j["space"] = space_json(space);
    j["seed"] = seed;
    write_json(results, j);
  }

  nlohmann::json agg = aggregate_seed_results(out, opt.seeds);
  nlohmann::json summary = {{"experiment", "tradeoff"},     {"backbone_model", opt.backbone},
                            {"train", opt.train},           {"structural", structural},
                            {"nearmiss_test", test_pairs},  {"datasets", set_names},
                            {"steps", opt.steps},           {"batch_size", opt.batch_size},
                            {"backbone", backbone},         {"seeds", agg}};
  write_json(path_join(out, "results.json"), summary);
  const size_t nseeds = agg.contains("seeds") ? agg["seeds"].size() : opt.seeds.size();
  std::string md = "# Identity trade-off: Model A vs Model B\n\n";
  md += "Backbone `" + opt.backbone + "`, " + std::to_string(nseeds) + " seed(s), " + std::to_string(opt.steps) +
        " steps of batch " + std::to_string(opt.batch_size) + ". Cells are mean ± std over seeds (population std); " +
        "Δ's std is sqrt(σA² + σB²).\n\n## Zero-shot retrieval\n\n";
  md += render_table(agg, backbone, set_names, nseeds);
  md += "\n## Pooled cosine of held-apart pairs (mean over seeds; lower separates better)\n\n";
  md += render_space_table(agg);
  write_text(path_join(out, "table.md"), md);
  write_plots(agg, backbone, set_names, path_join(out, "plots"));
  return md;
}

}  // namespace sieve::experiment
