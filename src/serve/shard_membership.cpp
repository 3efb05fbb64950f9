// Where a set's shards are served (serve/shard_http.h): --shard-url values, the membership file
// Ray's deployment writes and SIGHUP re-reads, and the router's remote over them.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "index/shard_set.h"
#include "serve/shard_http.h"
#include "sieve/error.h"

namespace sieve::serve {

void check_shard_replicas(const ShardReplicas& replicas) {
  SIEVE_THROW_IF_NOT(!replicas.empty(), "no shard addresses");
  for (size_t s = 0; s < replicas.size(); ++s) {
    SIEVE_THROW_IF_NOT(!replicas[s].empty(), "shard " << s << " has no address");
    for (const std::string& u : replicas[s])
      SIEVE_THROW_IF_NOT(u.rfind("http://", 0) == 0 && u.size() > 7,
                         "a shard address is http://HOST:PORT, not '" << u << "' (shard " << s << ")");
  }
}

ShardReplicas parse_shard_urls(const std::vector<std::string>& values) {
  ShardReplicas out;
  for (const std::string& v : values) {
    std::vector<std::string> urls;
    size_t from = 0;
    while (from <= v.size()) {
      const size_t comma = std::min(v.find(',', from), v.size());
      urls.push_back(v.substr(from, comma - from));
      from = comma + 1;
    }
    out.push_back(std::move(urls));
  }
  check_shard_replicas(out);
  return out;
}

ShardReplicas read_shard_membership(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  SIEVE_THROW_IF_NOT(in, "cannot read the shard membership file '" << path << "'");
  std::stringstream ss;
  ss << in.rdbuf();
  ShardReplicas out;
  try {
    const nlohmann::json j = nlohmann::json::parse(ss.str());
    SIEVE_THROW_IF_NOT(j.is_object() && j.contains("shards") && j.at("shards").is_array(),
                       "not {\"shards\": [[URL, ...], ...]}");
    for (const auto& shard : j.at("shards")) {
      SIEVE_THROW_IF_NOT(shard.is_array(), "each shard is a list of addresses");
      std::vector<std::string> urls;
      for (const auto& u : shard) {
        SIEVE_THROW_IF_NOT(u.is_string(), "an address is a string");
        urls.push_back(u.get<std::string>());
      }
      out.push_back(std::move(urls));
    }
    check_shard_replicas(out);
  } catch (const nlohmann::json::exception& e) {
    throw Error("the shard membership file '" + path + "' is not JSON: " + e.what());
  } catch (const Error& e) {
    throw Error("the shard membership file '" + path + "': " + e.what());
  }
  return out;
}

std::shared_ptr<HttpShardRemote> open_shard_remote(const std::string& set_dir, const std::vector<std::string>& urls,
                                                   const std::string& membership_file) {
  SIEVE_THROW_IF_NOT(urls.empty() || membership_file.empty(), "give the shards' addresses once: --shard-url or "
                                                             "--shard-membership, not both");
  SIEVE_THROW_IF_NOT(!set_dir.empty() && is_shard_set(set_dir),
                     "shard addresses (--shard-url, --shard-membership) need --index SET, a shard set (its shards are what the addresses serve)");
  ShardReplicas replicas = membership_file.empty() ? parse_shard_urls(urls) : read_shard_membership(membership_file);
  const size_t shards = index::read_shard_set_manifest(set_dir).shards.size();
  SIEVE_THROW_IF_NOT(replicas.size() == shards, "the set '" << set_dir << "' has " << shards
                                                  << " shards: give the addresses of each, in order, not of "
                                                  << replicas.size());
  return std::make_shared<HttpShardRemote>(std::move(replicas));
}

std::string reload_shard_membership(HttpShardRemote& remote, const std::string& membership_file) {
  if (membership_file.empty()) return "no --shard-membership file to re-read";
  try {
    ShardReplicas replicas = read_shard_membership(membership_file);
    size_t n = 0;
    for (const auto& r : replicas) n += r.size();
    const uint64_t generation = remote.set_replicas(std::move(replicas));
    return "shard membership " + std::to_string(generation) + ": " + std::to_string(n) + " replica(s) of " +
           std::to_string(remote.shards()) + " shard(s) read from " + membership_file;
  } catch (const std::exception& e) {
    return std::string("the shard membership stays: ") + e.what();
  }
}

}  // namespace sieve::serve
