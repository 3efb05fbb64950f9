// Shard sets, the read side: the manifest (shardset.json) and the Index that searches every shard
// and merges, so that results equal those of one index over the same documents.
#include "index/shard_set.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/checksum.h"
#include "core/file_util.h"
#include "core/log.h"
#include "index/doc_state.h"
#include "index/fan_out.h"
#include "index/ingest.h"
#include "index/lexical_index.h"
#include "index/remote_shards.h"
#include "index/shard_bm25.h"
#include "index/manifest.h"
#include "index/token_store.h"
#include "sieve/error.h"

namespace sieve {
namespace fs = std::filesystem;

bool is_shard_set(const std::string& dir) { return is_file(path_join(dir, kShardSetFile)); }

std::string shard_dir_name(size_t shard) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "shard-%03zu", shard);
  return buf;
}

namespace index {
namespace {

constexpr const char* kFormatName = "sieve-shard-set";

std::string file_crc(const std::string& path) {
  const std::string bytes = read_file(path);
  return crc32_hex(crc32(bytes.data(), bytes.size()));
}

}  // namespace

void write_shard_set_manifest(const std::string& dir, const ShardSetManifest& m) {
  nlohmann::json shards = nlohmann::json::array();
  for (const ShardEntry& s : m.shards)
    shards.push_back({{"dir", s.dir}, {"first", s.first}, {"documents", s.documents}, {"manifest_crc32", s.manifest_crc}});
  nlohmann::json j = {
      {"format", kFormatName},
      {"version", kShardSetFormatVersion},
      {"documents", m.documents},
      {"dim", m.dim},
      {"model", {{"identity", m.model_identity}, {"path", m.model_path}, {"pooling", m.pooling},
                 {"max_length", m.max_length}}},
      {"vectors", m.vector_factory},
      {"tokens", {{"stored", m.has_tokens}, {"codec", m.token_codec}, {"codec_crc32", m.codec_crc}}},
      {"id_map", "contiguous"},
      {"shards", shards},
  };
  j["crc32"] = crc32_hex(crc32(j.dump().data(), j.dump().size()));
  write_file_atomic(path_join(dir, kShardSetFile), j.dump(2) + "\n");
}

ShardSetManifest read_shard_set_manifest(const std::string& dir) {
  const std::string path = path_join(dir, kShardSetFile);
  SIEVE_THROW_IF_NOT(is_file(path), "'" << dir << "' is not a shard set (no " << kShardSetFile << ")");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    SIEVE_THROW("'" << path << "' is not valid JSON (damaged): " << e.what());
  }
  SIEVE_THROW_IF_NOT(j.is_object() && j.value("format", "") == kFormatName, "'" << path << "' is not a shard-set manifest");
  SIEVE_THROW_IF_NOT(j.contains("version") && j["version"].is_number_unsigned(), "'" << path << "' has no version");
  const auto version = j["version"].get<uint64_t>();
  SIEVE_THROW_IF_NOT(version == kShardSetFormatVersion, "'" << dir << "' is a shard set of format version " << version
                                                            << "; this sieve reads version " << kShardSetFormatVersion);
  SIEVE_THROW_IF_NOT(j.contains("crc32") && j["crc32"].is_string(), "'" << path << "' has no checksum (damaged)");
  const std::string want = j["crc32"].get<std::string>();
  j.erase("crc32");
  SIEVE_THROW_IF_NOT(crc32_hex(crc32(j.dump().data(), j.dump().size())) == want,
                     "'" << path << "' is damaged (checksum mismatch)");
  ShardSetManifest m;
  try {
    m.documents = j.at("documents").get<uint64_t>();
    m.dim = j.at("dim").get<uint64_t>();
    const auto& model = j.at("model");
    m.model_identity = model.at("identity").get<std::string>();
    m.model_path = model.at("path").get<std::string>();
    m.pooling = model.at("pooling").get<std::string>();
    m.max_length = model.at("max_length").get<uint64_t>();
    m.vector_factory = j.at("vectors").get<std::string>();
    const auto& tok = j.at("tokens");
    m.has_tokens = tok.at("stored").get<bool>();
    m.token_codec = tok.at("codec").get<std::string>();
    m.codec_crc = tok.at("codec_crc32").get<std::string>();
    SIEVE_THROW_IF_NOT(j.at("id_map").get<std::string>() == "contiguous",
                       "'" << path << "' maps ids to shards in a way this sieve does not know");
    for (const auto& s : j.at("shards")) {
      ShardEntry e{s.at("dir").get<std::string>(), s.at("first").get<uint64_t>(), s.at("documents").get<uint64_t>(),
                   s.at("manifest_crc32").get<std::string>()};
      SIEVE_THROW_IF_NOT(!e.dir.empty() && e.dir.find('/') == std::string::npos && e.dir != "." && e.dir != "..",
                         "'" << path << "': invalid shard folder '" << e.dir << "' (damaged)");
      m.shards.push_back(std::move(e));
    }
  } catch (const nlohmann::json::exception& e) {
    SIEVE_THROW("'" << path << "': unexpected structure (damaged manifest): " << e.what());
  }
  SIEVE_THROW_IF_NOT(!m.shards.empty(), "'" << path << "' names no shard (damaged)");
  uint64_t next = 0;
  for (const ShardEntry& s : m.shards) {
    SIEVE_THROW_IF_NOT(s.first == next, "'" << path << "': shard '" << s.dir << "' starts at document " << s.first
                                            << ", the shards before it end at " << next << " (damaged)");
    next += s.documents;
  }
  SIEVE_THROW_IF_NOT(next == m.documents, "'" << path << "': the shards hold " << next << " documents, the set says "
                                              << m.documents << " (damaged)");
  return m;
}

std::string shard_identity(const std::string& shard_dir) {
  const std::string mf = path_join(shard_dir, kManifestFile);
  SIEVE_THROW_IF_NOT(is_file(mf), "'" << shard_dir << "' is not a shard (no " << kManifestFile << ")");
  return file_crc(mf);
}

std::vector<std::string> shard_set_identities(const std::string& dir) {
  std::vector<std::string> out;
  for (const ShardEntry& e : read_shard_set_manifest(dir).shards) out.push_back(e.manifest_crc);
  return out;
}

std::string check_shard_in_its_set(const std::string& shard_dir) {
  namespace fs = std::filesystem;
  fs::path dir = fs::absolute(fs::path(shard_dir)).lexically_normal();
  if (!dir.has_filename()) dir = dir.parent_path();  // "shard-000/"
  const std::string name = dir.filename().string(), set = dir.parent_path().string();
  const std::string have = shard_identity(shard_dir);
  if (!is_shard_set(set)) return have;  // a shard served on its own
  for (const ShardEntry& e : read_shard_set_manifest(set).shards)
    if (e.dir == name) {
      // Between a set write's commit and its last step the recorded copy lies beside manifest.json.
      if (have != e.manifest_crc && find_shard_copy(shard_dir, e.manifest_crc)) return e.manifest_crc;
      SIEVE_THROW_IF_NOT(have == e.manifest_crc, "shard '" << name << "' is not the copy its set '" << set
                                                           << "' records (its manifest's digest is " << have
                                                           << ", the set's " << e.manifest_crc
                                                           << "): it was rebuilt or replaced; rebuild the set");
      return have;
    }
  SIEVE_THROW("shard set '" << set << "' has no shard '" << name << "'");
}

namespace {

using Clock = std::chrono::steady_clock;

class ShardSetImpl final : public Index {
 public:
  ShardSetImpl(const std::string& dir, const IndexOpenOptions& opt) : ShardSetImpl(dir, opt, read_shard_set_manifest(dir), {}) {}

  // The set at manifest `m`; `given`: shards already open at the copies `m` records (a write's new
  // snapshot shares the unchanged ones), the rest (null or missing) are opened here.
  ShardSetImpl(const std::string& dir, const IndexOpenOptions& opt, ShardSetManifest m,
               std::vector<std::shared_ptr<const Index>> given)
      : dir_(dir), m_(std::move(m)), open_(opt), remote_(opt.remote) {
    IndexOpenOptions o = opt;
    if (remote_) {  // the shards' vectors and token states are served elsewhere
      pool_ = std::make_unique<ShardCallPool>();
      o.remote = nullptr;
      o.load_vectors = false;
    }
    given.resize(m_.shards.size());
    // Shards that answer BM25 themselves: no database of theirs is searched here.
    lexical_remote_ = dynamic_cast<const LexicalRemote*>(remote_.get());
    if (manifest_only(dir, given)) {
      open_from_shards(opt);
      return;
    }
    if (!o.encoder_instance)
      for (const auto& g : given)
        if (g && opt.load_encoder) o.encoder_instance = g->shared_encoder();
    std::vector<std::string> lexical_dirs;
    for (size_t i = 0; i < m_.shards.size(); ++i) {
      const ShardEntry& e = m_.shards[i];
      const std::string sd = path_join(dir, e.dir);
      std::shared_ptr<const Index> shard = given[i];
      std::string where = sd;
      if (!shard) {
        SIEVE_THROW_IF_NOT(is_dir(sd), "shard '" << e.dir << "' of shard set '" << dir << "' is missing");
        const std::optional<RecordedShard> at = find_recorded_shard(dir, e);
        SIEVE_THROW_IF_NOT(at.has_value(), "shard '" << e.dir << "' of shard set '" << dir
                                                   << "' is not the one the set was committed with (changed or replaced since)");
        shard = open_shard_copy(*at, o);
        where = at->dir;
      } else {
        where = snapshot_dir(*shard);
      }
      SIEVE_THROW_IF_NOT(shard->size() == e.documents, "shard '" << e.dir << "' holds " << shard->size()
                                                                  << " documents, the set says " << e.documents);
      // One encoder for the set: the first shard loads it (and checks the model), the rest share it.
      if (!o.encoder_instance && opt.load_encoder) o.encoder_instance = shard->shared_encoder();
      lexical_dirs.push_back(path_join(where, kLexicalDir));
      limits_.push_back(static_cast<uint32_t>(e.documents));
      shards_.push_back(std::move(shard));
    }
    encoder_ = shards_.front()->shared_encoder();
    if (!lexical_remote_) lexical_ = std::make_unique<XapianLexicalIndex>(lexical_dirs);
    std::vector<IndexStats> each;
    for (const auto& sh : shards_) each.push_back(sh->stats());
    fill_stats(each);
  }

  // A router that holds only the set's manifest: sieve's shard servers answer everything (the
  // remote reads documents too), and no shard folder lies beside shardset.json.
  bool manifest_only(const std::string& dir, const std::vector<std::shared_ptr<const Index>>& given) const {
    if (!remote_ || !lexical_remote_ || dynamic_cast<const ShardReader*>(remote_.get()) == nullptr) return false;
    for (size_t i = 0; i < m_.shards.size(); ++i)
      if (given[i] || is_dir(path_join(dir, m_.shards[i].dir))) return false;
    return true;
  }

  void open_from_shards(const IndexOpenOptions& opt) {
    data_ = std::make_unique<RemoteShardData>(*dynamic_cast<const ShardReader*>(remote_.get()), remote_, *pool_, m_);
    const std::vector<IndexStats> each = data_->shard_stats();
    for (const ShardEntry& e : m_.shards) limits_.push_back(static_cast<uint32_t>(e.documents));
    if (opt.load_encoder) {
      Manifest em;  // what the encoder is checked against: the set's model, the shards' key grid
      em.dim = m_.dim;
      em.model_identity = m_.model_identity;
      em.model_path = m_.model_path;
      em.pooling = m_.pooling;
      em.max_length = m_.max_length;
      em.key_grid = each.front().key_grid;
      encoder_ = load_index_encoder(em, dir_, opt);
    }
    fill_stats(each);
  }

  // The set's statistics from its shards' (`each`, in order).
  void fill_stats(const std::vector<IndexStats>& each) {
    const IndexStats& s0 = each.front();
    stats_.documents = m_.documents;
    stats_.shards = m_.shards.size();
    stats_.dim = m_.dim;
    stats_.vector_factory = s0.vector_factory;
    stats_.token_codec = s0.token_codec;
    stats_.token_code_bytes = s0.token_code_bytes;
    stats_.model_identity = s0.model_identity;
    stats_.key_grid = s0.key_grid;
    stats_.model_path = s0.model_path;
    stats_.file_bytes.emplace_back(kShardSetFile, fs::file_size(fs::path(dir_) / kShardSetFile));
    stats_.bytes_on_disk = stats_.file_bytes.back().second;
    for (size_t i = 0; i < each.size(); ++i) {
      const IndexStats& si = each[i];
      stats_.tokens += si.tokens;
      stats_.deleted += si.deleted;
      stats_.has_metadata = stats_.has_metadata || si.has_metadata;
      stats_.file_bytes.emplace_back(m_.shards[i].dir, si.bytes_on_disk);
      stats_.bytes_on_disk += si.bytes_on_disk;
    }
  }

  const std::string& dir() const { return dir_; }
  const ShardSetManifest& manifest() const { return m_; }
  const std::vector<std::shared_ptr<const Index>>& shards() const {
    SIEVE_THROW_IF_NOT(!data_, "this router holds only the shard set's manifest (its shards' folders are on the "
                               "shard servers): write to the set where its folder is, then restart the shard servers");
    return shards_;
  }
  const IndexOpenOptions& open_options() const { return open_; }
  bool reads_from_shards() const { return data_ != nullptr; }

  const IndexStats& stats() const override { return stats_; }
  size_t size() const override { return m_.documents; }
  Document document(uint32_t doc) const override {
    if (data_) return data_->document(doc);
    auto [s, local] = locate(doc);
    return shards_[s]->document(local);
  }
  int64_t find(const std::string& id) const override {
    if (data_) return data_->find(id);
    for (size_t s = 0; s < shards_.size(); ++s)
      if (int64_t local = shards_[s]->find(id); local >= 0) return static_cast<int64_t>(m_.shards[s].first) + local;
    return -1;
  }
  bool live(uint32_t doc, double now) const override {
    if (doc >= m_.documents) return false;
    if (data_) return data_->live(doc, now);
    auto [s, local] = locate(doc);
    return shards_[s]->live(local, now);
  }
  std::vector<uint32_t> matching(const Filter& filter, double now) const override {
    if (data_) return data_->matching(filter, now);
    std::vector<uint32_t> out;
    for (size_t s = 0; s < shards_.size(); ++s)
      for (uint32_t d : shards_[s]->matching(filter, now)) out.push_back(static_cast<uint32_t>(m_.shards[s].first) + d);
    return out;
  }
  using Index::tokens;
  TokenStates tokens(uint32_t doc, size_t max_rows) const override {
    auto [s, local] = locate(doc);
    if (!remote_) return shards_[s]->tokens(local, max_rows);
    return std::move(tokens_of({doc}, max_rows)[0]);
  }
  // Remote: one call per shard that holds some of `docs`.
  std::vector<TokenStates> tokens_of(const std::vector<uint32_t>& docs, size_t max_rows,
                                     Clock::time_point deadline = Clock::time_point::max()) const override {
    if (!remote_) return Index::tokens_of(docs, max_rows, deadline);
    std::vector<TokenStates> out(docs.size());
    const ByShard g = by_shard(docs);
    const auto& local = g.local;
    const auto& where = g.where;
    const auto& asked = g.asked;
    auto answers = fan_out<std::vector<TokenStates>>(
        *pool_, asked, deadline,
        [remote = remote_, local, max_rows, deadline, ids = identities()](size_t s) {
          return remote->tokens(s, ids[s], local[s], max_rows, deadline);
        },
        shard_name());
    for (size_t a = 0; a < asked.size(); ++a) {
      const size_t s = asked[a];
      check_tokens(s, answers[a], local[s].size(), max_rows);
      for (size_t j = 0; j < answers[a].size(); ++j) out[where[s][j]] = std::move(answers[a][j]);
    }
    return out;
  }
  // Remote shards that score: one scores() call per shard that holds some of `docs`, all at once.
  std::optional<std::vector<float>> shard_scores(const std::string& verifier, const TokenStates& query,
                                                 const std::vector<uint32_t>& docs,
                                                 Clock::time_point deadline) const override {
    if (!remote_ || !remote_->scores_at_shards()) return std::nullopt;
    const ByShard g = by_shard(docs);
    const auto& local = g.local;
    const auto& where = g.where;
    const auto& asked = g.asked;
    auto q = std::make_shared<const TokenStates>(query);
    auto answers = fan_out<std::vector<float>>(
        *pool_, asked, deadline,
        [remote = remote_, local, verifier, q, deadline, ids = identities()](size_t s) {
          return remote->scores(s, ids[s], verifier, *q, local[s], deadline);
        },
        shard_name());
    std::vector<float> out(docs.size());
    for (size_t a = 0; a < asked.size(); ++a) {
      const size_t s = asked[a];
      if (answers[a].size() != local[s].size())
        throw ShardUnavailable("shard '" + m_.shards[s].dir + "' answered " + std::to_string(answers[a].size()) +
                               " scores for " + std::to_string(local[s].size()) + " documents");
      for (size_t j = 0; j < answers[a].size(); ++j) {
        if (!std::isfinite(answers[a][j]))
          throw ShardUnavailable("shard '" + m_.shards[s].dir + "' answered a non-finite score (" +
                                 std::to_string(answers[a][j]) + ") for document " + std::to_string(local[s][j]));
        out[where[s][j]] = answers[a][j];
      }
    }
    return out;
  }
  std::vector<int32_t> token_ids(uint32_t doc) const override {
    SIEVE_THROW_IF_NOT(!data_, "token ids are read at the shards (this router holds only the set's manifest)");
    auto [s, local] = locate(doc);
    return shards_[s]->token_ids(local);
  }
  std::vector<float> key(uint32_t doc) const override {
    auto [s, local] = locate(doc);
    if (!remote_) return shards_[s]->key(local);
    return keys_of({doc});
  }
  // Remote: one keys() call per shard that holds some of `docs`, all at once, until the deadline.
  std::vector<float> keys_of(const std::vector<uint32_t>& docs,
                             Clock::time_point deadline = Clock::time_point::max()) const override {
    if (!remote_) return Index::keys_of(docs, deadline);
    const ByShard g = by_shard(docs);
    const auto& local = g.local;
    auto answers = fan_out<std::vector<float>>(
        *pool_, g.asked, deadline,
        [remote = remote_, local, deadline, ids = identities()](size_t s) { return remote->keys(s, ids[s], local[s], deadline); },
        shard_name());
    std::vector<float> out(docs.size() * m_.dim);
    for (size_t a = 0; a < g.asked.size(); ++a) {
      const size_t s = g.asked[a];
      if (answers[a].size() != local[s].size() * m_.dim)
        throw ShardUnavailable("shard '" + m_.shards[s].dir + "' answered " + std::to_string(answers[a].size()) +
                               " floats of keys for " + std::to_string(local[s].size()) + " documents of " +
                               std::to_string(m_.dim));
      for (size_t j = 0; j < local[s].size(); ++j)
        std::copy(answers[a].begin() + static_cast<std::ptrdiff_t>(j * m_.dim),
                  answers[a].begin() + static_cast<std::ptrdiff_t>((j + 1) * m_.dim),
                  out.begin() + static_cast<std::ptrdiff_t>(g.where[s][j] * m_.dim));
    }
    return out;
  }
  const Encoder* encoder() const override { return encoder_.get(); }
  std::shared_ptr<const Encoder> shared_encoder() const override { return encoder_; }

  SearchResult search(const std::string& query, const SearchParams& p) const override {
    return std::move(search_batch({query}, p)[0]);
  }

  // As one index's search: the same depth, then each shard's dense list (the best `depth` of the
  // shard) merged by score, and one BM25 search over every shard's database.
  std::vector<SearchResult> search_batch(const std::vector<std::string>& queries,
                                         const SearchParams& p) const override {
    SearchPlan plan = plan_search(encoder_.get(), queries, p, m_.documents);
    const size_t n = queries.size(), depth = plan.depth;
    Embeddings& e = plan.queries;
    std::vector<SearchResult> out(n);
    std::vector<Ranked> dls(n);
    // What each shard may return (deletions, expiry, the filter); BM25 reads them here, the dense
    // search of a local shard computes its own.
    std::vector<std::shared_ptr<const Bitmap>> allowed;
    std::vector<const Bitmap*> allowed_ptrs;
    bool any_limit = false;
    for (const auto& sh : shards_) {
      allowed.push_back(allowed_documents(*sh, p));
      allowed_ptrs.push_back(allowed.back().get());
      any_limit = any_limit || allowed.back() != nullptr;
    }
    if (!any_limit) allowed_ptrs.clear();
    if (plan.dense && n > 0) {
      std::vector<size_t> asked;
      for (size_t s = 0; s < m_.shards.size(); ++s)
        if (std::min<size_t>(depth, m_.shards[s].documents) > 0) asked.push_back(s);
      std::vector<std::vector<Ranked>> parts;
      if (remote_) {  // every shard at once, until the deadline
        auto pooled = std::make_shared<const std::vector<float>>(e.pooled);
        const size_t dim = m_.dim;
        std::vector<size_t> depths;
        for (const ShardEntry& se : m_.shards) depths.push_back(std::min<size_t>(depth, se.documents));
        parts = fan_out<std::vector<Ranked>>(
            *pool_, asked, p.deadline,
            [remote = remote_, pooled, n, dim, depths, p, ids = identities()](size_t s) {
              return remote->dense_lists(s, ids[s], n, dim, pooled->data(), depths[s], p);
            },
            shard_name());
        for (size_t a = 0; a < asked.size(); ++a)
          check_dense_lists(asked[a], parts[a], n, std::min<size_t>(depth, m_.shards[asked[a]].documents));
      } else {
        for (size_t s : asked)
          parts.push_back(dense_lists(*shards_[s], n, e.pooled.data(), std::min<size_t>(depth, m_.shards[s].documents), p));
      }
      for (size_t a = 0; a < asked.size(); ++a) {
        const auto first = static_cast<uint32_t>(m_.shards[asked[a]].first);
        for (size_t q = 0; q < n; ++q)
          for (const auto& [doc, score] : parts[a][q]) dls[q].emplace_back(first + doc, score);
      }
      for (Ranked& dl : dls) {
        std::sort(dl.begin(), dl.end(), [](const auto& a, const auto& b) {
          return a.second != b.second ? a.second > b.second : a.first < b.first;
        });
        if (dl.size() > depth) dl.resize(depth);
      }
    }
    std::vector<Ranked> bls(n);
    if (plan.lexical && lexical_remote_) {
      bls = remote_bm25(*lexical_remote_, remote_, *pool_, m_, bm25_stats_, queries, depth, p);
    } else if (plan.lexical) {
      for (size_t q = 0; q < n; ++q)
        for (const ShardHit& h : lexical_->search_shards(queries[q], depth, limits_, nullptr, allowed_ptrs))
          bls[q].emplace_back(static_cast<uint32_t>(m_.shards[h.shard].first) + h.doc, h.score);
    }
    for (size_t q = 0; q < n; ++q) {
      const Ranked& bl = bls[q];
      out[q] = result_from_lists(dls[q], bl, p, e, q);
    }
    if (data_) {  // every hit's document in one call per shard (kept for the answer's JSON)
      std::vector<uint32_t> docs;
      for (const SearchResult& r : out)
        for (const Hit& h : r.hits) docs.push_back(h.doc);
      data_->prefetch(docs);
    }
    for (size_t q = 0; q < n; ++q) {
      for (Hit& h : out[q].hits) h.id = document(h.doc).id;
    }
    return out;
  }

 private:
  // A remote shard's answers, checked before they are trusted: one list per query, no longer
  // than asked, of the shard's own documents; one token record per document, of whole rows.
  // A wrong answer is the shard's failure (ShardUnavailable), not the request's.
  void check_dense_lists(size_t s, const std::vector<Ranked>& lists, size_t n, size_t depth) const {
    bool ok = lists.size() == n;
    for (size_t q = 0; ok && q < n; ++q) {
      ok = lists[q].size() <= depth;
      for (const auto& [doc, score] : lists[q]) {
        ok = ok && doc < m_.shards[s].documents;
        // The merge sorts by score: a NaN there breaks the comparator's ordering.
        if (!std::isfinite(score))
          throw ShardUnavailable("shard '" + m_.shards[s].dir + "' answered a non-finite score (" +
                                 std::to_string(score) + ") for document " + std::to_string(doc) + " of query " +
                                 std::to_string(q));
      }
    }
    if (!ok)
      throw ShardUnavailable("shard '" + m_.shards[s].dir + "' answered dense lists that do not fit the query (" +
                             std::to_string(lists.size()) + " lists for " + std::to_string(n) + " queries, depth " +
                             std::to_string(depth) + ", " + std::to_string(m_.shards[s].documents) + " documents)");
  }
  // `docs` grouped by shard: each shard's own ids, their positions in `docs`, and the shards that hold any.
  struct ByShard {
    std::vector<std::vector<uint32_t>> local;
    std::vector<std::vector<size_t>> where;
    std::vector<size_t> asked;
  };
  ByShard by_shard(const std::vector<uint32_t>& docs) const {
    ByShard g{std::vector<std::vector<uint32_t>>(m_.shards.size()), std::vector<std::vector<size_t>>(m_.shards.size()), {}};
    for (size_t i = 0; i < docs.size(); ++i) {
      auto [s, l] = locate(docs[i]);
      g.local[s].push_back(l);
      g.where[s].push_back(i);
    }
    for (size_t s = 0; s < m_.shards.size(); ++s)
      if (!g.local[s].empty()) g.asked.push_back(s);
    return g;
  }
  void check_tokens(size_t s, const std::vector<TokenStates>& got, size_t docs, size_t max_rows) const {
    bool ok = got.size() == docs;
    for (size_t i = 0; ok && i < got.size(); ++i)
      ok = got[i].values.size() == got[i].length * m_.dim && got[i].length <= max_rows;
    if (!ok)
      throw ShardUnavailable("shard '" + m_.shards[s].dir + "' answered token states that do not fit the request (" +
                             std::to_string(got.size()) + " records for " + std::to_string(docs) +
                             " documents, rows of " + std::to_string(m_.dim) + ")");
  }

  // (shard, internal id within it) of a document of the set.
  std::pair<size_t, uint32_t> locate(uint32_t doc) const {
    SIEVE_THROW_IF_NOT(doc < m_.documents, "document " << doc << " is out of range (the index holds " << m_.documents << ")");
    size_t s = m_.shards.size() - 1;
    while (m_.shards[s].first > doc) --s;  // few shards: a scan back is as fast as a search
    return {s, static_cast<uint32_t>(doc - m_.shards[s].first)};
  }

  std::string dir_;
  ShardSetManifest m_;
  IndexStats stats_;
  IndexOpenOptions open_;  // what the set was opened with (a write's next snapshot opens so)
  std::vector<std::shared_ptr<const Index>> shards_;
  std::vector<uint32_t> limits_;  // committed documents per shard (BM25 skips the rest)
  std::unique_ptr<XapianLexicalIndex> lexical_;  // null when the shards answer BM25 (lexical_remote_)
  const LexicalRemote* lexical_remote_ = nullptr;
  mutable SetBm25Stats bm25_stats_;
  std::unique_ptr<RemoteShardData> data_;  // a router that holds only the manifest (manifest_only)  // the set's BM25 statistics asked so far (this snapshot's)
  std::shared_ptr<const Encoder> encoder_;
  std::shared_ptr<const ShardRemote> remote_;  // null: every shard is local
  // Each shard's identity as this snapshot records it (what a remote call names).
  std::vector<std::string> identities() const {
    std::vector<std::string> out;
    for (const ShardEntry& e : m_.shards) out.push_back(e.manifest_crc);
    return out;
  }
  // A shard's folder name, for messages.
  std::function<std::string(size_t)> shard_name() const {
    return [this](size_t s) { return m_.shards[s].dir; };
  }
  // The remote shards' calls (declared last: destroyed first, waiting for the calls under way
  // while everything else is still here).
  std::unique_ptr<ShardCallPool> pool_;
};

}  // namespace

std::unique_ptr<Index> open_shard_set(const std::string& dir, const IndexOpenOptions& opt) {
  // A write of another process may commit while we open (the set's manifest replaced, then each
  // prepared shard's manifest renamed): when opening fails and the set's manifest changed
  // meanwhile, open the new state again.
  const std::string path = path_join(dir, kShardSetFile);
  for (int attempt = 0;; ++attempt) {
    const std::string before = is_file(path) ? read_file(path) : "";
    try {
      return std::make_unique<ShardSetImpl>(dir, opt);
    } catch (const Error&) {
      if (attempt >= 3 || before.empty() || !is_file(path) || read_file(path) == before) throw;
      log_info("shard set '" + dir + "' changed while opening; opening it again");
    }
  }
}

std::shared_ptr<const Index> shard_set_snapshot(const std::string& dir, const IndexOpenOptions& opt,
                                                const ShardSetManifest& m,
                                                std::vector<std::shared_ptr<const Index>> shards) {
  return std::make_shared<ShardSetImpl>(dir, opt, m, std::move(shards));
}

namespace {
const ShardSetImpl& as_set(const Index& set) {
  const auto* impl = dynamic_cast<const ShardSetImpl*>(&set);
  SIEVE_THROW_IF_NOT(impl != nullptr, "internal: not a shard set of this library");
  return *impl;
}
}  // namespace

const ShardSetManifest& shard_set_manifest_of(const Index& set) { return as_set(set).manifest(); }
const std::vector<std::shared_ptr<const Index>>& shards_of(const Index& set) { return as_set(set).shards(); }
bool reads_from_shards(const Index& set) { return as_set(set).reads_from_shards(); }
const IndexOpenOptions& shard_set_open_options(const Index& set) { return as_set(set).open_options(); }

std::unique_ptr<Index> open_shard_copy(const RecordedShard& at, const IndexOpenOptions& opt) {
  return open_index_at(at.dir, at.manifest, opt);
}

std::optional<RecordedShard> find_recorded_shard(const std::string& set_dir, const ShardEntry& e) {
  return find_shard_copy(path_join(set_dir, e.dir), e.manifest_crc);
}

std::optional<RecordedShard> find_shard_copy(const std::string& shard_dir, const std::string& identity) {
  std::string sd = shard_dir;
  while (sd.size() > 1 && sd.back() == '/') sd.pop_back();
  const auto matches = [&](const std::string& dir, const char* name) {
    const std::string f = path_join(dir, name);
    return is_file(f) && file_crc(f) == identity;
  };
  if (matches(sd, kManifestFile)) return RecordedShard{sd, kManifestFile};
  if (matches(sd, kNextManifestFile)) return RecordedShard{sd, kNextManifestFile};
  if (matches(sd + kCompactingSuffix, kManifestFile)) return RecordedShard{sd + kCompactingSuffix, kManifestFile};
  return std::nullopt;
}

}  // namespace index
}  // namespace sieve
