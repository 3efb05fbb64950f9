// Shard sets, the write side: splitting a corpus, the options every shard shares, the commit that
// checks the shards and writes the shard-set manifest, and the build of all shards on one machine
// (the distributed build on Ray calls the same pieces from its tasks: python/sieve/ray.py).
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/checksum.h"
#include "core/file_util.h"
#include "core/log.h"
#include "index/corpus_reader.h"
#include "index/manifest.h"
#include "index/document_json.h"
#include "index/shard_set.h"
#include "index/vector_index.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "sieve/model.h"

namespace sieve {
namespace fs = std::filesystem;
using namespace sieve::index;

namespace {

constexpr const char* kBuildKeyFile = "shardset-build.json";
constexpr const char* kCorpusDir = "corpus";

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Replaces `path` with `tmp` unless it already holds the same bytes (an unchanged shard corpus
// keeps its modification time, so that an interrupted shard build resumes rather than restarts).
void keep_or_replace(const std::string& tmp, const std::string& path) {
  if (is_file(path) && fs::file_size(path) == fs::file_size(tmp) && read_file(path) == read_file(tmp)) {
    fs::remove(tmp);
    return;
  }
  fs::rename(tmp, path);
}

std::string file_crc(const std::string& path) {
  const std::string bytes = read_file(path);
  return crc32_hex(crc32(bytes.data(), bytes.size()));
}

}  // namespace

std::vector<size_t> shard_bounds(size_t total, size_t shards, size_t align) {
  SIEVE_THROW_IF_NOT(shards >= 1, "a shard set needs at least one shard");
  SIEVE_THROW_IF_NOT(total >= shards, "the corpus has " << total << " documents, fewer than the " << shards
                                                        << " shards asked for");
  if (align == 0 || total / align < shards) {
    if (align > 1)
      log_warn("the corpus has fewer than " + std::to_string(shards) + " build chunks of " + std::to_string(align) +
               " documents: shards are cut inside chunks, so their keys may differ from one index's in the last bits");
    align = 1;
  }
  const size_t units = (total + align - 1) / align;
  std::vector<size_t> bounds(shards + 1);
  for (size_t s = 0; s <= shards; ++s) bounds[s] = std::min(total, units * s / shards * align);
  return bounds;
}

std::vector<std::string> split_corpus(const std::string& corpus_path, CorpusFormat format, size_t shards,
                                      const std::string& dir, size_t align) {
  SIEVE_THROW_IF_NOT(shards >= 1, "a shard set needs at least one shard");
  size_t total = 0;
  {
    CorpusReader r(corpus_path, format);  // validates every document and the ids' uniqueness
    Document d;
    while (r.next(d)) ++total;
  }
  SIEVE_THROW_IF_NOT(total >= shards, "corpus '" << corpus_path << "' has " << total << " documents, fewer than the "
                                                 << shards << " shards asked for");
  const std::vector<size_t> bounds = shard_bounds(total, shards, align);
  auto start = [&](size_t s) { return bounds[s]; };
  fs::create_directories(dir);
  std::vector<std::string> files;
  CorpusReader r(corpus_path, format);
  Document d;
  for (size_t s = 0; s < shards; ++s) {
    const size_t begin = start(s), end = start(s + 1);
    const std::string path = path_join(dir, shard_dir_name(s) + ".jsonl"), tmp = path + ".tmp";
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      SIEVE_THROW_IF_NOT(f, "cannot write '" << tmp << "'");
      for (size_t i = begin; i < end; ++i) {
        SIEVE_THROW_IF_NOT(r.next(d), "corpus '" << corpus_path << "' changed while it was split");
        f << document_json(d).dump() << '\n';  // metadata and expiry go with the document
      }
      SIEVE_THROW_IF_NOT(f.flush(), "cannot write '" << tmp << "' (disk full?)");
    }
    keep_or_replace(tmp, path);
    files.push_back(path);
  }
  return files;
}

IndexBuildOptions shard_build_options(const IndexBuildOptions& opt, size_t documents) {
  IndexBuildOptions o = opt;
  o.vector_factory = resolve_vector_factory(opt.vector_factory, documents, opt.auto_hnsw_threshold);
  o.force = false;
  o.restart = false;
  return o;
}

void commit_shard_set(const std::string& staging, const std::string& out, size_t shards, bool force, bool verify) {
  SIEVE_THROW_IF_NOT(is_dir(staging), "'" << staging << "' does not exist");
  SIEVE_THROW_IF_NOT(shards > 0, "a shard set has at least one shard");
  // Every expected shard, and no other: a missing one is never read as the end of the set.
  for (size_t s = 0; s < shards; ++s)
    SIEVE_THROW_IF_NOT(is_dir(path_join(staging, shard_dir_name(s))) || is_dir(path_join(staging, shard_dir_name(s) + ".partial")),
                       "shard " << s << " of " << shards << " ('" << path_join(staging, shard_dir_name(s))
                                << "') is missing: not committing a set without it");
  SIEVE_THROW_IF_NOT(!is_dir(path_join(staging, shard_dir_name(shards))),
                     "'" << staging << "' holds more than the " << shards << " shards expected ("
                         << shard_dir_name(shards) << " is there)");
  std::string out_dir = fs::path(out).lexically_normal().string();
  if (!out_dir.empty() && out_dir.back() == '/') out_dir.pop_back();
  SIEVE_THROW_IF_NOT(force || !fs::exists(out_dir), "'" << out_dir << "' already exists (use --force to replace it)");
  ShardSetManifest set;
  Manifest first;
  for (size_t s = 0; s < shards; ++s) {
    const std::string name = shard_dir_name(s), sd = path_join(staging, name);
    SIEVE_THROW_IF_NOT(is_file(path_join(sd, kManifestFile)),
                       "shard " << s << " ('" << sd << "') is not a complete index (its build has not finished)");
    const Manifest m = read_manifest(sd, kManifestFile);
    auto differs = [&](const char* what, const std::string& a, const std::string& b) {
      SIEVE_THROW_IF_NOT(a == b, "shard " << s << " was built with another " << what << " than shard 0 ('" << a
                                          << "' against '" << b << "'): the shards of a set must share it");
    };
    if (s == 0) {
      first = m;
      set.dim = m.dim;
      set.model_identity = m.model_identity;
      set.model_path = m.model_path;
      set.pooling = m.pooling;
      set.max_length = m.max_length;
      set.vector_factory = m.vector_factory;
      set.has_tokens = m.has_tokens;
      set.token_codec = m.token_codec;
      if (m.has_tokens) set.codec_crc = crc32_hex(m.codec.crc);
    } else {
      differs("model", m.model_identity, first.model_identity);
      differs("pooling", m.pooling, first.pooling);
      differs("max length", std::to_string(m.max_length), std::to_string(first.max_length));
      differs("vector index", m.vector_factory, first.vector_factory);
      differs("token store", m.has_tokens ? m.token_codec : "none", first.has_tokens ? first.token_codec : "none");
      if (m.has_tokens) differs("token codec (trained)", crc32_hex(m.codec.crc), set.codec_crc);
    }
    if (verify) {
      IndexOpenOptions o;
      o.load_encoder = false;
      o.verify = true;
      try {
        Index::open(sd, o);
      } catch (const Error& e) {
        SIEVE_THROW("shard " << s << " ('" << sd << "') does not verify: " << e.what());
      }
    }
    set.shards.push_back({name, set.documents, m.documents, file_crc(path_join(sd, kManifestFile))});
    set.documents += m.documents;
  }
  SIEVE_THROW_IF_NOT(!set.shards.empty(), "'" << staging << "' holds no shard (" << shard_dir_name(0) << ")");
  write_shard_set_manifest(staging, set);
  fs::remove_all(path_join(staging, kCorpusDir));
  fs::remove(path_join(staging, kBuildKeyFile));
  sync_dir(staging);
  SIEVE_THROW_IF_NOT(force || !fs::exists(out_dir), "'" << out_dir << "' appeared during the build; not replacing it");
  publish_dir(staging, out_dir);  // never no set at `out`: swapped in one step
  log_info("committed shard set '" + out_dir + "': " + std::to_string(set.shards.size()) + " shards, " +
           std::to_string(set.documents) + " documents");
}

BuildReport build_shard(const std::string& model_dir, const std::string& corpus, const std::string& staging,
                        size_t shard, const IndexBuildOptions& opt, const EncoderOptions& enc) {
  const std::string sd = path_join(staging, shard_dir_name(shard));
  if (is_file(path_join(sd, kManifestFile))) {
    IndexOpenOptions no_encoder;
    no_encoder.load_encoder = false;
    BuildReport kept;
    kept.documents = kept.resumed_from = Index::open(sd, no_encoder)->size();
    kept.note = "kept: built before";
    return kept;
  }
  IndexBuildOptions o = opt;
  o.force = false;
  o.restart = false;
  if (shard > 0 && o.store_tokens) {
    o.token_codec_from = path_join(path_join(staging, shard_dir_name(0)), kCodecFile);
    SIEVE_THROW_IF_NOT(is_file(o.token_codec_from), "shard " << shard << " needs shard 0's token codec '"
                                                              << o.token_codec_from << "': build shard 0 first");
  }
  return build_index(model_dir, corpus, sd, o, enc);
}

BuildReport build_shard_set(const std::string& model_dir, const std::string& corpus_path, const std::string& out,
                            size_t shards, const IndexBuildOptions& opt, const EncoderOptions& enc) {
  const auto t0 = std::chrono::steady_clock::now();
  SIEVE_THROW_IF_NOT(!out.empty(), "no output index path given");
  SIEVE_THROW_IF_NOT(shards >= 1, "--shards must be at least 1");
  std::string out_dir = fs::path(out).lexically_normal().string();
  if (!out_dir.empty() && out_dir.back() == '/') out_dir.pop_back();
  SIEVE_THROW_IF_NOT(opt.force || !fs::exists(out_dir), "'" << out_dir << "' already exists (use --force to replace it)");
  const std::string staging = out_dir + ".partial";

  // What this build is: another corpus, model or options than an interrupted one's starts afresh.
  const std::string key =
      nlohmann::json{{"corpus", corpus_fingerprint(corpus_path)},
                     {"model", model_identity(model_dir)}, {"shards", shards}, {"vectors", opt.vector_factory},
                     {"hnsw_threshold", opt.auto_hnsw_threshold}, {"codec", opt.token_codec},
                     {"codec_train", opt.codec_train_tokens}, {"tokens", opt.store_tokens}, {"chunk", opt.chunk_docs},
                     {"format", static_cast<int>(opt.format)}, {"pooling", enc.pooling ? static_cast<int>(*enc.pooling) : -1},
                     {"max_length", enc.max_length}}
          .dump();
  const std::string key_file = path_join(staging, kBuildKeyFile);
  if (fs::exists(staging) && (opt.restart || !is_file(key_file) || read_file(key_file) != key)) {
    log_info(opt.restart ? "restarting the shard-set build (--restart)"
                         : "the interrupted shard-set build used another corpus, model or options: starting afresh");
    fs::remove_all(staging);
  }
  fs::create_directories(staging);
  write_file_atomic(key_file, key);

  BuildReport rep;
  const auto corpora = split_corpus(corpus_path, opt.format, shards, path_join(staging, kCorpusDir), opt.chunk_docs);
  size_t total = 0;
  for (const auto& c : corpora) total += CorpusReader::count(c, CorpusFormat::Jsonl);
  IndexBuildOptions so = shard_build_options(opt, total);
  so.format = CorpusFormat::Jsonl;  // the split's parts
  for (size_t s = 0; s < shards; ++s) {
    log_info("shard " + std::to_string(s + 1) + " of " + std::to_string(shards));
    const BuildReport r = build_shard(model_dir, corpora[s], staging, s, so, enc);
    rep.added += r.added;
    rep.resumed_from += r.resumed_from;
    rep.truncated += r.truncated;
    rep.encode_seconds += r.encode_seconds;
    rep.validate_seconds += r.validate_seconds;
    rep.store_seconds += r.store_seconds;
    rep.lexical_seconds += r.lexical_seconds;
    rep.vectors_seconds += r.vectors_seconds;
  }
  commit_shard_set(staging, out_dir, shards, opt.force, true);
  rep.documents = total;
  rep.total_seconds = seconds_since(t0);
  rep.note = std::to_string(shards) + " shards" + (rep.resumed_from > 0 ? " (resumed)" : "");
  return rep;
}

}  // namespace sieve
