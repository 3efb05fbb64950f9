#include "index/fusion.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "index/token_store.h"
#include "sieve/error.h"

namespace sieve::index {
namespace {

// Min-max normalisation of a list's scores to [0, 1] (all equal -> 1).
std::vector<double> minmax(const Ranked& list) {
  std::vector<double> out(list.size(), 1.0);
  if (list.empty()) return out;
  auto [lo, hi] = std::minmax_element(list.begin(), list.end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
  double span = hi->second - lo->second;
  if (span > 0)
    for (size_t i = 0; i < list.size(); ++i) out[i] = (list[i].second - lo->second) / span;
  return out;
}

// z-scores of a list's scores: (s - mean) / std, the population std (all equal -> 0).
std::vector<double> zscores(const Ranked& list) {
  std::vector<double> out(list.size(), 0.0);
  if (list.empty()) return out;
  double mean = 0;
  for (const auto& e : list) mean += e.second;
  mean /= static_cast<double>(list.size());
  double var = 0;
  for (const auto& e : list) var += (e.second - mean) * (e.second - mean);
  const double sd = std::sqrt(var / static_cast<double>(list.size()));
  if (sd > 0)
    for (size_t i = 0; i < list.size(); ++i) out[i] = (list[i].second - mean) / sd;
  return out;
}

void sort_and_cut(std::vector<Hit>& hits, size_t k) {
  std::sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) {
    return a.score != b.score ? a.score > b.score : a.doc < b.doc;
  });
  if (hits.size() > k) hits.resize(k);
}

}  // namespace

std::vector<Hit> single_list_hits(const Ranked& list, bool dense, size_t k) {
  std::vector<Hit> hits;
  for (size_t i = 0; i < list.size() && hits.size() < k; ++i) {
    Hit h;
    h.doc = list[i].first;
    h.score = list[i].second;
    (dense ? h.dense_score : h.bm25_score) = list[i].second;
    (dense ? h.dense_rank : h.bm25_rank) = static_cast<int>(i + 1);
    hits.push_back(h);
  }
  return hits;
}

double query_dense_weight(const Ranked& dense, const Ranked& bm25, const SearchParams& p) {
  if (p.weight_slope == 0) return p.dense_weight;
  auto top_z = [](const Ranked& list) {
    const std::vector<double> z = zscores(list);
    return z.empty() ? 0.0 : *std::max_element(z.begin(), z.end());
  };
  return std::clamp(p.dense_weight + p.weight_slope * (top_z(dense) - top_z(bm25)), 0.0, 1.0);
}

std::vector<Hit> fuse(const Ranked& dense, const Ranked& bm25, const SearchParams& p) {
  SIEVE_THROW_IF_NOT(p.rrf_k >= 0, "the RRF constant must be >= 0");
  SIEVE_THROW_IF_NOT(p.dense_weight >= 0 && p.dense_weight <= 1, "the dense weight must lie in [0, 1]");
  SIEVE_THROW_IF_NOT(std::isfinite(p.weight_slope), "the dense weight slope must be finite");
  std::unordered_map<uint32_t, Hit> by_doc;
  const bool z = p.fusion == Fusion::Zscore;
  const double w = fusion_uses_weight(p.fusion) ? query_dense_weight(dense, bm25, p) : p.dense_weight;
  // zscore: a document missing from a list takes that list's lowest z (weighted: minmax's 0).
  double floor_dense = 0, floor_bm25 = 0;
  auto visit = [&](const Ranked& list, bool is_dense) {
    std::vector<double> norm = z ? zscores(list) : minmax(list);
    if (z && !norm.empty()) (is_dense ? floor_dense : floor_bm25) = *std::min_element(norm.begin(), norm.end());
    for (size_t i = 0; i < list.size(); ++i) {
      Hit& h = by_doc[list[i].first];
      h.doc = list[i].first;
      int rank = static_cast<int>(i + 1);
      if (is_dense) {
        if (h.dense_rank != 0) continue;  // a list names a document once; keep its best rank
        h.dense_rank = rank;
        h.dense_score = list[i].second;
      } else {
        if (h.bm25_rank != 0) continue;
        h.bm25_rank = rank;
        h.bm25_score = list[i].second;
      }
      if (p.fusion == Fusion::Rrf) {
        h.score += 1.0 / (p.rrf_k + rank);
      } else {
        h.score += (is_dense ? w : 1.0 - w) * norm[i];
      }
    }
  };
  visit(dense, true);
  visit(bm25, false);
  std::vector<Hit> hits;
  hits.reserve(by_doc.size());
  for (auto& kv : by_doc) {
    Hit& h = kv.second;
    if (z && h.dense_rank == 0 && !dense.empty()) h.score += w * floor_dense;
    if (z && h.bm25_rank == 0 && !bm25.empty()) h.score += (1.0 - w) * floor_bm25;
    hits.push_back(h);
  }
  sort_and_cut(hits, p.k);
  return hits;
}

SearchPlan plan_search(const Encoder* encoder, const std::vector<std::string>& queries, const SearchParams& p,
                       uint64_t documents) {
  SIEVE_THROW_IF_NOT(p.k > 0, "k must be at least 1");
  SearchPlan plan;
  plan.dense = p.mode != SearchMode::Bm25;
  plan.lexical = p.mode != SearchMode::Dense;
  const size_t want = p.mode == SearchMode::Hybrid ? std::max(p.k, p.depth > 0 ? p.depth : size_t{100}) : p.k;
  plan.depth = std::max<size_t>(1, std::min<uint64_t>(documents, want));
  if (!plan.dense && !p.query_tokens) return plan;
  SIEVE_THROW_IF_NOT(encoder != nullptr,
                     "the index was opened without its encoder, which dense search and the query's token "
                     "states (stage 2) need");
  EncodeCall call;
  call.token_states = p.query_tokens;
  plan.queries = encoder->encode(queries, call);
  return plan;
}

SearchResult result_from_lists(const Ranked& dense_list, const Ranked& bm25_list, const SearchParams& p,
                               Embeddings& e, size_t q) {
  SearchResult r;
  const bool dense = p.mode != SearchMode::Bm25;
  if (p.mode == SearchMode::Hybrid) r.hits = fuse(dense_list, bm25_list, p);
  else r.hits = single_list_hits(dense ? dense_list : bm25_list, dense, p.k);
  if (p.query_tokens) {
    r.query_tokens = std::move(e.tokens[q]);
    normalize_rows(r.query_tokens.values.data(), r.query_tokens.length, e.dim);
  }
  return r;
}

}  // namespace sieve::index
