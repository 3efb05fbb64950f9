#include "index/record_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/checksum.h"
#include "core/file_util.h"
#include "sieve/error.h"

namespace sieve::index {
namespace {

constexpr char kMagic[8] = {'S', 'I', 'E', 'V', 'E', 'L', 'O', 'G'};
constexpr uint32_t kLogVersion = 1;
enum Role : uint32_t { kData = 0, kIndex = 1 };

std::string make_header(const char* kind, uint32_t param, Role role) {
  std::string h(kLogHeaderBytes, '\0');
  std::memcpy(&h[0], kMagic, 8);
  std::memcpy(&h[8], &kLogVersion, 4);
  std::memcpy(&h[12], kind, 4);
  std::memcpy(&h[16], &param, 4);
  uint32_t r = role;
  std::memcpy(&h[20], &r, 4);
  return h;
}

void check_header(const MappedFile& f, const char* kind, uint32_t param, Role role) {
  const std::string& p = f.path();
  SIEVE_THROW_IF_NOT(f.size() >= kLogHeaderBytes, "'" << p << "' is too short to be a sieve log (damaged)");
  const uint8_t* d = f.data();
  SIEVE_THROW_IF_NOT(std::memcmp(d, kMagic, 8) == 0, "'" << p << "' is not a sieve log file (bad magic)");
  uint32_t version, got_param, got_role;
  std::memcpy(&version, d + 8, 4);
  std::memcpy(&got_param, d + 16, 4);
  std::memcpy(&got_role, d + 20, 4);
  SIEVE_THROW_IF_NOT(version == kLogVersion, "'" << p << "' has log format version " << version
                                                 << "; this sieve reads version " << kLogVersion
                                                 << " (rebuild the index)");
  SIEVE_THROW_IF_NOT(std::memcmp(d + 12, kind, 4) == 0 && got_role == role,
                     "'" << p << "' holds another kind of data than expected (damaged or misplaced)");
  SIEVE_THROW_IF_NOT(got_param == param, "'" << p << "' has parameter " << got_param << ", the manifest says "
                                             << param << " (damaged index)");
}

int open_rw(const std::string& path, bool truncate) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0644);
  if (fd < 0) {
    int e = errno;
    SIEVE_THROW("cannot open '" << path << "' for writing: " << std::strerror(e));
  }
  return fd;
}

void write_all(int fd, const std::string& buf, const std::string& path) {
  size_t done = 0;
  while (done < buf.size()) {
    ssize_t w = ::write(fd, buf.data() + done, buf.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      int e = errno;
      SIEVE_THROW("cannot write '" << path << "': " << std::strerror(e));
    }
    done += static_cast<size_t>(w);
  }
}

void truncate_to(int fd, uint64_t bytes, const std::string& path) {
  off_t end = ::lseek(fd, 0, SEEK_END);
  SIEVE_THROW_IF_NOT(end >= 0 && static_cast<uint64_t>(end) >= bytes,
                     "'" << path << "' is shorter (" << end << " bytes) than its last commit (" << bytes
                         << " bytes): the index is damaged");
  SIEVE_THROW_IF_NOT(::ftruncate(fd, static_cast<off_t>(bytes)) == 0 &&
                         ::lseek(fd, 0, SEEK_END) == static_cast<off_t>(bytes),
                     "cannot truncate '" << path << "': " << std::strerror(errno));
}

}  // namespace

nlohmann::json log_state_to_json(const LogState& s) {
  return {{"records", s.records},     {"data_bytes", s.data_bytes}, {"index_bytes", s.index_bytes},
          {"data_crc32", s.data_crc}, {"index_crc32", s.index_crc}};
}

LogState log_state_from_json(const nlohmann::json& j, const std::string& what) {
  auto get = [&](const char* key) -> uint64_t {
    SIEVE_THROW_IF_NOT(j.is_object() && j.contains(key) && j[key].is_number_unsigned(),
                       what << ": missing or invalid field '" << key << "'");
    return j[key].get<uint64_t>();
  };
  LogState s;
  s.records = get("records");
  s.data_bytes = get("data_bytes");
  s.index_bytes = get("index_bytes");
  s.data_crc = static_cast<uint32_t>(get("data_crc32"));
  s.index_crc = static_cast<uint32_t>(get("index_crc32"));
  if (s.records == 0 && s.data_bytes == 0 && s.index_bytes == 0) return s;  // a log that was never created
  SIEVE_THROW_IF_NOT(s.records <= (UINT64_MAX - kLogHeaderBytes) / kLogEntryBytes &&
                         get("data_crc32") <= UINT32_MAX && get("index_crc32") <= UINT32_MAX,
                     what << ": out-of-range values (damaged manifest)");
  SIEVE_THROW_IF_NOT(s.index_bytes == kLogHeaderBytes + s.records * kLogEntryBytes && s.data_bytes >= kLogHeaderBytes,
                     what << ": inconsistent sizes (damaged manifest)");
  return s;
}

// --- writer ------------------------------------------------------------------------------------

RecordLogWriter RecordLogWriter::create(const std::string& dir, const std::string& name, const char* kind,
                                        uint32_t param) {
  RecordLogWriter w;
  w.data_path_ = path_join(dir, name + ".dat");
  w.index_path_ = path_join(dir, name + ".idx");
  w.data_fd_ = open_rw(w.data_path_, true);
  w.index_fd_ = open_rw(w.index_path_, true);
  w.data_buf_ = make_header(kind, param, kData);
  w.index_buf_ = make_header(kind, param, kIndex);
  w.state_.data_bytes = w.state_.index_bytes = kLogHeaderBytes;
  w.state_.data_crc = crc32(w.data_buf_.data(), w.data_buf_.size());
  w.state_.index_crc = crc32(w.index_buf_.data(), w.index_buf_.size());
  return w;
}

RecordLogWriter RecordLogWriter::reopen(const std::string& dir, const std::string& name, const char* kind,
                                        uint32_t param, const LogState& committed, bool prefix_checked) {
  if (!prefix_checked) {  // the committed prefix must be intact before anything is appended to it
    RecordLogReader check(dir, name, kind, param, committed);
  }
  RecordLogWriter w;
  w.data_path_ = path_join(dir, name + ".dat");
  w.index_path_ = path_join(dir, name + ".idx");
  w.data_fd_ = open_rw(w.data_path_, false);
  w.index_fd_ = open_rw(w.index_path_, false);
  truncate_to(w.data_fd_, committed.data_bytes, w.data_path_);
  truncate_to(w.index_fd_, committed.index_bytes, w.index_path_);
  w.state_ = committed;
  return w;
}

RecordLogWriter::RecordLogWriter(RecordLogWriter&& o) noexcept { *this = std::move(o); }

RecordLogWriter& RecordLogWriter::operator=(RecordLogWriter&& o) noexcept {
  if (this != &o) {
    close_files();
    data_fd_ = o.data_fd_;
    index_fd_ = o.index_fd_;
    o.data_fd_ = o.index_fd_ = -1;
    data_path_ = std::move(o.data_path_);
    index_path_ = std::move(o.index_path_);
    data_buf_ = std::move(o.data_buf_);
    index_buf_ = std::move(o.index_buf_);
    state_ = o.state_;
  }
  return *this;
}

RecordLogWriter::~RecordLogWriter() { close_files(); }

void RecordLogWriter::close_files() {
  if (data_fd_ >= 0) ::close(data_fd_);
  if (index_fd_ >= 0) ::close(index_fd_);
  data_fd_ = index_fd_ = -1;
}

void RecordLogWriter::append(const void* data, size_t n) {
  SIEVE_THROW_IF_NOT(n <= UINT32_MAX, "a record of " << n << " bytes is larger than the 4 GiB limit");
  uint8_t entry[kLogEntryBytes];
  uint64_t offset = state_.data_bytes;
  uint32_t size = static_cast<uint32_t>(n);
  uint32_t crc = crc32(data, n);
  std::memcpy(entry, &offset, 8);
  std::memcpy(entry + 8, &size, 4);
  std::memcpy(entry + 12, &crc, 4);
  data_buf_.append(static_cast<const char*>(data), n);
  index_buf_.append(reinterpret_cast<const char*>(entry), kLogEntryBytes);
  state_.data_crc = crc32(data, n, state_.data_crc);
  state_.index_crc = crc32(entry, kLogEntryBytes, state_.index_crc);
  state_.data_bytes += n;
  state_.index_bytes += kLogEntryBytes;
  state_.records += 1;
  if (data_buf_.size() > (8u << 20)) flush();
}

void RecordLogWriter::flush() {
  write_all(data_fd_, data_buf_, data_path_);
  write_all(index_fd_, index_buf_, index_path_);
  data_buf_.clear();
  index_buf_.clear();
}

LogState RecordLogWriter::sync() {
  flush();
  SIEVE_THROW_IF_NOT(::fdatasync(data_fd_) == 0 && ::fdatasync(index_fd_) == 0,
                     "cannot sync '" << data_path_ << "': " << std::strerror(errno));
  return state_;
}

// --- reader ------------------------------------------------------------------------------------

RecordLogReader::RecordLogReader(const std::string& dir, const std::string& name, const char* kind,
                                 uint32_t param, const LogState& committed) {
  open(dir, name, kind, param, committed, nullptr);
}

RecordLogReader::RecordLogReader(const std::string& dir, const std::string& name, const char* kind,
                                 uint32_t param, const LogState& committed, const RecordLogReader& prev) {
  open(dir, name, kind, param, committed, &prev);
}

void RecordLogReader::open(const std::string& dir, const std::string& name, const char* kind, uint32_t param,
                           const LogState& committed, const RecordLogReader* prev) {
  data_ = MappedFile(path_join(dir, name + ".dat"));
  index_ = MappedFile(path_join(dir, name + ".idx"));
  check_header(data_, kind, param, kData);
  check_header(index_, kind, param, kIndex);
  SIEVE_THROW_IF_NOT(committed.index_bytes == kLogHeaderBytes + committed.records * kLogEntryBytes,
                     "'" << index_.path() << "': the committed state is inconsistent (damaged manifest)");
  SIEVE_THROW_IF_NOT(data_.size() >= committed.data_bytes, "'" << data_.path() << "' is truncated ("
                         << data_.size() << " bytes, the manifest says " << committed.data_bytes << ")");
  SIEVE_THROW_IF_NOT(index_.size() >= committed.index_bytes, "'" << index_.path() << "' is truncated ("
                         << index_.size() << " bytes, the manifest says " << committed.index_bytes << ")");
  const bool extends = prev != nullptr && prev->index_bytes_ >= kLogHeaderBytes &&
                       prev->index_bytes_ <= committed.index_bytes && prev->data_bytes_ <= committed.data_bytes;
  const uint64_t from = extends ? prev->index_bytes_ : 0;
  SIEVE_THROW_IF_NOT(crc32(index_.data() + from, committed.index_bytes - from, extends ? prev->index_crc_ : 0) ==
                         committed.index_crc,
                     "'" << index_.path() << "' is damaged (checksum mismatch)");
  records_ = committed.records;
  data_bytes_ = committed.data_bytes;
  data_crc_ = committed.data_crc;
  index_bytes_ = committed.index_bytes;
  index_crc_ = committed.index_crc;
}

RecordLogReader::Record RecordLogReader::record(size_t i) const {
  SIEVE_THROW_IF_NOT(i < records_, "record " << i << " is out of range (" << records_ << " records)");
  const uint8_t* e = index_.data() + kLogHeaderBytes + i * kLogEntryBytes;
  uint64_t offset;
  uint32_t size, crc;
  std::memcpy(&offset, e, 8);
  std::memcpy(&size, e + 8, 4);
  std::memcpy(&crc, e + 12, 4);
  SIEVE_THROW_IF_NOT(offset >= kLogHeaderBytes && offset <= data_bytes_ && size <= data_bytes_ - offset,
                     "'" << index_.path() << "': record " << i << " points outside the data file (damaged)");
  const uint8_t* p = data_.data() + offset;
  SIEVE_THROW_IF_NOT(crc32(p, size) == crc, "'" << data_.path() << "': record " << i
                                                 << " is damaged (checksum mismatch)");
  return {p, size};
}

void RecordLogReader::verify_data() const {
  SIEVE_THROW_IF_NOT(crc32(data_.data(), data_bytes_) == data_crc_,
                     "'" << data_.path() << "' is damaged (checksum mismatch)");
}

}  // namespace sieve::index
