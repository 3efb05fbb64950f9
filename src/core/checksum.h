// CRC-32 (the zlib/PNG polynomial) for file and record checksums; SHA-256 (OpenSSL's libcrypto)
// where an identity must not collide by accident or design.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace sieve {

/// CRC-32 of `n` bytes, continuing from `crc` (0 for a fresh checksum): crc32(a+b) ==
/// crc32(b, crc32(a)), which lets append-only files extend their checksum.
uint32_t crc32(const void* data, size_t n, uint32_t crc = 0);

/// CRC-32 of the first `limit` bytes of a file (all of it when limit is SIZE_MAX); throws
/// sieve::Error when the file cannot be read or is shorter than `limit`.
uint32_t crc32_file(const std::string& path, size_t limit = SIZE_MAX);

/// Eight lowercase hex digits.
std::string crc32_hex(uint32_t crc);

/// SHA-256 of `n` bytes as 64 lowercase hex digits.
std::string sha256_hex(const void* data, size_t n);

/// SHA-256 of a whole file (memory-mapped) as 64 lowercase hex digits; throws sieve::Error when
/// it cannot be read.
std::string sha256_file_hex(const std::string& path);

/// FNV-1a's 64-bit offset basis.
constexpr uint64_t kFnv1aOffset = 1469598103934665603ull;
/// 64-bit FNV-1a of `s`, continuing from `h` (the offset basis for a fresh hash): a hash that
/// depends on the text only, for deterministic splits.
inline uint64_t fnv1a(const std::string& s, uint64_t h = kFnv1aOffset) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace sieve
