// BM25 at a shard set's remote shards (index/shard_bm25.h).
#include "index/shard_bm25.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace sieve::index {
namespace {

std::vector<std::string> identities(const ShardSetManifest& m) {
  std::vector<std::string> out;
  for (const ShardEntry& e : m.shards) out.push_back(e.manifest_crc);
  return out;
}

}  // namespace

Bm25Stats SetBm25Stats::get(
    const std::vector<std::string>& terms,
    const std::function<std::vector<Bm25Stats>(std::shared_ptr<const std::vector<std::string>>)>& ask) {
  auto missing = std::make_shared<std::vector<std::string>>();
  Bm25Stats out;
  std::vector<size_t> unknown;  // positions in `terms` of the missing ones
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < terms.size(); ++i) {
      auto it = df_.find(terms[i]);
      out.termfreqs.push_back(it == df_.end() ? 0 : it->second);
      if (it == df_.end()) {
        missing->push_back(terms[i]);
        unknown.push_back(i);
      }
    }
    if (totals_ && missing->empty()) {
      out.documents = documents_;
      out.total_length = length_;
      return out;
    }
  }
  const std::vector<Bm25Stats> parts = ask(missing);
  std::vector<uint64_t> sums(missing->size(), 0);
  for (const Bm25Stats& part : parts) {
    out.documents += part.documents;
    out.total_length += part.total_length;
    for (size_t t = 0; t < missing->size(); ++t) sums[t] += part.termfreqs[t];
  }
  for (size_t t = 0; t < unknown.size(); ++t) out.termfreqs[unknown[t]] = sums[t];
  std::lock_guard<std::mutex> lock(mu_);
  if (df_.size() + missing->size() > kTermsKept) df_.clear();
  for (size_t t = 0; t < missing->size(); ++t) df_[(*missing)[t]] = sums[t];
  documents_ = out.documents;
  length_ = out.total_length;
  totals_ = true;
  return out;
}

std::vector<Ranked> remote_bm25(const LexicalRemote& lr, std::shared_ptr<const ShardRemote> keep, ShardCallPool& pool,
                                const ShardSetManifest& m, SetBm25Stats& stats, const std::vector<std::string>& queries,
                                size_t depth, const SearchParams& p) {
  const size_t n = queries.size();
  std::vector<Ranked> out(n);
  std::vector<std::map<std::string, unsigned>> terms(n);
  std::set<std::string> all;
  for (size_t q = 0; q < n; ++q) {
    terms[q] = bm25_terms(queries[q]);
    for (const auto& [t, c] : terms[q]) all.insert(t);
  }
  if (all.empty() || depth == 0) return out;
  const std::vector<std::string> ids = identities(m);
  const auto name_of = [&m](size_t s) { return m.shards[s].dir; };
  const LexicalRemote* remote = &lr;
  const std::vector<std::string> list(all.begin(), all.end());
  const Bm25Stats global = stats.get(list, [&](std::shared_ptr<const std::vector<std::string>> missing) {
    std::vector<size_t> every(m.shards.size());
    for (size_t s = 0; s < every.size(); ++s) every[s] = s;
    std::vector<Bm25Stats> parts = fan_out<Bm25Stats>(
        pool, every, p.deadline,
        [keep, remote, missing, deadline = p.deadline, ids](size_t s) {
          return remote->bm25_stats(s, ids[s], *missing, deadline);
        },
        name_of);
    for (size_t s = 0; s < parts.size(); ++s)
      if (parts[s].termfreqs.size() != missing->size())
        throw ShardUnavailable("shard '" + m.shards[s].dir + "' answered the statistics of " +
                               std::to_string(parts[s].termfreqs.size()) + " terms for " +
                               std::to_string(missing->size()));
    return parts;
  });
  auto bq = std::make_shared<std::vector<Bm25Query>>(n);
  for (size_t q = 0; q < n; ++q)
    for (const auto& [t, c] : terms[q]) {
      (*bq)[q].terms.push_back(t);
      (*bq)[q].wqf.push_back(c);
      (*bq)[q].termfreqs.push_back(
          global.termfreqs[static_cast<size_t>(std::lower_bound(list.begin(), list.end(), t) - list.begin())]);
    }
  std::vector<size_t> asked, depths;
  for (size_t s = 0; s < m.shards.size(); ++s) {
    if (m.shards[s].documents > 0) asked.push_back(s);
    depths.push_back(std::min<size_t>(depth, m.shards[s].documents));
  }
  const std::vector<std::vector<Ranked>> lists = fan_out<std::vector<Ranked>>(
      pool, asked, p.deadline,
      [keep, remote, bq, global, depths, p, ids](size_t s) {
        return remote->bm25_lists(s, ids[s], *bq, global.documents, global.total_length, depths[s], p);
      },
      name_of);
  for (size_t a = 0; a < asked.size(); ++a) {
    const size_t s = asked[a];
    if (lists[a].size() != n)
      throw ShardUnavailable("shard '" + m.shards[s].dir + "' answered " + std::to_string(lists[a].size()) +
                             " BM25 lists for " + std::to_string(n) + " queries");
    const auto first = static_cast<uint32_t>(m.shards[s].first);
    for (size_t q = 0; q < n; ++q) {
      if (lists[a][q].size() > depths[s])
        throw ShardUnavailable("shard '" + m.shards[s].dir + "' answered a BM25 list longer than asked");
      for (const auto& [doc, score] : lists[a][q]) {
        if (doc >= m.shards[s].documents || !std::isfinite(score))
          throw ShardUnavailable("shard '" + m.shards[s].dir + "' answered a BM25 hit that cannot be (document " +
                                 std::to_string(doc) + ", score " + std::to_string(score) + ")");
        out[q].emplace_back(first + doc, score);
      }
    }
  }
  // As the one search over every database: score, then lower shard, then lower id (the set's id).
  for (Ranked& l : out) {
    std::sort(l.begin(), l.end(),
              [](const auto& x, const auto& y) { return x.second != y.second ? x.second > y.second : x.first < y.first; });
    if (l.size() > depth) l.resize(depth);
  }
  return out;
}

}  // namespace sieve::index
