// TokenStateCache: float16 token states on disk, memory-mapped (token_cache.h).
#include "train/token_cache.h"

#include <ATen/ATen.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/checksum.h"
#include "core/file_util.h"
#include "core/log.h"
#include "sieve/error.h"

namespace sieve::train {
namespace {

constexpr int kVersion = 1;
constexpr const char* kMagic = "sieve-token-cache";

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Appends `bytes` to an open file and makes them durable.
void append(std::FILE* f, const std::string& path, const void* bytes, size_t n) {
  SIEVE_THROW_IF_NOT(std::fwrite(bytes, 1, n, f) == n, "cannot write to '" << path << "'");
}

void flush(std::FILE* f, const std::string& path) {
  SIEVE_THROW_IF_NOT(std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0, "cannot flush '" << path << "'");
}

// An exclusive flock on `path` for the life of the object: processes that share a cache (the
// ranks of a data-parallel run) take turns creating, reading and appending it. Blocks while
// another process holds it.
class CacheLock {
 public:
  explicit CacheLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    SIEVE_THROW_IF_NOT(fd_ >= 0, "cannot open the token cache lock '" << path << "'");
    int rc;
    do rc = ::flock(fd_, LOCK_EX);
    while (rc != 0 && errno == EINTR);
    if (rc != 0) ::close(fd_);
    SIEVE_THROW_IF_NOT(rc == 0, "cannot lock '" << path << "'");
  }
  ~CacheLock() { ::close(fd_); }
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;

 private:
  int fd_;
};

}  // namespace

std::string TokenStateCache::key(const std::string& text) { return hex16(fnv1a(text)) + ":" + std::to_string(text.size()); }

TokenStateCache::TokenStateCache(const std::string& dir, const std::string& encoder_identity, size_t dim,
                                 size_t max_length)
    : dim_(dim) {
  SIEVE_THROW_IF_NOT(dim > 0, "token cache: the state width must be positive");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  SIEVE_THROW_IF_NOT(is_dir(dir), "cannot create the token cache folder '" << dir << "': " << ec.message());
  const std::string name = hex16(fnv1a(encoder_identity + "\t" + std::to_string(max_length)));
  index_path_ = path_join(dir, name + ".index");
  states_path_ = path_join(dir, name + ".states");
  lock_path_ = path_join(dir, name + ".lock");
  std::ostringstream header;
  header << kMagic << ' ' << kVersion << ' ' << dim << ' ' << max_length << ' ' << encoder_identity;
  header_ = header.str();
  CacheLock lock(lock_path_);
  if (!is_file(index_path_)) {
    std::FILE* s = std::fopen(states_path_.c_str(), "ab");  // the states file exists before the index names it
    SIEVE_THROW_IF_NOT(s, "cannot create '" << states_path_ << "'");
    std::fclose(s);
    std::FILE* f = std::fopen(index_path_.c_str(), "wb");
    SIEVE_THROW_IF_NOT(f, "cannot create '" << index_path_ << "'");
    const std::string line = header_ + "\n";
    append(f, index_path_, line.data(), line.size());
    flush(f, index_path_);
    std::fclose(f);
  }
  load_index();
  reused_ = entries_.size();
}

void TokenStateCache::load_index() {
  const std::string text = read_file(index_path_);
  std::istringstream in(text);
  std::string line;
  SIEVE_THROW_IF_NOT(std::getline(in, line) && line == header_,
                     "'" << index_path_ << "' is not a token cache of this encoder (header '" << line << "', expected '"
                         << header_ << "')");
  size_t line_no = 1;
  std::error_code ec;
  const uint64_t states_size = std::filesystem::file_size(states_path_, ec);
  SIEVE_THROW_IF_NOT(!ec, "cannot read '" << states_path_ << "': " << ec.message());
  entries_.clear();
  while (std::getline(in, line)) {
    ++line_no;
    if (in.eof() && !text.empty() && text.back() != '\n') break;  // a line cut by an interrupted run
    std::istringstream ls(line);
    std::string k;
    Entry e;
    std::string crc;
    SIEVE_THROW_IF_NOT(ls >> k >> e.offset >> e.rows >> crc && crc.size() == 8,
                       index_path_ << ":" << line_no << ": malformed token cache entry");
    e.crc = static_cast<uint32_t>(std::stoul(crc, nullptr, 16));
    const uint64_t bytes = static_cast<uint64_t>(e.rows) * (dim_ * 2 + 4);
    SIEVE_THROW_IF_NOT(e.offset + bytes <= states_size,
                       index_path_ << ":" << line_no << ": the entry runs past the end of '" << states_path_ << "'");
    entries_[k] = e;
  }
  remap();
}

void TokenStateCache::remap() {
  std::error_code ec;
  map_ = std::filesystem::file_size(states_path_, ec) > 0 ? MappedFile(states_path_) : MappedFile();
}

bool TokenStateCache::contains(const std::string& text) const { return entries_.count(key(text)) != 0; }

void TokenStateCache::add(const Encoder& encoder, const std::vector<std::string>& texts, bool progress) {
  CacheLock lock(lock_path_);
  load_index();  // another process may have appended since this one last read
  std::vector<std::string> todo;
  {
    std::unordered_map<std::string, bool> seen;
    for (const auto& t : texts)
      if (!contains(t) && seen.emplace(key(t), true).second) todo.push_back(t);
  }
  if (todo.empty()) return;
  SIEVE_THROW_IF_NOT(encoder.dim() == dim_, "token cache: the encoder is " << encoder.dim() << " wide, the cache "
                                                                          << dim_);
  std::FILE* states = std::fopen(states_path_.c_str(), "ab");
  SIEVE_THROW_IF_NOT(states, "cannot open '" << states_path_ << "' for appending");
  std::FILE* index = std::fopen(index_path_.c_str(), "ab");
  if (!index) std::fclose(states);
  SIEVE_THROW_IF_NOT(index, "cannot open '" << index_path_ << "' for appending");
  try {
    std::fseek(states, 0, SEEK_END);
    uint64_t offset = static_cast<uint64_t>(std::ftell(states));
    Progress bar("encode (token cache)", progress ? todo.size() : 0);
    EncodeCall call;
    call.token_states = true;
    for (size_t s = 0; s < todo.size(); s += 256) {
      std::vector<std::string> chunk(todo.begin() + static_cast<long>(s),
                                     todo.begin() + static_cast<long>(std::min(todo.size(), s + 256)));
      Embeddings e = encoder.encode(chunk, call);
      std::string lines;
      for (size_t i = 0; i < chunk.size(); ++i) {
        const TokenStates& t = e.tokens[i];
        const auto rows = static_cast<int64_t>(t.length);
        std::string record(static_cast<size_t>(rows) * (dim_ * 2 + 4), '\0');
        if (rows > 0) {
          at::Tensor half = at::from_blob(const_cast<float*>(t.values.data()), {rows, static_cast<int64_t>(dim_)},
                                          at::kFloat)
                                .to(at::kHalf)
                                .contiguous();
          std::memcpy(record.data(), half.data_ptr(), static_cast<size_t>(rows) * dim_ * 2);
          std::vector<int32_t> ids = t.ids.size() == t.length ? t.ids : std::vector<int32_t>(t.length, -1);
          std::memcpy(record.data() + static_cast<size_t>(rows) * dim_ * 2, ids.data(), ids.size() * 4);
        }
        const uint32_t crc = crc32(record.data(), record.size());
        append(states, states_path_, record.data(), record.size());
        const std::string k = key(chunk[i]);
        lines += k + ' ' + std::to_string(offset) + ' ' + std::to_string(rows) + ' ' + crc32_hex(crc) + '\n';
        entries_[k] = {offset, static_cast<uint32_t>(rows), crc};
        offset += record.size();
      }
      flush(states, states_path_);  // the states are durable before the index names them
      append(index, index_path_, lines.data(), lines.size());
      flush(index, index_path_);
      bar.add(chunk.size());
    }
    bar.finish();
  } catch (...) {
    std::fclose(states);
    std::fclose(index);
    throw;
  }
  std::fclose(states);
  std::fclose(index);
  remap();
}

TokenStates TokenStateCache::get(const std::string& text) const {
  auto it = entries_.find(key(text));
  SIEVE_THROW_IF_NOT(it != entries_.end(), "token cache: a text is not cached ('" << text.substr(0, 60) << "')");
  const Entry& e = it->second;
  const size_t bytes = static_cast<size_t>(e.rows) * (dim_ * 2 + 4);
  SIEVE_THROW_IF_NOT(e.offset + bytes <= map_.size(), "token cache: '" << states_path_ << "' is shorter than its index");
  const uint8_t* p = map_.data() + e.offset;
  SIEVE_THROW_IF_NOT(crc32(p, bytes) == e.crc,
                     "token cache: a record of '" << states_path_ << "' fails its checksum (delete the cache to rebuild it)");
  TokenStates t;
  t.length = e.rows;
  t.values.resize(static_cast<size_t>(e.rows) * dim_);
  if (e.rows > 0) {
    at::Tensor f = at::from_blob(const_cast<uint8_t*>(p), {static_cast<int64_t>(e.rows), static_cast<int64_t>(dim_)},
                                 at::kHalf)
                       .to(at::kFloat)
                       .contiguous();
    std::memcpy(t.values.data(), f.data_ptr<float>(), t.values.size() * sizeof(float));
    t.ids.resize(e.rows);
    std::memcpy(t.ids.data(), p + static_cast<size_t>(e.rows) * dim_ * 2, static_cast<size_t>(e.rows) * 4);
    if (!t.ids.empty() && t.ids[0] == -1) t.ids.clear();
  }
  return t;
}

}  // namespace sieve::train
