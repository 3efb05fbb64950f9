#include "index/fusion.h"

#include <algorithm>
#include <unordered_map>

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

std::vector<Hit> fuse(const Ranked& dense, const Ranked& bm25, const SearchParams& p) {
  SIEVE_THROW_IF_NOT(p.rrf_k >= 0, "the RRF constant must be >= 0");
  SIEVE_THROW_IF_NOT(p.dense_weight >= 0 && p.dense_weight <= 1, "the dense weight must lie in [0, 1]");
  std::unordered_map<uint32_t, Hit> by_doc;
  auto visit = [&](const Ranked& list, bool is_dense) {
    std::vector<double> norm = minmax(list);
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
        h.score += (is_dense ? p.dense_weight : 1.0 - p.dense_weight) * norm[i];
      }
    }
  };
  visit(dense, true);
  visit(bm25, false);
  std::vector<Hit> hits;
  hits.reserve(by_doc.size());
  for (auto& kv : by_doc) hits.push_back(kv.second);
  sort_and_cut(hits, p.k);
  return hits;
}

}  // namespace sieve::index
