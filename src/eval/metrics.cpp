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

// Calls `fn` for each qrels query with a relevant doc, in query-id order, with its ranked ids (empty
// when the run lacks the query) cut to `limit`; returns how many queries it visited.
size_t for_each_judged_query(const Run& run, const Qrels& qrels, size_t limit,
                             const std::function<void(const std::string&, const std::vector<std::string>&,
                                                      const std::map<std::string, int>&)>& fn) {
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
    fn(qid, ids, rels);
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

double hit_at_k(const std::vector<std::string>& ranked_doc_ids, const std::map<std::string, int>& rels,
                size_t k) {
  const std::vector<int> gains = top_k_gains(ranked_doc_ids, rels, k);
  return std::any_of(gains.begin(), gains.end(), [](int g) { return g > 0; }) ? 1.0 : 0.0;
}

Metrics evaluate(const Run& run, const Qrels& qrels, size_t per_query_limit) {
  Metrics m;
  auto add = [&](const auto&, const auto& ids, const auto& rels) {
    m.ndcg10 += ndcg_at_k(ids, rels, 10);
    m.recall100 += recall_at_k(ids, rels, 100);
    m.mrr10 += reciprocal_rank_at_k(ids, rels, 10);
    m.map100 += average_precision_at_k(ids, rels, 100);
    m.p10 += precision_at_k(ids, rels, 10);
  };
  m.queries = for_each_judged_query(run, qrels, per_query_limit, add);
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
  auto add = [&](const auto&, const auto& ids, const auto& rels) {
    for (size_t k : cutoffs) {
      const std::string at = "@" + std::to_string(k);
      out["ndcg" + at] += ndcg_at_k(ids, rels, k);
      out["recall" + at] += recall_at_k(ids, rels, k);
      out["mrr" + at] += reciprocal_rank_at_k(ids, rels, k);
      out["map" + at] += average_precision_at_k(ids, rels, k);
      out["p" + at] += precision_at_k(ids, rels, k);
    }
  };
  const size_t queries = for_each_judged_query(run, qrels, SIZE_MAX, add);
  if (queries > 0)
    for (auto& kv : out) kv.second /= static_cast<double>(queries);
  return out;
}

RunEvaluation evaluate_run(const Run& run, const Qrels& qrels, const std::vector<size_t>& ks) {
  SIEVE_THROW_IF_NOT(!ks.empty(), "evaluate_run needs at least one cutoff k");
  // A repeated k would otherwise be summed twice into the same key.
  const std::set<size_t> cutoffs(ks.begin(), ks.end());
  RunEvaluation ev;
  for (size_t k : cutoffs) {
    SIEVE_THROW_IF_NOT(k > 0, "metric cutoff k must be at least 1");
    const std::string at = "@" + std::to_string(k);
    for (const char* name : {"ndcg", "mrr", "acc", "recall", "p"}) ev.mean[name + at] = 0.0;
  }
  ev.mean["map"] = 0.0;
  auto add = [&](const std::string& qid, const std::vector<std::string>& ids,
                 const std::map<std::string, int>& rels) {
    QueryMeasures q{qid, {}};
    for (size_t k : cutoffs) {
      const std::string at = "@" + std::to_string(k);
      q.values["ndcg" + at] = ndcg_at_k(ids, rels, k);
      q.values["mrr" + at] = reciprocal_rank_at_k(ids, rels, k);
      q.values["acc" + at] = hit_at_k(ids, rels, k);
      q.values["recall" + at] = recall_at_k(ids, rels, k);
      q.values["p" + at] = precision_at_k(ids, rels, k);
    }
    // trec_eval's `map` has no cutoff: every retrieved rank counts.
    q.values["map"] = average_precision_at_k(ids, rels, SIZE_MAX);
    for (const auto& [key, value] : q.values) ev.mean[key] += value;
    ev.per_query.push_back(std::move(q));
  };
  ev.queries = for_each_judged_query(run, qrels, SIZE_MAX, add);
  if (ev.queries > 0)
    for (auto& kv : ev.mean) kv.second /= static_cast<double>(ev.queries);
  return ev;
}

Run trec_eval_order(const Run& run) {
  // trec_eval (usnistgov/trec_eval, form_res_rels.c) ignores the rank column: te_form_res_rels
  // qsorts each topic's results with comp_sim_docno, which puts the higher sim first and, on equal
  // sims, returns strcmp(docno2, docno1), i.e. the byte-wise greater docno first. std::string's
  // compare is byte-wise (char_traits<char> compares as unsigned char, as strcmp does).
  Run out;
  for (const auto& [qid, entries] : run) {
    // A NaN compares unordered with everything, which would break the sort's ordering contract.
    for (const RunEntry& e : entries)
      SIEVE_THROW_IF_NOT(!std::isnan(e.score),
                         "run: query '" << qid << "', doc '" << e.doc_id << "': NaN score");
    std::vector<RunEntry> sorted = entries;
    // Stable, so that a repeated doc id keeps its copies in input order (only the first counts).
    std::stable_sort(sorted.begin(), sorted.end(), [](const RunEntry& a, const RunEntry& b) {
      if (a.score != b.score) return a.score > b.score;
      return a.doc_id > b.doc_id;
    });
    out.emplace(qid, std::move(sorted));
  }
  return out;
}

void write_trec_qrels(std::ostream& out, const Qrels& qrels) {
  for (const auto& [qid, rels] : qrels) {
    const std::string q = trec_escape_id(qid);
    for (const auto& [doc_id, grade] : rels) out << q << " 0 " << trec_escape_id(doc_id) << ' ' << grade << '\n';
  }
}

}  // namespace sieve::eval
