// Replays every file under tests/fuzz/seeds/<target>/ and tests/fuzz/regressions/<target>/
// through its fuzz target, in the normal build (no libFuzzer): the seeds are small valid inputs,
// the regressions every crash or hang a fuzzing run found (kept after the fix). scripts/fuzz.sh
// replays the regressions under ASan and UBSan as well.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "fuzz_target.h"

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> inputs_of(const std::string& target) {
  std::vector<fs::path> out;
  for (const char* kind : {"seeds", "regressions"}) {
    const fs::path dir = fs::path(SIEVE_FUZZ_DIR) / kind / target;
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) out.push_back(e.path());
  }
  return out;
}

class Replay : public ::testing::TestWithParam<std::string> {};

// Each kept input must also finish in time: a hang the fuzzer found (libFuzzer's limit there is
// 1 s, under ASan) must not come back as a slow test. 5 s here, for a loaded machine.
constexpr double kSecondsPerInput = 5.0;

TEST_P(Replay, EveryKeptInputRunsCleanly) {
  const auto target = sieve::fuzz::targets().at(GetParam());
  const auto files = inputs_of(GetParam());
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    SCOPED_TRACE(f.string());
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(target(bytes.data(), bytes.size()), 0);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), kSecondsPerInput);
  }
  // The empty input and a few fixed ones, whatever the folders hold.
  for (const std::string& s : std::vector<std::string>{"", "\xff\xfe", "{", "[]", "\"", "a\tb\n", std::string(3, '\0')})
    EXPECT_EQ(target(reinterpret_cast<const uint8_t*>(s.data()), s.size()), 0) << s;
}

std::vector<std::string> names() {
  std::vector<std::string> n;
  for (const auto& [name, t] : sieve::fuzz::targets()) n.push_back(name);
  return n;
}

INSTANTIATE_TEST_SUITE_P(Fuzz, Replay, ::testing::ValuesIn(names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
