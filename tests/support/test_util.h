// Helpers shared by the test binaries: temp directories, shared-data paths, running the CLI.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "sieve/error.h"

namespace sieve::test {

/// True when the environment variable CI is "true": set-up installs every test oracle there (node,
/// the npm packages, Chromium, the Python oracles), so a test that would skip for a missing one
/// fails instead (SIEVE_SKIP_ORACLE).
inline bool under_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

/// Skips the test for a missing oracle (GTEST_SKIP() << why), or fails it under CI (under_ci()).
#define SIEVE_SKIP_ORACLE(why)                                                          \
  do {                                                                                  \
    if (::sieve::test::under_ci())                                                      \
      GTEST_FAIL() << why << " (CI=true: set-up installs it, so this fails)";           \
    else                                                                                \
      GTEST_SKIP() << why;                                                              \
  } while (0)

/// The temp directories a test process made, removed when it exits (ctest runs one test per
/// process), so that runs do not fill the disk: a full suite left about 5 GB behind before.
/// SIEVE_KEEP_TEST_DIRS=1 keeps them for a look after a failure. Only the process that made them
/// removes them (a forked child that exits normally does not).
class TempDirs {
 public:
  ~TempDirs() {
    const char* keep = std::getenv("SIEVE_KEEP_TEST_DIRS");
    if ((keep != nullptr && std::string(keep) == "1") || ::getpid() != owner_) return;
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& d : dirs_) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  }
  void add(const std::string& dir) {
    std::lock_guard<std::mutex> lock(mu_);
    dirs_.push_back(dir);
  }

 private:
  pid_t owner_ = ::getpid();
  std::mutex mu_;
  std::vector<std::string> dirs_;
};

inline TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}

/// A fresh temp directory under gtest's TempDir, unique per call; removed when the process exits.
inline std::string make_temp_dir(const std::string& tag) {
  std::string tmpl = ::testing::TempDir() + "sieve_" + tag + "_XXXXXX";
  char* p = ::mkdtemp(tmpl.data());
  if (p == nullptr) throw std::runtime_error("mkdtemp failed");
  temp_dirs().add(tmpl);
  return tmpl;
}

/// XORs the byte at `offset` of a file with `mask`: the file keeps its size, so only a checksum
/// or a digest can tell.
inline void flip_byte(const std::string& path, size_t offset, char mask = 0x5a) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ mask));
}

/// Path of a file in ../shared/data, or empty when the shared data is absent.
inline std::string shared_data(const std::string& rel) {
  std::string p = std::string(SIEVE_SHARED_DATA) + "/" + rel;
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? p : std::string();
}

/// The first `n` query texts of SciFact in ../shared/data (fewer, or none, when it is absent).
inline std::vector<std::string> scifact_query_texts(size_t n) {
  std::vector<std::string> out;
  const std::string path = shared_data("retrieval/scifact/queries.jsonl");
  if (path.empty()) return out;
  std::ifstream in(path);
  std::string line;
  while (out.size() < n && std::getline(in, line)) {
    const auto at = line.find("\"text\": \"");
    if (at == std::string::npos) continue;
    const auto end = line.find('"', at + 9);
    out.push_back(line.substr(at + 9, end - at - 9));
  }
  return out;
}

struct CommandResult {
  int exit_code = -1;
  std::string out;
};

/// Runs a shell command line, capturing stdout (stderr goes to `err_file` when given).
inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (f == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) r.out.append(buf, n);
  int status = ::pclose(f);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// Expects `fn` to throw sieve::Error whose message contains `needle`.
inline void expect_error(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no sieve::Error (wanted one mentioning '" << needle << "')";
  } catch (const sieve::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

/// The message of the sieve::Error `fn` throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const sieve::Error& e) {
    return e.what();
  }
  return "";
}

/// The built `sieve` executable.
inline std::string cli_path() { return SIEVE_CLI_PATH; }

}  // namespace sieve::test
