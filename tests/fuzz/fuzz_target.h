// One fuzz target per reader (tests/fuzz/fuzz_*.cpp). Built for libFuzzer (scripts/fuzz.sh,
// SIEVE_LIBFUZZER defined), a target is the process's LLVMFuzzerTestOneInput; built normally, every
// target registers itself by name and tests/fuzz/replay.cpp feeds it the files under
// tests/fuzz/seeds/<name>/ and tests/fuzz/regressions/<name>/ (every crash or hang the fuzzer
// found, kept so that ctest replays it).
//
// A target returns normally for every input: sieve::Error is a reader's answer to bad input and
// is caught; anything else (another exception, a crash, a sanitizer report) is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "sieve/error.h"

namespace sieve::fuzz {

using Target = int (*)(const uint8_t*, size_t);
std::map<std::string, Target>& targets();
inline bool register_target(const char* name, Target t) {
  targets()[name] = t;
  return true;
}

/// Runs `fn`; sieve::Error (the readers' answer to bad input) is the expected way to fail.
inline void expect_only_sieve_errors(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const sieve::Error&) {
  }
}

/// Writes the input to a fresh file named `name` in a per-process temporary folder; returns its path.
std::string input_file(const uint8_t* data, size_t size, const std::string& name);
/// The per-process temporary folder (removed at exit).
const std::string& scratch_dir();

}  // namespace sieve::fuzz

#ifdef SIEVE_LIBFUZZER
#define SIEVE_FUZZ_ENTRY(name)                                                     \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {        \
    return sieve_fuzz_##name(data, size);                                          \
  }
#else
#define SIEVE_FUZZ_ENTRY(name) \
  static const bool sieve_fuzz_registered_##name = sieve::fuzz::register_target(#name, sieve_fuzz_##name);
#endif

#define SIEVE_FUZZ_TARGET(name)                            \
  static int sieve_fuzz_##name(const uint8_t*, size_t);    \
  SIEVE_FUZZ_ENTRY(name)                                   \
  static int sieve_fuzz_##name(const uint8_t* data, size_t size)
