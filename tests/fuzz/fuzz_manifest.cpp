// An index manifest (manifest.json) on arbitrary bytes: once as given (the checksum stops most
// mutations at the door), and, when the input is a JSON object, once with its checksum rewritten
// to match, so that the fields behind the check are fuzzed too.
#include <nlohmann/json.hpp>

#include "core/checksum.h"
#include "fuzz_target.h"
#include "index/manifest.h"

SIEVE_FUZZ_TARGET(manifest) {
  const std::string& dir = sieve::fuzz::scratch_dir();
  sieve::fuzz::input_file(data, size, "manifest.json");
  sieve::fuzz::expect_only_sieve_errors([&] { sieve::index::read_manifest(dir, "manifest.json"); });
  nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return 0;
  j.erase("crc32");
  const std::string body = j.dump();
  j["crc32"] = sieve::crc32_hex(sieve::crc32(body.data(), body.size()));
  const std::string text = j.dump(2);
  sieve::fuzz::input_file(reinterpret_cast<const uint8_t*>(text.data()), text.size(), "manifest.json");
  sieve::fuzz::expect_only_sieve_errors([&] { sieve::index::read_manifest(dir, "manifest.json"); });
  return 0;
}
