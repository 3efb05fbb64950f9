// A shard set's data read from its shards (index/remote_shards.h).
#include "index/remote_shards.h"

#include <algorithm>

namespace sieve::index {

using Clock = std::chrono::steady_clock;

RemoteShardData::RemoteShardData(const ShardReader& reader, std::shared_ptr<const ShardRemote> keep,
                                 ShardCallPool& pool, const ShardSetManifest& m)
    : reader_(&reader), keep_(std::move(keep)), pool_(&pool), m_(&m) {}

std::vector<std::string> RemoteShardData::identities() const {
  std::vector<std::string> out;
  for (const ShardEntry& e : m_->shards) out.push_back(e.manifest_crc);
  return out;
}

std::function<std::string(size_t)> RemoteShardData::name_of() const {
  return [m = m_](size_t s) { return m->shards[s].dir; };
}

std::pair<size_t, uint32_t> RemoteShardData::locate(uint32_t doc) const {
  SIEVE_THROW_IF_NOT(doc < m_->documents, "document " << doc << " is out of range (the index holds " << m_->documents << ")");
  size_t s = m_->shards.size() - 1;
  while (m_->shards[s].first > doc) --s;
  return {s, static_cast<uint32_t>(doc - m_->shards[s].first)};
}

std::vector<IndexStats> RemoteShardData::shard_stats() const {
  std::vector<size_t> every(m_->shards.size());
  for (size_t s = 0; s < every.size(); ++s) every[s] = s;
  const ShardReader* r = reader_;
  std::vector<IndexStats> out = fan_out<IndexStats>(
      *pool_, every, Clock::time_point::max(),
      [keep = keep_, r, ids = identities()](size_t s) { return r->shard_stats(s, ids[s], Clock::time_point::max()); },
      name_of());
  for (size_t s = 0; s < out.size(); ++s) {
    const ShardEntry& e = m_->shards[s];
    if (out[s].documents != e.documents || out[s].model_identity != m_->model_identity || out[s].dim != m_->dim)
      throw ShardUnavailable("shard '" + e.dir + "' is served with " + std::to_string(out[s].documents) +
                             " documents of model " + out[s].model_identity + ", the set records " +
                             std::to_string(e.documents) + " of " + m_->model_identity);
  }
  return out;
}

void RemoteShardData::prefetch(const std::vector<uint32_t>& docs) const {
  std::vector<std::vector<uint32_t>> local(m_->shards.size());
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (uint32_t d : docs)
      if (kept_.find(d) == kept_.end()) {
        auto [s, l] = locate(d);
        if (std::find(local[s].begin(), local[s].end(), l) == local[s].end()) local[s].push_back(l);
      }
  }
  std::vector<size_t> asked;
  for (size_t s = 0; s < local.size(); ++s)
    if (!local[s].empty()) asked.push_back(s);
  if (asked.empty()) return;
  const ShardReader* r = reader_;
  auto want = std::make_shared<const std::vector<std::vector<uint32_t>>>(std::move(local));
  const auto answers = fan_out<std::vector<Document>>(
      *pool_, asked, Clock::time_point::max(),
      [keep = keep_, r, want, ids = identities()](size_t s) {
        return r->documents(s, ids[s], (*want)[s], Clock::time_point::max());
      },
      name_of());
  std::lock_guard<std::mutex> lock(mu_);
  if (kept_.size() > kDocumentsKept) kept_.clear();
  for (size_t a = 0; a < asked.size(); ++a) {
    const size_t s = asked[a];
    if (answers[a].size() != (*want)[s].size())
      throw ShardUnavailable("shard '" + m_->shards[s].dir + "' answered " + std::to_string(answers[a].size()) +
                             " documents for " + std::to_string((*want)[s].size()));
    for (size_t j = 0; j < answers[a].size(); ++j)
      kept_[static_cast<uint32_t>(m_->shards[s].first) + (*want)[s][j]] = answers[a][j];
  }
}

Document RemoteShardData::document(uint32_t doc) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = kept_.find(doc); it != kept_.end()) return it->second;
  }
  prefetch({doc});
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kept_.find(doc);
  SIEVE_THROW_IF_NOT(it != kept_.end(), "internal: document " << doc << " was not read");
  return it->second;
}

int64_t RemoteShardData::find(const std::string& id) const {
  std::vector<size_t> every(m_->shards.size());
  for (size_t s = 0; s < every.size(); ++s) every[s] = s;
  const ShardReader* r = reader_;
  const auto answers = fan_out<std::vector<int64_t>>(
      *pool_, every, Clock::time_point::max(),
      [keep = keep_, r, id, ids = identities()](size_t s) {
        return r->find(s, ids[s], {id}, Clock::time_point::max());
      },
      name_of());
  for (size_t s = 0; s < answers.size(); ++s) {
    if (answers[s].size() != 1) throw ShardUnavailable("shard '" + m_->shards[s].dir + "' answered no id");
    if (answers[s][0] >= 0) {
      if (static_cast<uint64_t>(answers[s][0]) >= m_->shards[s].documents)
        throw ShardUnavailable("shard '" + m_->shards[s].dir + "' answered a document it does not hold");
      return static_cast<int64_t>(m_->shards[s].first) + answers[s][0];
    }
  }
  return -1;
}

bool RemoteShardData::live(uint32_t doc, double now) const {
  if (doc >= m_->documents) return false;
  auto [s, l] = locate(doc);
  const std::vector<bool> got = reader_->live(s, identities()[s], {l}, now, Clock::time_point::max());
  if (got.size() != 1) throw ShardUnavailable("shard '" + m_->shards[s].dir + "' answered no state");
  return got[0];
}

std::vector<uint32_t> RemoteShardData::matching(const Filter& filter, double now) const {
  std::vector<size_t> every(m_->shards.size());
  for (size_t s = 0; s < every.size(); ++s) every[s] = s;
  const ShardReader* r = reader_;
  const auto answers = fan_out<std::vector<uint32_t>>(
      *pool_, every, Clock::time_point::max(),
      [keep = keep_, r, filter, now, ids = identities()](size_t s) {
        return r->matching(s, ids[s], filter, now, Clock::time_point::max());
      },
      name_of());
  std::vector<uint32_t> out;
  for (size_t s = 0; s < answers.size(); ++s)
    for (uint32_t d : answers[s]) {
      if (d >= m_->shards[s].documents)
        throw ShardUnavailable("shard '" + m_->shards[s].dir + "' answered a document it does not hold");
      out.push_back(static_cast<uint32_t>(m_->shards[s].first) + d);
    }
  return out;
}

}  // namespace sieve::index
