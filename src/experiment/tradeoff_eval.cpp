#include "experiment/tradeoff_eval.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "core/file_util.h"
#include "eval/report.h"
#include "experiment/experiment_data.h"
#include "experiment/experiment_eval.h"
#include "experiment/nearmiss_eval.h"
#include "sieve/error.h"

namespace sieve::experiment {
namespace {

bool is_positive(const eval::SentencePair& p) {
  const auto& pos = eval::default_positive_categories();
  for (const std::string& c : {p.category, p.label})
    if (!c.empty() && std::find(pos.begin(), pos.end(), c) != pos.end()) return true;
  return p.label == "1";
}

void cap_pairs(std::vector<eval::SentencePair>& rows, size_t max_rows) {
  if (max_rows == 0 || rows.size() <= max_rows) return;
  std::map<std::string, std::vector<size_t>> by_cat;
  for (size_t i = 0; i < rows.size(); ++i) by_cat[rows[i].category + "/" + rows[i].label].push_back(i);
  std::vector<size_t> keep;
  for (size_t round = 0; keep.size() < max_rows; ++round)
    for (const auto& [cat, idx] : by_cat)
      if (round < idx.size() && keep.size() < max_rows) keep.push_back(idx[round]);
  std::sort(keep.begin(), keep.end());
  std::vector<eval::SentencePair> out;
  for (size_t i : keep) out.push_back(std::move(rows[i]));
  rows = std::move(out);
}

nlohmann::json stat_json(const eval::MeanStd& s, size_t n) {
  return {{"n", n}, {"cos_mean", s.mean}, {"cos_std", s.std}};
}

// The paper's reference means for gte-small (Model A, Model B) per generator category.
const std::map<std::string, std::pair<double, double>>& paper_means() {
  static const std::map<std::string, std::pair<double, double>> m = {
      {"negation", {0.948, 0.638}}, {"binding_swap", {0.949, 0.981}}, {"spatial_flip", {0.992, -0.073}}};
  return m;
}

}  // namespace

std::vector<PairSet> load_pair_sets(const std::string& generated_test, const std::vector<std::string>& files,
                                    size_t max_pairs) {
  std::vector<PairSet> sets;
  PairSet g{"generated", eval::read_pairs(generated_test), false};
  std::vector<eval::SentencePair> positives;
  for (const auto& p : g.pairs)
    if (is_positive(p)) positives.push_back(p);
  sets.push_back(std::move(g));
  for (const auto& f : files) {
    PairSet s{std::filesystem::path(f).stem().string(), eval::read_pairs(f), false};
    cap_pairs(s.pairs, max_pairs);
    bool own = false;
    for (const auto& p : s.pairs) own |= is_positive(p);
    if (!own) {
      SIEVE_THROW_IF_NOT(!positives.empty(), "near-miss set '" << f << "' has no positive pairs and the generated "
                                                                   "test set has none to lend");
      s.pairs.insert(s.pairs.end(), positives.begin(), positives.end());
      s.borrowed_positives = true;
    }
    sets.push_back(std::move(s));
  }
  return sets;
}

nlohmann::json separation_json(const std::string& model, const std::vector<PairSet>& sets, const EncoderOptions& enc) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& s : sets) {
    NearMissEvalOptions o;
    o.encoder = enc;
    // Categories of human sets that mark meaning kept under another name ("paraphrase" is listed).
    const NearMissEval e = evaluate_nearmisses(model, s.pairs, {Scorer{"cosine"}}, o);
    const ScorerResult& r = e.scorers.at(0);
    nlohmann::json j;
    j["positives"] = stat_json(r.positives, e.positives);
    j["positive_pairs"] = s.borrowed_positives ? "generated test set's" : "own";
    for (const auto& c : r.categories) {
      j["categories"][c.category] = stat_json(c.score, c.score.n);
      j["categories"][c.category]["auc"] = c.auc;
    }
    j["overall"] = stat_json(r.overall.score, e.nearmisses);
    j["overall"]["auc"] = r.overall.auc;
    out[s.name] = j;
  }
  return out;
}

std::string render_data_table(const nlohmann::json& r) {
  eval::MarkdownTable t({"Model", "Source", "Rows", "Hard negatives", "Categories"});
  for (const char* m : {"model_a", "model_b"}) {
    if (!r.contains(m)) continue;
    for (const auto& s : r[m]["sources"]) {
      std::string cats;
      for (const auto& [c, n] : s["categories"].items()) cats += (cats.empty() ? "" : ", ") + c + " " + n.dump();
      t.add_row({m == std::string("model_a") ? "A" : "B", std::filesystem::path(s["source"].get<std::string>()).filename().string(),
                 std::to_string(s["rows"].get<size_t>()),
                 s.contains("negatives") ? std::to_string(s["negatives"].get<size_t>()) : "identity", cats});
    }
    t.add_row({m == std::string("model_a") ? "A" : "B", "**total**", std::to_string(r[m]["rows"].get<size_t>()),
               "", "seen " + std::to_string(r[m]["rows_seen"].get<size_t>()) + " rows = " +
                       eval::fmt_num(r[m]["epochs"].get<double>(), 2) + " epochs"});
  }
  return t.str();
}

std::string render_separation_tables(const nlohmann::json& backbone, const nlohmann::json& agg,
                                     const std::vector<PairSet>& sets) {
  std::string md;
  for (const auto& s : sets) {
    const bool gen = s.name == "generated";
    md += "### Separation on " + s.name + (s.borrowed_positives ? " (positives: the generated test set's)" : "") +
          "\n\nPooled cosine, mean ± std over the pairs (A and B: averaged over seeds); AUC of positives against the "
          "category (higher separates better).\n\n";
    std::vector<std::string> header = {"Category", "N", "Backbone cos", "A cos", "B cos", "Backbone AUC", "A AUC",
                                       "B AUC", "Δ AUC (B − A)"};
    if (gen) header.insert(header.end(), {"paper A", "paper B"});
    eval::MarkdownTable t(header);
    std::set<std::string> cats;
    if (backbone.contains("separation") && backbone["separation"].contains(s.name) &&
        backbone["separation"][s.name].contains("categories"))
      for (const auto& [c, v] : backbone["separation"][s.name]["categories"].items()) cats.insert(c);
    std::vector<std::string> rows(cats.begin(), cats.end());
    rows.push_back("overall");
    for (const auto& c : rows) {
      auto path = [&](const std::string& leaf_name) {
        return c == "overall" ? std::vector<std::string>{"separation", s.name, "overall", leaf_name}
                              : std::vector<std::string>{"separation", s.name, "categories", c, leaf_name};
      };
      const eval::MeanStd n = cell(backbone, path("n"));
      auto cos = [&](const nlohmann::json& j, const std::string& model) {
        std::vector<std::string> p = path("cos_mean");
        if (!model.empty()) p.insert(p.begin(), model);
        eval::MeanStd m = cell(j, p);
        std::vector<std::string> q = path("cos_std");
        if (!model.empty()) q.insert(q.begin(), model);
        const eval::MeanStd sd = cell(j, q);
        return eval::fmt_num(m.mean) + " ± " + eval::fmt_num(sd.mean);
      };
      auto auc = [&](const nlohmann::json& j, const std::string& model) {
        std::vector<std::string> p = path("auc");
        if (!model.empty()) p.insert(p.begin(), model);
        return cell(j, p);
      };
      const eval::MeanStd aa = auc(agg, "model_a"), ab = auc(agg, "model_b");
      const eval::MeanStd d = eval::difference(aa, ab);
      std::vector<std::string> row = {c, eval::fmt_num(n.mean, 0), cos(backbone, ""), cos(agg, "model_a"),
                                      cos(agg, "model_b"), eval::fmt_num(auc(backbone, "").mean),
                                      eval::fmt_mean_std(aa), eval::fmt_mean_std(ab),
                                      eval::fmt_signed(d.mean) + (std::isnan(d.std) ? "" : " ± " + eval::fmt_num(d.std))};
      if (gen) {
        auto it = paper_means().find(c);
        row.push_back(it == paper_means().end() ? "" : eval::fmt_num(it->second.first));
        row.push_back(it == paper_means().end() ? "" : eval::fmt_num(it->second.second));
      }
      t.add_row(row);
    }
    md += t.str() + "\n";
  }
  return md;
}

void write_tradeoff_scatter(const std::string& out_dir, const nlohmann::json& backbone,
                            const std::vector<uint64_t>& seeds, const std::string& path) {
  auto point = [](const nlohmann::json& j) {
    return std::make_pair(cell(j, {"separation", "generated", "overall", "auc"}).mean, cell(j, {"mean", "ndcg@10"}).mean);
  };
  std::vector<eval::ScatterSeries> series(3);
  series[0].name = "Backbone";
  series[1].name = "Model A";
  series[2].name = "Model B";
  const auto b = point(backbone);
  series[0].x.push_back(b.first);
  series[0].y.push_back(b.second);
  for (uint64_t seed : seeds) {
    const std::string f = path_join(out_dir, "seed_" + std::to_string(seed) + "/results.json");
    if (!is_file(f)) continue;
    const nlohmann::json j = read_json(f);
    for (size_t m = 0; m < 2; ++m) {
      const auto p = point(j[m == 0 ? "model_a" : "model_b"]);
      series[m + 1].x.push_back(p.first);
      series[m + 1].y.push_back(p.second);
      series[m + 1].labels.push_back("seed " + std::to_string(seed));
    }
  }
  write_text(path, eval::svg_scatter("Zero-shot nDCG@10 against near-miss AUC (pooled cosine)", series,
                                     "near-miss AUC (generated held-apart pairs)", "mean nDCG@10"));
}

}  // namespace sieve::experiment
