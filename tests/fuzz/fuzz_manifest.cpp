// An index manifest (manifest.json) on arbitrary bytes.
#include "fuzz_target.h"
#include "index/manifest.h"

SIEVE_FUZZ_TARGET(manifest) {
  sieve::fuzz::input_file(data, size, "manifest.json");
  sieve::fuzz::expect_only_sieve_errors([&] { sieve::index::read_manifest(sieve::fuzz::scratch_dir(), "manifest.json"); });
  return 0;
}
