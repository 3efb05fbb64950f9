// An append-only log of variable-size records: `<name>.dat` holds the payloads and `<name>.idx` one
// fixed 16-byte entry per record {offset u64, size u32, crc32 u32}. Both files start with a 32-byte
// header (magic, version, kind, parameter). The corpus store, token store and key store are logs.
//
// Crash safety: a log is only as long as the last committed LogState says (kept in the index
// manifest or the build checkpoint). Bytes past it, left by an interrupted append, are ignored by
// readers and cut off by the next writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/mmap_file.h"

namespace sieve::index {

/// What a commit vouches for: record count, bytes of each file, and their running CRC-32s.
struct LogState {
  uint64_t records = 0;
  uint64_t data_bytes = 0;
  uint64_t index_bytes = 0;
  uint32_t data_crc = 0;
  uint32_t index_crc = 0;
};
nlohmann::json log_state_to_json(const LogState& s);
/// Throws sieve::Error naming `what` when a field is missing or of the wrong type.
LogState log_state_from_json(const nlohmann::json& j, const std::string& what);

constexpr size_t kLogHeaderBytes = 32;
constexpr size_t kLogEntryBytes = 16;

/// Appends records to a log. Not thread-safe; one writer per log.
class RecordLogWriter {
 public:
  /// A writer with no files (assign the result of create() or reopen()).
  RecordLogWriter() = default;
  /// Creates `<dir>/<name>.dat|.idx` afresh (replacing any files there). `kind` is 4 characters.
  static RecordLogWriter create(const std::string& dir, const std::string& name, const char* kind,
                                uint32_t param);
  /// Reopens a log at a committed state, cutting off anything written after it. The committed
  /// prefix is checked first (headers, sizes, the CRC of the index file) unless `prefix_checked`:
  /// a reader of this process has just checked that very state.
  static RecordLogWriter reopen(const std::string& dir, const std::string& name, const char* kind,
                                uint32_t param, const LogState& committed, bool prefix_checked = false);
  RecordLogWriter(RecordLogWriter&& o) noexcept;
  RecordLogWriter& operator=(RecordLogWriter&& o) noexcept;
  ~RecordLogWriter();

  /// Appends one record (buffered).
  void append(const void* data, size_t n);
  /// Writes the buffers out and fdatasyncs both files; returns the state a commit may record.
  LogState sync();
  /// State including buffered records (not yet durable).
  const LogState& state() const { return state_; }

 private:
  void flush();
  void close_files();
  int data_fd_ = -1, index_fd_ = -1;
  std::string data_path_, index_path_;
  std::string data_buf_, index_buf_;
  LogState state_;
};

/// Reads a committed log through memory maps. Immutable; record() may be called from any thread.
class RecordLogReader {
 public:
  RecordLogReader() = default;
  /// Opens and checks both headers, the file sizes and the CRC of the index file; throws
  /// sieve::Error naming the file on any mismatch.
  RecordLogReader(const std::string& dir, const std::string& name, const char* kind, uint32_t param,
                  const LogState& committed);
  /// The same log grown since `prev` was opened (in this process): only the index entries added
  /// since are checksummed, the CRC continuing from prev's, so that reopening after an add costs
  /// what the add wrote. A `committed` that does not extend prev's state is checked in full.
  RecordLogReader(const std::string& dir, const std::string& name, const char* kind, uint32_t param,
                  const LogState& committed, const RecordLogReader& prev);

  size_t size() const { return records_; }
  struct Record {
    const uint8_t* data;
    size_t size;
  };
  /// Record `i`, its bounds and CRC checked (sieve::Error names the file and record when damaged).
  Record record(size_t i) const;
  /// Checks the CRC of the whole data file (reads every byte).
  void verify_data() const;

 private:
  void open(const std::string& dir, const std::string& name, const char* kind, uint32_t param,
            const LogState& committed, const RecordLogReader* prev);

  MappedFile data_, index_;
  size_t records_ = 0;
  uint64_t data_bytes_ = 0, index_bytes_ = 0;
  uint32_t data_crc_ = 0, index_crc_ = 0;
};

}  // namespace sieve::index
