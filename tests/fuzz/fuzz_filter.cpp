// The metadata filter parser on arbitrary bytes: it refuses with sieve::Error or gives a filter
// that evaluates on any metadata, and whose normal form parses back to itself.
#include <cstdlib>
#include <string>

#include "fuzz_target.h"
#include "sieve/filter.h"

SIEVE_FUZZ_TARGET(filter) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  sieve::fuzz::expect_only_sieve_errors([&] {
    const sieve::Filter f = sieve::Filter::parse(text);
    for (const char* m : {"", R"({"year": 2020, "tags": ["a", "b"], "d": "2024-05-01", "ok": true})", "{}"})
      (void)f.matches(m);
    const std::string normal = f.to_json();
    if (sieve::Filter::parse(normal).to_json() != normal) std::abort();
  });
  sieve::fuzz::expect_only_sieve_errors([&] { (void)sieve::check_metadata(text); });
  return 0;
}
