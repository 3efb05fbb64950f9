// Core helpers: error tiers, file mapping, atomic writes.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "core/checksum.h"
#include "core/cpu.h"
#include "core/file_util.h"
#include "core/mmap_file.h"
#include "sieve/error.h"
#include "support/test_util.h"

namespace sieve {
namespace {

// sieve::crc32 (ISA-L's folding where installed) against zlib's bytewise reference: the check
// value, every length 0..300 at every alignment 0..15, large buffers, and chaining (a checksum
// continued over a second buffer equals the checksum of both).
TEST(Checksum, Crc32EqualsZlibAtEveryLengthAndAlignment) {
  EXPECT_EQ(crc32("123456789", 9), 0xcbf43926u);
  std::mt19937 rng(7);
  std::vector<unsigned char> buf(3 << 20);
  for (auto& b : buf) b = static_cast<unsigned char>(rng());
  auto zlib = [&](size_t off, size_t n, uint32_t init) {
    return static_cast<uint32_t>(::crc32(init, buf.data() + off, static_cast<uInt>(n)));
  };
  for (size_t off = 0; off < 16; ++off)
    for (size_t n = 0; n <= 300; ++n) ASSERT_EQ(crc32(buf.data() + off, n), zlib(off, n, 0)) << off << " " << n;
  for (size_t n : {4095, 4096, 65537, 1 << 20, 3 << 20}) EXPECT_EQ(crc32(buf.data(), n), zlib(0, n, 0)) << n;
  for (size_t cut : {0, 1, 17, 1000, 65536}) {
    const uint32_t first = crc32(buf.data(), cut);
    EXPECT_EQ(crc32(buf.data() + cut, (1 << 20) - cut, first), zlib(0, 1 << 20, 0)) << cut;
  }
}

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

TEST(Checksum, Sha256MatchesThePublishedTestVectors) {
  // FIPS 180-2, appendix B: "abc", the 448-bit message, a million 'a'; and the empty message.
  EXPECT_EQ(sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(sha256_hex(two.data(), two.size()), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const std::string million(1000000, 'a');
  EXPECT_EQ(sha256_hex(million.data(), million.size()),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(sha256_hex(nullptr, 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // A file hashes as its bytes; an empty file as the empty message; a missing one is an error.
  const std::string dir = test::make_temp_dir("sha256");
  std::ofstream(dir + "/m") << million;
  std::ofstream(dir + "/e").flush();
  EXPECT_EQ(sha256_file_hex(dir + "/m"), sha256_hex(million.data(), million.size()));
  EXPECT_EQ(sha256_file_hex(dir + "/e"), sha256_hex(nullptr, 0));
  EXPECT_THROW(sha256_file_hex(dir + "/none"), Error);
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

// The one CPU probe (core/cpu.h): SIEVE_PORTABLE=1 answers as a CPU without AVX2 or AVX-512 (the
// portable.* ctest runs set it, so that the loops' portable twins are tested on this CPU); "0"
// or unset, the CPU's own features, as the compiler's builtin reads them.
TEST(CpuProbe, ThePortableSwitchTurnsEveryFeatureOff) {
  const CpuFeatures p = probe_cpu("1");
  EXPECT_TRUE(p.portable);
  EXPECT_FALSE(p.avx2 || p.avx512f || p.avx512bw_vl || p.avx512_bf16 || p.x86_64_v3 || p.x86_64_v4);
  for (const char* off : {static_cast<const char*>(nullptr), "0", ""}) {
    const CpuFeatures c = probe_cpu(off);
    EXPECT_FALSE(c.portable);
#if defined(__x86_64__) && defined(__GNUC__)
    EXPECT_EQ(c.avx2, __builtin_cpu_supports("avx2") != 0);
    EXPECT_EQ(c.avx512f, __builtin_cpu_supports("avx512f") != 0);
    EXPECT_EQ(c.avx512_bf16, __builtin_cpu_supports("avx512bf16") != 0 && c.avx512bw_vl);
#endif
  }
  // This process's probe is what its environment says.
  const char* env = std::getenv("SIEVE_PORTABLE");
  const CpuFeatures want = probe_cpu(env);
  EXPECT_EQ(cpu_features().portable, want.portable);
  EXPECT_EQ(cpu_features().avx512f, want.avx512f);
  EXPECT_EQ(cpu_features().avx2, want.avx2);
  if (env != nullptr && std::string(env) == "1") EXPECT_FALSE(cpu_features().avx2 || cpu_features().avx512f);
}

}  // namespace
}  // namespace sieve
