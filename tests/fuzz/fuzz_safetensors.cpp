// safetensors files on arbitrary bytes: the 8-byte header length, the JSON header (dtypes, shapes,
// offsets, __metadata__) and the data they point into. Every tensor of a file that opens must lie
// inside it, and a small one converts to as many floats as it has elements.
#include <cstdlib>
#include <vector>

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
      // Small tensors are also converted to float (every dtype's loader; F16/BF16 decoding).
      if (t.numel() <= 4096 && f->contains(name)) {
        std::vector<float> v = t.to_float();
        if (v.size() != static_cast<size_t>(t.numel())) std::abort();
      }
    }
  });
  return 0;
}
