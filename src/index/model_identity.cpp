// model_identity (sieve/index.h): what an index, a verifier file or a token cache records of the
// encoder it was made with. SHA-256 of the weights (what the issue of binding a verifier to its
// encoder asks for: no accidental or crafted collision), plus a short SHA-256 over the files that
// change what the same weights compute (config and tokenizer). The older CRC-32 form is still
// computed on request, to check what was recorded before.
#include <sys/stat.h>

#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

#include "core/checksum.h"
#include "core/file_util.h"
#include "core/mmap_file.h"
#include "sieve/error.h"
#include "sieve/index.h"
#include "sieve/model.h"

namespace sieve {
namespace {

constexpr const char* kTokenizerFiles[] = {"vocab.txt", "tokenizer.json", "tokenizer.model", "spiece.model",
                                           "tokenizer_config.json"};

// What says a file is unchanged since it was hashed: its size and modification time.
using Stamp = std::tuple<std::string, int64_t, int64_t, int64_t>;

Stamp stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {path, -1, 0, 0};
  return {path, static_cast<int64_t>(st.st_size), static_cast<int64_t>(st.st_mtim.tv_sec),
          static_cast<int64_t>(st.st_mtim.tv_nsec)};
}

std::string legacy_crc_identity(const std::string& model_dir, const ModelInfo& info) {
  uint32_t tok = 0;
  for (const char* f : kTokenizerFiles) {
    std::string p = path_join(model_dir, f);
    if (is_file(p)) tok = crc32(f, std::char_traits<char>::length(f), crc32_file(p) ^ tok);
  }
  uint32_t cfg = crc32_file(path_join(model_dir, "config.json"));
  MappedFile w(info.weights_path);
  std::ostringstream s;
  s << "crc32:" << crc32_hex(cfg) << "-" << crc32_hex(tok) << "-" << crc32_hex(crc32(w.data(), w.size())) << ":"
    << w.size();
  return s.str();
}

std::string sha256_identity(const std::string& model_dir, const ModelInfo& info) {
  // The side files: each one's name and digest, in a fixed order, digested together.
  std::string side = "config.json=" + sha256_file_hex(path_join(model_dir, "config.json")) + "\n";
  for (const char* f : kTokenizerFiles) {
    std::string p = path_join(model_dir, f);
    if (is_file(p)) side += std::string(f) + "=" + sha256_file_hex(p) + "\n";
  }
  return "sha256:" + sha256_file_hex(info.weights_path) + ":" + sha256_hex(side.data(), side.size()).substr(0, 16);
}

// (scheme, stamps of every file read) -> identity.
std::mutex memo_mutex;
std::map<std::pair<bool, std::vector<Stamp>>, std::string> memo;

std::string identity(const std::string& model_dir, bool legacy) {
  ModelInfo info = read_model_info(model_dir);
  std::vector<Stamp> stamps = {stamp(info.weights_path), stamp(path_join(model_dir, "config.json"))};
  for (const char* f : kTokenizerFiles) stamps.push_back(stamp(path_join(model_dir, f)));
  auto key = std::make_pair(legacy, stamps);
  {
    std::lock_guard<std::mutex> g(memo_mutex);
    auto it = memo.find(key);
    if (it != memo.end()) return it->second;
  }
  std::string id = legacy ? legacy_crc_identity(model_dir, info) : sha256_identity(model_dir, info);
  std::lock_guard<std::mutex> g(memo_mutex);
  memo[key] = id;
  return id;
}

}  // namespace

std::string model_identity(const std::string& model_dir) { return identity(model_dir, /*legacy=*/false); }

std::string model_identity_like(const std::string& model_dir, const std::string& recorded) {
  return identity(model_dir, /*legacy=*/recorded.rfind("crc32:", 0) == 0);
}

}  // namespace sieve
