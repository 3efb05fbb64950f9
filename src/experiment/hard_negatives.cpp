#include "experiment/hard_negatives.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <unordered_map>

#include "core/log.h"
#include "experiment/retrieval_eval.h"
#include "sieve/error.h"

namespace sieve::experiment {

std::vector<train::TrainExample> mine_hard_negatives(
    const std::vector<eval::Query>& queries, const eval::Qrels& qrels,
    const std::vector<std::pair<std::string, Ranker>>& rankers,
    const std::function<std::string(const std::string&)>& text_of, const HardNegativeOptions& opt,
    const std::string& category, MiningReport* report) {
  std::unordered_map<std::string, const eval::Query*> by_id;
  for (const auto& q : queries) by_id.emplace(q.id, &q);
  MiningReport rep;
  std::vector<train::TrainExample> rows;
  for (const auto& [qid, judged] : qrels) {  // std::map: ordered by query id, then doc id
    auto q = by_id.find(qid);
    if (q == by_id.end() || q->second->text.empty()) continue;
    bool any_positive = false;
    for (const auto& [doc, grade] : judged) any_positive |= grade > 0;
    if (!any_positive) continue;
    ++rep.queries;
    // The query's negatives, the same for each of its positives.
    // Texts, not only ids, are compared: a corpus can hold a judged passage twice under two ids,
    // and its copy must not become a negative.
    std::set<std::string> taken;
    for (const auto& [doc, grade] : judged) taken.insert(text_of(doc));
    std::vector<std::string> negative_texts;
    for (const auto& [name, rank] : rankers) {
      size_t got = 0;
      for (const std::string& doc : rank(q->second->text, opt.depth)) {
        if (got == opt.per_ranker) break;
        if (judged.count(doc)) continue;
        std::string t = text_of(doc);
        if (t.empty() || !taken.insert(t).second) continue;
        negative_texts.push_back(std::move(t));
        ++got;
      }
      rep.per_ranker[name] += got;
    }
    for (const auto& [doc, grade] : judged) {
      if (grade <= 0) continue;
      train::TrainExample ex;
      ex.anchor = q->second->text;
      ex.positive = text_of(doc);
      ex.negatives = negative_texts;
      ex.category = category;
      if (ex.positive.empty()) continue;
      rep.rows_without_negative += ex.negatives.empty();
      rep.negatives += ex.negatives.size();
      rows.push_back(std::move(ex));
    }
  }
  rep.rows = rows.size();
  if (report) *report = rep;
  return rows;
}

Ranker index_ranker(const Index& index, SearchMode mode) {
  return [&index, mode](const std::string& query, size_t k) {
    SearchParams p;
    p.mode = mode;
    p.k = k;
    std::vector<std::string> ids;
    for (const Hit& h : index.search(query, p).hits) ids.push_back(h.id);
    return ids;
  };
}

std::vector<train::TrainExample> beir_triplets(const std::string& dir, const std::string& split,
                                               const std::string& model_dir, const std::string& cache_dir,
                                               const HardNegativeOptions& opt, const EncoderOptions& enc,
                                               MiningReport* report) {
  const BeirFolder f = beir_folder(dir, split);
  const std::vector<eval::Query> queries = eval::read_queries(f.queries);
  const eval::Qrels qrels = eval::read_qrels(f.qrels);
  IndexOpenOptions oo;
  oo.model_dir = model_dir;
  oo.encoder = enc;
  IndexBuildOptions build;
  build.store_tokens = false;  // the index the retrieval evaluation builds, which reuses it
  auto index = Index::open(cached_index(model_dir, f.corpus, cache_dir, build, enc), oo);
  auto text_of = [&](const std::string& id) {
    const int64_t doc = index->find(id);
    SIEVE_THROW_IF_NOT(doc >= 0, f.qrels << " names document '" << id << "', which " << f.corpus << " lacks");
    return encoder_text(index->document(static_cast<uint32_t>(doc)));
  };
  std::vector<std::pair<std::string, Ranker>> rankers = {{"bm25", index_ranker(*index, SearchMode::Bm25)},
                                                         {"dense", index_ranker(*index, SearchMode::Dense)}};
  MiningReport rep;
  auto rows = mine_hard_negatives(queries, qrels, rankers, text_of, opt, f.name + "_triplet", &rep);
  log_info(f.name + " (" + split + "): " + std::to_string(rep.rows) + " triplets of " + std::to_string(rep.queries) +
           " queries, " + std::to_string(rep.negatives) + " mined negatives (bm25 " +
           std::to_string(rep.per_ranker["bm25"]) + ", dense " + std::to_string(rep.per_ranker["dense"]) + ")");
  if (report) *report = rep;
  return rows;
}

}  // namespace sieve::experiment
