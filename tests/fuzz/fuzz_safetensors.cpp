// safetensors files on arbitrary bytes: the 8-byte header length, the JSON header (dtypes, shapes,
// offsets, __metadata__) and the data they point into. Every tensor of a file that opens must lie
// inside it.
#include <cstdlib>

#include "fuzz_target.h"
#include "sieve/safetensors.h"

SIEVE_FUZZ_TARGET(safetensors) {
  const std::string path = sieve::fuzz::input_file(data, size, "model.safetensors");
  sieve::fuzz::expect_only_sieve_errors([&] {
    auto f = sieve::SafetensorsFile::open(path);
    for (const auto& name : f->names()) {
      const sieve::TensorView& t = f->get(name);
      volatile uint8_t sink = 0;
      const uint8_t* bytes = t.data;
      for (size_t i = 0; i < t.nbytes; i += 4096) sink ^= bytes[i];
      if (t.nbytes > 0) sink ^= bytes[t.nbytes - 1];
      (void)sink;
    }
  });
  return 0;
}
