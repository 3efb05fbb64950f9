// Core helpers: error tiers, file mapping, atomic writes.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace sieve
