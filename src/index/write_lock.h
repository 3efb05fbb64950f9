// The single-writer lock of an index folder: an exclusive flock on `<dir>/write.lock` for the life
// of a build or add, so that a second writer fails at once instead of interleaving appends (the
// kernel drops it when the process dies). Readers never take it and never write: what a killed add
// left in the BM25 database is removed by the next writer.
#pragma once

#include <memory>
#include <string>

namespace sieve::index {

class WriteLock {
 public:
  /// Takes the lock on `dir` or throws sieve::Error (another writer holds it, or the folder is
  /// not writable).
  explicit WriteLock(const std::string& dir);
  /// The same kind of lock on another file of `dir` (compaction's `compact.lock`); `busy` is the
  /// error when another holder has it.
  WriteLock(const std::string& dir, const std::string& file, const std::string& busy);
  /// The lock when it can be had at once; nullptr when another writer holds it or the lock file
  /// cannot be created (a read-only folder).
  static std::unique_ptr<WriteLock> try_acquire(const std::string& dir);
  ~WriteLock();
  WriteLock(const WriteLock&) = delete;
  WriteLock& operator=(const WriteLock&) = delete;

 private:
  WriteLock() = default;
  int fd_ = -1;
};

}  // namespace sieve::index
