#include "index/write_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/file_util.h"
#include "index/manifest.h"
#include "sieve/error.h"

namespace sieve::index {

namespace {
// The lock file's descriptor, locked; -1 with `err` set when the lock cannot be had (`busy`, or
// the writer's words, when another holds it).
int lock_fd(const std::string& dir, const std::string& file, const std::string& busy, std::string* err) {
  const std::string path = path_join(dir, file);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    *err = "cannot create '" + path + "': " + std::strerror(errno);
    return -1;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    *err = !busy.empty() ? busy : "another sieve process is writing '" + dir + "' (it holds " + file + ")";
    return -1;
  }
  return fd;
}
}  // namespace

WriteLock::WriteLock(const std::string& dir) : WriteLock(dir, kWriteLockFile, "") {}

WriteLock::WriteLock(const std::string& dir, const std::string& file, const std::string& busy) {
  std::string err;
  fd_ = lock_fd(dir, file, busy, &err);
  SIEVE_THROW_IF_NOT(fd_ >= 0, err);
}

std::unique_ptr<WriteLock> WriteLock::try_acquire(const std::string& dir) {
  std::string err;
  const int fd = lock_fd(dir, kWriteLockFile, "", &err);
  if (fd < 0) return nullptr;
  std::unique_ptr<WriteLock> lock(new WriteLock());
  lock->fd_ = fd;
  return lock;
}

WriteLock::~WriteLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace sieve::index
