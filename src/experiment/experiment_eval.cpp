#include "experiment/experiment_eval.h"

#include <cmath>
#include <filesystem>
#include <sstream>
#include <set>

#include "core/file_util.h"
#include "core/log.h"
#include "sieve/error.h"

namespace sieve::experiment {

const std::vector<std::string> kTableMeasures = {"ndcg@10", "mrr@10", "acc@1", "acc@10", "recall@100"};

std::vector<EvalSet> load_eval_sets(const std::vector<std::string>& dirs, const std::string& split) {
  std::vector<EvalSet> sets;
  std::set<std::string> names;
  for (const auto& d : dirs) {
    EvalSet s;
    s.folder = beir_folder(d, split);
    SIEVE_THROW_IF_NOT(names.insert(s.folder.name).second,
                       "two evaluation folders are named '" + s.folder.name + "'; results are keyed by folder name");
    s.queries = eval::read_queries(s.folder.queries);
    s.qrels = eval::read_qrels(s.folder.qrels);
    sets.push_back(std::move(s));
  }
  return sets;
}

nlohmann::json evaluate_on_sets(const std::string& model, const std::vector<EvalSet>& sets,
                                const std::string& index_cache, const RetrievalEvalOptions& ro,
                                bool keep_index, const EncoderOptions& enc, const std::string& run_dir) {
  nlohmann::json out;
  std::map<std::string, double> sums;
  IndexBuildOptions build;
  build.store_tokens = !ro.verifier.empty();
  for (const auto& s : sets) {
    const std::string dir = cached_index(model, s.folder.corpus, index_cache, build, enc);
    IndexOpenOptions oo;
    oo.model_dir = model;
    oo.encoder = enc;
    auto index = Index::open(dir, oo);
    RetrievalEvalOptions o = ro;
    if (o.ks.empty()) o.ks = {1, 10, 100};
    nlohmann::json j;
    const RetrievalEvalResult r = evaluate_retrieval(*index, s.queries, s.qrels, o);
    for (const auto& m : kTableMeasures) j[m] = r.evaluation.mean.at(m);
    j["queries"] = r.evaluation.queries;
    if (!run_dir.empty()) {
      std::ostringstream trec;
      for (const auto& [qid, entries] : r.run) eval::write_trec_run(trec, qid, entries, "sieve");
      std::filesystem::create_directories(run_dir);
      write_file_atomic(path_join(run_dir, s.folder.name + ".trec"), trec.str());
    }
    j["queries_per_second"] = r.seconds > 0 ? r.queries / r.seconds : 0.0;
    if (!ro.verifier.empty()) {
      RetrievalEvalOptions stage1 = o;
      stage1.verifier.clear();
      const RetrievalEvalResult e = evaluate_retrieval(*index, s.queries, s.qrels, stage1);
      for (const auto& m : kTableMeasures) j["encoder"][m] = e.evaluation.mean.at(m);
    }
    for (const auto& m : kTableMeasures) {
      sums[m] += j[m].get<double>();
      if (j.contains("encoder")) sums["encoder." + m] += j["encoder"][m].get<double>();
    }
    log_info(model + " on " + s.folder.name + ": nDCG@10 " + std::to_string(j["ndcg@10"].get<double>()));
    out[s.folder.name] = std::move(j);
    index.reset();
    if (!keep_index) std::filesystem::remove_all(dir);
  }
  for (const auto& [k, v] : sums) {
    const double mean = v / static_cast<double>(sets.size());
    const size_t dot = k.find('.');
    if (dot == std::string::npos) out["mean"][k] = mean;
    else out["mean"][k.substr(0, dot)][k.substr(dot + 1)] = mean;
  }
  return out;
}

eval::MeanStd cell(const nlohmann::json& agg, const std::vector<std::string>& path) {
  const nlohmann::json* j = &agg;
  eval::MeanStd m{std::nan(""), std::nan(""), 0};
  for (const auto& p : path) {
    if (!j->is_object() || !j->contains(p)) return m;
    j = &(*j)[p];
  }
  if (j->is_number()) {  // a single run: no spread
    m.mean = j->get<double>();
    m.std = 0;
    m.n = 1;
  } else if (j->is_object() && j->contains("mean")) {
    m.mean = (*j)["mean"].get<double>();
    m.std = (*j)["std"].get<double>();
    m.n = (*j)["count"].get<size_t>();
  }
  return m;
}

}  // namespace sieve::experiment
