// Filtered HNSW search (index/filtered_hnsw.h). FAISS's own search with an IDSelector counts every
// visited node against ef, so a filter passing 10 % of the keys needs ef ~4x larger for the same
// recall; counting only allowed ones (as hnswlib does) lets the walk go on exactly as long as it
// has not found ef allowed keys better than what is left to expand.
#include "index/filtered_hnsw.h"

#include <faiss/impl/HNSW.h>

#include <algorithm>
#include <limits>
#include <queue>
#include <utility>
#include <vector>

#include "index/vector_index.h"

namespace sieve::index {

namespace {

using Scored = std::pair<float, int64_t>;  // (inner product, label)

// Higher score first; equal scores: lower label first.
struct Worse {
  bool operator()(const Scored& a, const Scored& b) const {
    return a.first < b.first || (a.first == b.first && a.second > b.second);
  }
};

}  // namespace

void filtered_hnsw_search(const faiss::HNSW& hnsw, const float* base, size_t dim, const float* query,
                          const uint8_t* allowed, size_t allowed_bits, size_t ef, size_t k, int64_t* labels,
                          float* scores) {
  for (size_t j = 0; j < k; ++j) {
    labels[j] = -1;
    scores[j] = -std::numeric_limits<float>::infinity();
  }
  const int64_t n = static_cast<int64_t>(hnsw.levels.size());
  if (n == 0 || hnsw.entry_point < 0 || k == 0) return;
  ef = std::max(ef, k);
  auto ok = [&](int64_t l) {
    return static_cast<size_t>(l) < allowed_bits && ((allowed[l >> 3] >> (l & 7)) & 1) != 0;
  };
  auto score = [&](int64_t l) { return inner_product(query, base + static_cast<size_t>(l) * dim, dim); };
  // Upper levels: greedy, unfiltered (they only find a good place to start).
  int64_t cur = hnsw.entry_point;
  float cur_score = score(cur);
  for (int level = hnsw.max_level; level > 0; --level) {
    for (bool moved = true; moved;) {
      moved = false;
      size_t begin = 0, end = 0;
      hnsw.neighbor_range(cur, level, &begin, &end);
      for (size_t i = begin; i < end; ++i) {
        const int64_t nb = hnsw.neighbors[i];
        if (nb < 0) break;
        const float s = score(nb);
        if (s > cur_score) cur_score = s, cur = nb, moved = true;
      }
    }
  }
  // Level 0: best-first; `held` keeps the best ef allowed labels (worst on top), `frontier` the
  // nodes to expand (best on top).
  std::vector<uint64_t> seen(static_cast<size_t>(n + 63) / 64, 0);
  auto visit = [&](int64_t l) {
    uint64_t& w = seen[static_cast<size_t>(l) >> 6];
    const uint64_t bit = uint64_t{1} << (l & 63);
    if (w & bit) return false;
    w |= bit;
    return true;
  };
  std::priority_queue<Scored, std::vector<Scored>, Worse> frontier;
  auto worse_first = [](const Scored& a, const Scored& b) { return Worse()(b, a); };
  std::priority_queue<Scored, std::vector<Scored>, decltype(worse_first)> held(worse_first);
  visit(cur);
  frontier.push({cur_score, cur});
  if (ok(cur)) held.push({cur_score, cur});
  while (!frontier.empty()) {
    const Scored c = frontier.top();
    if (held.size() >= ef && c.first < held.top().first) break;
    frontier.pop();
    size_t begin = 0, end = 0;
    hnsw.neighbor_range(c.second, 0, &begin, &end);
    for (size_t i = begin; i < end; ++i) {
      const int64_t nb = hnsw.neighbors[i];
      if (nb < 0) break;
      if (!visit(nb)) continue;
      const float s = score(nb);
      if (held.size() < ef || s > held.top().first) {
        frontier.push({s, nb});
        if (ok(nb)) {
          held.push({s, nb});
          if (held.size() > ef) held.pop();
        }
      }
    }
  }
  std::vector<Scored> best;
  best.reserve(held.size());
  for (; !held.empty(); held.pop()) best.push_back(held.top());
  std::sort(best.begin(), best.end(), [](const Scored& a, const Scored& b) { return Worse()(b, a); });
  for (size_t j = 0; j < k && j < best.size(); ++j) {
    labels[j] = best[j].second;
    scores[j] = best[j].first;
  }
}

}  // namespace sieve::index
