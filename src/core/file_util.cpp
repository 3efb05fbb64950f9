#include "core/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sieve/error.h"

namespace sieve {

std::string read_file(const std::string& path) {
  SIEVE_THROW_IF_NOT(is_file(path), "file not found: '" << path << "'");
  std::ifstream in(path, std::ios::binary);
  SIEVE_THROW_IF_NOT(in, "cannot open '" << path << "': " << std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  SIEVE_THROW_IF_NOT(!in.bad(), "error while reading '" << path << "'");
  return ss.str();
}

void write_file_atomic(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  SIEVE_THROW_IF_NOT(fd >= 0, "cannot write '" << path << "': " << std::strerror(errno)
                                                << (errno == ENOENT ? " (its folder does not exist)" : ""));
  size_t done = 0;
  while (done < content.size()) {
    ssize_t w = ::write(fd, content.data() + done, content.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      SIEVE_THROW("cannot write '" << tmp << "': " << std::strerror(e));
    }
    done += static_cast<size_t>(w);
  }
  // Both always run: a failed fsync must not leave the descriptor open.
  const int synced = ::fsync(fd) == 0 ? 0 : errno;
  const int closed = ::close(fd) == 0 ? 0 : errno;
  if (synced != 0 || closed != 0) {
    ::unlink(tmp.c_str());
    SIEVE_THROW("cannot flush '" << tmp << "': " << std::strerror(synced != 0 ? synced : closed));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    SIEVE_THROW("cannot rename '" << tmp << "' to '" << path << "': " << std::strerror(e));
  }
}

void publish_dir(const std::string& staging, const std::string& out) {
  struct stat st {};
  if (::stat(out.c_str(), &st) != 0) {
    SIEVE_THROW_IF_NOT(std::rename(staging.c_str(), out.c_str()) == 0,
                       "cannot rename '" << staging << "' to '" << out << "': " << std::strerror(errno));
  } else {
    SIEVE_THROW_IF_NOT(::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, out.c_str(), RENAME_EXCHANGE) == 0,
                       "cannot replace '" << out << "' with '" << staging << "': " << std::strerror(errno));
    std::filesystem::remove_all(staging);  // the old folder
  }
  std::string parent = std::filesystem::absolute(out).parent_path().string();
  sync_dir(parent.empty() ? "." : parent);
}

void sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  SIEVE_THROW_IF_NOT(fd >= 0, "cannot open folder '" << dir << "' to make its entries durable: " << std::strerror(errno));
  const int synced = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  SIEVE_THROW_IF_NOT(synced == 0, "cannot make the entries of folder '" << dir << "' durable (fsync): "
                                                                          << std::strerror(synced));
}

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string path_join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (a.back() == '/') return a + b;
  return a + "/" + b;
}

std::string executable_dir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  const std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

}  // namespace sieve
