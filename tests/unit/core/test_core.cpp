// Core helpers: error tiers, file mapping, atomic writes.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/file_util.h"
#include "core/mmap_file.h"
#include "sieve/error.h"
#include "support/test_util.h"

namespace sieve {
namespace {

TEST(Error, ThrowIfNotStreamsTheMessage) {
  int x = 3;
  try {
    SIEVE_THROW_IF_NOT(x == 4, "x was " << x << ", expected 4");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "x was 3, expected 4");
  }
  EXPECT_NO_THROW(SIEVE_THROW_IF_NOT(x == 3, "unused"));
}

TEST(ErrorDeathTest, AssertAborts) {
  EXPECT_DEATH(SIEVE_ASSERT(1 + 1 == 3), "internal error");
}

TEST(Files, AtomicWriteThenMap) {
  std::string dir = test::make_temp_dir("core");
  std::string p = path_join(dir, "a.bin");
  write_file_atomic(p, std::string("hello\0world", 11));
  MappedFile m(p);
  ASSERT_EQ(m.size(), 11u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m.data()), 11), std::string("hello\0world", 11));
  EXPECT_EQ(read_file(p), std::string("hello\0world", 11));
  write_file_atomic(p, "");
  MappedFile empty(p);
  EXPECT_EQ(empty.size(), 0u);
  MappedFile moved = std::move(empty);
  EXPECT_EQ(moved.size(), 0u);
}

TEST(Files, ErrorsNameThePath) {
  try {
    MappedFile m("/nonexistent/file.bin");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/file.bin"), std::string::npos);
  }
  EXPECT_THROW(read_file("/nonexistent/x"), Error);
  EXPECT_THROW(write_file_atomic("/nonexistent/dir/x", "y"), Error);
  EXPECT_THROW(MappedFile(test::make_temp_dir("core_dir")), Error);  // a directory
  EXPECT_EQ(path_join("a/", "b"), "a/b");
  EXPECT_EQ(path_join("a", "b"), "a/b");
}

size_t open_descriptors() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// fsync fails on a pipe (EINVAL): a FIFO where write_file_atomic puts its temp file makes the
// write succeed and the fsync fail. The error names the file and the descriptor is closed.
TEST(Files, AtomicWriteWhoseFsyncFailsClosesItsFile) {
  const std::string dir = test::make_temp_dir("core_fsync");
  const std::string path = dir + "/x", tmp = path + ".tmp." + std::to_string(::getpid());
  ASSERT_EQ(::mkfifo(tmp.c_str(), 0600), 0);
  // A reader first (non-blocking), so that the writer's open does not wait; the pipe's buffer
  // takes the few bytes written.
  const int reader = ::open(tmp.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  const size_t before = open_descriptors();
  const std::string err = test::error_of([&] { write_file_atomic(path, "content"); });
  const size_t after = open_descriptors();
  ::close(reader);
  EXPECT_NE(err.find("cannot flush '" + tmp + "'"), std::string::npos) << err;
  EXPECT_EQ(after, before);  // the temp file's descriptor leaked when fsync failed
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(tmp));
}

// A folder whose fsync fails (procfs has none: EINVAL) or that cannot be opened is an error
// naming it, not silently skipped.
TEST(Files, SyncDirReportsItsFailures) {
  EXPECT_NO_THROW(sync_dir(test::make_temp_dir("core_sync")));
  test::expect_error([] { sync_dir("/proc/self"); }, "folder '/proc/self'");
  test::expect_error([] { sync_dir("/nonexistent/dir"); }, "'/nonexistent/dir'");
}

}  // namespace
}  // namespace sieve
