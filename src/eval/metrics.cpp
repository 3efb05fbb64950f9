#include "eval/metrics.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <string_view>

#include "sieve/error.h"

namespace sieve::eval {
namespace {

// Grades <= 0 (some TREC qrels use -1 or 0 for "judged non-relevant") carry no gain.
int gain_of(const std::map<std::string, int>& rels, const std::string& doc_id) {
  auto it = rels.find(doc_id);
  return it == rels.end() ? 0 : std::max(it->second, 0);
}

size_t count_relevant(const std::map<std::string, int>& rels) {
  return static_cast<size_t>(
      std::count_if(rels.begin(), rels.end(), [](const auto& r) { return r.second > 0; }));
}

// The gain at each of the first min(k, n) ranks; a repeated doc id gets 0 so that a system cannot
// collect the same relevant doc twice.
std::vector<int> top_k_gains(const std::vector<std::string>& ranked, const std::map<std::string, int>& rels,
                             size_t k) {
  SIEVE_THROW_IF_NOT(k > 0, "metric cutoff k must be at least 1");
  const size_t n = std::min(k, ranked.size());
  std::vector<int> gains(n, 0);
  std::set<std::string_view> seen;
  for (size_t i = 0; i < n; ++i) {
    if (seen.insert(ranked[i]).second) gains[i] = gain_of(rels, ranked[i]);
  }
  return gains;
}

// Calls `fn` for each qrels query with a relevant doc, with its ranked ids (empty when the run
// lacks the query) cut to `limit`; returns how many queries it visited.
size_t for_each_judged_query(
    const Run& run, const Qrels& qrels, size_t limit,
    const std::function<void(const std::vector<std::string>&, const std::map<std::string, int>&)>& fn) {
  size_t queries = 0;
  std::vector<std::string> ids;
  for (const auto& [qid, rels] : qrels) {
    if (count_relevant(rels) == 0) continue;
    ids.clear();
    auto it = run.find(qid);
    if (it != run.end()) {
      const size_t n = std::min(limit, it->second.size());
      for (size_t i = 0; i < n; ++i) ids.push_back(it->second[i].doc_id);
    }
    fn(ids, rels);
    ++queries;
  }
  return queries;
}

}  // namespace

double ndcg_at_k(const std::vector<std::string>& ranked_doc_ids, const std::map<std::string, int>& rels,
                 size_t k) {
  const std::vector<int> gains = top_k_gains(ranked_doc_ids, rels, k);
  std::vector<int> ideal;
  for (const auto& r : rels)
    if (r.second > 0) ideal.push_back(r.second);
  if (ideal.empty()) return 0.0;
  std::sort(ideal.begin(), ideal.end(), std::greater<int>());
  double dcg = 0.0, idcg = 0.0;
  for (size_t i = 0; i < gains.size(); ++i) dcg += gains[i] / std::log2(i + 2.0);
  for (size_t i = 0; i < std::min(k, ideal.size()); ++i) idcg += ideal[i] / std::log2(i + 2.0);
  return dcg / idcg;
}

double recall_at_k(const std::vector<std::string>& ranked_doc_ids, const std::map<std::string, int>& rels,
                   size_t k) {
  const std::vector<int> gains = top_k_gains(ranked_doc_ids, rels, k);
  const size_t relevant = count_relevant(rels);
  if (relevant == 0) return 0.0;
  const auto hits = std::count_if(gains.begin(), gains.end(), [](int g) { return g > 0; });
  return static_cast<double>(hits) / static_cast<double>(relevant);
}

double precision_at_k(const std::vector<std::string>& ranked_doc_ids, const std::map<std::string, int>& rels,
                      size_t k) {
  const std::vector<int> gains = top_k_gains(ranked_doc_ids, rels, k);
  const auto hits = std::count_if(gains.begin(), gains.end(), [](int g) { return g > 0; });
  return static_cast<double>(hits) / static_cast<double>(k);
}

double reciprocal_rank_at_k(const std::vector<std::string>& ranked_doc_ids,
                            const std::map<std::string, int>& rels, size_t k) {
  const std::vector<int> gains = top_k_gains(ranked_doc_ids, rels, k);
  for (size_t i = 0; i < gains.size(); ++i)
    if (gains[i] > 0) return 1.0 / static_cast<double>(i + 1);
  return 0.0;
}

double average_precision_at_k(const std::vector<std::string>& ranked_doc_ids,
                              const std::map<std::string, int>& rels, size_t k) {
  const std::vector<int> gains = top_k_gains(ranked_doc_ids, rels, k);
  const size_t relevant = count_relevant(rels);
  if (relevant == 0) return 0.0;
  double sum = 0.0;
  size_t hits = 0;
  for (size_t i = 0; i < gains.size(); ++i) {
    if (gains[i] <= 0) continue;
    ++hits;
    sum += static_cast<double>(hits) / static_cast<double>(i + 1);
  }
  return sum / static_cast<double>(relevant);
}

Metrics evaluate(const Run& run, const Qrels& qrels, size_t per_query_limit) {
  Metrics m;
  m.queries = for_each_judged_query(run, qrels, per_query_limit, [&](const auto& ids, const auto& rels) {
    m.ndcg10 += ndcg_at_k(ids, rels, 10);
    m.recall100 += recall_at_k(ids, rels, 100);
    m.mrr10 += reciprocal_rank_at_k(ids, rels, 10);
    m.map100 += average_precision_at_k(ids, rels, 100);
    m.p10 += precision_at_k(ids, rels, 10);
  });
  if (m.queries > 0) {
    const double n = static_cast<double>(m.queries);
    for (double* v : {&m.ndcg10, &m.recall100, &m.mrr10, &m.map100, &m.p10}) *v /= n;
  }
  return m;
}

std::map<std::string, double> evaluate_cutoffs(const Run& run, const Qrels& qrels,
                                               const std::vector<size_t>& ks) {
  // A repeated k would otherwise be summed twice into the same key.
  const std::set<size_t> cutoffs(ks.begin(), ks.end());
  std::map<std::string, double> out;
  for (size_t k : cutoffs) {
    SIEVE_THROW_IF_NOT(k > 0, "metric cutoff k must be at least 1");
    const std::string at = "@" + std::to_string(k);
    for (const char* name : {"ndcg", "recall", "mrr", "map", "p"}) out[name + at] = 0.0;
  }
  const size_t queries = for_each_judged_query(run, qrels, SIZE_MAX, [&](const auto& ids, const auto& rels) {
    for (size_t k : cutoffs) {
      const std::string at = "@" + std::to_string(k);
      out["ndcg" + at] += ndcg_at_k(ids, rels, k);
      out["recall" + at] += recall_at_k(ids, rels, k);
      out["mrr" + at] += reciprocal_rank_at_k(ids, rels, k);
      out["map" + at] += average_precision_at_k(ids, rels, k);
      out["p" + at] += precision_at_k(ids, rels, k);
    }
  });
  if (queries > 0)
    for (auto& kv : out) kv.second /= static_cast<double>(queries);
  return out;
}

}  // namespace sieve::eval
